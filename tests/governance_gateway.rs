//! PAM++ gateway predicates (spec 014): access scopes, method and topic scopes,
//! knowledge-graph queries, and inert hostile input. Real engine, real sled log.

mod governance_support;

use governance_support::*;
use orchestrata::governance::Request;
use orchestrata_schemas::events::types::DecisionResult::{Allow, Deny};
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
    // Write clauses are whole words: a property named like one is not a write.
    assert_eq!(
        g.decide(kg(
            "dashboard",
            "MATCH (n) WHERE n.offset > 1 RETURN n.reset_at"
        ))
        .await
        .unwrap()
        .result,
        Allow
    );
    assert_eq!(
        g.decide(kg("dashboard", "MATCH (n) SET n.x = 1"))
            .await
            .unwrap()
            .result,
        Deny
    );
    // The token `orchestrata up` serves is granted as `static`: its holder may query.
    assert_eq!(
        g.decide(kg("static", "MATCH (v:Volk) RETURN v"))
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
