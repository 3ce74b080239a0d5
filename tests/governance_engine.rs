//! Governance engine: PAM++ gateway predicates, CXP routing, constitutional constraints,
//! traffic facts, fail-closed, reload and cache, all on a real scryer-prolog engine and
//! a real sled log.

mod governance_support;

use governance_support::*;
use orchestrata::governance::{GovernanceConfig, PacketField, Request};
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny, Escalate};
use orchestrata_schemas::events::{Event, Stream};

// REQ-014-101
// REQ-014-102
#[tokio::test]
async fn gateway_access_grants_each_client_its_scope_and_no_more() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let ask = |c: &str, scope: &str| Request::client(c, "gateway.access", scope);
    assert_eq!(
        g.decide(ask("ops-admin", "admin")).await.unwrap().result,
        Allow
    );
    assert_eq!(
        g.decide(ask("operator", "read_write"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(ask("operator", "admin")).await.unwrap().result,
        Deny
    );
    assert_eq!(
        g.decide(ask("dashboard", "read_only"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(ask("dashboard", "read_write"))
            .await
            .unwrap()
            .result,
        Deny
    );
    // suspended operators lose read_write
    assert_eq!(
        g.decide(ask("suspended-operator", "read_write"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(ask("stranger", "read_only")).await.unwrap().result,
        Deny
    );
}

// REQ-014-102
// REQ-014-045
#[tokio::test]
async fn gateway_can_execute_follows_method_scopes_and_the_default_is_read_only() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let exec = |c: &str, m: &str| Request::client(c, "gateway.execute", m);
    assert_eq!(
        g.decide(exec("dashboard", "cxp.status"))
            .await
            .unwrap()
            .result,
        Allow
    );
    // the spec's catch-all clause must not let read_only clients send
    let d = g.decide(exec("dashboard", "cxp.send")).await.unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["gateway_can_execute", "not_permitted"]);
    assert_eq!(
        g.decide(exec("dashboard", "governance.evaluate"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(exec("operator", "governance.evaluate"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(exec("operator", "cxp.send")).await.unwrap().result,
        Allow
    );
    assert_eq!(
        g.decide(exec("operator", "volk.register"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(exec("ops-admin", "volk.register"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(exec("ops-admin", "governance.rules"))
            .await
            .unwrap()
            .result,
        Allow
    );
}

// REQ-014-102
// REQ-014-162
#[tokio::test]
async fn subscriptions_and_knowledge_queries_respect_scopes() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let sub = |c: &str, t: &str| Request::client(c, "gateway.subscribe", t);
    assert_eq!(
        g.decide(sub("dashboard", "cxp.traffic"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(sub("dashboard", "governance.decisions"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(sub("operator", "governance.decisions"))
            .await
            .unwrap()
            .result,
        Allow
    );
    let kg = |c: &str, q: &str| Request::client(c, "knowledge.query", q);
    assert_eq!(
        g.decide(kg("dashboard", "MATCH (v:Volk) RETURN v"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(kg("dashboard", "MATCH (v) DELETE v"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(kg("ops-admin", "MATCH (v) DELETE v"))
            .await
            .unwrap()
            .result,
        Allow
    );
}

// REQ-014-101
#[tokio::test]
async fn a_hostile_subject_is_inert_data() {
    let env = sled_env().await;
    let g = governance(&env).await;
    for hostile in [
        "x'), halt, ('",
        "ops-admin') ; true ; ('",
        "a\\'b\nc",
        "'",
        "\u{0}\u{7}",
    ] {
        let d = g
            .decide(Request::client(hostile, "gateway.access", "admin"))
            .await
            .unwrap();
        assert_eq!(d.result, Deny, "{hostile:?}");
        assert!(d.error.is_none(), "{hostile:?}: {:?}", d.error);
    }
    // the engine is still alive and still decides correctly
    let d = g
        .decide(Request::client("ops-admin", "gateway.access", "admin"))
        .await
        .unwrap();
    assert_eq!(d.result, Allow);
    // and the hostile text round-trips into the record unchanged
    let events = env
        .log
        .read(Stream::GovernanceDecisions, 0, None, 100)
        .await
        .unwrap();
    assert!(events.iter().any(|e| matches!(&e.record.event,
        Event::DecisionRecorded(d) if d.subject == "x'), halt, ('")));
}

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
    let events = env
        .log
        .read(Stream::GovernanceDecisions, d.sequence, Some(d.sequence), 1)
        .await
        .unwrap();
    let Event::DecisionRecorded(rec) = &events[0].record.event else {
        panic!("not a decision")
    };
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

// REQ-005-US-005-001
// REQ-005-FR4-001
// REQ-005-AC3-001
#[tokio::test]
async fn constitution_identity_depth_and_junior_limits() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Ar", Some("U:Ox")).await;
    register(&env.log, "U:Br", Some("U:Ar")).await;
    register(&env.log, "U:Cr", Some("U:Br")).await; // depth 3
    spawn_junior(&env.log, "U:Ja", "U:Ar").await;
    let g = governance(&env).await;
    let reg = |alias: &str, parent: &str, kind: &str| {
        Request::volk("U:Ox", "volk.register", alias)
            .with("parent", parent)
            .with("kind", kind)
    };
    // Article I 1.3: identity is immutable
    let d = g.decide(reg("U:Ar", "U:Ox", "senior")).await.unwrap();
    assert_eq!(
        (d.result, d.trace.last().unwrap().as_str()),
        (Deny, "identity_immutable")
    );
    // Article VI 6.2: depth limit (max 3)
    assert_eq!(
        g.decide(reg("U:Dr", "U:Cr", "senior"))
            .await
            .unwrap()
            .trace
            .last()
            .unwrap(),
        "depth_limit"
    );
    assert_eq!(
        g.decide(reg("U:Dr", "U:Br", "senior"))
            .await
            .unwrap()
            .result,
        Allow
    );
    // Article XII 12.2: juniors cannot spawn
    assert_eq!(
        g.decide(reg("U:Kb", "U:Ja", "junior"))
            .await
            .unwrap()
            .trace
            .last()
            .unwrap(),
        "junior_cannot_spawn"
    );
    assert_eq!(
        g.decide(reg("U:Kb", "U:Zz", "junior"))
            .await
            .unwrap()
            .trace
            .last()
            .unwrap(),
        "unknown_parent"
    );
    // Article XII 12.7: at most 5 concurrent juniors
    for j in ["U:Jb", "U:Jc", "U:Jd", "U:Je"] {
        spawn_junior(&env.log, j, "U:Ar").await;
    }
    let d = g.decide(reg("U:Jf", "U:Ar", "junior")).await.unwrap();
    assert_eq!(
        (d.result, d.articles.clone()),
        (Deny, vec!["005 Article XII".to_owned()])
    );
    assert_eq!(
        g.decide(reg("U:Jf", "U:Ox", "junior"))
            .await
            .unwrap()
            .result,
        Allow
    );
}

// REQ-005-FR6-001
// REQ-005-US-006-001
// REQ-005-AC4-001
#[tokio::test]
async fn constitution_fact_visibility_escalation_and_priority_authority() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Ar", Some("U:Ox")).await;
    register(&env.log, "U:Vz", None).await;
    spawn_junior(&env.log, "U:Ja", "U:Ar").await;
    let m = send(&env.log, packet("U:Ja", "U:Ar", "t1", "task", "s1")).await;
    let g = governance(&env).await;
    let v = |s: &str, a: &str, r: &str| Request::volk(s, a, r);
    // Article II 2.4: parent facts visible (read-only) to the child, not the reverse
    assert_eq!(
        g.decide(v("U:Ar", "facts.read", "U:Ox"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(v("U:Ja", "facts.read", "U:Ox"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(v("U:Ox", "facts.read", "U:Ar"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(v("U:Ar", "facts.write", "U:Ox"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(v("U:Ja", "facts.write", "U:Ja"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(v("U:Ox", "knowledge.query", "q"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(v("U:Ja", "knowledge.query", "q"))
            .await
            .unwrap()
            .result,
        Deny
    );
    // Article III: escalation follows the hierarchy; roots escalate to the human
    assert_eq!(
        g.decide(v("U:Ar", "cxp.escalate", "U:Ox"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(v("U:Ar", "cxp.escalate", "U:Vz"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(v("U:Ox", "cxp.escalate", "human"))
            .await
            .unwrap()
            .result,
        Allow
    );
    // priority authority: parties only; a junior's urgent priority escalates
    let id = m.to_string();
    assert_eq!(
        g.decide(v("U:Vz", "cxp.priority", &id).with("priority", 6))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(v("U:Ar", "cxp.priority", &id).with("priority", 9))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(v("U:Ja", "cxp.priority", &id).with("priority", 9))
            .await
            .unwrap()
            .result,
        Escalate
    );
    assert_eq!(
        g.decide(v("U:Ja", "cxp.priority", &id).with("priority", 6))
            .await
            .unwrap()
            .result,
        Allow
    );
}

// REQ-005-FR3-001
#[tokio::test]
async fn sessions_and_deregistration() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Ar", Some("U:Ox")).await;
    register(&env.log, "U:Vz", None).await;
    open_session(&env.log, "s1").await;
    let g = governance(&env).await;
    assert_eq!(
        g.decide(Request::volk("U:Ox", "session.open", "s1"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(Request::volk("U:Ox", "session.open", "s2"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(Request::volk("U:Ox", "session.close", "s1"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(Request::volk("U:Ox", "session.close", "s2"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(Request::volk("U:Ox", "volk.deregister", "U:Ar"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g.decide(Request::volk("U:Vz", "volk.deregister", "U:Ar"))
            .await
            .unwrap()
            .result,
        Deny
    );
    assert_eq!(
        g.decide(Request::volk("U:Ox", "volk.deregister", "U:Nobody"))
            .await
            .unwrap()
            .result,
        Deny
    );
    // unknown actions are denied by default
    let d = g
        .decide(Request::volk("U:Ox", "reactor.meltdown", "core"))
        .await
        .unwrap();
    assert_eq!(
        (d.result, d.trace.clone()),
        (Deny, vec!["default_deny".to_owned()])
    );
}

// REQ-014-ERR-011
#[tokio::test]
async fn a_prolog_error_fails_closed_uncached_and_recorded() {
    let env = sled_env().await;
    let dir = default_policy_dir_with(&[("zz_boom.pl", "boom_guard(X) :- X = 1.\n")]);
    // decide.pl is replaced by one that throws for 'gateway.execute' of 'boom'
    let decide = orchestrata::governance::Policy::default_policy().files().iter()
        .find(|f| f.name == "decide.pl").unwrap().text
        .replace("%% --- Gateway (spec 014)", "decide(_, 'gateway.execute', boom, _, _) :- !, throw(kaboom).\n%% --- Gateway (spec 014)");
    std::fs::write(dir.path().join("decide.pl"), decide).unwrap();
    let g = governance_with(
        &env,
        GovernanceConfig {
            policy_dir: Some(dir.path().into()),
            ..Default::default()
        },
    )
    .await;
    let boom = || Request::client("ops-admin", "gateway.execute", "boom");
    let d = g.decide(boom()).await.unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["fail_closed"]);
    assert!(
        d.error.as_deref().unwrap().contains("kaboom"),
        "{:?}",
        d.error
    );
    // not cached: the second answer is evaluated again
    let d2 = g.decide(boom()).await.unwrap();
    assert!(!d2.cached && d2.error.is_some());
    let events = env
        .log
        .read(Stream::GovernanceDecisions, d.sequence, Some(d.sequence), 1)
        .await
        .unwrap();
    let Event::DecisionRecorded(rec) = &events[0].record.event else {
        panic!()
    };
    assert!(rec.reason.as_deref().unwrap().contains("kaboom"));
    assert!(rec
        .query
        .as_deref()
        .unwrap()
        .contains("\"error_kind\":\"prolog\""));
    // a runaway rule is stopped by the inference limit and denied
    let looping = orchestrata::governance::Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "decide.pl")
        .unwrap()
        .text
        .replace(
            "%% --- Gateway (spec 014)",
            "decide(_, spin, _, _, R) :- !, spin_forever(R).\n%% --- Gateway (spec 014)",
        )
        + "\nspin_forever(R) :- spin_forever(R).\n";
    std::fs::write(dir.path().join("decide.pl"), looping).unwrap();
    g.load_policy_dir(dir.path()).await.unwrap();
    let d = g.decide(Request::volk("U:Ox", "spin", "x")).await.unwrap();
    assert_eq!(d.result, Deny);
    assert!(
        d.error.as_deref().unwrap().contains("inference_limit"),
        "{:?}",
        d.error
    );
}

// REQ-014-ERR-011
#[tokio::test]
async fn an_unavailable_engine_denies_uncached_but_serves_cached_decisions() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let cached = || Request::client("ops-admin", "gateway.execute", "volk.register");
    assert_eq!(g.decide(cached()).await.unwrap().result, Allow);
    g.stop_engine();
    let d = g.decide(cached()).await.unwrap();
    assert!(d.cached);
    assert_eq!(d.result, Allow, "ERR-011: cached decisions still serve");
    let d = g
        .decide(Request::client("ops-admin", "gateway.execute", "cxp.send"))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    assert!(
        d.error.as_deref().unwrap().contains("unavailable"),
        "{:?}",
        d.error
    );
    let events = env
        .log
        .read(Stream::GovernanceDecisions, d.sequence, Some(d.sequence), 1)
        .await
        .unwrap();
    let Event::DecisionRecorded(rec) = &events[0].record.event else {
        panic!()
    };
    assert_eq!(rec.rule_trace, vec!["fail_closed"]);
    assert!(rec
        .query
        .as_deref()
        .unwrap()
        .contains("\"error_kind\":\"engine\""));
}

// REQ-014-103
// REQ-014-104
#[tokio::test]
async fn cache_serves_repeat_decisions_and_is_invalidated_by_a_policy_reload() {
    let env = sled_env().await;
    let dir = default_policy_dir_with(&[]);
    let g = governance_with(
        &env,
        GovernanceConfig {
            policy_dir: Some(dir.path().into()),
            ..Default::default()
        },
    )
    .await;
    let ask = || Request::client("dashboard", "gateway.execute", "cxp.send");
    let first = g.decide(ask()).await.unwrap();
    assert!(!first.cached);
    let second = g.decide(ask()).await.unwrap();
    assert!(second.cached);
    assert_eq!(second.result, Deny);
    // fact-dependent actions are never cached
    let send = || Request::volk("U:Ox", "cxp.send", "U:Vz");
    g.decide(send()).await.unwrap();
    assert!(!g.decide(send()).await.unwrap().cached);
    // promote dashboard to operator: the reload empties the cache
    let gateway = std::fs::read_to_string(dir.path().join("gateway.pl"))
        .unwrap()
        .replace(
            "registered_operator('operator').",
            "registered_operator('operator').\nregistered_operator('dashboard').",
        );
    std::fs::write(dir.path().join("gateway.pl"), gateway).unwrap();
    let old_hash = g.policy_hash().unwrap();
    let new_hash = g.load_policy_dir(dir.path()).await.unwrap();
    assert_ne!(old_hash, new_hash);
    let after = g.decide(ask()).await.unwrap();
    assert!(!after.cached);
    assert_eq!(
        (after.result, after.policy_hash.as_str()),
        (Allow, new_hash.as_str())
    );
}

// REQ-014-104
#[tokio::test]
async fn a_bad_policy_is_refused_with_file_and_line_and_the_old_one_stays() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let hash = g.policy_hash().unwrap();
    let bad = default_policy_dir_with(&[(
        "gateway.pl",
        "% header\n\nscope_sufficient(admin, _).\nbroken(X) :- .\n",
    )]);
    let err = g.load_policy_dir(bad.path()).await.unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains("gateway.pl") && text.contains("line 4"),
        "{text}"
    );
    assert_eq!(g.policy_hash().unwrap(), hash);
    assert_eq!(
        g.decide(Request::client("ops-admin", "gateway.access", "admin"))
            .await
            .unwrap()
            .result,
        Allow
    );
    // redefining a built-in is refused too
    let builtin = default_policy_dir_with(&[("zz.pl", "ok(1).\natom_length(a, 1).\n")]);
    let text = g
        .load_policy_dir(builtin.path())
        .await
        .unwrap_err()
        .to_string();
    assert!(
        text.contains("zz.pl") && text.contains("line 2") && text.contains("atom_length"),
        "{text}"
    );
    // each successful load is a policy loaded event with the full text
    let events = env
        .log
        .read(Stream::GovernanceDecisions, 0, None, 10)
        .await
        .unwrap();
    let loads: Vec<_> = events
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PolicyLoaded(p) => Some(p.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(loads.len(), 1);
    assert_eq!(loads[0].policy_hash, hash);
    assert!(loads[0].text.contains("gateway_can_execute(C, Method) :-"));
}

// REQ-014-041
// REQ-014-042
// REQ-014-043
// REQ-014-044
#[tokio::test]
async fn a_dry_run_returns_the_would_be_result_with_trace_and_one_dry_run_event() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let before = env
        .log
        .bounds(Stream::GovernanceDecisions)
        .await
        .unwrap()
        .count();
    let d = g
        .evaluate(Request::client(
            "dashboard",
            "gateway.execute",
            "volk.register",
        ))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    assert_eq!(d.trace, vec!["gateway_can_execute", "not_permitted"]);
    assert_eq!(
        env.log
            .bounds(Stream::GovernanceDecisions)
            .await
            .unwrap()
            .count(),
        before + 1
    );
    let events = env
        .log
        .read(Stream::GovernanceDecisions, d.sequence, Some(d.sequence), 1)
        .await
        .unwrap();
    let Event::DecisionRecorded(rec) = &events[0].record.event else {
        panic!()
    };
    assert!(rec.dry_run);
    // no other side effect: nothing else on any stream, and the cache was not filled
    for s in [
        Stream::CxpTraffic,
        Stream::VolkLifecycle,
        Stream::SessionEvents,
    ] {
        assert_eq!(env.log.bounds(s).await.unwrap().count(), 0);
    }
    let real = g
        .decide(Request::client(
            "dashboard",
            "gateway.execute",
            "volk.register",
        ))
        .await
        .unwrap();
    assert!(!real.cached);
}

// REQ-014-ERR-016
#[tokio::test]
async fn a_dry_run_that_hits_a_prolog_error_returns_the_error() {
    let env = sled_env().await;
    let decide = orchestrata::governance::Policy::default_policy().files().iter()
        .find(|f| f.name == "decide.pl").unwrap().text
        .replace("%% --- Gateway (spec 014)", "decide(_, broken, _, _, R) :- !, atom_length(123456, R), atom_length(R, foo).\n%% --- Gateway (spec 014)");
    let dir = default_policy_dir_with(&[("decide.pl", &decide)]);
    let g = governance_with(
        &env,
        GovernanceConfig {
            policy_dir: Some(dir.path().into()),
            ..Default::default()
        },
    )
    .await;
    let d = g
        .evaluate(Request::volk("U:Ox", "broken", "x"))
        .await
        .unwrap();
    assert_eq!(d.result, Deny);
    assert!(
        d.error.as_deref().unwrap().contains("type_error"),
        "{:?}",
        d.error
    );
}

// REQ-014-046
// REQ-014-047
// REQ-014-048
// REQ-014-049
// REQ-014-050
#[tokio::test]
async fn rules_are_listed_by_category_with_file_line_and_search() {
    let env = sled_env().await;
    let g = governance(&env).await;
    let all = g.rules(None, None);
    let cats: std::collections::BTreeSet<_> = all.iter().map(|r| r.category.as_str()).collect();
    for c in ["routing", "permission", "escalation", "budget"] {
        assert!(cats.contains(c), "{c} missing from {cats:?}");
    }
    // grouped: categories come in order
    let order: Vec<_> = all.iter().map(|r| r.category.clone()).collect();
    let mut sorted = order.clone();
    sorted.sort();
    assert_eq!(order, sorted);
    let exec = all
        .iter()
        .find(|r| r.predicate == "gateway_can_execute")
        .unwrap();
    assert_eq!(
        (
            exec.arity,
            exec.source_file.as_str(),
            exec.category.as_str()
        ),
        (2, "gateway.pl", "permission")
    );
    let gateway = orchestrata::governance::Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "gateway.pl")
        .unwrap()
        .text
        .clone();
    let line = gateway
        .lines()
        .position(|l| l.starts_with("gateway_can_execute("))
        .unwrap() as u64
        + 1;
    assert_eq!(exec.line_number, line);
    let budget = g.rules(Some("budget"), None);
    assert!(!budget.is_empty() && budget.iter().all(|r| r.category == "budget"));
    assert!(budget
        .iter()
        .any(|r| r.predicate == "send_budget" && r.arity == 1));
    let found = g.rules(None, Some("CAN_SUB"));
    assert_eq!(
        found
            .iter()
            .map(|r| r.predicate.as_str())
            .collect::<Vec<_>>(),
        vec!["gateway_can_subscribe"]
    );
    assert!(g.rules(Some("routing"), Some("gateway")).is_empty());
}

// REQ-004-INTG-001
#[tokio::test]
async fn facts_view_checkpoint_restores_positions_and_facts() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    register(&env.log, "U:Vz", None).await;
    let checkpoint = env.dir.path().join("facts.json");
    let config = GovernanceConfig {
        checkpoint: Some(checkpoint.clone()),
        ..Default::default()
    };
    let g = governance_with(&env, config.clone()).await;
    g.checkpoint().await.unwrap();
    g.stop_engine();
    let saved: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&checkpoint).unwrap()).unwrap();
    assert_eq!(saved["positions"]["volk.lifecycle"], 2);
    register(&env.log, "U:Qa", None).await;
    let g2 = governance_with(&env, config).await;
    assert_eq!(g2.facts_positions().await["volk.lifecycle"], 3);
    assert_eq!(
        g2.decide(Request::volk("U:Ox", "cxp.send", "U:Qa"))
            .await
            .unwrap()
            .result,
        Allow
    );
    assert_eq!(
        g2.decide(Request::volk("U:Vz", "cxp.send", "U:Ox"))
            .await
            .unwrap()
            .result,
        Allow
    );
}
