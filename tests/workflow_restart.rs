//! Runs left in progress by a stop or a crash of `orchestrata up` (issue 16, item 5):
//! at the next start every one of them is closed `failed` ("interrupted") with its
//! juniors terminated, so none stays `running`; a stop by SIGTERM also ends the
//! junior's processes. A real `up` process (twice over one data dir), a config file
//! naming a coding junior script, real WebSocket clients.

mod support;

use std::path::Path;
use std::time::Duration;

use serde_json::{json, Value};
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "workflow-restart-test-token";

/// Starts a `sleep` child, writes its pid next to the code file, waits.
const SLEEPY_CODER: &str =
    "#!/bin/sh\ncat > /dev/null\nsleep 120 &\necho $! > \"$ORCHESTRATA_FILE.pid\"\nwait\n";

fn config(dir: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let coder = dir.join("coder.sh");
    std::fs::write(&coder, SLEEPY_CODER).expect("write coder");
    std::fs::set_permissions(&coder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let file = dir.join("orchestrata.yaml");
    let yaml = format!(
        "agents:\n  pipeline:\n    coder: [{}]\n    workdir: {}\n",
        coder.display(),
        dir.join("work").display()
    );
    std::fs::write(&file, yaml).expect("write config");
    file
}

fn up(data: &Path, config: &Path, port: u16) -> Up {
    let config = config.display().to_string();
    Up::start(data, port, TOKEN, &[], &[("ORCHESTRATA_CONFIG", &config)])
}

async fn client(port: u16) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    ws
}

/// Starts a run and returns its id and its junior's child pid once it runs.
async fn start_run(port: u16, work: &Path) -> (String, i32) {
    let mut ws = client(port).await;
    let id = ws
        .ok(
            "workflow.start",
            json!({ "name": "pipeline", "params": { "task": "long job" } }),
        )
        .await["workflow_id"]
        .as_str()
        .expect("workflow_id")
        .to_owned();
    let pid_file = work.join(format!("{id}.out.pid"));
    for _ in 0..800 {
        if let Some(pid) = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|t| t.trim().parse().ok())
        {
            return (id, pid);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("the junior of {id} never started");
}

async fn run_state(port: u16, id: &str) -> Value {
    client(port)
        .await
        .ok("workflow.get", json!({ "workflow_id": id }))
        .await
}

fn kill(pid: i32) {
    // SAFETY: kill only sends a signal; a stale pid fails with ESRCH.
    unsafe {
        libc::kill(pid, libc::SIGKILL);
    }
}

/// The run was closed at start: failed, interrupted, nothing running.
fn assert_interrupted(run: &Value) {
    assert_eq!(run["status"], "failed", "{run}");
    let error = run["result"]["error"].as_str().unwrap_or_default();
    assert!(error.starts_with("interrupted"), "{run}");
    let running = run["steps"]
        .as_array()
        .expect("steps")
        .iter()
        .filter(|s| s["status"] == "running")
        .count();
    assert_eq!(running, 0, "{run}");
}

// REQ-014-077 ISSUE-16: a crash (SIGKILL) and a stop (SIGTERM) in the middle of a run:
// at the next start the run is closed `failed` and its junior terminated
// (`interrupted`); the SIGTERM stop ended the junior's processes itself.
#[tokio::test]
async fn runs_interrupted_by_a_crash_or_a_stop_are_closed_at_the_next_start() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let work = dir.path().join("work");
    let config = config(dir.path());
    let port = support::free_port();

    let mut first = up(&data, &config, port);
    let (crashed, crashed_pid) = start_run(port, &work).await;
    first.crash();
    // Nothing is left of the crashed server to end its junior's children: ours to clean.
    kill(crashed_pid);

    let mut second = up(&data, &config, port);
    let said = second.started.join("\n");
    assert!(
        said.contains("workflows: closed 1 run(s) interrupted by the last stop")
            && said.contains(&crashed),
        "{said}"
    );
    assert_interrupted(&run_state(port, &crashed).await);
    let (stopped, stopped_pid) = start_run(port, &work).await;
    assert!(second.stop(), "up exits cleanly on SIGTERM");
    let mut ended = false;
    for _ in 0..400 {
        if !support::process_alive(stopped_pid) {
            ended = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    if !ended {
        kill(stopped_pid);
    }
    assert!(ended, "the junior's child outlived a SIGTERM stop");

    let _third = up(&data, &config, port);
    assert_interrupted(&run_state(port, &stopped).await);
    assert_interrupted(&run_state(port, &crashed).await);
    let mut ws = client(port).await;
    let lifecycle = ws
        .ok(
            "gateway.replay",
            json!({ "topic": "volk.lifecycle", "count": 1000 }),
        )
        .await;
    let reasons: Vec<&str> = lifecycle["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event_type"] == "terminated")
        .filter_map(|e| e["payload"]["reason"].as_str())
        .collect();
    assert_eq!(reasons, ["interrupted", "interrupted"], "{lifecycle}");
}
