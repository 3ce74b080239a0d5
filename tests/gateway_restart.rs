//! `orchestrata up` serves the gateway; events replayed after a restart carry the same
//! sequences and epoch, and SIGTERM closes clients with 1001 and exits 0.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::ws::Ws;

const TOKEN: &str = "restart-test-token";

fn start_up(data: &Path, port: u16) -> Child {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["up", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
        .arg(data)
        .env("GATEWAY_TOKEN", TOKEN)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("start orchestrata up");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let line = lines
            .next()
            .expect("up prints its banner")
            .expect("read line");
        assert!(
            !line.contains("gateway token"),
            "no token is generated when GATEWAY_TOKEN is set"
        );
        if line.contains("gateway listening on") {
            break;
        }
        assert!(Instant::now() < deadline, "up did not start the gateway");
    }
    std::thread::spawn(move || for _ in lines {});
    child
}

fn terminate(child: &mut Child) -> std::process::ExitStatus {
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: sends SIGTERM to our own child.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().expect("wait") {
            return status;
        }
        assert!(Instant::now() < deadline, "up did not stop on SIGTERM");
        std::thread::sleep(Duration::from_millis(50));
    }
}

async fn replay(ws: &mut Ws, topic: &str) -> Vec<(u64, String, String)> {
    let r = ws
        .ok(
            "gateway.replay",
            json!({"topic": topic, "sequence_from": 0}),
        )
        .await;
    r["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e: &Value| {
            (
                e["sequence"].as_u64().expect("sequence"),
                e["epoch"].as_str().expect("epoch").to_owned(),
                e["event_id"].as_str().expect("event id").to_owned(),
            )
        })
        .collect()
}

// REQ-014-135 REQ-014-131 REQ-014-166 REQ-014-170
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_replayed_after_a_restart_keep_their_sequences_and_epoch() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let port = support::free_port();
    let url = format!("ws://127.0.0.1:{port}/");

    let mut up = start_up(&data, port);
    let mut ws = Ws::connect(&url).await;
    ws.auth(TOKEN).await;
    let kernel_before = replay(&mut ws, "kernel.events").await;
    let presence_before = replay(&mut ws, "gateway.presence").await;
    assert_eq!(kernel_before.len(), 1, "kernel started");
    assert!(!presence_before.is_empty(), "our connect is on the log");
    assert!(terminate(&mut up).success(), "up exits 0 on SIGTERM");
    let closed = ws.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1001, "server_shutdown")
    );

    let mut up = start_up(&data, port);
    let mut ws = Ws::connect(&url).await;
    ws.auth(TOKEN).await;
    let kernel_after = replay(&mut ws, "kernel.events").await;
    let presence_after = replay(&mut ws, "gateway.presence").await;
    assert_eq!(
        kernel_after[..1],
        kernel_before[..],
        "same sequence, epoch and event"
    );
    assert_eq!(
        kernel_after.iter().map(|e| e.0).collect::<Vec<_>>(),
        [0, 1, 2],
        "started, stopped, started again"
    );
    assert_eq!(
        presence_after[..presence_before.len()],
        presence_before[..],
        "presence history unchanged"
    );
    assert!(
        presence_after.iter().all(|e| e.1 == presence_before[0].1),
        "one epoch"
    );
    assert!(terminate(&mut up).success());
}
