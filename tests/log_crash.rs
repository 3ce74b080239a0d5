//! Crash test: a child process appends with fsync on every append and is SIGKILLed
//! mid-stream; every acknowledged event must be there after reopening.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::log;
use orchestrata_schemas::events::Stream;

// REQ-014-135 REQ-014-131
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_appends_survive_sigkill_and_sequences_continue() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["__crash-append", "--writers", "4", "--data-dir"])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the appending child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut acked: BTreeMap<u64, String> = BTreeMap::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child output");
        let mut words = line.split_whitespace();
        assert_eq!(words.next(), Some("ack"), "unexpected child line {line:?}");
        let sequence: u64 = words.next().and_then(|s| s.parse().ok()).expect("sequence");
        let event_id = words.next().expect("event id").to_owned();
        assert!(
            acked.insert(sequence, event_id).is_none(),
            "sequence {sequence} acknowledged twice"
        );
        if acked.len() == 300 {
            // SIGKILL mid-stream: the child is appending from four tasks right now.
            child.kill().expect("SIGKILL the child");
            break;
        }
    }
    child.wait().expect("reap the child");

    let log = log::open(&{
        let mut c = LogConfig::sled(&data);
        c.fsync = FsyncPolicy::EveryAppend;
        c
    })
    .await
    .expect("reopen after the crash");
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
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args([
            "__crash-append",
            "--writers",
            "4",
            "--across-streams",
            "--data-dir",
        ])
        .arg(&data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("start the appending child");
    let stdout = child.stdout.take().expect("child stdout");
    let mut acked: BTreeSet<String> = BTreeSet::new();
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read child output");
        let event_id = line
            .split_whitespace()
            .nth(2)
            .expect("ack <sequence> <event id>")
            .to_owned();
        acked.insert(event_id);
        if acked.len() == 300 {
            child.kill().expect("SIGKILL the child");
            break;
        }
    }
    child.wait().expect("reap the child");

    let log = log::open(&{
        let mut c = LogConfig::sled(&data);
        c.fsync = FsyncPolicy::EveryAppend;
        c
    })
    .await
    .expect("reopen after the crash");
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
