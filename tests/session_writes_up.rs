//! Writing into a session from the outside (issue 16, item 6): a client of a default
//! `orchestrata up` (a separate process: sled log, governance, projections) patches a
//! session's context, records a fact and an error; `session.get` shows them, each is an
//! event on `session.events`, every answer matches its result schema, and bad requests
//! are refused with nothing appended.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::checked_ok;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "session-writes-test-token";

/// `(event_type, payload)` of every `session.events` event.
async fn session_events(ws: &mut Ws) -> Vec<(String, Value)> {
    support::replay(ws, "session.events")
        .await
        .iter()
        .map(|e| {
            (
                e["event_type"].as_str().unwrap_or_default().to_owned(),
                e["payload"].clone(),
            )
        })
        .collect()
}

// REQ-014-054 REQ-014-057 REQ-014-058 REQ-014-059 REQ-014-060 ISSUE-16: context, facts and
// errors of a session are written through the gateway, shown by session.get, and are
// `context_updated` / `fact_asserted` / `error_occurred` events with session_id,
// fact_type and data. A client subscribed to session.events filtered to `fact_asserted`
// (our `session.facts.subscribe`) is pushed the fact and nothing else.
#[tokio::test]
async fn a_client_writes_context_facts_and_errors_into_a_session() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = Up::start(data.path(), port, TOKEN, &[], &[]);
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    let mut facts = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    facts.auth(TOKEN).await;
    facts
        .ok(
            "gateway.subscribe",
            json!({ "topic": "session.events", "filters": { "event_type": "fact_asserted" } }),
        )
        .await;
    let opened = checked_ok(&mut ws, "session.open", json!({ "portfolio": "p1" })).await;
    let id = opened["session_id"].as_str().expect("id").to_owned();

    let first = checked_ok(
        &mut ws,
        "session.update_context",
        json!({ "session_id": id, "context": { "repo": "orchestrata", "scratch": 1 } }),
    )
    .await;
    assert_eq!(
        first["context"],
        json!({ "repo": "orchestrata", "scratch": 1 })
    );
    let second = checked_ok(
        &mut ws,
        "session.update_context",
        json!({ "session_id": id, "context": { "scratch": null, "sprint": 12 } }),
    )
    .await;
    assert_eq!(
        second["context"],
        json!({ "repo": "orchestrata", "sprint": 12 })
    );
    let fact = checked_ok(
        &mut ws,
        "session.assert_fact",
        json!({ "session_id": id, "fact_type": "decision", "data": { "store": "sled" } }),
    )
    .await;
    assert_eq!(fact["facts"], 1, "{fact}");
    let error = checked_ok(
        &mut ws,
        "session.report_error",
        json!({ "session_id": id, "code": "tool_failed", "message": "cargo test failed" }),
    )
    .await;
    assert_eq!(error["errors"], 1, "{error}");
    assert!(error["sequence"].as_u64() > fact["sequence"].as_u64());

    let got = checked_ok(&mut ws, "session.get", json!({ "session_id": id })).await;
    assert_eq!(
        got["context"],
        json!({ "repo": "orchestrata", "sprint": 12 })
    );
    assert_eq!(got["facts"][0]["fact_type"], "decision", "{got}");
    assert_eq!(got["facts"][0]["data"], json!({ "store": "sled" }), "{got}");
    assert_eq!(got["errors"][0]["code"], "tool_failed", "{got}");
    assert_eq!(got["errors"][0]["recoverable"], true, "{got}");

    let events = session_events(&mut ws).await;
    let kinds: Vec<&str> = events.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "opened",
            "context_updated",
            "context_updated",
            "fact_asserted",
            "error_occurred"
        ]
    );
    let (_, fact) = &events[3];
    assert_eq!(fact["session_id"], id.as_str());
    assert_eq!(fact["fact_type"], "decision");
    assert_eq!(fact["data"], json!({ "store": "sled" }));

    let pushed = facts.notification().await;
    assert_eq!(pushed["method"], "session.events", "{pushed}");
    assert_eq!(pushed["params"]["event_type"], "fact_asserted", "{pushed}");
    assert_eq!(pushed["params"]["payload"]["session_id"], id.as_str());
    assert_eq!(pushed["params"]["payload"]["fact_type"], "decision");
    assert!(pushed["params"]["timestamp"].is_string(), "{pushed}");
    facts.assert_silent(Duration::from_millis(300)).await;
}

// ISSUE-16: what cannot be written is refused and nothing is appended to
// session.events: a context that is not an object and a fact without a type are
// -32602; an unknown or closed session is denied by governance (-32001
// `governance_denied`, rule `session_not_open`).
#[tokio::test]
async fn bad_session_writes_are_refused_and_append_nothing() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = Up::start(data.path(), port, TOKEN, &[], &[]);
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    let id = checked_ok(&mut ws, "session.open", json!({ "portfolio": "p2" })).await["session_id"]
        .as_str()
        .expect("id")
        .to_owned();
    checked_ok(
        &mut ws,
        "session.close",
        json!({ "session_id": id, "summary": "done" }),
    )
    .await;
    let before = session_events(&mut ws).await.len();
    let refusals = [
        (
            "session.update_context",
            json!({ "session_id": id, "context": "not an object" }),
            None,
        ),
        (
            "session.assert_fact",
            json!({ "session_id": id, "data": 1 }),
            None,
        ),
        (
            "session.report_error",
            json!({ "session_id": "no-such", "code": "x", "message": "y" }),
            Some("session_not_open"),
        ),
        (
            "session.update_context",
            json!({ "session_id": id, "context": { "late": true } }),
            Some("session_not_open"),
        ),
        (
            "session.assert_fact",
            json!({ "session_id": id, "fact_type": "late", "data": 1 }),
            Some("session_not_open"),
        ),
    ];
    for (method, params, rule) in refusals {
        let err = ws.err(method, params.clone()).await;
        match rule {
            None => assert_eq!(err["code"], -32602, "{method} {params}: {err}"),
            Some(rule) => {
                assert_eq!(err["code"], -32001, "{method} {params}: {err}");
                assert_eq!(err["data"]["reason"], "governance_denied", "{err}");
                let action = match method {
                    "session.update_context" => "session.update",
                    "session.assert_fact" => "session.fact",
                    _ => "session.error",
                };
                // The decisions view folds the denial just after the answer: poll it.
                let id = err["data"]["decision_id"].as_str().expect("decision id");
                let mut decision = None;
                for _ in 0..200 {
                    let decisions = ws.ok("governance.query", json!({ "action": action })).await;
                    decision = decisions["decisions"]
                        .as_array()
                        .and_then(|all| all.iter().find(|d| d["decision_id"] == id).cloned());
                    if decision.is_some() {
                        break;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(25)).await;
                }
                let decision = decision.unwrap_or_else(|| panic!("{id} never listed"));
                assert!(decision.to_string().contains(rule), "{decision}");
            }
        }
    }
    assert_eq!(session_events(&mut ws).await.len(), before);
}
