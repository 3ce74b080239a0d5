//! `orchestrata projections ...` as a real binary on temp data directories.

use std::path::Path;
use std::process::{Command, Output};
use std::sync::Arc;

use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::log::{self, EventLog};
use orchestrata::projection;
use orchestrata_projections::{DecisionIndex, PageRequest, ThreadView};
use orchestrata_schemas::events::Stream;

mod projection_support;

use projection_support::fill;

fn orchestrata(args: &[&str], data: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .output()
        .expect("run orchestrata")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

async fn open(dir: &Path) -> Arc<dyn EventLog> {
    let mut config = LogConfig::sled(dir);
    config.fsync = FsyncPolicy::EveryN(100_000);
    log::open(&config).await.expect("open sled log")
}

/// Fills a log, then releases it for the binary. Returns a thread id and the fold.
async fn prepared(dir: &Path, n: usize) -> (String, ThreadView, u64) {
    let log = open(dir).await;
    let last = fill(&log, 5, n).await;
    log.flush().await.expect("flush");
    let view: ThreadView = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    let thread = view
        .threads(&Default::default(), &PageRequest::first(1))
        .expect("a rebuilt view holds every thread")
        .items
        .first()
        .map(|t| t.thread_id.clone())
        .expect("a thread");
    drop(log);
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    (thread, view, last[&Stream::CxpTraffic])
}

fn status_line<'a>(out: &'a str, view: &str, stream: &str) -> Vec<&'a str> {
    out.lines()
        .find(|l| l.starts_with(view) && l.contains(stream))
        .unwrap_or_else(|| panic!("no {view}/{stream} line in:\n{out}"))
        .split_whitespace()
        .collect()
}

// REQ-004-INTG-003 REQ-004-INTG-011
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rebuild_status_and_show_work_on_a_sled_data_dir() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (thread, view, last) = prepared(dir.path(), 3000).await;

    let out = orchestrata(&["projections", "status"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let before = text(&out.stdout);
    let cols = status_line(&before, "thread", "cxp.traffic");
    assert_eq!(cols[2], "-", "nothing built yet:\n{before}");
    assert_eq!(cols[4], (last + 1).to_string(), "lag = whole stream");
    assert_eq!(
        (cols[5], cols[6]),
        ("0B", "0"),
        "nothing stored yet:\n{before}"
    );
    assert!(before.contains("not built"));

    let out = orchestrata(&["projections", "rebuild"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let stdout = text(&out.stdout);
    for name in ["thread", "session", "volk", "decision"] {
        assert!(stdout.contains(&format!("rebuilt {name}: ")), "{stdout}");
    }
    assert!(
        stdout.contains("events/s, eta"),
        "plain progress lines when not a terminal:\n{stdout}"
    );

    let out = orchestrata(&["projections", "status"], dir.path());
    let after = text(&out.stdout);
    let cols = status_line(&after, "thread", "cxp.traffic");
    assert_eq!(
        (cols[2], cols[3], cols[4]),
        (last.to_string().as_str(), last.to_string().as_str(), "0"),
        "{after}"
    );
    // ISSUE-18: each view's stored size and key count, and the store's size on disk.
    assert!(
        cols[5].ends_with("KiB") || cols[5].ends_with("MiB"),
        "the thread view of {last} events takes KiBs or MiBs:\n{after}"
    );
    let keys: u64 = cols[6].parse().expect("key count");
    assert!(
        keys > 3,
        "chunks, manifest and checkpoint: {keys} keys\n{after}"
    );
    assert!(after.contains("store on disk: "), "{after}");

    let out = orchestrata(
        &["projections", "show", "--view", "thread", "--id", &thread],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let expected = view.thread(&thread).expect("thread");
    assert_eq!(shown["thread"]["thread_id"], thread.as_str());
    assert_eq!(shown["thread"]["message_count"], expected.message_count);
    assert_eq!(
        shown["packets"].as_array().map(Vec::len),
        Some(expected.packets.len())
    );
}

// ISSUE-15: the store keeps no decision bodies (they are in the log), yet `projections
// show --view decision` prints the whole index, every body included, after a rebuild
// stored it: what a fold of the log holds
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_whole_decision_index_is_shown_with_its_bodies_from_the_log() {
    let dir = tempfile::tempdir().expect("temp dir");
    prepared(dir.path(), 1500).await;
    let out = orchestrata(
        &["projections", "rebuild", "--view", "decision"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = orchestrata(&["projections", "show", "--view", "decision"], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let log = open(dir.path()).await;
    let whole: DecisionIndex = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    assert!(whole.len() > 20, "{} decisions", whole.len());
    assert_eq!(shown, serde_json::to_value(&whole).expect("JSON"));
}

// REQ-004-US-008-005 REQ-004-INTG-011
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn until_and_as_of_fold_the_past() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, _, _) = prepared(dir.path(), 1500).await;
    let out = orchestrata(
        &[
            "projections",
            "rebuild",
            "--view",
            "thread",
            "--until",
            "20",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = orchestrata(&["projections", "status"], dir.path());
    let stdout = text(&out.stdout);
    assert_eq!(
        status_line(&stdout, "thread", "cxp.traffic")[2],
        "20",
        "{stdout}"
    );
    assert_eq!(
        status_line(&stdout, "session", "session.events")[2],
        "-",
        "only the thread view was rebuilt"
    );

    let out = orchestrata(
        &["projections", "show", "--view", "thread", "--as-of", "20"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let log = open(dir.path()).await;
    let past: ThreadView = projection::rebuild(log.as_ref(), Some(20), &mut |_| {})
        .await
        .expect("rebuild");
    assert_eq!(shown, serde_json::to_value(&past).expect("JSON"));
    assert_eq!(past.checkpoint().last(Stream::CxpTraffic), Some(20));

    // One thread as of a sequence before the stored view's (20): folded into a scratch
    // store beside the views, which is gone afterwards; stdout holds only the answer.
    let older: ThreadView = projection::rebuild(log.as_ref(), Some(12), &mut |_| {})
        .await
        .expect("rebuild");
    let thread = older
        .threads(&Default::default(), &PageRequest::first(1))
        .expect("page")
        .items[0]
        .clone();
    let id = thread.thread_id.as_str();
    drop(log); // the data directory's lock, for the command
    let out = orchestrata(
        &[
            "projections",
            "show",
            "--view",
            "thread",
            "--id",
            id,
            "--as-of",
            "12",
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON only");
    let packets: Vec<_> = older.thread_packets(id).collect();
    assert_eq!(
        shown["thread"],
        serde_json::to_value(&thread).expect("JSON")
    );
    assert_eq!(
        shown["packets"],
        serde_json::to_value(&packets).expect("JSON")
    );
    let left: Vec<_> = std::fs::read_dir(dir.path())
        .expect("data dir")
        .filter_map(|e| e.ok())
        .filter(|e| e.file_name().to_string_lossy().starts_with(".show-as-of-"))
        .collect();
    assert!(left.is_empty(), "scratch stores left behind: {left:?}");
}

// REQ-004-INTG-011
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_arguments_fail_with_clear_messages() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (_, _, _) = prepared(dir.path(), 200).await;
    let out = orchestrata(&["projections", "rebuild", "--view", "nope"], dir.path());
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("unknown view `nope`"),
        "{}",
        text(&out.stderr)
    );
    let out = orchestrata(
        &["projections", "show", "--view", "thread", "--id", "missing"],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("no thread `missing`"),
        "{}",
        text(&out.stderr)
    );
    let out = orchestrata(
        &[
            "projections",
            "show",
            "--view",
            "decision",
            "--id",
            "not-a-uuid",
        ],
        dir.path(),
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("not a decision id"),
        "{}",
        text(&out.stderr)
    );
    let out = orchestrata(
        &["projections", "show", "--view", "volk", "--id", "U:Ox"],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let shown: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(shown["volk"]["alias"], "U:Ox");
}

// The offline commands' output read by a reader that stops early (`| head -1`): each
// command ends quietly with success once its stdout is closed — no panic, no error —
// whatever it was writing (JSON lines, a table, one large JSON document). Every output
// here is far larger than a pipe's buffer, so the command is still writing when the
// reader goes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commands_end_quietly_when_their_reader_stops_early() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;

    let dir = tempfile::tempdir().expect("temp dir");
    let (_, _, _) = prepared(dir.path(), 6_000).await;
    for args in [
        &["replay", "--stream", "cxp.traffic"][..],
        &["audit", "decisions", "--json"],
        &["projections", "show", "--view", "thread"],
    ] {
        let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
            .args(args)
            .arg("--data-dir")
            .arg(dir.path())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("run orchestrata");
        let mut first = String::new();
        BufReader::new(child.stdout.take().expect("stdout"))
            .read_line(&mut first)
            .expect("a first line");
        // The reader is dropped here: the pipe closes with most of the output unread.
        let out = child.wait_with_output().expect("wait");
        assert!(!first.is_empty(), "{args:?}: no output");
        assert!(
            out.status.success() && out.stderr.is_empty(),
            "{args:?}: {:?}, stderr {}",
            out.status,
            text(&out.stderr)
        );
    }
}
