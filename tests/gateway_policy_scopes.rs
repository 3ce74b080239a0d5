//! Scope checks through the governance policy (issue 6): with governance attached, the
//! gateway asks `decide(client(Id), 'gateway.execute' | 'gateway.subscribe', ...)` with
//! the token's scope in the context; the policy may tighten the method table, never
//! loosen it, and each recorded decision names the policy that made it. Real engine,
//! real sled log, real WebSocket clients.

mod support;

use std::path::Path;

use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, RunningGateway, Services};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::ws::{self, Ws, READ_ONLY_TOKEN, TOKEN};

struct Stack {
    running: RunningGateway,
    log: std::sync::Arc<dyn EventLog>,
    governance: Governance,
    _dir: tempfile::TempDir,
}

/// A gateway under governance; `extra` is appended to a copy of the default policy.
async fn stack(extra: Option<&str>) -> Stack {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&LogConfig::sled(dir.path().join("log")))
        .await
        .expect("open sled log");
    let mut config = GovernanceConfig::default();
    if let Some(extra) = extra {
        let policies = dir.path().join("policy");
        std::fs::create_dir_all(&policies).expect("policy dir");
        let default = Path::new(env!("CARGO_MANIFEST_DIR")).join("policies/default");
        for entry in std::fs::read_dir(&default).expect("default policy") {
            let path = entry.expect("entry").path();
            let name = path.file_name().expect("file name").to_owned();
            std::fs::copy(&path, policies.join(name)).expect("copy policy file");
        }
        std::fs::write(policies.join("zz_site.pl"), extra).expect("site policy");
        config.policy_dir = Some(policies);
    }
    let governance = Governance::start(log.clone(), config)
        .await
        .expect("governance starts");
    let services = Services::new(log.clone()).with_governance(governance.clone());
    let running = gateway::start(ws::test_config(), services)
        .await
        .expect("gateway starts");
    Stack {
        running,
        log,
        governance,
        _dir: dir,
    }
}

async fn client(s: &Stack, token: &str) -> Ws {
    let mut ws = Ws::connect(&format!("ws://{}/", s.running.local_addr())).await;
    ws.auth(token).await;
    ws
}

/// The gateway's recorded scope decisions about `action`.
async fn decisions(log: &std::sync::Arc<dyn EventLog>, action: &str) -> Vec<Value> {
    log.read(Stream::GovernanceDecisions, 0, None, usize::MAX)
        .await
        .expect("read decisions")
        .into_iter()
        .filter_map(|e| match e.record.event {
            Event::DecisionRecorded(d) if d.action == action => {
                Some(serde_json::to_value(&d).expect("json"))
            }
            _ => None,
        })
        .collect()
}

// The default policy agrees with the table: reads pass, and a denial recorded by the
// gateway names the governance policy and the predicate that decided.
// REQ-014-102 REQ-014-045
#[tokio::test]
async fn scope_decisions_go_through_the_policy_and_name_it() {
    let s = stack(None).await;
    let hash = s.governance.policy_hash().expect("policy loaded");
    let mut viewer = client(&s, READ_ONLY_TOKEN).await;
    viewer.ok("gateway.ping", json!({})).await;
    let denied = viewer
        .err(
            "cxp.send",
            json!({"target": "U:Vz", "subject": "plan", "payload": {}}),
        )
        .await;
    assert_eq!(denied["code"], -32001, "{denied}");
    let recorded = decisions(&s.log, "cxp.send").await;
    let last = recorded.last().expect("the denial is on the log");
    assert_eq!(last["result"], "deny", "{last}");
    assert_eq!(last["policy_hash"], hash, "{last}");
    let trace = last["rule_trace"].to_string();
    assert!(trace.contains("gateway_can_execute"), "{trace}");
    // A subscription a read_write token may open is decided by the policy and recorded.
    let mut operator = client(&s, TOKEN).await;
    operator
        .ok("gateway.subscribe", json!({"topic": "volk.lifecycle"}))
        .await;
    let subscribed = decisions(&s.log, "subscribe:volk.lifecycle").await;
    let last = subscribed
        .last()
        .expect("the subscription decision is on the log");
    assert_eq!(last["result"], "allow", "{last}");
    assert_eq!(last["policy_hash"], hash, "{last}");
    assert!(
        last["rule_trace"]
            .to_string()
            .contains("gateway_can_subscribe"),
        "{last}"
    );
}

// A site policy tightens a method: the token's scope covers it by the table, the policy
// says no, the client gets -32001 and the decision names the policy's rule.
// REQ-014-102
#[tokio::test]
async fn a_policy_can_tighten_a_method_beyond_the_table() {
    let s = stack(Some("method_scope('gateway.clients', admin).\n")).await;
    let mut operator = client(&s, TOKEN).await;
    operator.ok("gateway.ping", json!({})).await;
    let denied = operator.err("gateway.clients", json!({})).await;
    assert_eq!(denied["code"], -32001, "{denied}");
    let recorded = decisions(&s.log, "gateway.clients").await;
    let last = recorded.last().expect("the denial is on the log");
    assert_eq!(last["result"], "deny", "{last}");
    assert!(
        last["rule_trace"]
            .to_string()
            .contains("gateway_can_execute"),
        "{last}"
    );
    let mut admin = client(&s, ws::ADMIN_TOKEN).await;
    admin.ok("gateway.clients", json!({})).await;
}
