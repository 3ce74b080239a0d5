//! Constitutional constraints on Volks (spec 005): identity, depth, junior limits, fact
//! visibility, escalation and priority authority, sessions. Real engine, real sled log.

mod governance_support;

use governance_support::*;
use orchestrata::governance::Request;
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny, Escalate};

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

// REQ-005-US-005-001 ISSUE-16: writing into a session (context, facts, errors) needs the
// session open; a junior may report an error but not change what the session knows
// (Article XII).
#[tokio::test]
async fn constitution_session_writes_need_an_open_session_and_spare_juniors() {
    let env = sled_env().await;
    register(&env.log, "U:Ox", None).await;
    spawn_junior(&env.log, "U:Ja", "U:Ox").await;
    open_session(&env.log, "s-open").await;
    let g = governance(&env).await;
    let v = |s: &str, a: &str, r: &str| Request::volk(s, a, r);
    let last = |d: &orchestrata::governance::Decision| d.trace.last().cloned().unwrap_or_default();
    for action in ["session.update", "session.fact", "session.error"] {
        let d = g.decide(v("U:Ox", action, "s-open")).await.unwrap();
        assert_eq!(d.result, Allow, "{action}: {:?}", d.trace);
        let d = g.decide(v("U:Ox", action, "s-none")).await.unwrap();
        assert_eq!(
            (d.result, last(&d)),
            (Deny, "session_not_open".into()),
            "{action}"
        );
    }
    for action in ["session.update", "session.fact"] {
        let d = g.decide(v("U:Ja", action, "s-open")).await.unwrap();
        assert_eq!(
            (d.result, last(&d)),
            (Deny, "junior_read_only".into()),
            "{action}"
        );
        assert_eq!(d.articles, ["005 Article XII".to_owned()]);
    }
    let d = g
        .decide(v("U:Ja", "session.error", "s-open"))
        .await
        .unwrap();
    assert_eq!(d.result, Allow, "{:?}", d.trace);
}
