//! Crash tests: a child process appends with fsync on every append and is SIGKILLed
//! mid-stream; every acknowledged event must be there after reopening, and events
//! appended together across streams are found together or not at all.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::Arc;

use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::log::{self, EventLog};
use orchestrata_schemas::events::Stream;

/// Runs `orchestrata __crash-append --writers 4 [extra] --data-dir DATA`, reads its
/// `ack <sequence> <event id>` lines until `until` acknowledgements, SIGKILLs it
/// mid-stream (its four writers are appending right now) and returns the
/// acknowledgements in the order printed.
fn crash_child(data: &Path, extra: &[&str], until: usize) -> Vec<(u64, String)> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["__crash-append", "--writers", "4"])
        .args(extra)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the appending child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut acked = Vec::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child output");
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some("ack"), "unexpected child line {line:?}");
        let sequence: u64 = words.next().and_then(|s| s.parse().ok()).expect("sequence");
        let event_id = words.next().expect("event id").to_owned();
        acked.push((sequence, event_id));
        if acked.len() == until {
            child.kill().expect("SIGKILL the child");
            break;
        }
    }
    child.wait().expect("reap the child");
    acked
}

/// The log in `data`, reopened after the crash.
async fn reopen(data: &Path) -> Arc<dyn EventLog> {
    let mut config = LogConfig::sled(data);
    config.fsync = FsyncPolicy::EveryAppend;
    log::open(&config).await.expect("reopen after the crash")
}

// REQ-014-135 REQ-014-131
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_appends_survive_sigkill_and_sequences_continue() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut acked: BTreeMap<u64, String> = BTreeMap::new();
    for (sequence, event_id) in crash_child(&data, &[], 300) {
        assert!(
            acked.insert(sequence, event_id).is_none(),
            "sequence {sequence} acknowledged twice"
        );
    }
    let log = reopen(&data).await;
    let stream = Stream::KernelEvents;
    let bounds = log.bounds(stream).await.expect("bounds");
    let last = bounds.last.expect("events survived");
    let stored = log
        .read(stream, 0, None, usize::MAX)
        .await
        .expect("read everything back");
    let sequences: Vec<u64> = stored.iter().map(|e| e.sequence).collect();
    assert_eq!(
        sequences,
        (0..=last).collect::<Vec<_>>(),
        "in order, no gaps"
    );
    for (sequence, event_id) in &acked {
        let envelope = stored
            .get(usize::try_from(*sequence).expect("fits"))
            .unwrap_or_else(|| {
                panic!("acknowledged sequence {sequence} lost (last stored {last})")
            });
        assert_eq!(&envelope.record.event_id.to_string(), event_id);
    }
    let next = log
        .append(&stored[0].record.clone())
        .await
        .expect("append after crash");
    assert_eq!(
        next,
        last + 1,
        "appends continue after the last stored event"
    );
}

// ISSUE-17: commands atomic on sled — pairs of events on two streams (`kernel.events`
// and `cxp.traffic`) appended as one unit by four concurrent writers, the process
// SIGKILLed mid-stream: after reopening, every acknowledged pair is there and no pair is
// found half stored (each stream's events have their partner in the other).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pairs_across_streams_survive_sigkill_whole_or_not_at_all() {
    use orchestrata_schemas::events::Event;
    use std::collections::BTreeSet;

    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let acked: BTreeSet<String> = crash_child(&data, &["--across-streams"], 300)
        .into_iter()
        .map(|(_, event_id)| event_id)
        .collect();
    let log = reopen(&data).await;
    let kernel: BTreeSet<String> = log
        .read(Stream::KernelEvents, 0, None, usize::MAX)
        .await
        .expect("read kernel.events")
        .iter()
        .map(|e| e.record.event_id.to_string())
        .collect();
    let partners: BTreeSet<String> = log
        .read(Stream::CxpTraffic, 0, None, usize::MAX)
        .await
        .expect("read cxp.traffic")
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::ThreadArchived(t) => Some(t.thread_id.clone()),
            _ => None,
        })
        .collect();
    assert!(
        kernel.len() >= acked.len(),
        "fewer events than acknowledged"
    );
    let lost: Vec<&String> = acked.difference(&kernel).collect();
    assert!(lost.is_empty(), "acknowledged pairs lost: {lost:?}");
    let half: Vec<&String> = kernel.symmetric_difference(&partners).collect();
    assert!(half.is_empty(), "pairs stored half: {half:?}");
}
