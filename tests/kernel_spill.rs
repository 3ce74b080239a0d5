//! The kernel's aggregate with most of its packets and threads spilled to disk
//! (`kernel.hot_entries`): the same answers and the same state as one held wholly in
//! memory, with at most the configured entries in memory. Real sled log, real spill
//! file in a temp dir.

mod kernel_common;

use kernel_common::{config, harness, Harness};
use orchestrata::kernel::state::StateDigest;
use orchestrata::kernel::{cmd, KernelConfig, KernelState};
use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::types::Packet;

const HOT: usize = 3;

fn spilling(dir: &std::path::Path) -> KernelConfig {
    KernelConfig {
        hot_entries: HOT,
        spill_dir: Some(dir.to_path_buf()),
        ..config()
    }
}

/// What one step of the script answered: `Ok` or the error's code, and for inbox reads
/// the subjects served. Event ids and times differ between two kernels; these do not.
type Answers = Vec<String>;

async fn step(h: &Harness, out: &mut Answers, command: orchestrata_schemas::events::Command) {
    let answer = match h.kernel.execute(command).await {
        Ok(_) => "ok".to_owned(),
        Err(e) => format!("err {}", e.code()),
    };
    out.push(answer);
}

/// Serves `alias`'s inbox; the message ids served.
async fn inbox(h: &Harness, out: &mut Answers, alias: &str, limit: usize) -> Vec<uuid::Uuid> {
    let inbox = h.kernel.inbox(alias, limit).await.expect("inbox");
    let subjects: Vec<&str> = inbox.packets.iter().map(|p| p.subject()).collect();
    out.push(format!("inbox {alias}: {}", subjects.join(",")));
    inbox.packets.iter().map(|p| p.message_id()).collect()
}

/// Forty packets in eight threads (half of them in a session), then every kind of
/// change to packets and threads that went cold long ago: delivery through the inbox,
/// acknowledgement, failure and retry, work moves, priority, thread close/reopen/
/// archive, a session close that reads its packets, a duplicate send.
async fn script(h: &Harness) -> Answers {
    let mut out = Answers::new();
    step(h, &mut out, cmd::open_session("U:Ox", "s-1", "p-1")).await;
    let mut sent: Vec<Packet> = Vec::new();
    for i in 0..40 {
        let mut p = cmd::packet(
            "U:Ox",
            "U:Vz",
            &format!("task {i}"),
            serde_json::json!({"i": i}),
        );
        p.thread_id = format!("thread-{}", i % 8);
        p.priority = i % 10;
        if i % 2 == 0 {
            p = cmd::in_session(p, "s-1");
        }
        step(h, &mut out, cmd::send("U:Ox", p.clone())).await;
        sent.push(p);
    }
    // A duplicate of the first packet, long cold.
    step(h, &mut out, cmd::send("U:Ox", sent[0].clone())).await;
    // Reorder a cold queued packet, then serve some of the queue.
    step(h, &mut out, cmd::priority("U:Ox", sent[1].message_id, 9)).await;
    let served = inbox(h, &mut out, "U:Vz", 12).await;
    // Each loop lets the packets go cold again before the next change reaches them.
    for id in &served {
        step(h, &mut out, cmd::acknowledge("U:Vz", *id)).await;
    }
    for id in &served {
        step(h, &mut out, cmd::work("U:Vz", *id, WorkStatus::InProgress)).await;
    }
    for id in &served[..6] {
        step(
            h,
            &mut out,
            cmd::resolve("U:Vz", *id, serde_json::json!({"ok": true})),
        )
        .await;
    }
    // Deliver some more and fail them; retry one by hand.
    let failing = inbox(h, &mut out, "U:Vz", 4).await;
    for id in &failing {
        step(h, &mut out, cmd::fail("U:PS", *id, "recipient crashed")).await;
    }
    step(h, &mut out, cmd::retry("U:PS", failing[0])).await;
    // Transitions that do not fit a cold packet's state are refused as they would be hot.
    step(h, &mut out, cmd::acknowledge("U:Vz", sent[30].message_id)).await;
    step(
        h,
        &mut out,
        cmd::resolve("U:Vz", sent[31].message_id, serde_json::json!({})),
    )
    .await;
    // Threads, cold by now.
    step(
        h,
        &mut out,
        cmd::thread("U:Ox", cmd::close_thread, "thread-0"),
    )
    .await;
    step(
        h,
        &mut out,
        cmd::thread("U:Ox", cmd::reopen_thread, "thread-0"),
    )
    .await;
    step(
        h,
        &mut out,
        cmd::thread("U:Ox", cmd::archive_thread, "thread-1"),
    )
    .await;
    step(
        h,
        &mut out,
        cmd::thread("U:Ox", cmd::reopen_thread, "thread-2"),
    )
    .await;
    let mut late = cmd::packet("U:Vz", "U:Ox", "late answer", serde_json::json!({}));
    late.thread_id = "thread-1".into();
    step(h, &mut out, cmd::send("U:Vz", late)).await;
    step(h, &mut out, cmd::close_session("U:Ox", "s-1", "done")).await;
    inbox(h, &mut out, "U:Vz", 40).await;
    out
}

/// The aggregate's digest, and (packets, threads) held in memory.
async fn state(h: &Harness) -> (StateDigest, (usize, usize)) {
    h.kernel
        .read(|s: &KernelState| (s.digest(), s.hot_counts()))
        .await
        .expect("read")
}

// ISSUE-18: the kernel's memory follows the hot set, not the history; answers unchanged
#[tokio::test]
async fn a_spilling_kernel_answers_and_folds_like_one_held_in_memory() {
    let spill = tempfile::tempdir().expect("spill dir");
    let cold = harness(spilling(spill.path())).await;
    let warm = harness(config()).await;
    let cold_answers = script(&cold).await;
    let warm_answers = script(&warm).await;
    assert_eq!(cold_answers, warm_answers, "same answers, step by step");
    let refused = cold_answers.iter().filter(|a| a.starts_with("err")).count();
    assert!(
        (3..10).contains(&refused),
        "the script's changes mostly apply, and a few are refused: {cold_answers:?}"
    );

    let (live, (hot_packets, hot_threads)) = state(&cold).await;
    assert!(
        hot_packets <= HOT && hot_threads <= HOT,
        "{hot_packets} packets and {hot_threads} threads in memory, at most {HOT} each"
    );
    assert!(
        live.packets.len() >= 40 && live.threads.len() >= 8,
        "{} packets, {} threads: {cold_answers:?}",
        live.packets.len(),
        live.threads.len()
    );

    // The spilled state is the log: a fold held in memory and a spilling fold agree.
    let in_memory = orchestrata::kernel::rebuild(&cold.log, &config())
        .await
        .expect("rebuild in memory")
        .digest();
    assert_eq!(
        live, in_memory,
        "the spilling kernel's state is a fold of its log"
    );
    let again = orchestrata::kernel::rebuild(&cold.log, &spilling(spill.path()))
        .await
        .expect("rebuild spilling");
    assert!(again.hot_counts().0 <= HOT);
    assert_eq!(
        again.digest(),
        in_memory,
        "a spilling rebuild folds the same state"
    );

    // What a restart reschedules is every failed packet that may still retry.
    let (mut retryable, mut scanned) = cold
        .kernel
        .read(|s| {
            let ids = |p: std::borrow::Cow<'_, orchestrata::kernel::state::PacketState>| {
                p.packet.message_id()
            };
            (
                s.retryable().map(ids).collect::<Vec<_>>(),
                s.packets()
                    .filter(|p| p.packet.can_retry())
                    .map(ids)
                    .collect::<Vec<_>>(),
            )
        })
        .await
        .expect("read");
    retryable.sort();
    scanned.sort();
    assert!(!scanned.is_empty(), "the script leaves packets to retry");
    assert_eq!(retryable, scanned);

    let (warm_live, warm_hot) = state(&warm).await;
    assert_eq!(warm_live.packets.len(), live.packets.len());
    assert_eq!(
        warm_hot.0,
        warm_live.packets.len(),
        "without a spill dir all stay in memory"
    );
}

// ISSUE-18: nothing the kernel spills is visible on disk after it stops
#[tokio::test]
async fn the_spill_file_leaves_nothing_behind() {
    let spill = tempfile::tempdir().expect("spill dir");
    let h = harness(spilling(spill.path())).await;
    for i in 0..20 {
        h.send_new("U:Ox", "U:Vz", &format!("p{i}")).await;
    }
    let (_, (hot, _)) = state(&h).await;
    assert!(hot <= HOT, "{hot} packets in memory");
    let entries: Vec<_> = std::fs::read_dir(spill.path())
        .expect("spill dir readable")
        .collect();
    assert!(
        entries.is_empty(),
        "the spill file is unlinked: {entries:?}"
    );
}

// ISSUE-18: executed command ids leave memory like packets; a retried command is still
// answered `duplicate` once its id is cold, past the pending batch, in the scratch table
#[tokio::test]
async fn a_command_retried_after_its_id_went_cold_is_a_duplicate() {
    let spill = tempfile::tempdir().expect("spill dir");
    let h = harness(spilling(spill.path())).await;
    let first = cmd::send(
        "U:Ox",
        cmd::packet("U:Ox", "U:Vz", "first", serde_json::json!({})),
    );
    let done = h.kernel.execute(first.clone()).await.expect("first");
    assert!(!done.duplicate && !done.events.is_empty());
    // More commands than the spill's pending batch (1,024): the first id is written
    // to the scratch table, not held in memory or in the batch.
    for i in 0..1_100 {
        h.send_new("U:Ox", "U:Vz", &format!("p{i}")).await;
    }
    let again = h.kernel.execute(first).await.expect("retry");
    assert!(again.duplicate, "a cold command id is still executed");
    assert!(again.events.is_empty(), "nothing appended for a duplicate");
    let (live, _) = state(&h).await;
    assert!(
        live.executed.len() >= 1_101,
        "{} executed ids listed",
        live.executed.len()
    );
    let in_memory = orchestrata::kernel::rebuild(&h.log, &config())
        .await
        .expect("rebuild in memory")
        .digest();
    assert_eq!(live, in_memory, "the executed ids are the log's");
}
