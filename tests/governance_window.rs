//! The engine's packet window and its renewal (issue 18, bounded memory): policies see
//! the most recent packets, send counts still cover the whole history, a fresh machine
//! loaded with the window answers exactly as the machine that folded every event, a
//! renewal under load loses no decision, and every decision re-evaluates offline on
//! the window it was taken with. Real engine, real sled log.

mod governance_support;

use std::collections::BTreeSet;

use governance_support::*;
use orchestrata::governance::audit::{self, AuditLog};
use orchestrata::governance::{
    Evaluator, FactsView, Governance, GovernanceConfig, PacketField, Policy, Request,
    DEFAULT_INFERENCE_LIMIT,
};
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny};
use uuid::Uuid;

/// The message ids the machine shows (`cxp_packet/12`), as text.
fn shown(ev: &mut Evaluator) -> BTreeSet<String> {
    let answer = ev
        .query("findall(M, cxp_packet(M,_,_,_,_,_,_,_,_,_,_,_), Ms)")
        .expect("query runs")
        .expect("findall answers");
    let list = answer.get("Ms").cloned().unwrap_or_default();
    list.trim_matches(|c| c == '[' || c == ']')
        .split("id(")
        .map(|s| s.trim_end_matches([',', ')', ' ']).to_owned())
        .filter(|s| !s.is_empty())
        .collect()
}

fn answer(ev: &mut Evaluator, goal: &str, var: &str) -> Option<String> {
    ev.query(goal)
        .expect("query runs")
        .and_then(|b| b.get(var).cloned())
}

// REQ-004-INTG-001
// REQ-004-INTG-002
#[test]
fn the_engine_shows_the_most_recent_packets_and_a_fresh_machine_shows_the_same() {
    let mut view = FactsView::with_window(Some(40));
    let mut ev = Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).unwrap();
    let mut ids = Vec::new();
    let mut sequence = 0;
    for n in 0..200 {
        let id = Uuid::new_v4();
        ids.push(id);
        ev.apply(&view.apply(&sent(sequence, id))).unwrap();
        sequence += 1;
        if n % 3 == 0 {
            ev.apply(&view.apply(&delivered(sequence, id))).unwrap();
            sequence += 1;
        }
    }
    // 40 shown, plus at most a sixteenth more before the oldest are hidden at once.
    let count = view.shown_packets();
    assert!((40..=42).contains(&count), "{count} packets shown");
    let seen = shown(&mut ev);
    assert_eq!(seen.len(), count, "the engine shows what the view keeps");
    let first = format!(
        "cxp_packet(M,_,_,_,_,_,_,_,_,_,_,_), M = {}",
        id_term(ids[0])
    );
    assert!(
        ev.query(&first).unwrap().is_none(),
        "the oldest packet is hidden"
    );
    let last = ids[199];
    let status = format!("cxp_delivery_status({}, S, _)", id_term(last));
    assert_eq!(answer(&mut ev, &status, "S").as_deref(), Some("queued"));
    // A hidden packet's later events change nothing.
    assert!(view.apply(&delivered(sequence, ids[1])).is_empty());
    // Counts are not windowed: the budget sees all 200 sends.
    assert_eq!(view.sends("U:Ox", "s1"), 200);
    let n = answer(&mut ev, "sends_in_session('U:Ox', s1, N)", "N");
    assert_eq!(n.as_deref(), Some("200"));
    let budget = Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1");
    assert_eq!(ev.decide(&budget).unwrap().result, Deny);

    // A fresh machine loaded with the view (what a renewal builds) answers the same,
    // and so does one loaded from the checkpoint form.
    let json = serde_json::to_string(&view).unwrap();
    let restored: FactsView = serde_json::from_str(&json).unwrap();
    assert_eq!(restored, view);
    for facts in [view.facts(), restored.facts()] {
        let mut fresh =
            Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).unwrap();
        fresh.load_facts(&facts).unwrap();
        assert_eq!(shown(&mut fresh), seen);
        assert_eq!(answer(&mut fresh, &status, "S").as_deref(), Some("queued"));
        let n = answer(&mut fresh, "sends_in_session('U:Ox', s1, N)", "N");
        assert_eq!(n.as_deref(), Some("200"));
        assert_eq!(fresh.decide(&budget).unwrap().result, Deny);
    }
    // Clearing resets the floor and the counts too (what an audit replay going back does).
    ev.clear_facts().unwrap();
    ev.apply(&FactsView::new().apply(&sent(0, ids[0]))).unwrap();
    assert_eq!(
        shown(&mut ev).len(),
        1,
        "a packet at sequence 0 is shown again"
    );
    let n = answer(&mut ev, "sends_in_session('U:Ox', s1, N)", "N");
    assert_eq!(n.as_deref(), Some("1"));
}

/// `id(A, B, C)` of a message id, as the engine writes it.
fn id_term(id: Uuid) -> String {
    orchestrata::governance::term::PlTerm::message_id(&id.to_string()).to_string()
}

// REQ-004-INTG-001
// REQ-014-032
#[tokio::test]
async fn the_engine_is_renewed_under_load_without_losing_a_decision() {
    // 1 MB, ~250 asserted clauses' worth: several renewals over the sends below.
    let (env, g) = renewing_every_mb(100).await;
    assert_eq!(g.engine_renewals(), 0);
    let mut first = None;
    let mut last = None;
    let mut decisions = 0;
    for n in 0..1_500u32 {
        let session = format!("s{}", n % 7);
        let id = send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", &session)).await;
        first.get_or_insert(id);
        last = Some(id);
        if n % 50 == 49 {
            // A read of packet facts compiles the sends waiting for one
            // (`pending.rs`), which is what fills the machine towards a renewal.
            let shown = g.packets_where(PacketField::Sender, "U:Ox").await.unwrap();
            assert!(shown.contains(&id.to_string()), "send {n} is shown");
        }
        if n % 5 == 0 {
            // Decisions while renewals load and hand over: each is answered by a
            // machine (no fail-closed answer), allowed until the budget is spent.
            let ask = Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", session.clone());
            let d = g.decide(ask).await.unwrap();
            assert_eq!(d.error, None, "decision {n} failed closed");
            let expected = if n / 7 + 1 < 100 { Allow } else { Deny };
            assert_eq!(d.result, expected, "decision {n} in {session}");
            decisions += 1;
        }
    }
    let renewed = wait_for(|| g.engine_renewals() >= 2).await;
    assert!(renewed, "renewals: {}", g.engine_renewals());
    // After renewals the engine still shows the window, and exactly it.
    let shown = g.packets_where(PacketField::Sender, "U:Ox").await.unwrap();
    assert!((100..=106).contains(&shown.len()), "{} shown", shown.len());
    let last = last.unwrap().to_string();
    let first = first.unwrap().to_string();
    assert!(shown.contains(&last));
    assert!(!shown.contains(&first));
    let ask = Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s0");
    let d = g.decide(ask).await.unwrap();
    assert_eq!(d.result, Deny, "215 sends in s0 are over the budget of 100");
    assert_eq!(d.trace, vec!["cxp_send", "send_budget_exceeded"]);
    g.stop_engine();

    // Every decision re-evaluates offline on the window it was taken with.
    let report = audit::verify(&AuditLog::read(env.log.as_ref()).await.unwrap());
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert_eq!(report.checked, decisions + 1);
}

// ISSUE-15
#[tokio::test]
async fn a_renewal_compiles_packet_facts_only_where_a_goal_has_read_them() {
    // Every packet stays visible (what waits is exactly what was sent); 1 MB, ~1,000
    // decisions' worth: a renewal after each round of decisions below.
    let (env, g) = renewing_every_mb(10_000).await;
    // Decisions that read no packet facts (the default policy's cxp.send) until the
    // engine takes a renewal (its budget falls back to 0), then none until the fresh
    // machine serves (so no second renewal is asked for meanwhile), then one, so the
    // serving machine has published what waits in it. In a session of its own: the
    // send count it reads (not a packet fact) keeps it from being reused, so each one
    // runs on the machine.
    let renew = |times: u64| {
        let g = &g;
        async move {
            let ask = Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s9");
            let mut spent = g.engine_spent();
            for _ in 0..100_000 {
                let j = g.judge(&ask).await;
                assert_eq!(j.outcome.map(|o| o.result), Ok(Allow));
                if g.engine_spent() < spent {
                    break;
                }
                spent = g.engine_spent();
            }
            assert!(wait_for(|| g.engine_renewals() >= times).await);
            assert_eq!(g.engine_renewals(), times, "renewed");
            assert!(g.judge(&ask).await.outcome.is_ok());
        }
    };
    for _ in 0..100 {
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    }
    renew(1).await;
    assert_eq!(
        g.waiting_packets(),
        100,
        "no goal read packet facts: the renewed machine left them waiting"
    );
    // A read of packet facts compiles them; from then on renewals compile ahead.
    // (100 packets: their compile stays below the budget, so no renewal is asked for
    // before the policy load below.)
    let shown = g.packets_where(PacketField::Sender, "U:Ox").await.unwrap();
    assert_eq!(shown.len(), 100);
    assert_eq!(g.waiting_packets(), 0);
    // A policy load replaces the machine (its packets wait again); the read is not
    // forgotten.
    g.reload().await.unwrap();
    renew(2).await;
    assert_eq!(
        g.waiting_packets(),
        0,
        "a goal read packet facts: the renewed machine compiled the window before serving"
    );
    let shown = g.packets_where(PacketField::Sender, "U:Ox").await.unwrap();
    assert_eq!(shown.len(), 100);
}

/// U:Ox and U:Vz on a fresh log, and governance over it with a packet window of
/// `window` that asks for a renewal after every estimated megabyte.
async fn renewing_every_mb(window: u64) -> (Env, Governance) {
    let env = ox_and_vz_with_sends(0).await;
    let config = GovernanceConfig {
        fact_window: Some(window),
        engine_renew_mb: 1,
        ..Default::default()
    };
    let g = governance_with(&env, config).await;
    (env, g)
}

/// Polls `done` for up to 60 s (a renewal loads on another thread).
async fn wait_for(done: impl Fn() -> bool) -> bool {
    for _ in 0..600 {
        if done() {
            return true;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    done()
}

// REQ-004-INTG-001
#[tokio::test]
async fn a_checkpoint_kept_with_another_window_is_folded_again() {
    let env = ox_and_vz_with_sends(300).await;
    let checkpoint = env.dir.path().join("facts.json");
    let with = |window| GovernanceConfig {
        checkpoint: Some(checkpoint.clone()),
        fact_window: window,
        ..Default::default()
    };
    let shown = |g: orchestrata::governance::Governance| async move {
        let n = g
            .packets_where(PacketField::Sender, "U:Ox")
            .await
            .unwrap()
            .len();
        g.checkpoint().await.unwrap();
        g.stop_engine();
        n
    };
    assert!((100..=106).contains(&shown(governance_with(&env, with(Some(100))).await).await));
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&checkpoint).unwrap()).unwrap();
    assert_eq!(saved["window"], 100);
    assert!((50..=53).contains(&shown(governance_with(&env, with(Some(50))).await).await));
    assert_eq!(shown(governance_with(&env, with(None)).await).await, 300);
    // Counts come from the whole history whatever the window.
    let g = governance_with(&env, with(Some(50))).await;
    let d = g
        .decide(Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1"))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    g.stop_engine();
}

// ISSUE-15
#[tokio::test]
async fn a_damaged_checkpoint_is_folded_from_the_log_instead_of_refusing_to_start() {
    let env = ox_and_vz_with_sends(120).await;
    let checkpoint = env.dir.path().join("facts.json");
    let config = || GovernanceConfig {
        checkpoint: Some(checkpoint.clone()),
        ..Default::default()
    };
    let g = governance_with(&env, config()).await;
    g.checkpoint().await.unwrap();
    g.stop_engine();
    assert!(
        !env.dir.path().join("facts.tmp").exists(),
        "renamed into place"
    );
    // What a machine that lost the checkpoint's last write may leave.
    let written = std::fs::read(&checkpoint).unwrap();
    for damaged in [
        Vec::new(),
        written[..written.len() / 2].to_vec(),
        b"{}".to_vec(),
    ] {
        std::fs::write(&checkpoint, &damaged).unwrap();
        let g = governance_with(&env, config()).await;
        let shown = g.packets_where(PacketField::Sender, "U:Ox").await.unwrap();
        assert_eq!(shown.len(), 120, "the facts were folded from the log");
        // The budget still counts every send of the session.
        let ask = Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1");
        assert_eq!(g.decide(ask).await.unwrap().result, Deny);
        g.stop_engine();
    }
}

// REQ-004-US-002-021
// REQ-004-INTG-001
#[tokio::test]
async fn a_party_may_still_change_the_priority_of_a_packet_the_window_no_longer_shows() {
    use orchestrata::kernel::{cmd, Kernel, KernelConfig, KernelError, TokioClock};
    let env = sled_env().await;
    let (kernel, _) = Kernel::start(
        env.log.clone(),
        KernelConfig::default(),
        std::sync::Arc::new(TokioClock::new()),
    )
    .await
    .unwrap();
    let config = GovernanceConfig {
        fact_window: Some(5),
        ..Default::default()
    };
    let g = governance_with(&env, config).await;
    let kernel = kernel.with_governance(g.clone());
    let send = |subject: &str| {
        cmd::send(
            "U:Ox",
            cmd::packet("U:Ox", "U:Vz", subject, serde_json::json!({})),
        )
    };
    let first = send("task");
    let orchestrata_schemas::events::CommandKind::SendPacket { packet } = &first.action else {
        panic!("a send");
    };
    let id = packet.message_id;
    kernel.execute(first.clone()).await.unwrap();
    for _ in 0..20 {
        kernel.execute(send("task")).await.unwrap();
    }
    let hidden = g
        .packets_where(PacketField::MessageId, &id.to_string())
        .await
        .unwrap();
    assert!(hidden.is_empty(), "the first packet is outside the window");
    // Its sender may still raise its priority; a Volk that is no party may not.
    kernel.execute(cmd::priority("U:Ox", id, 6)).await.unwrap();
    let err = kernel
        .execute(cmd::priority("U:Qa", id, 7))
        .await
        .unwrap_err();
    let KernelError::Denied { trace, .. } = &err else {
        panic!("expected a denial, got {err}");
    };
    assert_eq!(trace.last().map(String::as_str), Some("not_a_party"));
    g.stop_engine();
    let report = audit::verify(&AuditLog::read(env.log.as_ref()).await.unwrap());
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
}
