//! The `orchestrata` binary against real temp directories.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

mod support;

fn orchestrata(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("run orchestrata")
}

fn start_up(data: &Path) -> (Child, String, BufReader<std::process::ChildStdout>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .arg("up")
        .arg("--data-dir")
        .arg(data)
        .args(["--listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start orchestrata up");
    let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
    let mut banner = String::new();
    // Up to the kernel's start line (log, governance and kernel each print one).
    for _ in 0..10 {
        reader.read_line(&mut banner).expect("read banner");
        if banner.contains("kernel started") {
            break;
        }
    }
    (child, banner, reader)
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
        assert!(
            Instant::now() < deadline,
            "orchestrata up did not stop on SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// REQ-014-131 REQ-014-135
#[test]
fn up_records_start_and_stop_and_info_and_replay_show_them() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (mut child, banner, mut rest) = start_up(&data);
    assert!(banner.contains("log ready at"), "{banner}");
    assert!(banner.contains("kernel.events"), "{banner}");
    assert!(banner.contains("Ctrl-C"), "{banner}");

    // While `up` runs, the directory is locked and other commands say so.
    let locked = orchestrata(&["log", "info"], &data);
    assert!(!locked.status.success());
    assert!(
        stderr(&locked).contains("locked by another process"),
        "{}",
        stderr(&locked)
    );

    assert!(terminate(&mut child).success(), "up exits 0 on SIGTERM");
    let mut goodbye = String::new();
    while !goodbye.contains("kernel stopped") && rest.read_line(&mut goodbye).expect("read") > 0 {}
    assert!(goodbye.contains("kernel stopped; log flushed"), "{goodbye}");

    let info = orchestrata(&["log", "info"], &data);
    assert!(info.status.success(), "{}", stderr(&info));
    let table = stdout(&info);
    let kernel = table
        .lines()
        .find(|l| l.starts_with("kernel.events"))
        .expect("kernel.events row");
    let cols: Vec<&str> = kernel.split_whitespace().collect();
    assert_eq!(&cols[2..], ["0", "1", "2"], "first, last, count: {kernel}");
    let empty = table
        .lines()
        .find(|l| l.starts_with("cxp.traffic"))
        .expect("row");
    assert!(
        empty
            .split_whitespace()
            .eq(["cxp.traffic", cols[1], "-", "-", "0"]),
        "{empty}"
    );

    let replay = orchestrata(
        &["replay", "--stream", "kernel.events", "--from", "0"],
        &data,
    );
    assert!(replay.status.success(), "{}", stderr(&replay));
    let events: Vec<serde_json::Value> = stdout(&replay)
        .lines()
        .map(|l| serde_json::from_str(l).expect("JSON line"))
        .collect();
    assert_eq!(events.len(), 2);
    assert_eq!(events[0]["event_type"], "started");
    assert_eq!(events[0]["sequence"], 0);
    assert_eq!(events[0]["stream"], "kernel.events");
    assert_eq!(events[0]["epoch"], cols[1]);
    assert_eq!(events[0]["payload"]["backend"], "sled");
    assert_eq!(events[1]["event_type"], "stopped");
    assert_eq!(events[1]["payload"]["clean"], true);

    let only_second = orchestrata(
        &[
            "replay",
            "--stream",
            "kernel.events",
            "--from",
            "1",
            "--to",
            "1",
        ],
        &data,
    );
    assert_eq!(stdout(&only_second).lines().count(), 1);
}

// REQ-014-128
#[test]
fn replay_rejects_unknown_streams_listing_the_known_ones() {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = orchestrata(
        &["replay", "--stream", "kernel", "--from", "0"],
        &dir.path().join("d"),
    );
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("unknown stream `kernel`"), "{err}");
    assert!(
        err.contains("kernel.events") && err.contains("cxp.traffic"),
        "{err}"
    );
}

// REQ-014-134
#[test]
fn replay_rejects_an_inverted_range_and_a_bad_config_file() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("d");
    let out = orchestrata(
        &[
            "replay",
            "--stream",
            "kernel.events",
            "--from",
            "5",
            "--to",
            "2",
        ],
        &data,
    );
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("--from 5 is after --to 2"),
        "{}",
        stderr(&out)
    );

    let config = dir.path().join("bad.yaml");
    std::fs::write(&config, "log:\n  fsync: sometimes\n").expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["log", "info", "--config"])
        .arg(&config)
        .output()
        .expect("run");
    assert!(!out.status.success());
    assert!(stderr(&out).contains("fsync"), "{}", stderr(&out));
}

// REQ-014-121
#[test]
fn config_file_chooses_the_data_dir_and_flags_override_it() {
    let dir = tempfile::tempdir().expect("temp dir");
    let from_file = dir.path().join("from-file");
    let config = dir.path().join("orchestrata.yaml");
    std::fs::write(
        &config,
        format!(
            "gateway:\n  port: 8765\nlog:\n  data_dir: {}\n  fsync: every_n:10\n  retention:\n    cxp.traffic: {{ max_events: 100 }}\n",
            from_file.display()
        ),
    )
    .expect("write config");
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["log", "info", "--config"])
        .arg(&config)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains(&from_file.display().to_string()));
    assert!(from_file.exists(), "the file's data_dir was used");

    let flag = dir.path().join("from-flag");
    let out = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["log", "info", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&flag)
        .output()
        .expect("run");
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains(&flag.display().to_string()),
        "flag wins"
    );
}

// REQ-014-130 REQ-014-131
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_follow_prints_stored_then_live_events_from_kafka() {
    use orchestrata::config::LogConfig;
    use orchestrata_schemas::events::kernel::KernelStarted;
    use orchestrata_schemas::events::EventRecord;

    let brokers = support::kafka_brokers();
    let prefix = support::unique_prefix();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = prefix.clone();
    let log = orchestrata::log::open(&config)
        .await
        .expect("open kafka log");
    let record = |n: u32| {
        EventRecord::new(
            "test",
            format!("node-{n}"),
            KernelStarted {
                node: format!("node-{n}"),
                version: "0".into(),
                backend: "kafka".into(),
            },
            chrono::Utc::now(),
        )
    };
    for n in 0..2 {
        log.append(&record(n)).await.expect("append stored");
    }
    let config_file = tempfile::NamedTempFile::new().expect("temp file");
    std::fs::write(
        config_file.path(),
        format!("log:\n  topic_prefix: {prefix}\n"),
    )
    .expect("write");
    let mut follower = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args([
            "replay",
            "--stream",
            "kernel.events",
            "--from",
            "0",
            "--to",
            "3",
            "--follow",
        ])
        .args(["--kafka", &brokers.address, "--config"])
        .arg(config_file.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start follower");
    let stdout = follower.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let first = tokio::task::spawn_blocking(move || {
        let line = lines.next().expect("a line").expect("read");
        (line, lines)
    })
    .await
    .expect("reader");
    for n in 2..4 {
        log.append(&record(n)).await.expect("append live");
    }
    let (first, rest) = first;
    let mut all = vec![first];
    all.extend(
        tokio::task::spawn_blocking(move || rest.map(|l| l.expect("read")).collect::<Vec<_>>())
            .await
            .expect("reader"),
    );
    // Its stdout reached EOF: reap the follower.
    let _ = follower.wait();
    let keys: Vec<(u64, String)> = all
        .iter()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).expect("json");
            (
                v["sequence"].as_u64().expect("seq"),
                v["key"].as_str().expect("key").to_owned(),
            )
        })
        .collect();
    let expected: Vec<(u64, String)> = (0..4).map(|n| (n, format!("node-{n}"))).collect();
    assert_eq!(
        keys, expected,
        "stored then live, no gap, no duplicate, stops at --to"
    );
}
