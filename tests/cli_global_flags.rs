//! The CLI's global flags (`--data-dir`, `--kafka`, `--config`) are taken before or after
//! any subcommand, the same way for every subcommand: the real binary is run with the
//! flag in both positions over a real sled log (and a real Kafka-protocol broker for
//! `--kafka`), and both runs must succeed with the same output.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Output, Stdio};

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata_schemas::events::kernel::KernelStopped;
use orchestrata_schemas::events::EventRecord;

fn run(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(args)
        .env_remove("ORCHESTRATA_CONFIG")
        .output()
        .expect("run orchestrata")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A sled log in `dir` holding one kernel event.
async fn seed(dir: &Path) {
    let log = orchestrata::log::open(&LogConfig::sled(dir))
        .await
        .expect("open sled log");
    let record = EventRecord::new(
        "test",
        "node-a",
        KernelStopped {
            node: "node-a".into(),
            reason: "seeded".into(),
            clean: true,
        },
        Utc::now(),
    );
    log.append(&record).await.expect("append");
}

/// Runs `words` with `flag value` once right after the binary name and once at the end;
/// both must succeed. Returns both stdouts, joined (callers check what each must hold).
fn both_positions(words: &[&str], flag: &str, value: &str) -> String {
    let mut before = vec![flag, value];
    before.extend_from_slice(words);
    let mut after = words.to_vec();
    after.extend_from_slice(&[flag, value]);
    let (b, a) = (run(&before), run(&after));
    assert!(b.status.success(), "{before:?} failed: {}", text(&b.stderr));
    assert!(a.status.success(), "{after:?} failed: {}", text(&a.stderr));
    let (b, a) = (text(&b.stdout), text(&a.stdout));
    assert_eq!(
        b.lines().count(),
        a.lines().count(),
        "{before:?} and {after:?} printed different things:\n{b}\n---\n{a}"
    );
    format!("{b}{a}")
}

// ISSUE-14: CLI global flags — `--data-dir` before or after every subcommand that reads
// the log (log info, replay, projections rebuild/status/show, audit decisions/verify).
#[tokio::test]
async fn data_dir_is_taken_before_or_after_every_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    seed(&data).await;
    let d = data.to_str().expect("utf-8 path");
    let views = dir.path().join("views");
    let v = views.to_str().expect("utf-8 path");
    let info = both_positions(&["log", "info"], "--data-dir", d);
    assert!(info.contains(d), "log info names the data dir: {info}");
    assert!(info.contains("kernel.events"), "{info}");
    let replay = both_positions(&["replay", "--stream", "kernel.events"], "--data-dir", d);
    assert!(replay.contains("seeded"), "{replay}");
    both_positions(
        &["projections", "rebuild", "--views-dir", v],
        "--data-dir",
        d,
    );
    let status = both_positions(
        &["projections", "status", "--views-dir", v],
        "--data-dir",
        d,
    );
    assert!(status.contains(d), "{status}");
    both_positions(
        &["projections", "show", "--view", "volk", "--views-dir", v],
        "--data-dir",
        d,
    );
    // The command of the issue: `audit decisions --data-dir D` was `unexpected argument`.
    both_positions(&["audit", "decisions", "--json"], "--data-dir", d);
    both_positions(&["audit", "verify"], "--data-dir", d);
    // Between a subcommand and its own subcommand too.
    let mid = run(&["audit", "--data-dir", d, "decisions", "--json"]);
    assert!(mid.status.success(), "{}", text(&mid.stderr));
}

// ISSUE-14: CLI global flags — `up` takes `--data-dir` in both positions (it opens that
// log: its banner names it).
#[test]
fn up_takes_data_dir_before_or_after_the_subcommand() {
    for before in [true, false] {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path().join("data");
        let d = d.to_str().expect("utf-8 path");
        let args: Vec<&str> = if before {
            vec!["--data-dir", d, "up", "--listen", "127.0.0.1:0"]
        } else {
            vec!["up", "--listen", "127.0.0.1:0", "--data-dir", d]
        };
        let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
            .args(&args)
            .env_remove("ORCHESTRATA_CONFIG")
            .env("GATEWAY_TOKEN", "cli-flags-token")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start orchestrata up");
        let mut reader = BufReader::new(child.stdout.take().expect("stdout"));
        let mut line = String::new();
        let mut banner = String::new();
        while reader.read_line(&mut line).expect("read banner") > 0 {
            banner.push_str(&line);
            if line.contains("log ready at") {
                break;
            }
            line.clear();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert!(
            banner.contains("log ready at") && banner.contains(d),
            "{args:?}: the banner names the data dir: {banner}"
        );
    }
}

// ISSUE-14: CLI global flags — `--config` before or after `config print` and a log
// subcommand; the file's `log.data_dir` is the log opened.
#[tokio::test]
async fn config_is_taken_before_or_after_the_subcommand() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("from-config");
    seed(&data).await;
    let file = dir.path().join("orchestrata.yaml");
    std::fs::write(
        &file,
        format!(
            "log:\n  data_dir: {}\ngateway:\n  max_clients: 7\n",
            data.display()
        ),
    )
    .expect("write config");
    let f = file.to_str().expect("utf-8 path");
    let printed = both_positions(&["config", "print"], "--config", f);
    assert!(printed.contains("max_clients: 7"), "{printed}");
    let info = both_positions(&["log", "info"], "--config", f);
    assert!(
        info.contains(data.to_str().expect("utf-8")),
        "the config's data dir is opened: {info}"
    );
}

// ISSUE-14: CLI global flags — `--kafka` in both positions opens the broker's log, and
// `--kafka` with `--data-dir` is refused in any order.
#[test]
fn kafka_is_taken_before_or_after_and_conflicts_with_data_dir_anywhere() {
    let brokers = support::kafka_brokers();
    let info = both_positions(&["log", "info"], "--kafka", &brokers.address);
    assert!(info.contains(&brokers.address), "{info}");
    for args in [
        vec!["--kafka", "h:1", "log", "info", "--data-dir", "x"],
        vec!["--data-dir", "x", "log", "info", "--kafka", "h:1"],
    ] {
        let out = run(&args);
        assert!(!out.status.success(), "{args:?} must be refused");
        assert!(
            text(&out.stderr).contains("cannot be used with"),
            "{args:?}: {}",
            text(&out.stderr)
        );
    }
}
