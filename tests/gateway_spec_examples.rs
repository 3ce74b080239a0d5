//! Spec 014's examples, verbatim, as a client sends them: a real `orchestrata up`
//! process (temp data dir, `GATEWAY_TOKEN` in its environment, default everything
//! else), a WebSocket client, the request frames exactly as the spec writes them (ids
//! included), and every answer validated against the method's result schema
//! (`schemas/json/gateway/results/`), plus the fields the spec's responses show.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::channel;
use std::time::{Duration, Instant};

use orchestrata::gateway::schema::ResultSchemas;
use serde_json::{json, Value};
use support::contract::result;
use support::ws::Ws;

/// The spec's example token.
const TOKEN: &str = "my-secret-gateway-token";

struct Up {
    child: Child,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `orchestrata up` on `port` over `data`, with only `GATEWAY_TOKEN` set.
fn up(data: &Path, port: u16) -> Up {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ORCHESTRATA_") || k.starts_with("GATEWAY_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .args(["up", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data)
        .env("GATEWAY_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start orchestrata up");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = lines.recv_timeout(left).expect("up starts the gateway");
        if line.contains("gateway listening on") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Up { child }
}

/// Sends `frame` (the spec's text) and returns the response with the frame's id.
async fn send(ws: &mut Ws, frame: &str) -> Value {
    let request: Value = serde_json::from_str(frame).expect("the spec's example is JSON");
    ws.send_text(frame).await;
    ws.response(request["id"].clone()).await
}

// ISSUE-14: the spec's example requests, sent verbatim, answered as the contract says
// (REQ-014-086 auth, REQ-014-011 subscribe, REQ-014-071 send, REQ-014-131 replay,
// REQ-014-087 the unauthorized error).
#[tokio::test]
async fn the_specs_examples_are_answered_as_the_contract_says() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = up(data.path(), port);
    let schemas = ResultSchemas::compile().expect("result schemas compile");
    let url = format!("ws://127.0.0.1:{port}/");

    // Example: Error Response (Unauthorized) — any method before authentication.
    let mut stranger = Ws::connect(&url).await;
    let r = send(
        &mut stranger,
        r#"{"jsonrpc": "2.0", "id": "req-004", "method": "gateway.ping", "params": {}}"#,
    )
    .await;
    assert_eq!(
        r,
        json!({
            "jsonrpc": "2.0",
            "id": "req-004",
            "error": {
                "code": -32001,
                "message": "Unauthorized",
                "data": {
                    "reason": "authentication_required",
                    "hint": "Call auth.authenticate before any other method."
                }
            }
        })
    );

    // Example: Authentication Flow (Static Token).
    let mut c = Ws::connect(&url).await;
    let r = send(
        &mut c,
        r#"{
            "jsonrpc": "2.0",
            "id": "auth-001",
            "method": "auth.authenticate",
            "params": {
                "strategy": "static_token",
                "token": "my-secret-gateway-token",
                "client_metadata": {
                    "client_name": "vizint-command-center",
                    "client_version": "1.0.0",
                    "purpose": "dashboard"
                }
            }
        }"#,
    )
    .await;
    let auth = result(&schemas, "auth.authenticate", &r);
    assert_eq!(auth["authenticated"], true, "{auth}");
    assert!(
        auth["client_id"]
            .as_str()
            .is_some_and(|id| id.starts_with("client-")),
        "{auth}"
    );
    assert!(auth["expires_at"].is_null(), "{auth}");
    assert_eq!(
        auth["scope"], "read_write",
        "the spec's example scope: {auth}"
    );
    assert!(auth["gateway_version"].is_string(), "{auth}");

    // Example: Subscribe to CXP Traffic.
    let r = send(
        &mut c,
        r#"{
            "jsonrpc": "2.0",
            "id": "req-002",
            "method": "cxp.subscribe",
            "params": {
                "filters": {
                    "volk_id": "U:Cd",
                    "delivery_status": "delivered"
                }
            }
        }"#,
    )
    .await;
    let sub = result(&schemas, "cxp.subscribe", &r);
    assert_eq!(sub["topic"], "cxp.traffic", "{sub}");
    assert_eq!(
        sub["filters"],
        json!({"volk_id": "U:Cd", "delivery_status": "delivered"}),
        "{sub}"
    );

    // Example: Send CXP Packet — no `from`: the operator token sends as its Volk.
    let r = send(
        &mut c,
        r#"{
            "jsonrpc": "2.0",
            "id": "req-003",
            "method": "cxp.send",
            "params": {
                "target": "U:Vz",
                "subject": "generate_component",
                "payload": {
                    "component": "UserService",
                    "language": "python",
                    "framework": "fastapi"
                },
                "priority": 7
            }
        }"#,
    )
    .await;
    let sent = result(&schemas, "cxp.send", &r);
    assert!(
        sent["status"] == "sent" || sent["status"] == "queued",
        "accepted: {sent}"
    );
    assert_eq!(sent["routed_via"], "U:PS", "{sent}");
    assert!(sent["message_id"].is_string(), "{sent}");
    let thread = sent["thread_id"].as_str().expect("thread id").to_owned();

    // The thread's status, as the contract's cxp.status has it.
    let r = c.call("cxp.status", json!({"thread_id": thread})).await;
    let status = result(&schemas, "cxp.status", &r);
    assert_eq!(status["thread_id"], thread.as_str());

    // Example: Event Replay.
    let r = send(
        &mut c,
        r#"{
            "jsonrpc": "2.0",
            "id": "req-005",
            "method": "gateway.replay",
            "params": {
                "topic": "cxp.traffic",
                "count": 10,
                "filters": {"volk_id": "U:Vz"}
            }
        }"#,
    )
    .await;
    let replay = result(&schemas, "gateway.replay", &r);
    let events = replay["events"].as_array().expect("events");
    assert!(
        !events.is_empty() && replay["total_matched"].as_u64() >= Some(1),
        "the packet to U:Vz is replayed: {replay}"
    );
    assert!(
        events.iter().all(|e| e["topic"] == "cxp.traffic"),
        "{replay}"
    );
    assert!(
        replay["buffer_range"]["newest_sequence"].is_u64(),
        "{replay}"
    );
}
