//! ISSUE-15: state never ahead of the log.
//!
//! A real sled log in a temp dir, wrapped by [`FaultyLog`] (appends fail per stream on
//! demand, reads fail on demand), under a real kernel. After every injected failure the
//! kernel's state must equal a fresh fold of the log, every answer must say truthfully
//! what the log holds of its command, and a command that failed to append must be
//! executed when retried — never answered `duplicate` with nothing stored.

#[path = "support/faulty_log.rs"]
mod faulty_log;
mod kernel_common;

use std::collections::BTreeSet;
use std::sync::Arc;

use faulty_log::FaultyLog;
use futures::future::join_all;
use kernel_common::{config, open_sled};
use orchestrata::kernel::{cmd, Appended, Kernel, KernelError, Outcome, TokioClock};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Command, Stream};
use uuid::Uuid;

/// A kernel on a faulty wrapper around a real sled log.
struct Rig {
    _dir: tempfile::TempDir,
    faulty: Arc<FaultyLog>,
    kernel: Kernel,
}

async fn rig() -> Rig {
    rig_with(false).await
}

/// A rig whose multi-stream appends go stream by stream (`per_stream`): a log without
/// atomic multi-stream writes (Kafka), where one stream can fail while another lands.
async fn rig_per_stream() -> Rig {
    rig_with(true).await
}

async fn rig_with(per_stream: bool) -> Rig {
    let dir = tempfile::tempdir().expect("temp dir");
    let faulty = FaultyLog::new(open_sled(dir.path()).await);
    if per_stream {
        faulty.per_stream();
    }
    let log: Arc<dyn EventLog> = faulty.clone();
    let (kernel, _) = Kernel::start(log, config(), Arc::new(TokioClock::new()))
        .await
        .expect("kernel starts");
    Rig {
        _dir: dir,
        faulty,
        kernel,
    }
}

impl Rig {
    /// The real log, read past the faults.
    fn log(&self) -> &Arc<dyn EventLog> {
        self.faulty.inner()
    }

    /// Asserts that the kernel's state is exactly a fresh fold of the log.
    async fn assert_state_is_the_log(&self) {
        let live = self
            .kernel
            .read(|s| s.digest())
            .await
            .expect("the kernel serves reads");
        let fresh = orchestrata::kernel::rebuild(self.log(), &config())
            .await
            .expect("rebuild from the log")
            .digest();
        assert_eq!(live, fresh, "the kernel's state differs from the log");
    }

    /// Executes `commands` as one batch (all are queued before the writer runs).
    async fn batch(&self, commands: Vec<Command>) -> Vec<Result<Outcome, KernelError>> {
        join_all(commands.into_iter().map(|c| self.kernel.execute(c))).await
    }
}

/// Where the log holds events caused by `command_id`.
async fn stored_of(log: &Arc<dyn EventLog>, command_id: Uuid) -> BTreeSet<(Stream, u64)> {
    let mut out = BTreeSet::new();
    for stream in Stream::ALL {
        for e in log.read(stream, 0, None, usize::MAX).await.expect("read") {
            if e.record.command_id == Some(command_id) {
                out.insert((stream, e.sequence));
            }
        }
    }
    out
}

fn places(events: &[Appended]) -> BTreeSet<(Stream, u64)> {
    events.iter().map(|a| (a.stream, a.sequence)).collect()
}

/// Asserts that `answer` tells the truth about what the log holds of `command`.
async fn assert_truthful(
    log: &Arc<dyn EventLog>,
    command: &Command,
    answer: &Result<Outcome, KernelError>,
) {
    assert_truthful_since(log, command, &BTreeSet::new(), answer).await;
}

/// Like [`assert_truthful`] for a command of which the log held `before` already (an
/// earlier execution of the same id): the answer speaks for this attempt only.
async fn assert_truthful_since(
    log: &Arc<dyn EventLog>,
    command: &Command,
    before: &BTreeSet<(Stream, u64)>,
    answer: &Result<Outcome, KernelError>,
) {
    let in_log = stored_of(log, command.id).await;
    let added: BTreeSet<(Stream, u64)> = in_log.difference(before).copied().collect();
    match answer {
        Ok(o) if o.duplicate => assert!(
            !in_log.is_empty() && added.is_empty(),
            "`duplicate` answered for command {} of which the log holds {in_log:?} (new: {added:?})",
            command.id
        ),
        Ok(o) => assert_eq!(
            places(&o.events),
            added,
            "`applied` must name exactly the command's events in the log: {command:?}"
        ),
        Err(KernelError::AppendFailed { stored, .. }) => assert_eq!(
            places(stored),
            added,
            "`append_failed` must name exactly the command's events that landed: {command:?}"
        ),
        Err(e) => assert!(
            added.is_empty(),
            "refused ({e}) but the log holds new events of the command: {command:?}"
        ),
    }
}

fn send(from: &str, to: &str) -> (Command, Uuid) {
    let packet = cmd::packet(from, to, "work", serde_json::json!({"n": 1}));
    let id = packet.message_id;
    (cmd::send(from, packet), id)
}

fn append_failed_with_nothing_stored(answer: &Result<Outcome, KernelError>) -> bool {
    matches!(answer, Err(KernelError::AppendFailed { stored, .. }) if stored.is_empty())
}

// ISSUE-15: state never ahead of the log — a failed append leaves nothing behind in the
// state, and the same command retried is executed, not answered `duplicate`.
#[tokio::test]
async fn a_command_whose_append_failed_is_executed_when_retried() {
    let r = rig().await;
    let (command, message_id) = send("U:Ox", "U:Vz");
    r.faulty.fail_appends(Stream::CxpTraffic);
    let answer = r.kernel.execute(command.clone()).await;
    assert!(append_failed_with_nothing_stored(&answer), "got {answer:?}");
    assert_eq!(
        answer.as_ref().err().map(|e| e.code()),
        Some("append_failed")
    );
    assert_truthful(r.log(), &command, &answer).await;
    r.assert_state_is_the_log().await;
    let unknown = r.kernel.packet(message_id).await;
    assert!(
        matches!(unknown, Err(KernelError::UnknownPacket { .. })),
        "a packet that did not land is visible: {unknown:?}"
    );

    r.faulty.heal();
    let retried = r
        .kernel
        .execute(command.clone())
        .await
        .expect("the retry is executed");
    assert!(!retried.duplicate, "the retry was answered duplicate");
    assert!(
        retried.event_types().contains(&"packet_sent"),
        "{:?}",
        retried.event_types()
    );
    assert_truthful(r.log(), &command, &Ok(retried)).await;
    r.kernel
        .packet(message_id)
        .await
        .expect("the packet is there now");
    r.assert_state_is_the_log().await;
}

/// One batch — register `U:Nw`, a send `U:Ox` -> `U:Vz`, open session `s-1` — while
/// appends to `cxp.traffic` fail: the commands, their answers, the send's message id.
async fn batch_while_traffic_fails(
    r: &Rig,
) -> (Vec<Command>, Vec<Result<Outcome, KernelError>>, Uuid) {
    let register = cmd::register("U:Ox", "U:Nw", None);
    let (send_packet, message_id) = send("U:Ox", "U:Vz");
    let session = cmd::open_session("U:Ox", "s-1", "p-1");
    r.faulty.fail_appends(Stream::CxpTraffic);
    let commands = vec![register, send_packet, session];
    let answers = r.batch(commands.clone()).await;
    assert!(r.faulty.refused_appends() > 0, "the fault was not hit");
    (commands, answers, message_id)
}

// ISSUE-15: state never ahead of the log — on a log without atomic multi-stream writes,
// one stream failing while another succeeds in the same batch: each command is answered
// from what its own events did, none is half applied, and the state is what the log
// holds.
#[tokio::test]
async fn one_stream_failing_while_another_succeeds_in_the_same_batch() {
    let r = rig_per_stream().await;
    let (commands, answers, message_id) = batch_while_traffic_fails(&r).await;
    let send_packet = commands[1].clone();

    let applied = |a: &Result<Outcome, KernelError>| matches!(a, Ok(o) if !o.duplicate);
    assert!(applied(&answers[0]), "register: {:?}", answers[0]);
    assert!(
        append_failed_with_nothing_stored(&answers[1]),
        "send: {:?}",
        answers[1]
    );
    assert!(applied(&answers[2]), "open_session: {:?}", answers[2]);
    for (command, answer) in commands.iter().zip(&answers) {
        assert_truthful(r.log(), command, answer).await;
    }
    r.assert_state_is_the_log().await;
    assert!(matches!(
        r.kernel.packet(message_id).await,
        Err(KernelError::UnknownPacket { .. })
    ));

    r.faulty.heal();
    let retried = r.kernel.execute(send_packet.clone()).await.expect("retry");
    assert!(!retried.duplicate);
    assert_truthful(r.log(), &send_packet, &Ok(retried)).await;
    r.assert_state_is_the_log().await;
}

// ISSUE-15: state never ahead of the log — streams are appended in dependency order and
// a failure stops the batch there, so nothing lands whose premise did not: a send to a
// Volk registered earlier in the same batch is not stored when the registration fails.
#[tokio::test]
async fn nothing_lands_after_the_stream_that_failed() {
    let r = rig().await;
    let register = cmd::register("U:Ox", "U:Nw", None);
    let (send_packet, _) = send("U:Ox", "U:Nw");
    r.faulty.fail_appends(Stream::VolkLifecycle);
    let commands = vec![register.clone(), send_packet.clone()];
    let answers = r.batch(commands.clone()).await;
    for (command, answer) in commands.iter().zip(&answers) {
        assert!(append_failed_with_nothing_stored(answer), "got {answer:?}");
        assert_truthful(r.log(), command, answer).await;
    }
    r.assert_state_is_the_log().await;
    r.faulty.heal();
    for command in commands {
        let outcome = r.kernel.execute(command).await.expect("retry");
        assert!(!outcome.duplicate);
    }
    r.assert_state_is_the_log().await;
}

// ISSUE-15: state never ahead of the log — a refusal decided on events that did not land
// is not given as the answer: the second registration of one alias in a batch whose
// first registration failed answers append_failed (not volk_exists), and succeeds when
// retried.
#[tokio::test]
async fn a_refusal_decided_on_events_that_did_not_land_is_not_answered() {
    let r = rig().await;
    let first = cmd::register("U:Ox", "U:Nw", None);
    let second = cmd::register("U:Ox", "U:Nw", None);
    r.faulty.fail_appends(Stream::VolkLifecycle);
    let answers = r.batch(vec![first.clone(), second.clone()]).await;
    assert!(
        append_failed_with_nothing_stored(&answers[0]),
        "{:?}",
        answers[0]
    );
    assert!(
        append_failed_with_nothing_stored(&answers[1]),
        "{:?}",
        answers[1]
    );
    r.assert_state_is_the_log().await;
    r.faulty.heal();
    let outcome = r
        .kernel
        .execute(second)
        .await
        .expect("the second is executed");
    assert_eq!(outcome.event_types(), ["registered"]);
    let again = r.kernel.execute(first).await;
    assert_eq!(again.err().map(|e| e.code()), Some("volk_exists"));
    r.assert_state_is_the_log().await;
}

// ISSUE-15: state never ahead of the log — a batch of several commands whose append
// fails on every stream: each answers append_failed, none is visible to reads, and the
// log and the state are as before.
#[tokio::test]
async fn a_failed_batch_answers_each_command_and_none_is_visible() {
    let r = rig().await;
    let before = kernel_common::positions(r.log()).await;
    let digest_before = r.kernel.read(|s| s.digest()).await.expect("read");
    let (s1, m1) = send("U:Ox", "U:Vz");
    let (s2, m2) = send("U:Vz", "U:Qa");
    let commands = vec![
        s1,
        s2,
        cmd::register("U:Ox", "U:Nw", None),
        cmd::open_session("U:Ox", "s-1", "p-1"),
    ];
    r.faulty.fail_all_appends();
    let answers = r.batch(commands.clone()).await;
    for (command, answer) in commands.iter().zip(&answers) {
        assert!(append_failed_with_nothing_stored(answer), "got {answer:?}");
        assert_truthful(r.log(), command, answer).await;
    }
    assert_eq!(kernel_common::positions(r.log()).await, before);
    for id in [m1, m2] {
        assert!(matches!(
            r.kernel.packet(id).await,
            Err(KernelError::UnknownPacket { .. })
        ));
    }
    let volk = r
        .kernel
        .read(|s| s.volk("U:Nw").is_some())
        .await
        .expect("read");
    assert!(!volk, "a registration that did not land is visible");
    assert_eq!(
        r.kernel.read(|s| s.digest()).await.expect("read"),
        digest_before
    );
    r.assert_state_is_the_log().await;

    r.faulty.heal();
    for answer in r.batch(commands).await {
        assert!(
            matches!(&answer, Ok(o) if !o.duplicate),
            "retry: {answer:?}"
        );
    }
    r.assert_state_is_the_log().await;
}

// ISSUE-15: state never ahead of the log — the append fails and the reload from the log
// fails too: the kernel keeps no state, refuses commands and reads with
// kernel_unavailable, retries the reload on each request, and serves again (the failed
// command executable) once the log can be read.
#[tokio::test]
async fn when_the_reload_fails_too_the_kernel_refuses_until_a_reload_succeeds() {
    let r = rig().await;
    let (command, message_id) = send("U:Ox", "U:Vz");
    r.faulty.fail_appends(Stream::CxpTraffic);
    r.faulty.fail_reads(true);
    let answer = r.kernel.execute(command.clone()).await;
    assert!(append_failed_with_nothing_stored(&answer), "got {answer:?}");

    let reads_before = r.faulty.refused_reads();
    let (other, _) = send("U:Vz", "U:Qa");
    let refused = r.kernel.execute(other.clone()).await;
    assert!(
        matches!(refused, Err(KernelError::Unavailable { .. })),
        "got {refused:?}"
    );
    assert_eq!(
        refused.as_ref().err().map(|e| e.code()),
        Some("kernel_unavailable")
    );
    assert!(
        r.faulty.refused_reads() > reads_before,
        "the reload was not retried"
    );
    let read = r.kernel.read(|s| s.applied()).await;
    assert!(
        matches!(read, Err(KernelError::Unavailable { .. })),
        "got {read:?}"
    );
    let inbox = r.kernel.inbox("U:Vz", 10).await;
    assert!(
        matches!(inbox, Err(KernelError::Unavailable { .. })),
        "got {inbox:?}"
    );
    assert!(stored_of(r.log(), other.id).await.is_empty());

    r.faulty.heal();
    let retried = r
        .kernel
        .execute(command.clone())
        .await
        .expect("served again");
    assert!(!retried.duplicate);
    assert_truthful(r.log(), &command, &Ok(retried)).await;
    r.kernel
        .packet(message_id)
        .await
        .expect("the packet is there");
    r.assert_state_is_the_log().await;
}

/// Sends a packet to `U:Qa`, then deregisters `U:Qa` while appends to `cxp.traffic`
/// fail: deregistering fails its queued packet, so the command's events span
/// `volk.lifecycle` and `cxp.traffic`. The command and its answer.
async fn deregister_while_traffic_fails(r: &Rig) -> (Command, Result<Outcome, KernelError>) {
    let (queued, _) = send("U:Ox", "U:Qa");
    r.kernel.execute(queued).await.expect("send");
    let deregister = cmd::deregister("U:Ox", "U:Qa", "retired");
    r.faulty.fail_appends(Stream::CxpTraffic);
    let answer = r.kernel.execute(deregister.clone()).await;
    (deregister, answer)
}

// ISSUE-15: state never ahead of the log — on a log without atomic multi-stream writes,
// a command whose events span two streams, of which the later one fails: the answer
// names exactly the events that landed, and the state counts those (it is what the log
// says).
#[tokio::test]
async fn a_command_spanning_streams_is_answered_with_what_landed() {
    let r = rig_per_stream().await;
    let (deregister, answer) = deregister_while_traffic_fails(&r).await;
    match &answer {
        Err(KernelError::AppendFailed { stored, .. }) => {
            assert_eq!(stored.len(), 1, "{stored:?}");
            assert_eq!(stored[0].stream, Stream::VolkLifecycle);
            assert_eq!(stored[0].event_type, "deregistered");
        }
        other => panic!("expected append_failed, got {other:?}"),
    }
    assert_truthful(r.log(), &deregister, &answer).await;
    r.assert_state_is_the_log().await;
}

// ISSUE-17: commands atomic — on sled a batch spanning streams is one transaction
// across their trees: a fault in one stream's part leaves nothing of the command
// visible (not its `deregistered` on volk.lifecycle either), the state is the log, and
// the retry is executed whole.
#[tokio::test]
async fn on_sled_a_command_spanning_streams_lands_whole_or_not_at_all() {
    let r = rig().await;
    let (deregister, answer) = deregister_while_traffic_fails(&r).await;
    match &answer {
        Err(KernelError::AppendFailed { stored, reason }) => {
            assert!(stored.is_empty(), "{stored:?}");
            assert!(reason.contains("nothing stored"), "{reason}");
        }
        other => panic!("expected append_failed, got {other:?}"),
    }
    assert!(
        stored_of(r.log(), deregister.id).await.is_empty(),
        "part of the command is visible"
    );
    r.assert_state_is_the_log().await;

    r.faulty.heal();
    let retried = r
        .kernel
        .execute(deregister.clone())
        .await
        .expect("the retry is executed");
    assert!(!retried.duplicate);
    let streams: BTreeSet<Stream> = stored_of(r.log(), deregister.id)
        .await
        .into_iter()
        .map(|(s, _)| s)
        .collect();
    assert_eq!(
        streams,
        BTreeSet::from([Stream::VolkLifecycle, Stream::CxpTraffic]),
        "the whole command landed"
    );
    r.assert_state_is_the_log().await;
}

// ISSUE-17: commands atomic — on sled a batch is one write: one stream failing fails
// every command of the batch, none is half applied or visible, and each retry runs.
#[tokio::test]
async fn on_sled_one_failing_stream_fails_the_whole_batch_and_nothing_is_visible() {
    let r = rig().await;
    let (commands, answers, _) = batch_while_traffic_fails(&r).await;
    for (command, answer) in commands.iter().zip(&answers) {
        assert!(
            append_failed_with_nothing_stored(answer),
            "{:?}: {answer:?}",
            command.action
        );
        assert!(stored_of(r.log(), command.id).await.is_empty());
    }
    r.assert_state_is_the_log().await;
    r.faulty.heal();
    for command in commands {
        let retried = r.kernel.execute(command.clone()).await.expect("retry");
        assert!(!retried.duplicate);
        assert_truthful(r.log(), &command, &Ok(retried)).await;
    }
    r.assert_state_is_the_log().await;
}

mod props {
    //! ISSUE-15: state never ahead of the log — random command sequences under random
    //! failure injections.

    use super::*;
    use proptest::prelude::*;

    const ALIASES: [&str; 5] = ["U:Ox", "U:Vz", "U:Qa", "U:N1", "U:N2"];

    #[derive(Debug, Clone)]
    enum Op {
        Send(usize, usize),
        Register(usize),
        Deregister(usize),
        OpenSession(u8),
        Inbox(usize),
        /// Re-execute an earlier command (same id).
        Retry(usize),
    }

    #[derive(Debug, Clone)]
    enum Fault {
        None,
        Stream(Stream),
        All,
        AllAndReads,
    }

    fn op() -> impl Strategy<Value = Op> {
        prop_oneof![
            4 => (0..5usize, 0..5usize).prop_map(|(a, b)| Op::Send(a, b)),
            1 => (0..5usize).prop_map(Op::Register),
            1 => (0..5usize).prop_map(Op::Deregister),
            1 => (0..3u8).prop_map(Op::OpenSession),
            1 => (0..5usize).prop_map(Op::Inbox),
            2 => (0..64usize).prop_map(Op::Retry),
        ]
    }

    fn fault() -> impl Strategy<Value = Fault> {
        prop_oneof![
            2 => Just(Fault::None),
            2 => prop::sample::select(vec![
                Stream::VolkLifecycle,
                Stream::SessionEvents,
                Stream::CxpTraffic,
            ])
            .prop_map(Fault::Stream),
            1 => Just(Fault::All),
            1 => Just(Fault::AllAndReads),
        ]
    }

    fn command(op: &Op, history: &[Command]) -> Option<Command> {
        Some(match op {
            Op::Send(a, b) => send(ALIASES[*a], ALIASES[*b]).0,
            Op::Register(a) => cmd::register("U:Ox", ALIASES[*a], None),
            Op::Deregister(a) => cmd::deregister("U:Ox", ALIASES[*a], "test"),
            Op::OpenSession(n) => cmd::open_session("U:Ox", &format!("s-{n}"), "p"),
            Op::Retry(i) if !history.is_empty() => history[i % history.len()].clone(),
            Op::Retry(_) | Op::Inbox(_) => return None,
        })
    }

    async fn run(per_stream: bool, steps: Vec<(Fault, Vec<Op>)>) {
        let r = rig_with(per_stream).await;
        let mut history: Vec<Command> = Vec::new();
        for (fault, ops) in steps {
            match &fault {
                Fault::None => {}
                Fault::Stream(s) => r.faulty.fail_appends(*s),
                Fault::All => r.faulty.fail_all_appends(),
                Fault::AllAndReads => {
                    r.faulty.fail_all_appends();
                    r.faulty.fail_reads(true);
                }
            }
            let mut commands = Vec::new();
            let mut before = Vec::new();
            let mut futures = Vec::new();
            for op in &ops {
                match (op, command(op, &history)) {
                    (_, Some(c)) => {
                        before.push(stored_of(r.log(), c.id).await);
                        commands.push(c.clone());
                        let kernel = r.kernel.clone();
                        futures.push(futures::future::Either::Left(async move {
                            Some(kernel.execute(c).await)
                        }));
                    }
                    (Op::Inbox(a), None) => {
                        let kernel = r.kernel.clone();
                        let alias = ALIASES[*a];
                        futures.push(futures::future::Either::Right(async move {
                            let _ = kernel.inbox(alias, 2).await;
                            None
                        }));
                    }
                    _ => {}
                }
            }
            let answers: Vec<Result<Outcome, KernelError>> =
                join_all(futures).await.into_iter().flatten().collect();
            let failed = answers
                .iter()
                .any(|a| matches!(a, Err(KernelError::AppendFailed { .. })));
            if matches!(fault, Fault::AllAndReads) && failed {
                // The reload failed too: the kernel must refuse, not serve stale state.
                let probe = r.kernel.read(|s| s.applied()).await;
                assert!(
                    matches!(probe, Err(KernelError::Unavailable { .. })),
                    "got {probe:?}"
                );
            }
            r.faulty.heal();
            for ((command, answer), before) in commands.iter().zip(&answers).zip(&before) {
                let copies = commands.iter().filter(|c| c.id == command.id).count();
                if copies == 1 {
                    assert_truthful_since(r.log(), command, before, answer).await;
                    continue;
                }
                // The same id twice in one batch: together the answers name exactly
                // what the log gained of it.
                let claimed: BTreeSet<(Stream, u64)> = commands
                    .iter()
                    .zip(&answers)
                    .filter(|(c, _)| c.id == command.id)
                    .flat_map(|(_, a)| match a {
                        Ok(o) => places(&o.events),
                        Err(KernelError::AppendFailed { stored, .. }) => places(stored),
                        Err(_) => BTreeSet::new(),
                    })
                    .collect();
                let now = stored_of(r.log(), command.id).await;
                let added: BTreeSet<(Stream, u64)> = now.difference(before).copied().collect();
                assert_eq!(claimed, added, "answers of {command:?}");
            }
            r.assert_state_is_the_log().await;
            // A command the log holds nothing of is never answered duplicate later:
            // retrying the failed ones now executes or refuses them on the log's state.
            let mut retried = std::collections::HashSet::new();
            for (command, answer) in commands.iter().zip(&answers) {
                if append_failed_with_nothing_stored(answer)
                    && retried.insert(command.id)
                    && stored_of(r.log(), command.id).await.is_empty()
                {
                    let again = r.kernel.execute(command.clone()).await;
                    assert!(
                        !matches!(&again, Ok(o) if o.duplicate),
                        "a retried command was answered duplicate: {again:?}"
                    );
                    assert_truthful(r.log(), command, &again).await;
                }
            }
            r.assert_state_is_the_log().await;
            history.extend(commands);
        }
        r.kernel.stop().await;
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        // ISSUE-15: state never ahead of the log
        #[test]
        fn state_equals_the_log_after_any_failures(
            per_stream in any::<bool>(),
            steps in prop::collection::vec((fault(), prop::collection::vec(op(), 1..6)), 1..7)
        ) {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .expect("runtime");
            rt.block_on(run(per_stream, steps));
        }
    }
}
