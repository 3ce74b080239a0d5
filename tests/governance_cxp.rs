//! CXP governance (spec 004 Articles II, V, X): decision events, routing, subject
//! ownership, the traffic budget and the Prolog packet facts. Real engine, real sled log.

mod governance_support;

use governance_support::*;
use orchestrata::governance::{PacketField, Request};
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny, Escalate};

// REQ-014-032
// REQ-014-033
// REQ-014-035
#[tokio::test]
async fn every_decision_is_an_event_with_query_trace_articles_and_latency() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let g = governance(&env).await;
    let d = g
        .decide(Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1"))
        .await
        .unwrap();
    assert_eq!(d.result, Allow);
    let rec = recorded_decision(&env.log, d.sequence).await;
    assert_eq!(rec.decision_id, d.decision_id);
    assert_eq!(
        (
            rec.subject.as_str(),
            rec.action.as_str(),
            rec.resource.as_str()
        ),
        ("U:Ox", "cxp.send", "U:Vz")
    );
    assert_eq!(rec.rule_trace, vec!["cxp_send", "send_allowed"]);
    assert_eq!(
        rec.articles_applied,
        vec!["005 Article IX", "004 Article X"]
    );
    assert_eq!(Some(rec.policy_hash.clone()), g.policy_hash());
    assert!(rec.latency_us > 0);
    let query: serde_json::Value = serde_json::from_str(rec.query.as_deref().unwrap()).unwrap();
    assert!(query["goal"]
        .as_str()
        .unwrap()
        .starts_with("decide(volk('U:Ox'),'cxp.send','U:Vz'"));
    assert_eq!(query["facts_at"]["volk.lifecycle"], 2);
    assert!(!rec.dry_run);
}

// REQ-004-INTG-001
// REQ-005-FR5-001
#[tokio::test]
async fn cxp_routing_unknown_volks_juniors_and_cross_hierarchy() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    register(&env.log, "U:Qa", None).await;
    register(&env.log, "U:Ar", Some("U:Ox")).await;
    register(&env.log, "U:Ux", Some("U:Vz")).await;
    spawn_junior(&env.log, "U:Jr", "U:Ox").await;
    let g = governance(&env).await;
    let send = |f: &str, t: &str| Request::volk(f, "cxp.send", t);
    assert_eq!(
        g.decide(send("U:Ox", "U:Ar")).await.unwrap().result,
        Allow,
        "parent to child"
    );
    assert_eq!(
        g.decide(send("U:Ar", "U:Ox")).await.unwrap().result,
        Allow,
        "child to parent"
    );
    let d = g.decide(send("U:Ox", "U:Zz")).await.unwrap();
    assert_eq!(
        (d.result, d.trace.last().unwrap().as_str()),
        (Deny, "unknown_recipient")
    );
    let d = g.decide(send("U:Zz", "U:Ox")).await.unwrap();
    assert_eq!(
        (d.result, d.trace.last().unwrap().as_str()),
        (Deny, "unknown_sender")
    );
    // Article IX: siblings across the hierarchy must escalate
    let d = g.decide(send("U:Ar", "U:Ux")).await.unwrap();
    assert_eq!(
        (d.result, d.articles.clone()),
        (Escalate, vec!["005 Article IX".to_owned()])
    );
    // Article IX 9.5: a junior talks to its parent only
    assert_eq!(g.decide(send("U:Jr", "U:Ox")).await.unwrap().result, Allow);
    let d = g.decide(send("U:Jr", "U:Vz")).await.unwrap();
    assert_eq!(
        (d.result, d.trace.last().unwrap().as_str()),
        (Deny, "junior_parent_only")
    );
}

// REQ-004-INTG-001
#[tokio::test]
async fn subject_ownership_only_qa_sends_fix_issues_to_vz() {
    let env = sled_env().await;
    for v in ["U:Ox", "U:Vz", "U:Qa"] {
        register(&env.log, v, None).await;
    }
    let g = governance(&env).await;
    let send = |f: &str, t: &str, s: &str| Request::volk(f, "cxp.send", t).with("subject", s);
    assert_eq!(
        g.decide(send("U:Qa", "U:Vz", "fix_issues"))
            .await
            .unwrap()
            .result,
        Allow
    );
    let d = g.decide(send("U:Ox", "U:Vz", "fix_issues")).await.unwrap();
    assert_eq!(
        (d.result, d.articles.clone()),
        (Deny, vec!["004 Article X".to_owned()])
    );
    assert_eq!(
        g.decide(send("U:Vz", "U:Qa", "review_code"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(send("U:Qa", "U:Ox", "review_code"))
            .await
            .unwrap()
            .result,
        Deny
    );
}

// REQ-004-INTG-001
// REQ-005-FR4-001
#[tokio::test]
async fn budget_rule_denies_the_101st_send_in_a_session_from_traffic_facts() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let g = governance(&env).await;
    let ask = || Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1");
    for i in 0..100 {
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
        if i == 98 {
            // after 99 sends the 100th is still allowed
            assert_eq!(g.decide(ask()).await.unwrap().result, Allow);
        }
    }
    let d = g.decide(ask()).await.unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["cxp_send", "send_budget_exceeded"]);
    // another session and another Volk are unaffected
    let other = Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s2");
    assert_eq!(g.decide(other).await.unwrap().result, Allow);
    assert_eq!(
        g.decide(Request::volk("U:Vz", "cxp.send", "U:Ox").with("session", "s1"))
            .await
            .unwrap()
            .result,
        Allow
    );
}

// REQ-004-INTG-001
// REQ-004-INTG-002
// REQ-004-INTG-003
// REQ-004-INTG-004
// REQ-004-INTG-005
#[tokio::test]
async fn packet_facts_answer_queries_by_id_thread_sender_recipient_and_status() {
    use orchestrata_schemas::cxp::WorkStatus;
    use orchestrata_schemas::events::cxp_traffic::{PacketDelivered, WorkStatusChanged};
    use orchestrata_schemas::events::EventRecord;
    let env = sled_env().await;
    let a = send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
    let b = send(&env.log, packet("U:Vz", "U:Qa", "t1", "task", "s1")).await;
    let c = send(&env.log, packet("U:Ox", "U:Qa", "t2", "task", "s1")).await;
    let delivered = PacketDelivered {
        message_id: b,
        thread_id: "t1".into(),
        to_agent: "U:Qa".into(),
    };
    env.log
        .append(&EventRecord::new(
            "kernel",
            "t1",
            delivered,
            chrono::Utc::now(),
        ))
        .await
        .unwrap();
    let work = WorkStatusChanged {
        message_id: c,
        thread_id: "t2".into(),
        old: WorkStatus::Pending,
        new: WorkStatus::InProgress,
        changed_by: "U:Qa".into(),
        assigned_to: Some("U:Qa".into()),
        resolution: None,
        notes: None,
    };
    env.log
        .append(&EventRecord::new("kernel", "t2", work, chrono::Utc::now()))
        .await
        .unwrap();
    let g = governance(&env).await;
    let sorted = |mut v: Vec<String>| {
        v.sort();
        v
    };
    let ids = |v: &[uuid::Uuid]| sorted(v.iter().map(|u| u.to_string()).collect());
    assert_eq!(
        g.packets_where(PacketField::MessageId, &a.to_string())
            .await
            .unwrap(),
        ids(&[a])
    );
    assert_eq!(
        sorted(g.packets_where(PacketField::Thread, "t1").await.unwrap()),
        ids(&[a, b])
    );
    assert_eq!(
        sorted(g.packets_where(PacketField::Sender, "U:Ox").await.unwrap()),
        ids(&[a, c])
    );
    assert_eq!(
        sorted(
            g.packets_where(PacketField::Recipient, "U:Qa")
                .await
                .unwrap()
        ),
        ids(&[b, c])
    );
    assert_eq!(
        g.packets_where(PacketField::DeliveryStatus, "delivered")
            .await
            .unwrap(),
        ids(&[b])
    );
    assert_eq!(
        sorted(
            g.packets_where(PacketField::DeliveryStatus, "queued")
                .await
                .unwrap()
        ),
        ids(&[a, c])
    );
    assert_eq!(
        g.packets_where(PacketField::WorkStatus, "in_progress")
            .await
            .unwrap(),
        ids(&[c])
    );
    assert!(g
        .packets_where(PacketField::Thread, "t1') ; true ; ('")
        .await
        .unwrap()
        .is_empty());
    // facts follow the log: a later packet shows up in the next query
    let d = send(&env.log, packet("U:Qa", "U:Ox", "t3", "task", "s1")).await;
    assert_eq!(
        g.packets_where(PacketField::Thread, "t3").await.unwrap(),
        ids(&[d])
    );
    // a status change after start retracts the old status fact and asserts the new one
    let delivered = PacketDelivered {
        message_id: a,
        thread_id: "t1".into(),
        to_agent: "U:Vz".into(),
    };
    env.log
        .append(&EventRecord::new(
            "kernel",
            "t1",
            delivered,
            chrono::Utc::now(),
        ))
        .await
        .unwrap();
    assert_eq!(
        sorted(
            g.packets_where(PacketField::DeliveryStatus, "delivered")
                .await
                .unwrap()
        ),
        ids(&[a, b])
    );
    assert_eq!(
        sorted(
            g.packets_where(PacketField::DeliveryStatus, "queued")
                .await
                .unwrap()
        ),
        ids(&[c, d])
    );
}

// ISSUE-15 (a send's cost must not grow with the history): a packet's message id is
// written into the engine as `id(A, B, C)`, the UUID's bits as three integers — not an
// atom (scryer copies its whole atom table to add an atom), a string (not indexed) or
// one big integer (scryer 0.10's index does not find big integers: with three packets
// stored, a lookup by one's big-integer id found none). Every packet is found by its
// id, and the policy by the id a request names (`cxp.priority`: a party is allowed,
// anyone else denied).
#[test]
fn message_ids_reach_the_engine_as_integer_triples_and_still_match_requests() {
    use orchestrata::governance::term::{message_id_text, PlTerm};
    use orchestrata::governance::{
        Evaluator, Fact, FactChange, PacketFact, Policy, DEFAULT_INFERENCE_LIMIT,
    };
    let ids: Vec<uuid::Uuid> = (0..3).map(|_| uuid::Uuid::new_v4()).collect();
    let id = ids[1];
    let mut ev = Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).unwrap();
    for (n, m) in ids.iter().enumerate() {
        let packet = PacketFact {
            message_id: m.to_string(),
            from: if n == 1 { "U:Ox".into() } else { "U:Ar".into() },
            to: "U:Vz".into(),
            thread_id: "t-1".into(),
            subject: "task".into(),
            timestamp_ms: 1,
            priority: 5,
            delivery: "queued".into(),
            work: "pending".into(),
            protocol_version: "1.0.0".into(),
            payload_ref: format!("cxp.traffic:{n}"),
            session: "none".into(),
            sequence: n as u64,
        };
        ev.apply(&[FactChange::Assert(Fact::Packet(packet))])
            .unwrap();
    }
    for m in &ids {
        let found = ev
            .query(&format!(
                "cxp_packet({}, F, _, _, _, _, _, _, _, _, _, _)",
                PlTerm::message_id(&m.to_string())
            ))
            .unwrap();
        assert!(found.is_some(), "packet {m} not found by its integer id");
    }
    let answer = ev
        .query("cxp_packet(M, 'U:Ox', 'U:Vz', _, _, _, _, _, _, _, _, _), M = id(A, B, C), integer(A), integer(B), integer(C)")
        .unwrap()
        .expect("the packet, with an id of integers");
    let text = answer.get("M").cloned().unwrap_or_default();
    assert_eq!(message_id_text(&text), id.to_string(), "{text}");
    // No atom anywhere in the stored facts of the packet but the aliases and words.
    assert!(ev
        .query("cxp_packet_base(A, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _), atom(A)")
        .unwrap()
        .is_none());
    let priority =
        |who: &str| Request::volk(who, "cxp.priority", &id.to_string()).with("priority", 6);
    assert_eq!(ev.decide(&priority("U:Ox")).unwrap().result, Allow);
    assert_eq!(ev.decide(&priority("U:Qa")).unwrap().result, Deny);
}
