//! A hostile but authenticated client against a real `orchestrata up` (issue 60): each
//! test makes one of the attacks the issue lists and checks it is refused with a clear
//! error while legitimate work goes on. Real `up` process, real WebSocket clients, a
//! configuration with a few `gateway.tokens` grants and junior profiles.

mod support;

use std::path::Path;

use serde_json::{json, Value};
use support::up::Up;
use support::ws::Ws;
use support::{checked_ok, replay};

const OPERATOR: &str = "hostile-operator";
const VZ: &str = "hostile-vz";
const OX: &str = "hostile-ox";
const CX: &str = "hostile-cx";
const ADMIN: &str = "hostile-admin";

/// The grants: three bots acting as one Volk each, and an admin.
fn grants() -> String {
    format!(
        "[{{token: {VZ}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}, \
         {{token: {OX}, scope: read_write, name: ox-bot, acts_as: [U:Ox]}}, \
         {{token: {CX}, scope: read_write, name: cx-bot, acts_as: [U:Cx]}}, \
         {{token: {ADMIN}, scope: admin, name: ops}}]"
    )
}

/// `up` with `yaml` as its configuration and the grants.
fn up(dir: &Path, yaml: &str, port: u16) -> Up {
    let grants = grants();
    Up::with_config(
        dir,
        yaml,
        port,
        OPERATOR,
        &[("ORCHESTRATA_GATEWAY__TOKENS", grants.as_str())],
    )
}

async fn client(port: u16, token: &str) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(token).await;
    ws
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

const DRIVERS: &str = "agents:\n  drivers:\n    upper: { cli: [tr, a-z, A-Z], timeout_s: 30 }\n    slow: { cli: [sh, -c, 'sleep 1; cat'] }\n";

// REQ-005-US-003-001 ISSUE-60: a spawn whose deadline overflows the clock is refused
// at the params schema (-32602 naming `deadline_ms`), one at the longest allowed
// lifespan is spawned, and the kernel writer keeps serving: another client's
// `cxp.send` succeeds after both.
#[tokio::test]
async fn an_overflowing_deadline_is_refused_and_the_writer_keeps_serving() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = up(dir.path(), DRIVERS, port);
    let mut vz = client(port, VZ).await;
    let mut operator = client(port, OPERATOR).await;

    let huge = vz
        .err(
            "agents.spawn",
            json!({ "parent": "U:Vz", "driver": "slow",
                    "lifespan": { "deadline_ms": 10_000_000_000_000_000u64 } }),
        )
        .await;
    assert_eq!(huge["code"], -32602, "{huge}");
    assert!(huge.to_string().contains("deadline_ms"), "{huge}");
    let longest = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "slow",
                "lifespan": { "deadline_ms": 31_536_000_000u64 } }),
    )
    .await;
    assert_eq!(longest["status"], "idle", "{longest}");
    let too_long = vz
        .err(
            "agents.spawn",
            json!({ "parent": "U:Vz", "driver": "slow", "task": "x", "timeout_s": u64::MAX }),
        )
        .await;
    assert_eq!(too_long["code"], -32602, "{too_long}");

    for _ in 0..3 {
        let sent = checked_ok(&mut operator, "cxp.send", support::spec_send()).await;
        assert!(sent["thread_id"].is_string(), "{sent}");
    }
}

// REQ-014-102 ISSUE-60: agents.terminate reaches only juniors of a Volk the caller
// acts as. A principal acting as U:Ox cannot terminate the Postman (a senior, -32001
// `not_owner`) nor U:Vz's junior (-32001 `not_acting_as`); U:Vz's principal ends its
// own junior; an admin may end a senior.
#[tokio::test]
async fn terminate_reaches_only_juniors_of_a_volk_the_caller_acts_as() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = up(dir.path(), DRIVERS, port);
    let mut ox = client(port, OX).await;
    let mut vz = client(port, VZ).await;
    let mut admin = client(port, ADMIN).await;

    let postman = ox.err("agents.terminate", json!({ "alias": "U:PS" })).await;
    assert_eq!(
        (postman["code"].clone(), reason(&postman)),
        (json!(-32001), "not_owner"),
        "{postman}"
    );
    let ps = ox.ok("volk.get", json!({ "alias": "U:PS" })).await;
    assert_ne!(ps["status"], "terminated", "{ps}");
    assert!(
        !replay(&mut ox, "volk.lifecycle")
            .await
            .iter()
            .any(|e| e["event_type"] == "terminated" && e["payload"]["alias"] == "U:PS"),
        "the Postman lives"
    );

    let junior = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "slow", "lifespan": { "deadline_ms": 600_000 } }),
    )
    .await;
    let junior = junior["alias"].as_str().expect("alias").to_owned();
    let foreign = ox.err("agents.terminate", json!({ "alias": junior })).await;
    assert_eq!(reason(&foreign), "not_acting_as", "{foreign}");
    let own = checked_ok(&mut vz, "agents.terminate", json!({ "alias": junior })).await;
    assert_eq!(own["status"], "terminated");

    let senior = vz.err("agents.terminate", json!({ "alias": "U:Ux" })).await;
    assert_eq!(reason(&senior), "not_owner", "{senior}");
    let by_admin = checked_ok(&mut admin, "agents.terminate", json!({ "alias": "U:Ux" })).await;
    assert_eq!(by_admin["status"], "terminated");
}

// REQ-014-063 REQ-014-064 REQ-014-065 ISSUE-60: a session is its opener's. Another
// read_write principal cannot close it, update its context or assert a fact into it
// (-32001 `not_owner`, nothing recorded); its owner and an admin can. `session.close`
// takes the contract's free-form `status` and records it as `close_status`.
#[tokio::test]
async fn a_session_is_closed_and_written_only_by_its_opener_or_an_admin() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = up(dir.path(), DRIVERS, port);
    let mut operator = client(port, OPERATOR).await;
    let mut cx = client(port, CX).await;
    let mut admin = client(port, ADMIN).await;

    let opened = checked_ok(&mut operator, "session.open", json!({ "goals": ["ship"] })).await;
    let id = opened["session_id"]
        .as_str()
        .expect("session id")
        .to_owned();
    for (method, params) in [
        ("session.close", json!({ "session_id": id })),
        (
            "session.update_context",
            json!({ "session_id": id, "context": { "stolen": true } }),
        ),
        (
            "session.assert_fact",
            json!({ "session_id": id, "fact_type": "forged", "data": {} }),
        ),
    ] {
        let err = cx.err(method, params).await;
        assert_eq!(
            (err["code"].clone(), reason(&err)),
            (json!(-32001), "not_owner"),
            "{method}: {err}"
        );
        assert_eq!(err["data"]["owner"], "operator", "{err}");
    }
    let state = operator
        .ok("session.get", json!({ "session_id": id }))
        .await;
    assert_eq!(state["status"], "open", "{state}");
    assert!(!state.to_string().contains("stolen"), "{state}");
    assert!(!state.to_string().contains("forged"), "{state}");

    // The owner writes; its own close takes a free-form status.
    checked_ok(
        &mut operator,
        "session.update_context",
        json!({ "session_id": id, "context": { "step": 1 } }),
    )
    .await;
    let mine = checked_ok(&mut cx, "session.open", json!({})).await;
    let mine = mine["session_id"].as_str().expect("id").to_owned();
    let closed = checked_ok(
        &mut cx,
        "session.close",
        json!({ "session_id": mine, "status": "completed", "summary": "done" }),
    )
    .await;
    assert_eq!(closed["status"], "closed", "{closed}");
    let state = cx.ok("session.get", json!({ "session_id": mine })).await;
    assert_eq!(state["context"]["close_status"], "completed", "{state}");
    let long = cx
        .err(
            "session.close",
            json!({ "session_id": mine, "status": "x".repeat(65) }),
        )
        .await;
    assert_eq!(long["code"], -32602, "{long}");

    // An admin may close anyone's session.
    checked_ok(&mut admin, "session.close", json!({ "session_id": id })).await;
}

// REQ-014-077 REQ-014-078 REQ-014-079 REQ-014-080 ISSUE-60: a workflow run is its
// starter's: another principal cannot pause, resume or cancel it (-32001
// `not_owner`); the starter and an admin can. The human escalation queue is the
// operator's: a bot cannot resolve an entry (-32001 `not_owner`).
#[tokio::test]
async fn a_workflow_is_steered_only_by_its_starter_or_an_admin() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let coder = dir.path().join("coder.sh");
    std::fs::write(&coder, "#!/bin/sh\ncat > /dev/null\nsleep 120\n").expect("write coder");
    std::fs::set_permissions(&coder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let yaml = format!(
        "agents:\n  pipeline:\n    coder: [{}]\n    workdir: {}\n",
        coder.display(),
        dir.path().join("work").display()
    );
    let port = support::free_port();
    let _up = up(dir.path(), &yaml, port);
    let mut operator = client(port, OPERATOR).await;
    let mut cx = client(port, CX).await;
    let mut admin = client(port, ADMIN).await;

    let started = operator
        .ok(
            "workflow.start",
            json!({ "name": "pipeline", "params": { "task": "long job" } }),
        )
        .await;
    let id = started["workflow_id"].as_str().expect("id").to_owned();
    for method in ["workflow.pause", "workflow.resume", "workflow.cancel"] {
        let err = cx.err(method, json!({ "workflow_id": id })).await;
        assert_eq!(
            (err["code"].clone(), reason(&err)),
            (json!(-32001), "not_owner"),
            "{method}: {err}"
        );
    }
    let run = operator
        .ok("workflow.get", json!({ "workflow_id": id }))
        .await;
    assert_eq!(run["status"], "running", "{run}");
    assert_eq!(run["owner"], "operator", "{run}");
    operator
        .ok("workflow.pause", json!({ "workflow_id": id }))
        .await;
    admin
        .ok("workflow.cancel", json!({ "workflow_id": id }))
        .await;

    let resolve = cx
        .err(
            "agents.resolve_escalation",
            json!({ "escalation_id": "any", "decision": "approve" }),
        )
        .await;
    assert_eq!(reason(&resolve), "not_owner", "{resolve}");
}

// REQ-005-FR9-001 ISSUE-60: a CLI junior whose program is `env` answers with its own
// environment only: the profile's `env:` entries, PATH/HOME/LANG and its task id —
// not `GATEWAY_TOKEN`, not a provider key, not any other variable of the server's
// environment. A junior printing without end fails its task `output_too_large` at the
// profile's `max_output_bytes`, and the server keeps serving.
#[tokio::test]
async fn a_cli_junior_sees_only_its_profile_environment_and_its_output_is_capped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let yaml = "agents:\n  drivers:\n    envdump: { cli: [env], env: { GREETING: hello-junior } }\n    flood: { cli: [yes], max_output_bytes: 4096, timeout_s: 60 }\n";
    let grants = grants();
    let _up = Up::with_config(
        dir.path(),
        yaml,
        port,
        OPERATOR,
        &[
            ("ORCHESTRATA_GATEWAY__TOKENS", grants.as_str()),
            ("LOCAL_LLM_KEY", "sk-provider-secret"),
            ("SERVER_ONLY_VARIABLE", "server-only-value"),
        ],
    );
    let mut vz = client(port, VZ).await;
    checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "envdump", "task": "dump" }),
    )
    .await;
    let answers = support::junior_results(&mut vz, 1, 400).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    let text = answers[0].to_string();
    assert!(text.contains("GREETING=hello-junior"), "{text}");
    assert!(text.contains("PATH="), "{text}");
    assert!(text.contains("ORCHESTRATA_TASK_ID="), "{text}");
    for leaked in [
        OPERATOR,
        "GATEWAY_TOKEN",
        "sk-provider-secret",
        "SERVER_ONLY_VARIABLE",
        "ORCHESTRATA_CONFIG",
        "ORCHESTRATA_GATEWAY__TOKENS",
        VZ,
    ] {
        assert!(!text.contains(leaked), "{leaked} leaked: {text}");
    }

    checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "flood", "task": "go" }),
    )
    .await;
    let answers = support::junior_results(&mut vz, 2, 400).await;
    assert_eq!(answers.len(), 2, "{answers:?}");
    let flood = answers[1].to_string();
    assert!(flood.contains("output_too_large"), "{flood}");
    assert!(flood.len() < 4096, "the answer carries no flood: {flood}");
    let mut operator = client(port, OPERATOR).await;
    checked_ok(&mut operator, "cxp.send", support::spec_send()).await;
}

/// Opens `n` connections at once and authenticates each with `token`; returns how
/// many were admitted.
async fn storm(port: u16, token: &'static str, n: usize) -> usize {
    let url = format!("ws://127.0.0.1:{port}/");
    let mut tasks = Vec::with_capacity(n);
    for _ in 0..n {
        let url = url.clone();
        tasks.push(tokio::spawn(async move {
            let mut ws = Ws::connect_within(&url, std::time::Duration::from_secs(60)).await;
            let answer = ws
                .call(
                    "auth.authenticate",
                    json!({ "strategy": "static_token", "token": token }),
                )
                .await;
            let ok = answer.get("result").is_some();
            (ok, ws)
        }));
    }
    let mut admitted = 0;
    let mut open = Vec::with_capacity(n);
    for t in tasks {
        if let Ok((ok, ws)) = t.await {
            admitted += usize::from(ok);
            open.push(ws);
        }
    }
    // Every one is still connected: check one answers, then let them all go.
    if let Some(ws) = open.last_mut() {
        ws.ok("gateway.ping", json!({})).await;
    }
    admitted
}

// REQ-014-167 REQ-014-ERR-015 ISSUE-60: 500 clients connecting and authenticating at
// once to a gateway with `max_clients: 600` are all admitted (the pending budget
// follows max_clients). With `max_pending_auth_per_peer: 2` a third socket still
// authenticating from one address is closed with 1013; with
// `max_connections_per_principal: 2` a principal's third connection is closed with
// 1013 while another principal still gets in.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reconnect_storm_is_admitted_and_shares_are_capped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let up600 = up(dir.path(), "gateway:\n  max_clients: 600\n", port);
    assert_eq!(storm(port, OPERATOR, 500).await, 500);
    drop(up600);

    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let yaml = "gateway:\n  max_pending_auth_per_peer: 2\n  max_connections_per_principal: 2\n";
    let _up = up(dir.path(), yaml, port);
    let url = format!("ws://127.0.0.1:{port}/");
    let mut first = Ws::connect(&url).await;
    let mut second = Ws::connect(&url).await;
    let mut third = Ws::connect(&url).await;
    let closed = third.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1013, "max_pending_auth_per_peer")
    );
    // Authenticating gives the pending slots back; the principal now holds two.
    first.auth(CX).await;
    second.auth(CX).await;
    let mut three = Ws::connect(&url).await;
    let auth = json!({"jsonrpc": "2.0", "id": 1, "method": "auth.authenticate",
                      "params": { "strategy": "static_token", "token": CX }});
    three.send_text(&auth.to_string()).await;
    let closed = three.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1013, "max_connections_per_principal")
    );
    let mut other = client(port, VZ).await;
    other.ok("gateway.ping", json!({})).await;
    first.ok("gateway.ping", json!({})).await;
}
