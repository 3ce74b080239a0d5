//! Principals at the front door (issue 14): every credential resolves to a principal
//! that may act only as the Volks it was granted; the operator's token acts as the
//! operator Volk `U:GW`, so the spec's own `cxp.send` example (no `from`) goes through
//! on a default install. Real gateway over loopback, real kernel with the real
//! governance engine and the shipped default policy, real WebSocket clients.

mod support;

use std::sync::Arc;

use orchestrata::gateway::{GatewayConfig, Scope, TokenGrant};
use orchestrata::governance::GovernanceConfig;
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::stack::Governed;

const OPERATOR: &str = "operator-token";
const INTAKE: &str = "intake-token";
const ADMIN: &str = "admin-token";
const VIEWER: &str = "viewer-token";

/// A default install's gateway (the shipped policy governs the kernel and the
/// gateway): the operator's static token, plus an `intake` principal acting as U:Cx,
/// an admin and a read-only viewer.
fn default_config() -> GatewayConfig {
    let mut config = GatewayConfig::default()
        .with_static_token(OPERATOR)
        .with_token_grant(TokenGrant::new(INTAKE, Scope::ReadWrite, "intake").acting_as(["U:Cx"]))
        .with_grant(ADMIN, Scope::Admin, "ops")
        .with_grant(VIEWER, Scope::ReadOnly, "viewer");
    config.listen = "127.0.0.1:0".parse().expect("loopback");
    config
}

async fn start() -> Governed {
    start_with(default_config()).await
}

async fn start_with(config: GatewayConfig) -> Governed {
    Governed::start(config, GovernanceConfig::default()).await
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

async fn sent_packets(log: &Arc<dyn EventLog>) -> Vec<(String, String, Option<String>)> {
    log.read(Stream::CxpTraffic, 0, None, 10_000)
        .await
        .expect("read traffic")
        .into_iter()
        .filter_map(|e| match e.record.event {
            Event::PacketSent(p) => Some((
                p.packet.from_agent.clone(),
                p.packet.to_agent.clone(),
                e.record.principal.clone(),
            )),
            _ => None,
        })
        .collect()
}

// REQ-014-071 (cxp.send with read_write scope), REQ-014-073 (PAM++ validates the sender)
// ISSUE-14: the spec's example, sent verbatim without `from`, goes through as the
// operator Volk U:GW under the shipped default policy.
#[tokio::test]
async fn the_spec_send_example_goes_through_as_the_operator_volk() {
    let stack = start().await;
    let mut ws = stack.client(OPERATOR).await;
    let answer = ws.ok("cxp.send", support::spec_send()).await;
    assert!(
        ["queued", "sent"].contains(&answer["status"].as_str().unwrap_or("")),
        "{answer}"
    );
    assert_eq!(answer["routed_via"], "U:PS", "{answer}");
    assert!(answer["thread_id"].is_string(), "{answer}");
    let sent = sent_packets(&stack.log).await;
    assert_eq!(
        sent,
        vec![("U:GW".into(), "U:Vz".into(), Some("operator".into()))],
        "sent as the operator Volk, attributed to the operator principal"
    );
    // Both decisions the call took — the gateway's scope decision for the client and
    // governance's decision for the Volk — name the principal too.
    let decisions: Vec<(String, String, Option<String>)> = stack
        .log
        .read(Stream::GovernanceDecisions, 0, None, 10_000)
        .await
        .expect("read decisions")
        .into_iter()
        .filter_map(|e| match e.record.event {
            Event::DecisionRecorded(d) if d.action == "cxp.send" => Some((
                d.subject.clone(),
                d.resource.clone(),
                e.record.principal.clone(),
            )),
            _ => None,
        })
        .collect();
    assert!(
        decisions
            .iter()
            .any(|(subject, _, p)| subject == "U:GW" && p.as_deref() == Some("operator")),
        "governance's decision for U:GW names the operator: {decisions:?}"
    );
    assert!(
        decisions
            .iter()
            .any(|(subject, resource, p)| subject.starts_with("client-")
                && resource == "gateway"
                && p.as_deref() == Some("operator")),
        "the gateway's scope decision names the operator: {decisions:?}"
    );
}

// ISSUE-14: a read_write client may not send as a Volk it was not granted.
#[tokio::test]
async fn a_principal_cannot_send_as_a_volk_it_was_not_granted() {
    let stack = start().await;
    let mut operator = stack.client(OPERATOR).await;
    let mut send = support::spec_send();
    send["from"] = json!("U:Ox");
    let error = operator.err("cxp.send", send.clone()).await;
    assert_eq!(error["code"], -32001, "{error}");
    assert_eq!(reason(&error), "not_acting_as", "{error}");
    assert_eq!(error["data"]["volk"], "U:Ox", "{error}");

    let mut intake = stack.client(INTAKE).await;
    let error = intake.err("cxp.send", send).await;
    assert_eq!(reason(&error), "not_acting_as", "{error}");
    assert!(
        sent_packets(&stack.log).await.is_empty(),
        "nothing was sent"
    );

    // Its own Volk is fine (and the default when `from` is absent); U:Cx -> U:Ox is
    // child to parent under the default policy.
    let answer = intake
        .ok("cxp.send", json!({"target": "U:Ox", "payload": {}}))
        .await;
    assert!(answer["message_id"].is_string(), "{answer}");
    let sent = sent_packets(&stack.log).await;
    assert_eq!(
        sent,
        vec![("U:Cx".into(), "U:Ox".into(), Some("intake".into()))]
    );
}

// ISSUE-14: admin principals act as any Volk.
#[tokio::test]
async fn an_admin_acts_as_any_volk_but_must_name_it() {
    let stack = start().await;
    let mut admin = stack.client(ADMIN).await;
    let error = admin.err("cxp.send", support::spec_send()).await;
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(reason(&error), "from_required", "{error}");
    let mut send = support::spec_send();
    send["from"] = json!("U:Ox");
    send["subject"] = json!("plan");
    let answer = admin.ok("cxp.send", send).await;
    assert!(answer["message_id"].is_string(), "{answer}");
    let sent = sent_packets(&stack.log).await;
    assert_eq!(
        sent,
        vec![("U:Ox".into(), "U:Vz".into(), Some("ops".into()))]
    );
}

// ISSUE-14: cxp.ack and cxp.work act for the packet's recipient only.
#[tokio::test]
async fn ack_and_work_only_for_the_recipients_principal() {
    let stack = start().await;
    // The operator sends to U:Cx; the intake principal acts as U:Cx.
    let mut operator = stack.client(OPERATOR).await;
    let sent = operator
        .ok(
            "cxp.send",
            json!({"target": "U:Cx", "payload": {"hello": 1}}),
        )
        .await;
    let id = sent["message_id"].clone();
    stack.kernel.inbox("U:Cx", 10).await.expect("delivered");
    let mut viewer = stack.client(VIEWER).await;
    let error = viewer.err("cxp.ack", json!({"message_id": id})).await;
    assert_eq!(error["code"], -32001, "read_only cannot act: {error}");
    // The sender's principal is not the recipient's.
    let error = operator
        .err("cxp.ack", json!({"message_id": id, "by": "U:Cx"}))
        .await;
    assert_eq!(reason(&error), "not_acting_as", "{error}");
    let error = operator
        .err(
            "cxp.work",
            json!({"message_id": id, "status": "in_progress"}),
        )
        .await;
    assert_eq!(reason(&error), "not_acting_as", "{error}");

    let mut intake = stack.client(INTAKE).await;
    // Naming someone else as `by` does not help: the recipient must be actable.
    let error = intake
        .err("cxp.ack", json!({"message_id": id, "by": "U:GW"}))
        .await;
    assert_eq!(reason(&error), "not_acting_as", "{error}");
    let acked = intake.ok("cxp.ack", json!({"message_id": id})).await;
    assert_eq!(acked["status"], "acknowledged", "{acked}");
    let worked = intake
        .ok(
            "cxp.work",
            json!({"message_id": id, "status": "in_progress", "assigned_to": "U:Cx"}),
        )
        .await;
    assert_eq!(worked["work_status"], "in_progress", "{worked}");
}

// ISSUE-14: an unknown packet is a clear -32602, not a kernel error.
#[tokio::test]
async fn acting_on_an_unknown_packet_is_invalid_params() {
    let stack = start().await;
    let mut intake = stack.client(INTAKE).await;
    let error = intake
        .err("cxp.ack", json!({"message_id": uuid::Uuid::new_v4()}))
        .await;
    assert_eq!(error["code"], -32602, "{error}");
    assert_eq!(reason(&error), "unknown_packet", "{error}");
}

// ISSUE-14 (safe defaults): `prolog_policy` is off unless configured, so a claimed
// client id (`ops-admin`) buys nothing on a default install.
#[tokio::test]
async fn prolog_policy_is_off_by_default_and_no_one_becomes_admin_without_a_secret() {
    let stack = start().await;
    let mut ws = stack.connect().await;
    let error = ws
        .err(
            "auth.authenticate",
            json!({"strategy": "prolog_policy", "client_id": "ops-admin"}),
        )
        .await;
    assert_eq!(error["code"], -32001, "{error}");
    assert_eq!(reason(&error), "unsupported_strategy", "{error}");
    let error = ws.err("volk.deregister", json!({"alias": "U:Vz"})).await;
    assert_eq!(error["code"], -32001, "still unauthenticated: {error}");
}

// ISSUE-14 (safe defaults): with the strategy turned on, the shipped policy registers
// no principals, so `ops-admin` is still refused.
#[tokio::test]
async fn the_shipped_policy_registers_no_principals() {
    let mut config = GatewayConfig::default().with_static_token(OPERATOR);
    config.listen = "127.0.0.1:0".parse().expect("loopback");
    config.prolog_policy = true;
    let stack = start_with(config).await;
    let mut ws = stack.connect().await;
    for client in ["ops-admin", "operator", "static", "dashboard"] {
        let error = ws
            .err(
                "auth.authenticate",
                json!({"strategy": "prolog_policy", "client_id": client}),
            )
            .await;
        assert_eq!(reason(&error), "policy_denied", "{client}: {error}");
    }
}

// ISSUE-14: a client the policy admits acts as the Volks its gateway_acts_as/2 names,
// asked per call and recorded; when governance cannot answer, the call fails closed as
// governance_unavailable, never as the client's fault.
#[tokio::test]
async fn policy_principals_act_as_the_policy_says_and_fail_closed_without_it() {
    let mut config = GatewayConfig::default().with_static_token(OPERATOR);
    config.listen = "127.0.0.1:0".parse().expect("loopback");
    config.prolog_policy = true;
    let stack = start_with(config).await;
    stack
        .governance
        .load_policy(support::policy::with_clients())
        .await
        .expect("policy loads");
    let mut ws = stack.connect().await;
    let auth = ws
        .ok(
            "auth.authenticate",
            json!({"strategy": "prolog_policy", "client_id": "operator"}),
        )
        .await;
    assert_eq!(auth["scope"], "read_write", "{auth}");
    let error = ws
        .err("cxp.send", json!({"target": "U:Ox", "payload": {}}))
        .await;
    assert_eq!(reason(&error), "from_required", "no default Volk: {error}");
    let sent = ws
        .ok(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "payload": {}}),
        )
        .await;
    assert!(sent["message_id"].is_string(), "{sent}");
    let error = ws
        .err(
            "cxp.send",
            json!({"from": "U:Vz", "target": "U:Ox", "payload": {}}),
        )
        .await;
    assert_eq!(reason(&error), "not_acting_as", "{error}");
    assert!(
        error["data"]["decision_id"].is_string(),
        "recorded: {error}"
    );

    // U:Qa was never asked about: without the crash the answer would be not_acting_as.
    stack.governance.crash_engine_for_test();
    let error = ws
        .err(
            "cxp.send",
            json!({"from": "U:Qa", "target": "U:Ox", "payload": {}}),
        )
        .await;
    // The decision that met the crash fails closed saying why.
    assert_eq!(reason(&error), "governance_unavailable", "{error}");
    assert_eq!(
        sent_packets(&stack.log).await.len(),
        1,
        "nothing more was sent"
    );
}

// ISSUE-15: one writer, one append per command, seen from the front door — the spec's
// `cxp.send` example (no `from`) costs one write to the log: the gateway's audit of
// the call and governance's decision on `governance.decisions` and the packet's events
// on `cxp.traffic`, together (ISSUE-17: sled writes them as one transaction). On a log
// without atomic multi-stream writes it is one append per stream. (Before: the audit,
// the decision and the events were three appends one after another.)
#[tokio::test]
async fn a_cxp_send_through_the_gateway_is_one_append_per_stream() {
    for per_stream in [false, true] {
        one_send_one_write(per_stream).await;
    }
}

async fn one_send_one_write(per_stream: bool) {
    let counted: std::sync::Mutex<Option<Arc<support::faulty_log::FaultyLog>>> =
        std::sync::Mutex::new(None);
    let stack = Governed::start_wrapped(default_config(), GovernanceConfig::default(), |log| {
        let wrapped = support::faulty_log::FaultyLog::new(log);
        *counted.lock().unwrap() = Some(wrapped.clone());
        wrapped
    })
    .await;
    let counted = counted.lock().unwrap().clone().expect("wrapped");
    if per_stream {
        counted.per_stream();
    }
    let mut ws = stack.client(OPERATOR).await;
    let decided_before = stack
        .log
        .read(Stream::GovernanceDecisions, 0, None, 10_000)
        .await
        .unwrap()
        .len();
    let before = counted.appends();
    let sent = ws
        .ok(
            "cxp.send",
            json!({"target": "U:Vz", "subject": "review_request", "payload": {"file": "main.py"}, "priority": 7}),
        )
        .await;
    let (expected, what) = if per_stream {
        (2, "one batch on governance.decisions, one on cxp.traffic")
    } else {
        (1, "governance.decisions and cxp.traffic in one write")
    };
    assert_eq!(counted.appends() - before, expected, "{what}: {sent}");
    let decisions = stack
        .log
        .read(Stream::GovernanceDecisions, 0, None, 10_000)
        .await
        .unwrap();
    let new: Vec<(String, String)> = decisions[decided_before..]
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::DecisionRecorded(d) => Some((d.subject.clone(), d.action.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        new.len(),
        2,
        "the call's audit and the kernel's decision: {new:?}"
    );
    assert_eq!(
        new[0].1, "cxp.send",
        "the gateway's audit comes first: {new:?}"
    );
    assert_eq!(
        new[1],
        ("U:GW".to_owned(), "cxp.send".to_owned()),
        "then governance's decision on the operator Volk: {new:?}"
    );
}
