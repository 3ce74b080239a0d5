//! `orchestrata up` in the embedded mode runs the whole system in one process: the
//! kernel under governance, the projection runner and the gateway, so every method of
//! the gateway works against it; its JSON log lines carry the ids of the clients,
//! packets, threads and sessions they concern (issues 6 and 9). A real process, a real
//! sled log in a temp dir, real WebSocket clients.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::up::Up;
use support::ws::{http_get, Ws};

const TOKEN: &str = "embedded-up-test-token";

/// `up` with more environment variables (e.g. config overrides).
fn start_with(data: &Path, port: u16, env: &[(&str, &str)]) -> Up {
    Up::start(data, port, TOKEN, &[], env)
}

/// The JSON log lines printed so far, parsed.
fn log_lines(up: &Up) -> Vec<Value> {
    let mut out = Vec::new();
    while let Ok(line) = up.stderr.recv_timeout(Duration::from_millis(300)) {
        let parsed: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("a log line that is not JSON ({e}): {line}"));
        out.push(parsed);
    }
    out
}

/// The first line whose message is `message`.
fn line<'a>(lines: &'a [Value], message: &str) -> &'a Value {
    lines
        .iter()
        .find(|l| l["message"] == message)
        .unwrap_or_else(|| panic!("no `{message}` line in {lines:#?}"))
}

// Issue 6: the embedded `up` serves the kernel, the views and governance through the
// gateway; /ready covers them.
// REQ-014-138
#[tokio::test]
async fn embedded_up_serves_every_component_and_logs_ids_as_json() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    // Per-packet lines are debug (one per send would flood an operator's logs).
    let filter = ("RUST_LOG", "info,orchestrata::gateway::handlers::cxp=debug");
    let up = start_with(data.path(), port, &[filter]);
    let addr = format!("127.0.0.1:{port}").parse().expect("addr");
    let (status, body) = http_get(addr, "/ready").await;
    assert_eq!(status, 200, "{body}");
    let ready: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(
        ready["components"]["projections"]["configured"], true,
        "{ready}"
    );
    assert_eq!(
        ready["components"]["governance"]["configured"], true,
        "{ready}"
    );
    assert_eq!(ready["components"]["kernel"]["mode"], "local", "{ready}");

    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    let sent = ws
        .ok(
            "cxp.send",
            // As the spec's example: no `from`, so the operator token sends as U:GW.
            json!({"target": "U:Vz", "subject": "plan", "payload": {"n": 1}}),
        )
        .await;
    let message_id = sent["message_id"].as_str().expect("message id").to_owned();
    let thread_id = sent["thread_id"].as_str().expect("thread id").to_owned();
    let status = ws.ok("cxp.status", json!({ "thread_id": thread_id })).await;
    assert!(status.to_string().contains(&message_id), "{status}");
    let opened = ws
        .ok("session.open", json!({"goals": ["ship the console"]}))
        .await;
    let session_id = opened["session_id"]
        .as_str()
        .expect("session id")
        .to_owned();
    let evaluated = ws
        .ok(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "cxp.send", "resource": "U:Vz"}),
        )
        .await;
    assert_eq!(evaluated["result"], "allow", "{evaluated}");
    let volks = ws.ok("volk.list", json!({})).await;
    assert!(volks.to_string().contains("U:Qa"), "{volks}");

    // Issue 9: JSON lines; the ones about the packet and the session carry their ids
    // and the id of the client that caused them.
    let lines = log_lines(&up);
    let sent_line = line(&lines, "packet sent");
    assert_eq!(sent_line["message_id"], message_id.as_str(), "{sent_line}");
    assert_eq!(sent_line["thread_id"], thread_id.as_str(), "{sent_line}");
    let client_id = sent_line["span"]["client_id"]
        .as_str()
        .expect("client span");
    assert!(client_id.starts_with("client-"), "{sent_line}");
    let session_line = line(&lines, "session opened");
    assert_eq!(
        session_line["session_id"],
        session_id.as_str(),
        "{session_line}"
    );
    assert_eq!(
        session_line["span"]["client_id"], client_id,
        "{session_line}"
    );
    assert!(
        lines
            .iter()
            .all(|l| l["level"].is_string() && l["timestamp"].is_string()),
        "{lines:#?}"
    );
}

// REQ-014-166: with no `--listen`, no config file and no ORCHESTRATA_LISTEN, `up` serves
// on 127.0.0.1:18790 — the spec's port; the host is loopback rather than the spec's
// 0.0.0.0 on purpose (docs/gateway.md; the container config listens on 0.0.0.0). When
// another process holds that port, `up` must fail naming that very address instead.
#[tokio::test]
async fn without_a_listen_setting_up_serves_on_127_0_0_1_18790() {
    use std::io::{BufRead, BufReader, Read};
    use std::process::{Command, Stdio};
    let data = tempfile::tempdir().expect("temp dir");
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ORCHESTRATA_") || k.starts_with("_RJEM_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .args(["up", "--data-dir"])
        .arg(data.path())
        .env("GATEWAY_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start orchestrata up");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, lines) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let listening = loop {
        match lines.recv_timeout(Duration::from_secs(60)) {
            Ok(line) if line.contains("gateway listening on") => break Some(line),
            Ok(_) => continue,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break None,
            Err(e) => panic!("up neither listens nor exits: {e}"),
        }
    };
    if let Some(line) = listening {
        assert!(line.contains("ws://127.0.0.1:18790/"), "{line}");
        let addr = "127.0.0.1:18790".parse().expect("addr");
        let (status, body) = http_get(addr, "/health").await;
        assert_eq!(status, 200, "{body}");
        let _ = child.kill();
        let _ = child.wait();
    } else {
        let status = child.wait().expect("up exits");
        let mut err = String::new();
        let _ = child
            .stderr
            .take()
            .expect("stderr")
            .read_to_string(&mut err);
        assert!(!status.success(), "{err}");
        assert!(err.contains("cannot listen on 127.0.0.1:18790"), "{err}");
    }
}

// ISSUE-14: with `gateway.tokens` grants configured, the operator's GATEWAY_TOKEN still
// authenticates (as principal `operator`, acting as U:GW) next to them.
#[tokio::test]
async fn the_operator_token_works_next_to_configured_grants() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let grant = "[{token: wall-screen-token, scope: read_only, name: dashboard}]";
    let _up = start_with(data.path(), port, &[("ORCHESTRATA_GATEWAY__TOKENS", grant)]);
    let mut operator = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    let auth = operator.auth(TOKEN).await;
    assert_eq!(auth["principal"], "operator", "{auth}");
    assert_eq!(auth["default_volk"], "U:GW", "{auth}");
    assert_eq!(auth["scope"], "read_write", "{auth}");
    let mut wall = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    let auth = wall.auth("wall-screen-token").await;
    assert_eq!(
        (&auth["principal"], &auth["scope"]),
        (&json!("dashboard"), &json!("read_only")),
        "{auth}"
    );
    let volks = operator.ok("volk.list", json!({})).await;
    assert!(
        volks.to_string().contains("U:GW"),
        "the operator Volk is registered: {volks}"
    );
}

/// The value of an unlabelled series in a Prometheus text exposition.
fn series(metrics: &str, name: &str) -> Option<f64> {
    metrics
        .lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

// Issue 18: the governance engine is renewed after a budget of work and `/metrics`
// shows it (a 1 MiB budget is spent within a few hundred decisions). Each send has a
// subject of its own: a send like an earlier one is decided without the engine while
// the roster holds (`roster_cache.rs`), and costs the machine nothing.
// REQ-014-141
#[tokio::test]
async fn metrics_show_the_governance_engine_renewed_after_its_budget() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = start_with(
        data.path(),
        port,
        &[("ORCHESTRATA_GOVERNANCE__ENGINE_RENEW_MB", "1")],
    );
    let addr: std::net::SocketAddr = format!("127.0.0.1:{port}").parse().expect("addr");
    let (_, before) = http_get(addr, "/metrics").await;
    assert_eq!(
        series(&before, "orchestrata_governance_engine_renewals"),
        Some(0.0),
        "{before}"
    );
    let mut c = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    c.auth(TOKEN).await;
    let mut renewed = None;
    for n in 0..2_000 {
        c.ok(
            "cxp.send",
            json!({"target": "U:Vz", "subject": format!("review_request_{n}"), "payload": {"n": n}}),
        )
        .await;
        if n % 50 == 49 {
            let (_, metrics) = http_get(addr, "/metrics").await;
            if series(&metrics, "orchestrata_governance_engine_renewals").unwrap_or(0.0) >= 1.0 {
                renewed = Some(metrics);
                break;
            }
        }
    }
    let metrics = renewed.expect("a renewal within 2,000 sends of a 1 MiB budget");
    let spent = series(&metrics, "orchestrata_governance_engine_estimated_bytes");
    assert!(
        spent.is_some_and(|b| b < 4.0 * 1024.0 * 1024.0),
        "{metrics}"
    );
    // Decisions go on after the hand-over.
    let sent = c
        .ok(
            "cxp.send",
            json!({"target": "U:Vz", "subject": "review_request", "payload": {}}),
        )
        .await;
    assert_eq!(sent["status"], "queued", "{sent}");
}
