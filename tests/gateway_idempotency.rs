//! Idempotent retries through the front door (issue 17, item 4): a mutating call sent
//! again with the same `idempotency_key` is the same kernel command, executed once; the
//! repeat answers what the first call did. Real gateway, real kernel with the real
//! governance engine and the shipped default policy on a real sled log; and a real
//! Kafka-protocol broker frozen with SIGSTOP under a retrying client.

mod support;

use std::sync::Arc;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::gateway::schema::ResultSchemas;
use orchestrata::gateway::{self, GatewayConfig, Scope, Services, TokenGrant};
use orchestrata::governance::GovernanceConfig;
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::stack::{Core, Governed};
use support::ws::{test_config, Ws, TOKEN};

const OPERATOR: &str = "operator-token";
const OTHER: &str = "other-operator-token";

fn config() -> GatewayConfig {
    let mut config = GatewayConfig::default()
        .with_static_token(OPERATOR)
        .with_token_grant(TokenGrant::new(OTHER, Scope::ReadWrite, "second").acting_as(["U:Cx"]));
    config.listen = "127.0.0.1:0".parse().expect("loopback");
    config
}

/// The spec's `cxp.send` example, verbatim, plus a key.
fn spec_send(key: &str) -> Value {
    json!({
        "target": "U:Vz",
        "subject": "generate_component",
        "payload": {"component": "UserService", "language": "python", "framework": "fastapi"},
        "priority": 7,
        "idempotency_key": key
    })
}

/// `packet_sent` events on the log whose packet `matches`.
async fn sent_where(
    log: &Arc<dyn EventLog>,
    matches: impl Fn(&orchestrata_schemas::events::types::Packet) -> bool,
) -> usize {
    log.read(Stream::CxpTraffic, 0, None, 100_000)
        .await
        .expect("read traffic")
        .iter()
        .filter(|e| match &e.record.event {
            Event::PacketSent(p) => matches(&p.packet),
            _ => false,
        })
        .count()
}

/// `packet_sent` events on the log, by message id.
async fn sent(log: &Arc<dyn EventLog>, message_id: &str) -> usize {
    sent_where(log, |p| p.message_id.to_string() == message_id).await
}

/// Asserts that `result` is a valid answer of `method` by the contract's result schema.
fn contract_valid(method: &str, result: &Value) {
    let schemas = ResultSchemas::compile().expect("result schemas compile");
    if let Err(e) = schemas.validate(method, result) {
        panic!("{method} answer breaks its result schema: {e}: {result}");
    }
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

// ISSUE-17: a repeated `cxp.send` with the same key answers the first packet (same
// message and thread id, the contract's fields), sends nothing new, and exactly one
// `packet_sent` exists; a second connection (a client that reconnected) gets the same.
#[tokio::test]
async fn a_repeated_send_with_the_same_key_sends_one_packet() {
    let stack = Governed::start(config(), GovernanceConfig::default()).await;
    let mut ws = stack.client(OPERATOR).await;
    let first = ws.ok("cxp.send", spec_send("order-17")).await;
    let message_id = first["message_id"].as_str().expect("message id").to_owned();
    assert!(
        first["events"]
            .as_array()
            .is_some_and(|e| e.contains(&json!("packet_sent"))),
        "{first}"
    );
    assert!(first.get("duplicate").is_none(), "{first}");

    let again = ws.ok("cxp.send", spec_send("order-17")).await;
    let mut reconnected = stack.client(OPERATOR).await;
    let third = reconnected.ok("cxp.send", spec_send("order-17")).await;
    contract_valid("cxp.send", &first);
    for repeat in [&again, &third] {
        contract_valid("cxp.send", repeat);
        for field in ["message_id", "thread_id", "routed_via"] {
            assert_eq!(repeat[field], first[field], "{field}: {repeat} vs {first}");
        }
        assert_eq!(repeat["duplicate"], true, "{repeat}");
        assert_eq!(repeat["events"], json!([]), "{repeat}");
        assert!(
            ["sent", "queued", "failed"].contains(&repeat["status"].as_str().unwrap_or("")),
            "{repeat}"
        );
    }
    assert_eq!(sent(&stack.log, &message_id).await, 1, "one packet_sent");
    let subject =
        |p: &orchestrata_schemas::events::types::Packet| p.subject == "generate_component";
    assert_eq!(sent_where(&stack.log, subject).await, 1, "no other packet");

    // A new key is a new packet.
    let other = ws.ok("cxp.send", spec_send("order-18")).await;
    assert_ne!(other["message_id"], first["message_id"]);
    // Without a key every call is a new packet (the contract's behaviour).
    let plain = ws
        .ok("cxp.send", json!({"target": "U:Vz", "payload": {}}))
        .await;
    let plain_again = ws
        .ok("cxp.send", json!({"target": "U:Vz", "payload": {}}))
        .await;
    assert_ne!(plain["message_id"], plain_again["message_id"]);
}

// ISSUE-17: the key is scoped by principal: another principal's equal key is its own
// packet; the same key with a different packet is refused (-32602
// `idempotency_key_reused`) and sends nothing.
#[tokio::test]
async fn a_key_is_the_principals_and_names_one_packet() {
    let stack = Governed::start(config(), GovernanceConfig::default()).await;
    let mut ws = stack.client(OPERATOR).await;
    let first = ws.ok("cxp.send", spec_send("k")).await;
    let message_id = first["message_id"].as_str().expect("message id").to_owned();

    let mut changed = spec_send("k");
    changed["subject"] = json!("something_else");
    let error = ws.err("cxp.send", changed).await;
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(reason(&error), "idempotency_key_reused", "{error}");
    assert_eq!(error["data"]["field"], "params.idempotency_key", "{error}");
    assert_eq!(sent(&stack.log, &message_id).await, 1);

    let mut second = stack.client(OTHER).await;
    let theirs = second
        .ok(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "payload": {}, "idempotency_key": "k"}),
        )
        .await;
    assert_ne!(theirs["message_id"], first["message_id"], "{theirs}");
    assert!(theirs.get("duplicate").is_none(), "{theirs}");
}

// ISSUE-17: keys on the other kernel-command methods: `session.open` without a
// `session_id` opens one session however often it is repeated (one `session_opened`),
// `cxp.ack` repeated answers the acknowledged packet instead of refusing the second
// acknowledgement; a malformed key is -32602 naming the field.
#[tokio::test]
async fn keys_make_session_open_and_ack_repeatable() {
    let stack = Governed::start(config(), GovernanceConfig::default()).await;
    let mut ws = stack.client(OPERATOR).await;
    let open = json!({"portfolio": "p-17", "goals": ["ship"], "context": {"a": 1}, "idempotency_key": "s-1"});
    let first = ws.ok("session.open", open.clone()).await;
    let again = ws.ok("session.open", open).await;
    assert_eq!(first["session_id"], again["session_id"], "{again}");
    contract_valid("session.open", &first);
    contract_valid("session.open", &again);
    assert_eq!(again["context"], json!({"a": 1}), "{again}");
    let opened = stack
        .log
        .read(Stream::SessionEvents, 0, None, 1000)
        .await
        .expect("read sessions")
        .iter()
        .filter(|e| matches!(e.record.event, Event::SessionOpened(_)))
        .count();
    assert_eq!(opened, 1, "one session_opened");
    let contexts = stack
        .log
        .read(Stream::SessionEvents, 0, None, 1000)
        .await
        .expect("read sessions")
        .iter()
        .filter(|e| matches!(e.record.event, Event::SessionContextUpdated(_)))
        .count();
    assert_eq!(contexts, 1, "the context is recorded once");

    // The operator sends to U:Cx; U:Cx reads its inbox (the Postman delivers) and its
    // principal acknowledges, twice with one key.
    let packet = ws
        .ok("cxp.send", json!({"target": "U:Cx", "payload": {"n": 1}}))
        .await;
    let message_id = packet["message_id"].clone();
    let inbox = stack.kernel.inbox("U:Cx", 10).await.expect("inbox of U:Cx");
    assert_eq!(inbox.packets.len(), 1);
    let mut cx = stack.client(OTHER).await;
    let ack = json!({"message_id": message_id, "idempotency_key": "ack-1"});
    let first = cx.ok("cxp.ack", ack.clone()).await;
    let again = cx.ok("cxp.ack", ack).await;
    assert_eq!(first["status"], "acknowledged", "{first}");
    assert_eq!(again["status"], "acknowledged", "{again}");
    contract_valid("cxp.ack", &again);
    let plain = cx.err("cxp.ack", json!({"message_id": message_id})).await;
    assert_eq!(
        plain["code"], -32602,
        "without a key a second ack is refused: {plain}"
    );

    for bad in [json!(""), json!(7), json!("x".repeat(201))] {
        let mut params = spec_send("unused");
        params["idempotency_key"] = bad;
        let error = ws.err("cxp.send", params).await;
        assert_eq!(error["code"], -32602, "{error}");
        assert!(
            error["data"]["field"]
                .as_str()
                .unwrap_or("")
                .contains("idempotency_key"),
            "{error}"
        );
    }
}

// ISSUE-17: the broker freezes (SIGSTOP) under a `cxp.send`: the client gets an error,
// not an answer; once the broker is back, the client retries with the same key until it
// is answered. Whether or not the first attempt landed, exactly one `packet_sent` with
// the key's message id is in the log, and the answer names it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_retry_after_a_frozen_broker_sends_the_packet_once() {
    let kafka = support::spawn_private_kafka();
    let mut log_config = LogConfig::kafka(kafka.address.clone());
    log_config.topic_prefix = support::unique_prefix();
    log_config.delivery_timeout = Duration::from_millis(1500);
    // Reads only need to outlast a busy broker's first answers while the kernel starts
    // (a JVM broker just started answers its first fetches slowly); the frozen phase
    // is bounded by the delivery timeout.
    log_config.request_timeout = Duration::from_secs(5);
    let log = orchestrata::log::open(&log_config)
        .await
        .expect("open kafka log");
    let core = Core::start_on(log.clone()).await;
    let mut config = test_config();
    config.read_your_write_timeout = Duration::from_secs(3);
    let services = Services::new(log.clone()).with_kernel(core.kernel.clone(), core.views());
    let running = gateway::start(config, services)
        .await
        .expect("gateway starts");
    let url = format!("ws://{}/", running.local_addr());
    let params = json!({"from": "U:Ox", "target": "U:Vz", "subject": "frozen", "payload": {"n": 1}, "idempotency_key": "frozen-1"});
    let mut ws = Ws::connect(&url).await;
    ws.auth(TOKEN).await;
    ws.ok(
        "cxp.send",
        json!({"from": "U:Ox", "target": "U:Vz", "payload": {}}),
    )
    .await;

    kafka.freeze();
    let during = ws.call("cxp.send", params.clone()).await;
    assert!(
        during.get("error").is_some(),
        "a send to a frozen broker is not answered as done: {during}"
    );
    kafka.resume();

    let mut answer = None;
    for _ in 0..60 {
        let mut retry = Ws::connect(&url).await;
        retry.auth(TOKEN).await;
        let reply = retry.call("cxp.send", params.clone()).await;
        if let Some(result) = reply.get("result") {
            answer = Some(result.clone());
            break;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    let answer = answer.expect("a retry is answered once the broker is back");
    let message_id = answer["message_id"]
        .as_str()
        .expect("message id")
        .to_owned();
    // And once more: the same packet, nothing new.
    let again = ws.ok("cxp.send", params).await;
    assert_eq!(again["message_id"], answer["message_id"]);
    assert_eq!(again["duplicate"], true, "{again}");
    assert_eq!(sent(&log, &message_id).await, 1, "the answer's packet");
    let frozen = |p: &orchestrata_schemas::events::types::Packet| p.subject == "frozen";
    assert_eq!(sent_where(&log, frozen).await, 1, "exactly one packet_sent");
    drop(running);
}
