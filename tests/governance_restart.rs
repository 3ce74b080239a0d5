//! ISSUE-14 "Governance that cannot be broken by input", ERR-011: when the engine's
//! machine panics, the decision it was evaluating fails closed saying governance was
//! unavailable (never `insufficient_scope`), and the engine restarts itself — a new
//! machine, the policy reloaded, the facts refolded from the view — so the next
//! decision is answered as the policy says. Real engine, real sled log, real gateway
//! over loopback.

mod governance_support;
mod support;

use governance_support::*;

use orchestrata::governance::{Governance, GovernanceConfig, Request};
use orchestrata::kernel::{cmd, KernelError};
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny};
use orchestrata_schemas::events::{Event, Stream};
use serde_json::json;
use support::ws::{self, TOKEN};

// ISSUE-14 ERR-011: a killed engine costs one decision; the next one is answered by a
// rebuilt machine that has the policy and every fact, including facts folded after the
// engine first started.
#[tokio::test]
async fn a_crashed_engine_fails_one_decision_closed_and_restarts_with_policy_and_facts() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let g = governance(&env).await;
    let before = g
        .decide(Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1"))
        .await
        .expect("decided");
    assert_eq!(before.result, Allow);
    // A fact the restarted machine must have: U:Qa exists only after start.
    register(&env.log, "U:Qa", None).await;
    let ask = || Request::volk("U:Qa", "cxp.send", "U:Ox").with("session", "s2");

    g.crash_engine_for_test();
    let failed = g.decide(ask()).await.expect("recorded");
    assert_eq!(failed.result, Deny);
    assert_eq!(failed.trace, ["fail_closed"]);
    let error = failed.error.as_deref().expect("the engine error");
    assert!(error.contains("unavailable"), "{error}");
    assert_eq!(g.engine_failures(), 1);
    let rec = recorded_decision(&env.log, failed.sequence).await;
    assert!(rec
        .reason
        .as_deref()
        .is_some_and(|r| r.contains("unavailable")));
    assert!(rec
        .query
        .as_deref()
        .is_some_and(|q| q.contains("\"error_kind\":\"engine\"")));

    let after = g.decide(ask()).await.expect("decided");
    assert_eq!(after.result, Allow, "{after:?}");
    assert_eq!(after.trace, ["cxp_send", "send_allowed"]);
    assert!(!after.cached && after.error.is_none());
    // An unregistered sender is still refused by the policy, not by a failure.
    let stranger = g
        .decide(Request::volk("U:Zz", "cxp.send", "U:Ox").with("session", "s3"))
        .await
        .expect("decided");
    assert_eq!(stranger.result, Deny);
    assert!(stranger.error.is_none() && stranger.trace != ["fail_closed"]);
    // The restart reloaded the policy in force: no new `policy loaded` event.
    let loads = env
        .log
        .read(Stream::GovernanceDecisions, 0, None, usize::MAX)
        .await
        .expect("read decisions")
        .into_iter()
        .filter(|e| matches!(e.record.event, Event::PolicyLoaded(_)))
        .count();
    assert_eq!(loads, 1);

    // It survives any number of crashes.
    for i in 2..=3 {
        g.crash_engine_for_test();
        let failed = g
            .decide(Request::volk("U:Vz", "cxp.send", "U:Qa").with("session", format!("c{i}")))
            .await
            .expect("recorded");
        assert_eq!(failed.trace, ["fail_closed"]);
        assert_eq!(g.engine_failures(), i);
        let next = g
            .decide(Request::volk("U:Vz", "cxp.send", "U:Qa").with("session", format!("n{i}")))
            .await
            .expect("decided");
        assert_eq!(next.result, Allow, "{next:?}");
    }
}

// ISSUE-14 ERR-011: through the gateway, the call whose decision met the crash answers
// -32001 governance_unavailable (not insufficient_scope), and every later call — this
// client's and a new client's — is authorized as the policy says.
#[tokio::test]
async fn through_the_gateway_a_crash_answers_governance_unavailable_then_calls_pass() {
    let stack =
        support::stack::Governed::start(ws::test_config(), GovernanceConfig::default()).await;
    let governance = &stack.governance;
    let mut c = stack.client(TOKEN).await;
    c.ok("volk.list", json!({})).await;

    // A method this client has not called yet (not in the decision cache).
    governance.crash_engine_for_test();
    let e = c.err("gateway.ping", json!({})).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(e["data"]["reason"], "governance_unavailable", "{e}");
    assert!(
        e["data"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains("unavailable")),
        "{e}"
    );
    assert_eq!(governance.engine_failures(), 1);

    c.ok("gateway.ping", json!({})).await;
    c.ok("session.list", json!({})).await;
    let mut fresh = stack.client(TOKEN).await;
    fresh.ok("gateway.ping", json!({})).await;

    // knowledge.query asks governance itself: a crash there is unavailable too, and
    // the next query is judged (allowed, then Neo4j — absent — answers).
    governance.crash_engine_for_test();
    let cypher = json!({"cypher": "MATCH (v:Volk) RETURN v"});
    let e = c.err("knowledge.query", cypher.clone()).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(e["data"]["reason"], "governance_unavailable", "{e}");
    let e = c.err("knowledge.query", cypher).await;
    assert_ne!(e["data"]["reason"], "governance_unavailable", "{e}");
    assert_ne!(e["data"]["reason"], "insufficient_scope", "{e}");
}

// ISSUE-14 ERR-011: a kernel command whose decision met the crash is refused as
// governance_unavailable (not governance_denied), and the same command passes once
// the engine has restarted.
#[tokio::test]
async fn a_kernel_command_whose_decision_met_the_crash_is_refused_as_unavailable() {
    let support::stack::Core {
        dir: _dir,
        log,
        kernel,
        projections: _projections,
    } = support::stack::Core::start().await;
    let governance = Governance::start(log.clone(), GovernanceConfig::default())
        .await
        .expect("governance starts");
    let kernel = kernel.with_governance(governance.clone());
    let send = || cmd::send("U:Ox", cmd::packet("U:Ox", "U:Vz", "task", json!({"n": 1})));
    governance.crash_engine_for_test();
    let err = kernel.execute(send()).await.expect_err("failed closed");
    assert_eq!(err.code(), "governance_unavailable", "{err}");
    assert!(matches!(err, KernelError::GovernanceFailed(_)), "{err}");
    kernel
        .execute(send())
        .await
        .expect("sent after the restart");
}

// ISSUE-14 ERR-011: decisions queued behind the one that crashed fail closed as
// unavailable or are answered by the rebuilt machine — never anything else.
#[tokio::test]
async fn concurrent_decisions_around_a_crash_are_either_unavailable_or_correct() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let g = governance(&env).await;
    g.crash_engine_for_test();
    let asks = (0..24).map(|i| {
        let g = g.clone();
        tokio::spawn(async move {
            g.decide(Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", format!("s{i}")))
                .await
                .expect("recorded")
        })
    });
    let mut failed = 0;
    for ask in asks {
        let d = ask.await.expect("joined");
        if d.result == Allow {
            assert_eq!(d.trace, ["cxp_send", "send_allowed"]);
        } else {
            assert_eq!(d.trace, ["fail_closed"], "{d:?}");
            assert!(
                d.error
                    .as_deref()
                    .is_some_and(|e| e.contains("unavailable")),
                "{d:?}"
            );
            failed += 1;
        }
    }
    assert!(failed >= 1);
    assert_eq!(g.engine_failures(), 1);
    let after = g
        .decide(Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "after"))
        .await
        .expect("decided");
    assert_eq!(after.result, Allow);
}
