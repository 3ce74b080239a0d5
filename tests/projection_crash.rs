//! Crash test: the runner is SIGKILLed mid-fold; on restart the views equal a clean
//! rebuild, byte for byte, and the committed state never holds an event twice.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::log::{self, EventLog};
use orchestrata::projection::{self, Projections, RunnerConfig, ViewStore};
use orchestrata_projections::{DecisionIndex, SessionView, ThreadView, View, ViewName, VolkView};
use orchestrata_schemas::events::Stream;

mod projection_support;

use projection_support::{assert_decisions_equal_rebuild, fill, json, rebuilt_json};

async fn open(dir: &std::path::Path) -> Arc<dyn EventLog> {
    let mut config = LogConfig::sled(dir);
    config.fsync = FsyncPolicy::EveryN(100_000);
    log::open(&config).await.expect("open sled log")
}

// REQ-004-INTG-011 REQ-004-INTG-012
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_after_sigkill_mid_fold_equal_a_clean_rebuild() {
    let dir = tempfile::tempdir().expect("temp dir");
    let last = {
        let log = open(dir.path()).await;
        let last = fill(&log, 3, 60_000).await;
        log.flush().await.expect("flush");
        last
    };
    tokio::time::sleep(Duration::from_millis(200)).await; // let the log's tasks release the lock
    let last_traffic = last[&Stream::CxpTraffic];

    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args([
            "projections",
            "__run",
            "--batch-events",
            "500",
            "--batch-ms",
            "10",
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the runner");
    let stdout = child.stdout.take().expect("stdout");
    let mut seen = 0;
    for line in BufReader::new(stdout).lines() {
        let line = line.expect("read progress");
        if let Some(seq) = line.strip_prefix("progress cxp.traffic ") {
            seen = seq.parse::<u64>().expect("sequence");
            // A third of the way: the thread view folds on while its commits are
            // written, so its progress runs ahead of what the store holds; by here
            // several commits have landed, and most of the fold is still to come.
            if seen >= 20_000 {
                break;
            }
        }
    }
    assert!(
        seen >= 20_000,
        "the runner made progress before the kill (stderr: {:?})",
        child.stderr.take().map(|mut e| {
            let mut s = String::new();
            std::io::Read::read_to_string(&mut e, &mut s).ok();
            s
        })
    );
    let pid = i32::try_from(child.id()).expect("pid");
    // SAFETY: SIGKILL to our own child process.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    child.wait().expect("reap the child");

    let log = open(dir.path()).await;
    let store = ViewStore::open(dir.path().join("views")).expect("store");
    let stored = store
        .checkpoint(ViewName::Thread)
        .expect("readable")
        .expect("a commit happened before the kill");
    let committed = stored
        .checkpoint
        .last(Stream::CxpTraffic)
        .expect("thread view committed traffic");
    assert!(
        committed < last_traffic,
        "killed mid-fold: committed {committed} of {last_traffic}"
    );
    // What was committed is exactly the fold of the log up to its checkpoint.
    let (view, _) = store
        .load::<ThreadView>()
        .expect("load")
        .expect("stored view");
    let until: ThreadView = projection::rebuild(log.as_ref(), Some(committed), &mut |_| {})
        .await
        .expect("rebuild");
    assert_eq!(
        json(&view),
        json(&until),
        "committed state = fold up to its checkpoint"
    );

    // Restart: the runner resumes from the store and catches up.
    let views = Projections::start(log.clone(), store.clone(), RunnerConfig::default())
        .await
        .expect("restart");
    for (stream, seq) in &last {
        let wait = Duration::from_secs(120);
        if ThreadView::STREAMS.contains(stream) {
            views
                .threads()
                .wait_for(*stream, *seq, wait)
                .await
                .expect("threads");
        }
        if SessionView::STREAMS.contains(stream) {
            views
                .sessions()
                .wait_for(*stream, *seq, wait)
                .await
                .expect("sessions");
        }
        if VolkView::STREAMS.contains(stream) {
            views
                .volks()
                .wait_for(*stream, *seq, wait)
                .await
                .expect("volks");
        }
        if DecisionIndex::STREAMS.contains(stream) {
            views
                .decisions()
                .wait_for(*stream, *seq, wait)
                .await
                .expect("decisions");
        }
    }
    // Serialize each live view before awaiting, so no lock is held across an await.
    // The live thread view keeps its recent threads and packets in memory and lets the
    // others go once stored: it counts them all, and the store holds them all.
    let (packets, in_memory) = {
        let threads = views.threads().read();
        (threads.packet_count(), threads.packets_in_memory())
    };
    let rebuilt: ThreadView = projection::rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    assert_eq!(packets, rebuilt.packet_count());
    assert!(in_memory <= packets);
    let threads = views.threads().clone();
    let sessions = json(&*views.sessions().read());
    assert_eq!(sessions, rebuilt_json::<SessionView>(&log).await);
    let volks = json(&*views.volks().read());
    assert_eq!(volks, rebuilt_json::<VolkView>(&log).await);
    assert_decisions_equal_rebuild(views.decisions(), &log).await;
    views.stop().await.expect("stop");
    // The last commit let go of all but the most recently touched.
    let in_memory = threads.read().packets_in_memory();
    assert!(
        in_memory <= RunnerConfig::default().hot_entries,
        "{in_memory}"
    );
    let (stored, _) = store
        .load::<ThreadView>()
        .expect("load")
        .expect("stored view");
    assert_eq!(
        json(&stored),
        json(&rebuilt),
        "stored thread view = the fold"
    );
}
