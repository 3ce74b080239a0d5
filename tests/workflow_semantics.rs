//! How workflow runs end (issue 16, item 5), through the gateway: a cancel stops the
//! junior's processes in the middle of its task and leaves no step running; a junior
//! that keeps failing is replaced up to `junior_retries` times, then the run fails and
//! the senior escalates to the human queue (spec 005 T17.4). Real sled log, kernel
//! under governance, gateway, WebSocket clients, junior processes.

mod support;

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};
use support::workflows::{client, wait_done, Stack, FIXING_CODER};
use support::ws::{Ws, TOKEN};

/// A junior that starts a long `sleep` child, writes the child's pid next to the code
/// file and waits: alive until someone ends its process group.
pub const SLEEPY_CODER: &str = r#"cat > /dev/null
sleep 120 &
echo $! > "$ORCHESTRATA_FILE.pid"
wait"#;

/// Waits (10 s at most) for the pid file the sleepy junior writes.
async fn junior_pid(pid_file: &Path) -> i32 {
    for _ in 0..400 {
        if let Ok(text) = std::fs::read_to_string(pid_file) {
            if let Ok(pid) = text.trim().parse() {
                return pid;
            }
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the junior never wrote {}", pid_file.display());
}

/// Waits (10 s at most) until `pid` is gone; returns whether it went.
async fn gone(pid: i32) -> bool {
    for _ in 0..400 {
        if !support::process_alive(pid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    false
}

async fn start(ws: &mut Ws, task: &str) -> String {
    ws.ok(
        "workflow.start",
        json!({ "name": "pipeline", "params": { "task": task } }),
    )
    .await["workflow_id"]
        .as_str()
        .expect("workflow_id")
        .to_owned()
}

fn steps(run: &Value) -> Vec<(String, String)> {
    run["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .map(|s| {
            (
                s["step"].as_str().unwrap_or_default().to_owned(),
                s["status"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// `(event_type, alias, reason)` of every `volk.lifecycle` event.
async fn lifecycle(ws: &mut Ws) -> Vec<(String, String, String)> {
    support::replay(ws, "volk.lifecycle")
        .await
        .iter()
        .map(|e| {
            let field = |k: &str| e["payload"][k].as_str().unwrap_or_default().to_owned();
            (
                e["event_type"].as_str().unwrap_or_default().to_owned(),
                field("alias"),
                field("reason"),
            )
        })
        .collect()
}

fn pair(a: &str, b: &str) -> (String, String) {
    (a.to_owned(), b.to_owned())
}

// REQ-014-079 ISSUE-16: workflow.cancel in the middle of a junior's task ends the
// junior's processes (its child too), terminates the junior with reason `cancelled`,
// and the run shows no step running.
#[tokio::test]
async fn cancel_stops_the_junior_in_flight_and_leaves_no_step_running() {
    let s = Stack::start(SLEEPY_CODER, 0).await;
    let mut ws = client(&s, TOKEN).await;
    let id = start(&mut ws, "sleep on it").await;
    let pid_file: PathBuf = s.dir.path().join(format!("{id}.out.pid"));
    let pid = junior_pid(&pid_file).await;
    assert!(
        support::process_alive(pid),
        "the junior's child runs before the cancel"
    );
    ws.ok(
        "workflow.cancel",
        json!({ "workflow_id": id, "reason": "changed my mind" }),
    )
    .await;
    let run = wait_done(&mut ws, &id).await;
    assert_eq!(run["status"], "cancelled", "{run}");
    assert_eq!(
        steps(&run),
        [pair("U:Cx", "succeeded"), pair("U:Vz", "cancelled")],
        "{run}"
    );
    assert!(gone(pid).await, "the junior's child {pid} still runs");
    let mut terminated = Vec::new();
    for _ in 0..400 {
        terminated = lifecycle(&mut ws)
            .await
            .into_iter()
            .filter(|(t, _, _)| t == "terminated")
            .collect();
        if !terminated.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(terminated.len(), 1, "{terminated:?}");
    assert_eq!(terminated[0].2, "cancelled", "{terminated:?}");
    let junior = terminated[0].1.clone();
    let node = s.workflows.agents().node(&junior).await.expect("tree");
    assert!(node.is_some_and(|n| !n.live), "{junior} is still live");
}

/// Fails every attempt, saying which.
const FAILING_CODER: &str = r#"cat > /dev/null
echo "attempt $ORCHESTRATA_ATTEMPT: no luck" >&2
exit 3"#;

// REQ-005-US-006-001 REQ-005-FR7-001 ISSUE-16: spec 005 T17.4 — a junior that fails is
// replaced by fresh ones up to junior_retries; then the run is `failed` at its step
// and the senior escalates hop by hop to the human queue with the run's context.
#[tokio::test]
async fn a_junior_failing_after_its_retries_fails_the_run_and_reaches_the_human_queue() {
    let s = Stack::start(FAILING_CODER, 2).await;
    let mut ws = client(&s, TOKEN).await;
    let id = start(&mut ws, "impossible").await;
    let run = wait_done(&mut ws, &id).await;
    assert_eq!(run["status"], "failed", "{run}");
    assert_eq!(
        steps(&run),
        [pair("U:Cx", "succeeded"), pair("U:Vz", "failed")],
        "{run}"
    );
    assert_eq!(run["result"]["step"], "U:Vz", "{run}");
    let error = run["result"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("failed 3 time(s)") && error.contains("attempt 3: no luck"),
        "{error}"
    );
    let events = lifecycle(&mut ws).await;
    let count = |kind: &str| events.iter().filter(|(t, _, _)| t == kind).count();
    assert_eq!(count("spawned"), 3, "three fresh juniors: {events:?}");
    assert_eq!(count("terminated"), 3, "{events:?}");
    // REQ-014-022: each junior whose driver failed was recorded unhealthy first.
    assert_eq!(count("health_changed"), 3, "{events:?}");
    let queue = ws.ok("agents.escalations", json!({})).await;
    assert_eq!(queue["total"], 1, "{queue}");
    let entry = &queue["escalations"][0];
    assert_eq!(entry["path"], json!(["U:Vz", "U:Ox", "human"]), "{entry}");
    assert_eq!(entry["context"]["workflow_id"], id, "{entry}");
    assert_eq!(entry["context"]["step"], "U:Vz", "{entry}");
}

/// Fails its first attempt of each round, then behaves like the fixing coder.
fn flaky_coder() -> String {
    format!("if [ \"$ORCHESTRATA_ATTEMPT\" = 1 ]; then cat > /dev/null; exit 1; fi\n{FIXING_CODER}")
}

// REQ-005-US-008-001 ISSUE-16: a failed junior is replaced by a fresh one and the run
// completes; the step reports how many juniors it took.
#[tokio::test]
async fn a_failed_junior_is_replaced_and_the_run_completes() {
    let s = Stack::start(&flaky_coder(), 1).await;
    let mut ws = client(&s, TOKEN).await;
    let id = start(&mut ws, "write main.rs").await;
    let run = wait_done(&mut ws, &id).await;
    assert_eq!(run["status"], "completed", "{run}");
    assert_eq!(run["steps"][1]["output"]["attempts"], 2, "{run}");
    assert_eq!(run["result"]["review"]["status"], "passed", "{run}");
    let queue = ws.ok("agents.escalations", json!({})).await;
    assert_eq!(queue["total"], 0, "{queue}");
}
