//! A full inbox as a client meets it: a real `orchestrata up` whose Volks' inboxes hold
//! two packets (`kernel.inbox_capacity`) and whose retry backoff is 50 ms, a WebSocket
//! client sending as the contract's example does (no `from`), every answer validated
//! against the `cxp.send` result schema.
//!
//! The third packet to `U:Vz` (which nobody reads) is answered `failed`, and that is the
//! truth: the log holds its final failure (`will_retry: false`) and the sender's
//! `delivery_failed` notice, and no retry follows, however long one waits past the
//! backoff (docs/kernel.md, "The Postman").

mod support;

use std::time::Duration;

use orchestrata::gateway::schema::ResultSchemas;
use serde_json::{json, Value};
use support::contract::result;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "full-inbox-token";

// REQ-014-071 REQ-004-INTG-013 REQ-004-US-004-020
#[tokio::test]
async fn a_send_to_a_full_inbox_is_answered_failed_and_never_retried() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let _up = Up::start(
        data.path(),
        port,
        TOKEN,
        &[],
        &[
            ("ORCHESTRATA_KERNEL__INBOX_CAPACITY", "2"),
            ("ORCHESTRATA_KERNEL__BACKOFF_BASE_MS", "50"),
            ("ORCHESTRATA_KERNEL__BACKOFF_MAX_MS", "200"),
        ],
    );
    let schemas = ResultSchemas::compile().expect("result schemas compile");
    let mut c = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    c.auth(TOKEN).await;

    let mut answers = Vec::new();
    for i in 0..3 {
        let params = json!({"target": "U:Vz", "subject": format!("task_{i}"), "payload": {"i": i}});
        let r = c.call("cxp.send", params).await;
        answers.push(result(&schemas, "cxp.send", &r));
    }
    let statuses: Vec<&str> = answers
        .iter()
        .map(|a| a["status"].as_str().unwrap_or("?"))
        .collect();
    assert_eq!(statuses, ["queued", "queued", "failed"], "{answers:#?}");
    let refused = answers[2]["message_id"]
        .as_str()
        .expect("the refused packet has an id")
        .to_owned();

    // Well past the whole retry budget (50 + 100 + 200 ms): nothing was retried.
    tokio::time::sleep(Duration::from_millis(1_500)).await;
    let r = c
        .call(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 0, "sequence_to": 1000}),
        )
        .await;
    let replay = result(&schemas, "gateway.replay", &r);
    let about: Vec<String> = replay["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(Value::to_string)
        .filter(|e| e.contains(&refused))
        .collect();
    let failed: Vec<&String> = about
        .iter()
        .filter(|e| e.contains("packet_failed"))
        .collect();
    assert_eq!(failed.len(), 1, "one failure: {about:#?}");
    assert!(
        failed[0].contains(r#""will_retry":false"#) && failed[0].contains("is full"),
        "{}",
        failed[0]
    );
    assert!(
        !about.iter().any(|e| e.contains("packet_retried")),
        "no timed retry into a full inbox: {about:#?}"
    );
    assert!(
        about
            .iter()
            .any(|e| e.contains("delivery_failed") && e.contains("U:PS")),
        "the sender is told by the Postman: {about:#?}"
    );
}
