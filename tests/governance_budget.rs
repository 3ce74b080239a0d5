//! The send budget's count fact `cxp_sends/3` (spec 004 Article II, spec 005 Article
//! VI): kept by the facts view as packets are folded, equal to the `cxp_packet/12`
//! scan it replaces, and the same after a restart from the checkpoint, a rebuild from
//! the log, and an audit replay (including one under a policy recorded before the
//! count existed). Real engine, real sled log.

mod governance_support;

use governance_support::*;
use orchestrata::governance::audit::{self, AuditLog};
use orchestrata::governance::{
    Evaluator, FactsView, GovernanceConfig, Policy, Request, DEFAULT_INFERENCE_LIMIT,
};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny};
use orchestrata_schemas::events::{Envelope, EventRecord, Stream};

/// The default `cxp.pl` as it was before `cxp_sends/3`: the budget counted by a scan.
fn findall_policy_cxp() -> String {
    let cxp = Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "cxp.pl")
        .map(|f| f.text.clone())
        .expect("the default policy has cxp.pl");
    let start = cxp
        .find("sends_in_session(V, Session, N) :-")
        .expect("budget rule");
    let end = start + cxp[start..].find(".\n").expect("end of the rule") + 2;
    format!(
        "{}sends_in_session(V, Session, N) :-\n    \
         findall(M, cxp_packet(M, V, _, _, _, _, _, _, _, _, _, Session), Ms),\n    \
         length(Ms, N).\n{}",
        &cxp[..start],
        &cxp[end..]
    )
}

fn packet_envelope(sequence: u64, id: uuid::Uuid, from: &str, session: &str) -> Envelope {
    let mut p = packet(from, "U:Vz", "t1", "task", session);
    p.message_id = id;
    Envelope {
        stream: Stream::CxpTraffic,
        sequence,
        epoch: "test".into(),
        record: EventRecord::new(
            "test",
            id.to_string(),
            PacketSent { packet: p },
            chrono::Utc::now(),
        ),
    }
}

fn count(ev: &mut Evaluator, goal: &str) -> i64 {
    ev.query(goal)
        .expect("query runs")
        .and_then(|b| b.get("N").cloned())
        .expect("query answers N")
        .parse()
        .expect("N is an integer")
}

/// `sends_in_session/3` (the count fact) and the scan of `cxp_packet/12` it replaced.
fn both_counts(ev: &mut Evaluator, from: &str, session: &str) -> (i64, i64) {
    let kept = count(ev, &format!("sends_in_session('{from}', {session}, N)"));
    let scanned = count(
        ev,
        &format!("findall(M, cxp_packet(M, '{from}', _, _, _, _, _, _, _, _, _, {session}), Ms), length(Ms, N)"),
    );
    (kept, scanned)
}

// REQ-004-INTG-001
// REQ-005-FR4-001
#[test]
fn the_send_count_equals_the_packet_scan_through_resends_moves_reloads_and_resets() {
    let senders = ["U:Ox", "U:Vz", "U:Qa"];
    let sessions = ["s1", "s2", "none"];
    let mut view = FactsView::new();
    let mut ev = Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).unwrap();
    let mut ids = Vec::new();
    // A fixed pseudo-random walk: new packets, and packets sent again under an id
    // already seen (same or another sender / session), applied change by change.
    let mut x: u64 = 0x2545_f491_4f6c_dd1d;
    for sequence in 0..240u64 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let from = senders[(x % 3) as usize];
        let session = sessions[((x >> 8) % 3) as usize];
        let id = if ids.is_empty() || !(x >> 16).is_multiple_of(4) {
            let id = uuid::Uuid::new_v4();
            ids.push(id);
            id
        } else {
            ids[((x >> 20) as usize) % ids.len()]
        };
        let changes = view.apply(&packet_envelope(sequence, id, from, session));
        ev.apply(&changes).unwrap();
        if sequence % 40 == 39 {
            for from in senders {
                for session in sessions {
                    let (kept, scanned) = both_counts(&mut ev, from, session);
                    assert_eq!(kept, scanned, "{from} in {session} after {sequence}");
                    assert_eq!(view.sends(from, session), scanned);
                }
            }
        }
    }
    let total: i64 = senders
        .iter()
        .flat_map(|f| sessions.iter().map(move |s| (f, s)))
        .map(|(f, s)| view.sends(f, s))
        .sum();
    assert_eq!(total, ids.len() as i64, "every packet counted once");
    assert_eq!(view.sends("U:Nobody", "s1"), 0);
    assert_eq!(both_counts(&mut ev, "U:Nobody", "s1"), (0, 0));

    // The checkpoint carries the counts (a windowed view no longer holds every packet
    // they count); one written before it did is read with counts rebuilt from its
    // packets, which were every packet.
    let json = serde_json::to_string(&view).unwrap();
    let reloaded: FactsView = serde_json::from_str(&json).unwrap();
    assert_eq!(reloaded, view);
    let mut old_form: serde_json::Value = serde_json::from_str(&json).unwrap();
    let stored = old_form.as_object_mut().unwrap();
    assert!(stored.remove("sends").is_some(), "counts are stored");
    stored.remove("window");
    stored.remove("floor");
    let from_old: FactsView = serde_json::from_value(old_form).unwrap();
    assert_eq!(from_old, view, "counts rebuilt from the packets");
    let mut fresh = Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).unwrap();
    fresh.load_facts(&reloaded.facts()).unwrap();
    for from in senders {
        for session in sessions {
            let (kept, scanned) = both_counts(&mut fresh, from, session);
            assert_eq!(
                (kept, scanned),
                (view.sends(from, session), view.sends(from, session))
            );
        }
    }

    // Clearing the facts clears the counts (an audit replay going back resets this way).
    fresh.clear_facts().unwrap();
    assert_eq!(both_counts(&mut fresh, "U:Ox", "s1"), (0, 0));
    assert!(fresh.query("cxp_sends(_, _, _)").unwrap().is_none());
}

// REQ-004-INTG-001
// REQ-005-FR4-001
#[tokio::test]
async fn the_send_count_survives_a_restart_from_the_checkpoint_and_a_rebuild() {
    let env = ox_and_vz_with_sends(99).await;
    let checkpoint = env.dir.path().join("facts.json");
    let config = GovernanceConfig {
        checkpoint: Some(checkpoint.clone()),
        ..Default::default()
    };
    let ask = || Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1");
    let g = governance_with(&env, config.clone()).await;
    assert_eq!(g.decide(ask()).await.unwrap().result, Allow);
    g.checkpoint().await.unwrap();
    g.stop_engine();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&checkpoint).unwrap()).unwrap();
    assert_eq!(saved["positions"]["cxp.traffic"], 99);

    // Restarted from the checkpoint: 99 counted there, the 100th folded from the log.
    send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    let g2 = governance_with(&env, config.clone()).await;
    assert_eq!(g2.facts_positions().await["cxp.traffic"], 100);
    let d = g2.decide(ask()).await.unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["cxp_send", "send_budget_exceeded"]);
    assert_eq!(
        g2.decide(ask().with("session", "s2")).await.unwrap().result,
        Allow
    );
    g2.checkpoint().await.unwrap();
    g2.stop_engine();

    // Rebuilt from the log alone (no checkpoint): the same count, the same answer.
    std::fs::remove_file(&checkpoint).unwrap();
    let g3 = governance_with(&env, config).await;
    assert_eq!(g3.facts_positions().await["cxp.traffic"], 100);
    let d = g3.decide(ask()).await.unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["cxp_send", "send_budget_exceeded"]);
    g3.stop_engine();

    // Every decision above re-evaluates identically offline.
    let report = audit::verify(&AuditLog::read(env.log.as_ref()).await.unwrap());
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert_eq!(report.checked, 4);
}

// REQ-004-INTG-001
// REQ-005-FR4-001
// REQ-014-032
#[tokio::test]
async fn audit_replays_budget_decisions_recorded_under_the_scanning_policy_and_out_of_order() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let old = default_policy_dir_with(&[("cxp.pl", &findall_policy_cxp())]);
    let ask = || Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1");
    // `late` keeps the facts it had at start (50 sends) and decides after `g` has
    // seen 100: its decision records earlier positions than the one before it, so the
    // audit replay must go back (clear the facts, counts included, and fold again).
    for _ in 0..50 {
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    }
    let late = governance_with(
        &env,
        GovernanceConfig {
            sync_before_decide: false,
            ..Default::default()
        },
    )
    .await;
    let scanning = governance_with(
        &env,
        GovernanceConfig {
            policy_dir: Some(old.path().to_path_buf()),
            ..Default::default()
        },
    )
    .await;
    let g = governance(&env).await;
    for _ in 0..50 {
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    }
    let by_count = g.decide(ask()).await.unwrap();
    let by_scan = scanning.decide(ask()).await.unwrap();
    assert_eq!((by_count.result, by_scan.result), (Deny, Deny));
    assert_eq!(by_count.trace, by_scan.trace);
    assert_ne!(g.policy_hash(), scanning.policy_hash());
    assert_eq!(late.decide(ask()).await.unwrap().result, Allow);
    assert_eq!(
        scanning
            .decide(ask().with("session", "s2"))
            .await
            .unwrap()
            .result,
        Allow
    );

    let log = AuditLog::read(env.log.as_ref()).await.unwrap();
    let report = audit::verify(&log);
    assert!(report.mismatches.is_empty(), "{:?}", report.mismatches);
    assert_eq!(report.checked, 4);
    // The counting policy decides every recorded decision as the scanning one did.
    let diff = audit::diff(&log, &Policy::default_policy()).unwrap();
    assert_eq!(diff.compared, 4);
    assert!(diff.changes.is_empty(), "{:?}", diff.changes);
}
