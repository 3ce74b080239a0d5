//! Decisions reused while the roster holds (`cacheable_with/2`, issue 15): under the
//! default policy a `cxp.send` outside a session is evaluated once and then answered
//! from the cache until a roster fact changes or the policy is replaced; a send in a
//! session reads its send count (a traffic fact) and is evaluated every time. Every
//! reused decision is recorded with the facts positions it was served at, and `audit
//! verify` re-evaluates it. Real engine, real sled log, real kernel.

mod governance_support;

use std::sync::Arc;

use governance_support::*;
use orchestrata::governance::audit::{self, AuditLog};
use orchestrata::governance::{Decision, Governance, GovernanceConfig, RecordedQuery, Request};
use orchestrata::kernel::{cmd, Kernel, KernelConfig, KernelError, TokioClock};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny, Escalate};
use orchestrata_schemas::events::volk_lifecycle::VolkDeregistered;
use orchestrata_schemas::events::{EventRecord, Stream};

/// A send from U:Ox to `to` outside any session, in thread `thread`.
fn send_to(to: &str, subject: &str, thread: &str) -> Request {
    Request::volk("U:Ox", "cxp.send", to)
        .with("subject", subject)
        .with("thread", thread)
        .with("priority", 5)
}

async fn deregister(log: &Arc<dyn EventLog>, alias: &str) {
    let e = VolkDeregistered {
        alias: alias.into(),
        reason: "test".into(),
    };
    log.append(&EventRecord::new("kernel", alias, e, chrono::Utc::now()))
        .await
        .expect("append");
}

fn outcome(
    d: &Decision,
) -> (
    orchestrata_schemas::events::types::DecisionResult,
    &str,
    bool,
) {
    (
        d.result,
        d.trace.last().map(String::as_str).unwrap_or(""),
        d.cached,
    )
}

// REQ-005-FR4-001
// ISSUE-15
#[tokio::test]
async fn a_send_outside_a_session_is_reused_only_until_the_roster_changes() {
    let env = ox_and_vz_with_sends(0).await;
    let g = governance(&env).await;

    let first = g.decide(send_to("U:Vz", "task", "t1")).await.unwrap();
    assert_eq!(outcome(&first), (Allow, "send_allowed", false));
    // Another thread and priority: keys the policy does not read; the same answer,
    // served without the engine.
    let second = g
        .decide(send_to("U:Vz", "task", "t2").with("priority", 9))
        .await
        .unwrap();
    assert_eq!(outcome(&second), (Allow, "send_allowed", true));
    assert_eq!(second.trace, first.trace);
    assert_eq!(second.articles, first.articles);
    assert_eq!(g.decisions_reused(), 1);

    // The recipient leaves: the next send is evaluated again, and refused.
    deregister(&env.log, "U:Vz").await;
    let after = g.decide(send_to("U:Vz", "task", "t3")).await.unwrap();
    assert_eq!(outcome(&after), (Deny, "unknown_recipient", false));
    let again = g.decide(send_to("U:Vz", "task", "t4")).await.unwrap();
    assert_eq!(outcome(&again), (Deny, "unknown_recipient", true));
    // Back on the roster: evaluated again, allowed.
    register(&env.log, "U:Vz", None).await;
    let back = g.decide(send_to("U:Vz", "task", "t5")).await.unwrap();
    assert_eq!(outcome(&back), (Allow, "send_allowed", false));

    // The subject is a key the policy reads: another subject is evaluated on its own.
    register(&env.log, "U:Qa", None).await;
    let route = g
        .decide(send_to("U:Qa", "review_code", "t6"))
        .await
        .unwrap();
    assert_eq!(outcome(&route), (Allow, "sanctioned_route", false));
    let not_owned = g.decide(send_to("U:Qa", "fix_issues", "t7")).await.unwrap();
    assert_eq!(outcome(&not_owned), (Deny, "subject_not_owned", false));
    let route_again = g
        .decide(send_to("U:Qa", "review_code", "t8"))
        .await
        .unwrap();
    assert_eq!(outcome(&route_again), (Allow, "sanctioned_route", true));
    // So is the session: a session named is not the cached sessionless answer.
    open_session(&env.log, "s1").await;
    let in_session = g
        .decide(send_to("U:Vz", "task", "t9").with("session", "s1"))
        .await
        .unwrap();
    assert_eq!(outcome(&in_session), (Allow, "send_allowed", false));
    // A dry run neither reads nor fills the cache.
    let dry = g.evaluate(send_to("U:Vz", "task", "t10")).await.unwrap();
    assert!(!dry.cached);
}

// REQ-005-FR4-001
// ISSUE-15
#[tokio::test]
async fn a_send_in_a_session_reads_its_count_and_is_never_reused() {
    let env = ox_and_vz_with_sends(98).await;
    open_session(&env.log, "s1").await;
    let g = governance(&env).await;
    let ask = || send_to("U:Vz", "task", "t1").with("session", "s1");
    for _ in 0..2 {
        let d = g.decide(ask()).await.unwrap();
        assert_eq!(outcome(&d), (Allow, "send_allowed", false));
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    }
    // The 100th send is on the log: the budget (100) refuses the next, although the
    // request is the same as the two allowed before.
    let d = g.decide(ask()).await.unwrap();
    assert_eq!(outcome(&d), (Deny, "send_budget_exceeded", false));
    assert_eq!(g.decisions_reused(), 0);
}

// REQ-014-104
// ISSUE-15
#[tokio::test]
async fn a_policy_load_ends_reuse_and_a_policy_naming_internal_facts_gets_none() {
    let env = ox_and_vz_with_sends(0).await;
    let g = governance(&env).await;
    for cached in [false, true] {
        let d = g.decide(send_to("U:Vz", "task", "t1")).await.unwrap();
        assert_eq!(outcome(&d), (Allow, "send_allowed", cached));
    }
    // Root Volks no longer peers: the same send now escalates.
    let cxp = orchestrata::governance::Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "cxp.pl")
        .expect("cxp.pl")
        .text
        .replace("may_talk(A, B) :- root_volk(A), root_volk(B).\n", "");
    let strict = default_policy_dir_with(&[("cxp.pl", &cxp)]);
    g.load_policy_dir(strict.path()).await.unwrap();
    for cached in [false, true] {
        let d = g.decide(send_to("U:Vz", "task", "t1")).await.unwrap();
        assert_eq!(outcome(&d), (Escalate, "cross_hierarchy", cached));
    }

    // A policy whose text names an internal fact predicate (a read the engine would not
    // note) keeps its declaration but gets no reuse.
    let reads_base = default_policy_dir_with(&[(
        "extra.pl",
        "packets_seen(N) :- findall(A, cxp_packet_base(A,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_), L), length(L, N).\n",
    )]);
    g.load_policy_dir(reads_base.path()).await.unwrap();
    let reused = g.decisions_reused();
    for _ in 0..3 {
        let d = g.decide(send_to("U:Vz", "task", "t1")).await.unwrap();
        assert_eq!(outcome(&d), (Allow, "send_allowed", false));
    }
    assert_eq!(g.decisions_reused(), reused);
}

// REQ-014-032
// ISSUE-15
#[tokio::test]
async fn a_reused_decision_is_recorded_with_its_facts_positions_and_audit_verifies_it() {
    let env = ox_and_vz_with_sends(0).await;
    let g = governance(&env).await;
    let mut reused = Vec::new();
    for round in 0..3u64 {
        for thread in ["a", "b"] {
            let d = g.decide(send_to("U:Vz", "task", thread)).await.unwrap();
            if d.cached {
                reused.push((d.sequence, round));
            }
        }
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "none")).await;
        if round == 1 {
            deregister(&env.log, "U:Vz").await;
        }
    }
    assert_eq!(
        reused.len(),
        4,
        "the second of each round, and the first of round two"
    );
    for (sequence, round) in reused {
        let rec = recorded_decision(&env.log, sequence).await;
        assert_eq!(
            (
                rec.subject.as_str(),
                rec.action.as_str(),
                rec.resource.as_str()
            ),
            ("U:Ox", "cxp.send", "U:Vz")
        );
        let query: RecordedQuery = serde_json::from_str(rec.query.as_deref().unwrap()).unwrap();
        // The positions of the moment it was served: one send more each round, the
        // deregistration after round 1.
        let at = |stream: Stream| query.facts_at.get(stream.as_str()).copied();
        let sends = (round > 0).then_some(round);
        let lifecycle = if round == 2 { 3 } else { 2 };
        assert_eq!(
            (at(Stream::CxpTraffic), at(Stream::VolkLifecycle)),
            (sends, Some(lifecycle)),
            "{query:?}"
        );
    }

    let log = AuditLog::read(env.log.as_ref()).await.unwrap();
    let report = audit::verify(&log);
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert_eq!(report.checked, 6);
}

async fn governed_kernel(log: Arc<dyn EventLog>, governance: Governance) -> Kernel {
    let (kernel, _) = Kernel::start(log, KernelConfig::default(), Arc::new(TokioClock::new()))
        .await
        .unwrap();
    kernel.with_governance(governance)
}

// REQ-005-FR4-001
// ISSUE-15
#[tokio::test]
async fn through_the_kernel_a_deregistration_in_the_same_writer_ends_reuse() {
    let env = sled_env().await;
    let g = Governance::start(env.log.clone(), GovernanceConfig::default())
        .await
        .unwrap();
    let kernel = governed_kernel(env.log.clone(), g.clone()).await;
    // The kernel starts with the default roster (U:Ox, U:Vz and the others).
    let send = || {
        cmd::send(
            "U:Ox",
            cmd::packet("U:Ox", "U:Vz", "task", serde_json::json!({})),
        )
    };
    for _ in 0..3 {
        kernel.execute(send()).await.unwrap();
    }
    assert_eq!(g.decisions_reused(), 2);
    kernel
        .execute(cmd::deregister("operator", "U:Vz", "test"))
        .await
        .unwrap();
    let err = kernel.execute(send()).await.unwrap_err();
    let KernelError::Denied { trace, .. } = &err else {
        panic!("expected a denial, got {err}");
    };
    assert_eq!(trace.last().map(String::as_str), Some("unknown_recipient"));
}

// An action the policy in force does not declare `cacheable/1` is decided every time;
// a policy that declares it cacheable caches it at once, whatever the previous policy
// answered.
// REQ-014-104
#[tokio::test]
async fn the_policy_in_force_decides_what_its_cache_keeps() {
    let env = sled_env().await;
    let dir = default_policy_dir_with(&[]);
    let decide = dir.path().join("decide.pl");
    let with_cacheable = std::fs::read_to_string(&decide).expect("decide.pl");
    assert!(with_cacheable.contains("cacheable('gateway.access')."));
    std::fs::write(
        &decide,
        with_cacheable.replace("cacheable('gateway.access').", ""),
    )
    .expect("write decide.pl");
    let g = governance_in(&env, dir.path()).await;
    let ask = || Request::client("ops-admin", "gateway.access", "admin");
    for _ in 0..3 {
        let d = g.decide(ask()).await.expect("decide");
        assert_eq!((d.result, d.cached), (Allow, false));
    }
    std::fs::write(&decide, &with_cacheable).expect("write decide.pl");
    g.load_policy_dir(dir.path()).await.expect("reload");
    let first = g.decide(ask()).await.expect("decide");
    assert_eq!((first.result, first.cached), (Allow, false));
    let second = g.decide(ask()).await.expect("decide");
    assert_eq!((second.result, second.cached), (Allow, true));
}
