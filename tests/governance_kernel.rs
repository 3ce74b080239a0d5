//! The kernel asks governance before it appends: sending, priority, registering and
//! deregistering Volks, opening and closing sessions. A refusal is
//! `KernelError::Denied` carrying the id of the recorded decision, and nothing but
//! that decision is appended. Real kernel, real engine, real sled log.

use std::sync::Arc;

use orchestrata::config::LogConfig;
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{cmd, Kernel, KernelConfig, KernelError, TokioClock};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Event, Stream};

#[path = "support/faulty_log.rs"]
mod faulty_log;
use faulty_log::FaultyLog;

async fn governed() -> (tempfile::TempDir, Arc<dyn EventLog>, Kernel) {
    let dir = tempfile::tempdir().unwrap();
    let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .unwrap();
    let kernel = governed_on(log.clone()).await;
    (dir, log, kernel)
}

/// A kernel with governance attached, both on `log`.
async fn governed_on(log: Arc<dyn EventLog>) -> Kernel {
    let governance = Governance::start(log.clone(), GovernanceConfig::default())
        .await
        .unwrap();
    governed_on_with(log, governance).await
}

/// Every event of `governance.decisions`.
async fn decisions_on(log: &Arc<dyn EventLog>) -> Vec<orchestrata_schemas::events::Envelope> {
    log.read(Stream::GovernanceDecisions, 0, None, 1000)
        .await
        .unwrap()
}

async fn denied(log: &Arc<dyn EventLog>, err: KernelError, result: &str, last_rule: &str) {
    let KernelError::Denied {
        decision_id,
        result: r,
        trace,
        ..
    } = &err
    else {
        panic!("expected a governance denial, got {err}");
    };
    assert_eq!(err.code(), "governance_denied");
    assert_eq!(
        (r.as_str(), trace.last().unwrap().as_str()),
        (result, last_rule),
        "{err}"
    );
    let decisions = decisions_on(log).await;
    assert!(
        decisions.iter().any(|e| matches!(&e.record.event,
        Event::DecisionRecorded(d) if d.decision_id == *decision_id)),
        "decision {decision_id} not on the log"
    );
}

// REQ-004-INTG-001
// REQ-005-FR4-001
// REQ-005-AC3-001
#[tokio::test]
async fn the_kernel_sends_only_what_governance_allows() {
    let (_dir, log, kernel) = governed().await;
    let traffic = || async { log.bounds(Stream::CxpTraffic).await.unwrap().count() };
    kernel
        .execute(cmd::send(
            "U:Ox",
            cmd::packet("U:Ox", "U:Vz", "task", serde_json::json!({})),
        ))
        .await
        .unwrap();
    let before = traffic().await;
    // siblings under U:Ox must escalate (Article IX)
    let err = kernel
        .execute(cmd::send(
            "U:Ar",
            cmd::packet("U:Ar", "U:Ux", "task", serde_json::json!({})),
        ))
        .await
        .unwrap_err();
    denied(&log, err, "escalate", "cross_hierarchy").await;
    // only U:Qa sends fix_issues, to U:Vz (Article X)
    let err = kernel
        .execute(cmd::send(
            "U:Ox",
            cmd::packet("U:Ox", "U:Vz", "fix_issues", serde_json::json!({})),
        ))
        .await
        .unwrap_err();
    denied(&log, err, "deny", "subject_not_owned").await;
    assert_eq!(traffic().await, before, "a denied send appended traffic");
    kernel
        .execute(cmd::send(
            "U:Qa",
            cmd::packet("U:Qa", "U:Vz", "fix_issues", serde_json::json!({})),
        ))
        .await
        .unwrap();
    assert!(traffic().await > before);
}

// REQ-005-US-005-001
// REQ-005-FR3-001
#[tokio::test]
async fn the_kernel_asks_before_registering_deregistering_and_sessions() {
    let (_dir, log, kernel) = governed().await;
    let err = kernel
        .execute(cmd::register("ops-admin", "U:Vz", Some("U:Ox")))
        .await
        .unwrap_err();
    denied(&log, err, "deny", "identity_immutable").await;
    kernel
        .execute(cmd::register("ops-admin", "U:Nw", Some("U:Ox")))
        .await
        .unwrap();
    let err = kernel
        .execute(cmd::deregister("U:Vz", "U:Ar", "test"))
        .await
        .unwrap_err();
    denied(&log, err, "deny", "not_self_or_parent").await;
    kernel
        .execute(cmd::deregister("U:Ox", "U:Nw", "done"))
        .await
        .unwrap();
    kernel
        .execute(cmd::open_session("U:Ox", "s1", "p1"))
        .await
        .unwrap();
    let err = kernel
        .execute(cmd::open_session("U:Ox", "s1", "p1"))
        .await
        .unwrap_err();
    denied(&log, err, "deny", "session_already_open").await;
    kernel
        .execute(cmd::close_session("U:Ox", "s1", "done"))
        .await
        .unwrap();
    let err = kernel
        .execute(cmd::close_session("U:Ox", "s1", "again"))
        .await
        .unwrap_err();
    denied(&log, err, "deny", "session_not_open").await;
}

// REQ-004-INTG-001
// REQ-005-FR4-001
#[tokio::test]
async fn concurrent_sends_of_one_volk_cannot_overrun_the_send_budget() {
    let (_dir, log, kernel) = governed().await;
    kernel
        .execute(cmd::open_session("U:Ox", "s1", "p1"))
        .await
        .unwrap();
    let send = |n: usize| {
        cmd::send(
            "U:Ox",
            cmd::in_session(
                cmd::packet("U:Ox", "U:Vz", "task", serde_json::json!({ "n": n })),
                "s1",
            ),
        )
    };
    for n in 0..99 {
        kernel.execute(send(n)).await.unwrap();
    }
    // Six sends race for the last unit of the budget (100 per Volk per session): each
    // decision must see the sends appended before it, so exactly one gets through.
    let racing: Vec<_> = (99..105)
        .map(|n| {
            let kernel = kernel.clone();
            let command = send(n);
            tokio::spawn(async move { kernel.execute(command).await })
        })
        .collect();
    let mut allowed = 0;
    for task in racing {
        match task.await.unwrap() {
            Ok(_) => allowed += 1,
            Err(err) => denied(&log, err, "deny", "send_budget_exceeded").await,
        }
    }
    assert_eq!(
        allowed, 1,
        "the budget let {allowed} of the racing sends through"
    );
    let sent = log
        .read(Stream::CxpTraffic, 0, None, 1000)
        .await
        .unwrap()
        .iter()
        .filter(
            |e| matches!(&e.record.event, Event::PacketSent(p) if p.packet.from_agent == "U:Ox"),
        )
        .count();
    assert_eq!(sent, 100);
}

// ISSUE-15: one writer — governance decides inside the writer's batch, so a governed
// command and its decision are one append (ISSUE-17: one sled write across both
// streams), and concurrent sends of one Volk share a batch instead of waiting for each
// other's appends.
#[tokio::test]
async fn a_governed_send_and_its_decision_are_one_append_and_one_volks_sends_share_a_batch() {
    let (_dir, counted, log, governance) = faulty_governance().await;
    let kernel = governed_on_with(log.clone(), governance).await;
    let send = |n: usize| {
        cmd::send(
            "U:Ox",
            cmd::packet("U:Ox", "U:Vz", "task", serde_json::json!({ "n": n })),
        )
    };

    let before = counted.appends();
    let outcome = kernel.execute(send(0)).await.unwrap();
    assert_eq!(
        counted.appends() - before,
        1,
        "one send: governance.decisions and cxp.traffic in one write"
    );
    assert!(
        outcome
            .events
            .iter()
            .all(|a| a.stream == Stream::CxpTraffic),
        "the answer lists the command's own events, not its decision: {:?}",
        outcome.event_types()
    );
    let decisions = decisions_on(&log).await;
    let last = decisions.last().expect("the send's decision is on the log");
    let Event::DecisionRecorded(d) = &last.record.event else {
        panic!("last decision event is {:?}", last.record.event_type());
    };
    assert_eq!(
        (d.action.as_str(), d.resource.as_str(), d.subject.as_str()),
        ("cxp.send", "U:Vz", "U:Ox")
    );

    // Twenty sends of one Volk at once: decided one after another by the writer (each
    // on facts holding the ones before it) and appended together.
    let before = counted.appends();
    let decided_before = decisions.len();
    let tasks: Vec<_> = (1..=20)
        .map(|n| {
            let kernel = kernel.clone();
            let command = send(n);
            tokio::spawn(async move { kernel.execute(command).await })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    let used = counted.appends() - before;
    assert!(
        used <= 4,
        "20 concurrent sends of one Volk took {used} appends: they did not share a batch"
    );
    let decisions = decisions_on(&log).await;
    assert_eq!(
        decisions.len() - decided_before,
        20,
        "one decision per send"
    );
}

// ISSUE-15 (one writer): the decisions governance makes for the gateway (a decide, a
// dry run) and a reloaded policy are appended by the kernel's writer while a kernel
// runs beside it — never by governance on its own — and, once the kernel stopped, go
// to the log directly instead of being lost.
#[tokio::test]
async fn governance_records_through_the_kernels_writer_and_to_the_log_once_it_stopped() {
    use orchestrata::governance::Request;
    let (_dir, counted, log, governance) = faulty_governance().await;
    assert!(!governance.records_through_writer());
    let kernel = governed_on_with(log.clone(), governance.clone()).await;
    assert!(governance.records_through_writer());
    let ask = || Request::client("ops-admin", "gateway.access", "admin");

    let own = counted.single_appends();
    let decided = governance.decide(ask()).await.unwrap();
    let dry = governance.evaluate(ask()).await.unwrap();
    governance.reload().await.unwrap();
    assert_eq!(
        counted.single_appends(),
        own,
        "governance appended on its own while the kernel's writer runs"
    );
    let decisions = decisions_on(&log).await;
    let at = |sequence: u64| {
        decisions
            .iter()
            .find(|e| e.sequence == sequence)
            .map(|e| e.record.event_type())
    };
    assert_eq!(at(decided.sequence), Some("decision_recorded"));
    assert_eq!(at(dry.sequence), Some("decision_recorded"));
    assert_ne!(decided.sequence, dry.sequence);
    assert_eq!(
        decisions.last().map(|e| e.record.event_type()),
        Some("policy_loaded"),
        "the reloaded policy is recorded after the two decisions"
    );

    kernel.stop().await;
    let after = governance.decide(ask()).await.unwrap();
    assert_eq!(
        counted.single_appends(),
        own + 1,
        "with the writer stopped, governance appends the decision itself"
    );
    let decisions = decisions_on(&log).await;
    assert_eq!(
        decisions
            .last()
            .map(|e| (e.sequence, e.record.event_type())),
        Some((after.sequence, "decision_recorded"))
    );
}

// ISSUE-15 (one writer, no per-batch catch-up): governance folded the log before the
// kernel's start registered the roster (as `up` runs the two side by side); the
// writer's first batch brings its facts up to the log once, so a roster Volk's first
// send is decided on facts that know it.
#[tokio::test]
async fn facts_appended_before_governance_was_attached_are_folded_before_the_first_decision() {
    let dir = tempfile::tempdir().unwrap();
    let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .unwrap();
    let governance = Governance::start(log.clone(), GovernanceConfig::default())
        .await
        .unwrap();
    let (kernel, report) = Kernel::start(
        log.clone(),
        KernelConfig::default(),
        Arc::new(TokioClock::new()),
    )
    .await
    .unwrap();
    assert!(report.roster_registered);
    let kernel = kernel.with_governance(governance);
    let outcome = kernel
        .execute(cmd::send(
            "U:Ox",
            cmd::packet("U:Ox", "U:Vz", "task", serde_json::json!({})),
        ))
        .await
        .expect("U:Ox, registered by the kernel's start, may send to U:Vz");
    assert!(!outcome.events.is_empty());
}

// ISSUE-15 (one writer, failure path): when the kernel's writer cannot append a
// decision governance made for the gateway, `decide` fails with the writer's reason —
// it neither answers a decision that is not on the log nor appends it behind the
// writer's back — and succeeds again once the log does.
#[tokio::test]
async fn a_decision_the_writer_could_not_append_is_an_error_and_nothing_is_stored() {
    use orchestrata::governance::{GovernanceError, Request};
    let (_dir, faulty, log, governance) = faulty_governance().await;
    let _kernel = governed_on_with(log.clone(), governance.clone()).await;
    let ask = || Request::client("ops-admin", "gateway.access", "admin");
    let before = decisions_on(&log).await.len();
    let own = faulty.single_appends();

    faulty.fail_appends(Stream::GovernanceDecisions);
    let err = governance.decide(ask()).await.unwrap_err();
    assert!(
        matches!(err, GovernanceError::NotRecorded(_)),
        "expected NotRecorded, got {err}"
    );
    assert_eq!(
        faulty.single_appends(),
        own,
        "no append behind the writer's back"
    );
    assert_eq!(decisions_on(&log).await.len(), before, "nothing stored");

    faulty.heal_appends(Stream::GovernanceDecisions);
    let decided = governance.decide(ask()).await.unwrap();
    let decisions = decisions_on(&log).await;
    assert_eq!(decisions.len(), before + 1);
    assert_eq!(decisions.last().map(|e| e.sequence), Some(decided.sequence));
}

/// A kernel on `log` with `governance` attached (kept by the caller too).
async fn governed_on_with(log: Arc<dyn EventLog>, governance: Governance) -> Kernel {
    let (kernel, _) = Kernel::start(log, KernelConfig::default(), Arc::new(TokioClock::new()))
        .await
        .unwrap();
    kernel.with_governance(governance)
}

/// A real sled log in a temp dir behind a [`FaultyLog`] (no fault on yet), and
/// governance started on it.
async fn faulty_governance() -> (
    tempfile::TempDir,
    Arc<FaultyLog>,
    Arc<dyn EventLog>,
    Governance,
) {
    let dir = tempfile::tempdir().unwrap();
    let real = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .unwrap();
    let faulty = FaultyLog::new(real);
    let log: Arc<dyn EventLog> = faulty.clone();
    let governance = Governance::start(log.clone(), GovernanceConfig::default())
        .await
        .unwrap();
    (dir, faulty, log, governance)
}
