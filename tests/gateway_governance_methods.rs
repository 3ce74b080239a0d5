//! `governance.query`, `governance.evaluate` and `governance.rules` over real WebSocket
//! clients on loopback: a gateway started in-process on 127.0.0.1:0 over a sled log in a
//! temp dir, with a real kernel (standard roster), the projection runner and a real
//! governance engine (the default policy, or one with a deliberately broken clause).

mod governance_support;
mod support;

use std::sync::Arc;
use std::time::Duration;

use orchestrata::gateway::{self, backends::Views, RunningGateway, Services};
use orchestrata::governance::{Decision, Governance, GovernanceConfig, Policy, Request};
use orchestrata::log::EventLog;
use orchestrata::projection::Projections;
use orchestrata_schemas::events::types::DecisionResult;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, ADMIN_TOKEN, READ_ONLY_TOKEN, TOKEN};

/// A gateway with kernel, projections and (optionally) governance over one sled log.
struct Stack {
    running: RunningGateway,
    log: Arc<dyn EventLog>,
    governance: Governance,
    projections: Projections,
    _dir: tempfile::TempDir,
}

/// Which governance the gateway serves.
enum With {
    /// The default policy.
    DefaultPolicy,
    /// A policy from this directory.
    PolicyDir(std::path::PathBuf),
    /// A governance engine exists (for the test to record decisions) but the gateway is
    /// started without it.
    NoGovernance,
}

impl Stack {
    async fn start() -> Stack {
        Stack::start_with(With::DefaultPolicy).await
    }

    async fn start_with(with: With) -> Stack {
        let support::stack::Core {
            dir,
            log,
            kernel,
            projections,
        } = support::stack::Core::start().await;
        let config = match &with {
            With::PolicyDir(path) => GovernanceConfig {
                policy_dir: Some(path.clone()),
                ..Default::default()
            },
            _ => GovernanceConfig::default(),
        };
        let governance = Governance::start(log.clone(), config)
            .await
            .expect("governance starts");
        let mut services = Services::new(log.clone()).with_kernel(kernel, Views::of(&projections));
        if !matches!(with, With::NoGovernance) {
            services = services.with_governance(governance.clone());
        }
        let running = gateway::start(ws::test_config(), services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            log,
            governance,
            projections,
            _dir: dir,
        }
    }

    async fn client(&self, token: &str) -> Ws {
        let mut ws = Ws::connect(&format!("ws://{}/", self.running.local_addr())).await;
        ws.auth(token).await;
        ws
    }

    /// Waits until the decisions view has applied `sequence`.
    async fn seen(&self, sequence: u64) {
        self.projections
            .decisions()
            .wait_for(
                Stream::GovernanceDecisions,
                sequence,
                Duration::from_secs(5),
            )
            .await
            .expect("decisions view catches up");
    }

    /// Records a real decision of `volk` doing `action` on `resource`, and waits until
    /// the view holds it.
    async fn decide(&self, volk: &str, action: &str, resource: &str) -> Decision {
        let d = self
            .governance
            .decide(Request::volk(volk, action, resource))
            .await
            .expect("decision recorded");
        self.seen(d.sequence).await;
        d
    }
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

fn ids(answer: &Value) -> Vec<String> {
    answer["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .map(|d| d["decision_id"].as_str().expect("decision id").to_owned())
        .collect()
}

fn id(d: &Decision) -> String {
    d.decision_id.to_string()
}

// REQ-014-036 REQ-014-038 REQ-014-039 REQ-014-040 REQ-014-032 REQ-014-033
#[tokio::test]
async fn governance_query_answers_decisions_newest_first_filtered_and_paginated() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let mut sends = Vec::new();
    for to in ["U:Zz", "U:Vz", "U:Qa", "U:Yy", "U:Cx"] {
        sends.push(stack.decide("U:Ox", "cxp.send", to).await);
    }
    let escalation = stack.decide("U:Ox", "cxp.escalate", "U:Zz").await;
    stack.decide("U:Vz", "cxp.send", "U:Ox").await;
    let newest_first = |ds: &[&Decision]| ds.iter().rev().map(|d| id(d)).collect::<Vec<_>>();

    let all = c.ok("governance.query", json!({"volk_id": "U:Ox"})).await;
    assert_eq!(all["total"], 6, "{all}");
    let mut expected: Vec<&Decision> = sends.iter().collect();
    expected.push(&escalation);
    assert_eq!(ids(&all), newest_first(&expected));
    // Every entry carries what the contract asks for.
    let newest = &all["decisions"][0];
    assert_eq!(newest["volk_id"], "U:Ox");
    assert_eq!(newest["action"], "cxp.escalate");
    assert_eq!(newest["resource"], "U:Zz");
    assert_eq!(
        newest["result"],
        serde_json::to_value(escalation.result).expect("result")
    );
    assert!(newest["prolog_query"]
        .as_str()
        .expect("prolog query")
        .contains("decide(volk('U:Ox'),'cxp.escalate'"));
    assert!(newest["evaluation_latency_ms"].as_f64().expect("latency") >= 0.0);
    assert!(newest["timestamp"].is_string());
    assert_eq!(newest["sequence"], escalation.sequence);
    assert_eq!(newest["dry_run"], false);
    assert!(!newest["rule_trace"].as_array().expect("trace").is_empty());

    // Across subjects, sequences strictly decrease.
    let everything = c.ok("governance.query", json!({"limit": 1000})).await;
    let seqs: Vec<u64> = everything["decisions"]
        .as_array()
        .expect("decisions")
        .iter()
        .map(|d| d["sequence"].as_u64().expect("sequence"))
        .collect();
    assert!(seqs.windows(2).all(|w| w[0] > w[1]), "{seqs:?}");
    assert!(seqs.len() >= 7);

    // Filters combine with AND.
    let sends_only = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "action": "cxp.send"}),
        )
        .await;
    assert_eq!(
        ids(&sends_only),
        newest_first(&sends.iter().collect::<Vec<_>>())
    );
    let denied: Vec<&Decision> = sends
        .iter()
        .filter(|d| d.result == DecisionResult::Deny)
        .collect();
    assert!(!denied.is_empty(), "U:Zz is unknown: at least one deny");
    let deny = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "action": "cxp.send", "result": "deny"}),
        )
        .await;
    assert_eq!(ids(&deny), newest_first(&denied));
    let none = c
        .ok("governance.query", json!({"volk_id": "U:Nobody"}))
        .await;
    assert_eq!(none["total"], 0);
    assert_eq!(none["decisions"], json!([]));

    // Pages of the newest-first list.
    let page = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "offset": 1, "limit": 2}),
        )
        .await;
    assert_eq!(page["total"], 6);
    assert_eq!(page["has_more"], true);
    assert_eq!(ids(&page), newest_first(&expected)[1..3].to_vec());
    let last = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "offset": 5, "limit": 2}),
        )
        .await;
    assert_eq!(last["has_more"], false);
    assert_eq!(ids(&last), vec![id(&sends[0])]);
}

// REQ-014-037 REQ-014-036
#[tokio::test]
async fn governance_query_filters_by_time_range() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let early = stack.decide("U:Ox", "cxp.send", "U:Zz").await;
    tokio::time::sleep(Duration::from_millis(20)).await;
    let mid = chrono::Utc::now();
    tokio::time::sleep(Duration::from_millis(20)).await;
    let late = stack.decide("U:Ox", "cxp.send", "U:Yy").await;
    let from = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "date_from": mid.to_rfc3339()}),
        )
        .await;
    assert_eq!(ids(&from), vec![id(&late)], "{from}");
    let to = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "date_to": mid.to_rfc3339()}),
        )
        .await;
    assert_eq!(ids(&to), vec![id(&early)], "{to}");
    let e = c
        .err(
            "governance.query",
            json!({"date_from": mid.to_rfc3339(), "date_to": "2020-01-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "invalid_range");
    assert_eq!(e["data"]["field"], "date_from");
}

// REQ-014-036 REQ-014-039
#[tokio::test]
async fn governance_query_refuses_bad_params() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    for bad in [
        json!({"result": "maybe"}),
        json!({"limit": 0}),
        json!({"limit": 1001}),
        json!({"offset": -1}),
        json!({"date_from": "last tuesday"}),
        json!({"volk_id": ""}),
        json!({"subject": "U:Ox"}),
    ] {
        let e = c.err("governance.query", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
        assert_eq!(reason(&e), "invalid_params", "{bad} -> {e}");
        assert!(e["data"]["field"].is_string(), "{e}");
    }
}

// REQ-014-041 REQ-014-042 REQ-014-043 REQ-014-044
#[tokio::test]
async fn governance_evaluate_dry_runs_with_trace_and_records_only_a_dry_run_decision() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let traffic_before = stack
        .log
        .bounds(Stream::CxpTraffic)
        .await
        .expect("bounds")
        .count();
    let r = c
        .ok(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "cxp.send", "resource": "U:Zz",
                   "context": {"session": "s1"}}),
        )
        .await;
    assert_eq!(r["result"], "deny", "{r}");
    assert_eq!(r["dry_run"], true);
    let trace = r["prolog_trace"].as_str().expect("prolog trace");
    assert!(trace.contains("cxp_send"), "{r}");
    assert!(trace.contains("unknown_recipient"), "{r}");
    assert_eq!(r["rule_trace"][0], "cxp_send");
    assert!(r["articles_applied"]
        .as_array()
        .expect("articles")
        .contains(&json!("004 Article V")));
    assert!(r["prolog_query"]
        .as_str()
        .expect("goal")
        .contains("session"));
    // No effect: nothing on cxp.traffic.
    let traffic_after = stack
        .log
        .bounds(Stream::CxpTraffic)
        .await
        .expect("bounds")
        .count();
    assert_eq!(traffic_before, traffic_after);
    // Audit: one decision recorded as a dry run, found by governance.query.
    let sequence = r["sequence"].as_u64().expect("sequence");
    stack.seen(sequence).await;
    let dry = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "dry_run": true}),
        )
        .await;
    assert_eq!(dry["total"], 1, "{dry}");
    assert_eq!(dry["decisions"][0]["decision_id"], r["decision_id"]);
    assert_eq!(dry["decisions"][0]["dry_run"], true);
    let real = c
        .ok(
            "governance.query",
            json!({"volk_id": "U:Ox", "dry_run": false}),
        )
        .await;
    assert_eq!(real["total"], 0, "{real}");
    let events = stack
        .log
        .read(Stream::GovernanceDecisions, sequence, Some(sequence), 1)
        .await
        .expect("read decision");
    assert!(matches!(
        &events[0].record.event,
        Event::DecisionRecorded(d) if d.dry_run && d.decision_id.to_string() == r["decision_id"]
    ));
}

// REQ-014-041 REQ-014-043
#[tokio::test]
async fn governance_evaluate_asks_about_clients_too() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let r = c
        .ok(
            "governance.evaluate",
            json!({"volk_id": "dashboard", "subject_kind": "client",
                   "action": "gateway.execute", "resource": "cxp.send"}),
        )
        .await;
    assert_eq!(r["result"], "deny", "{r}");
    assert_eq!(
        r["rule_trace"],
        json!(["gateway_can_execute", "not_permitted"])
    );
    assert_eq!(r["prolog_trace"], "gateway_can_execute -> not_permitted");
    let r = c
        .ok(
            "governance.evaluate",
            json!({"volk_id": "ops-admin", "subject_kind": "client",
                   "action": "gateway.access", "resource": "admin"}),
        )
        .await;
    // The shipped policy registers no principals: nobody is an admin by name.
    assert_eq!(r["result"], "deny", "{r}");
    assert_eq!(r["rule_trace"], json!(["gateway_access", "not_permitted"]));
}

// REQ-014-045 REQ-014-041
#[tokio::test]
async fn governance_evaluate_needs_read_write_scope_and_valid_params() {
    let stack = Stack::start().await;
    let mut ro = stack.client(READ_ONLY_TOKEN).await;
    let e = ro
        .err(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "cxp.send"}),
        )
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "insufficient_scope");
    assert_eq!(e["data"]["required_scope"], "read_write");
    let mut rw = stack.client(TOKEN).await;
    for bad in [
        json!({"volk_id": "U:Ox"}),
        json!({"action": "cxp.send"}),
        json!({"volk_id": "", "action": "cxp.send"}),
        json!({"volk_id": "U:Ox", "action": "cxp.send", "subject_kind": "robot"}),
        json!({"volk_id": "U:Ox", "action": "cxp.send", "context": [1]}),
        json!({"volk_id": "U:Ox", "action": "cxp.send", "extra": true}),
    ] {
        let e = rw.err("governance.evaluate", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
        assert_eq!(reason(&e), "invalid_params", "{bad} -> {e}");
    }
    // Oversized fields are refused by governance itself, naming the param.
    let e = rw
        .err(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "cxp.send", "resource": "x".repeat(5000)}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "invalid_field");
    assert_eq!(e["data"]["field"], "resource");
}

// REQ-014-ERR-016 REQ-014-041
#[tokio::test]
async fn governance_evaluate_returns_a_prolog_error_as_internal_error() {
    let decide = Policy::default_policy()
        .files()
        .iter()
        .find(|f| f.name == "decide.pl")
        .expect("decide.pl in the default policy")
        .text
        .replace(
            "%% --- Gateway (spec 014)",
            "decide(_, broken, _, _, R) :- !, atom_length(123456, R), atom_length(R, foo).\n%% --- Gateway (spec 014)",
        );
    let dir = governance_support::default_policy_dir_with(&[("decide.pl", &decide)]);
    let stack = Stack::start_with(With::PolicyDir(dir.path().into())).await;
    let mut c = stack.client(TOKEN).await;
    let e = c
        .err(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "broken", "resource": "x"}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "prolog_error");
    assert!(
        e["data"]["prolog_error"]
            .as_str()
            .expect("prolog error")
            .contains("type_error"),
        "{e}"
    );
    // Recorded as a fail-closed dry run.
    let sequence = e["data"]["sequence"].as_u64().expect("sequence");
    let events = stack
        .log
        .read(Stream::GovernanceDecisions, sequence, Some(sequence), 1)
        .await
        .expect("read decision");
    assert!(matches!(
        &events[0].record.event,
        Event::DecisionRecorded(d) if d.dry_run
            && d.result == DecisionResult::Deny
            && d.decision_id.to_string() == e["data"]["decision_id"]
    ));
    // The rest of the policy still answers.
    let ok = c
        .ok(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "cxp.send", "resource": "U:Zz"}),
        )
        .await;
    assert_eq!(ok["result"], "deny");
}

// REQ-014-046 REQ-014-047 REQ-014-048 REQ-014-049 REQ-014-050
#[tokio::test]
async fn governance_rules_lists_predicates_by_category_with_file_and_line() {
    let stack = Stack::start().await;
    let mut admin = stack.client(ADMIN_TOKEN).await;
    let all = admin.ok("governance.rules", json!({})).await;
    let rules = all["rules"].as_array().expect("rules");
    assert_eq!(all["total"], rules.len());
    assert_eq!(
        all["policy_hash"],
        json!(stack.governance.policy_hash()),
        "{}",
        all["policy_hash"]
    );
    for c in ["routing", "permission", "escalation", "budget"] {
        assert!(all["categories"][c].is_array(), "{c} missing");
    }
    let cats: Vec<&str> = rules
        .iter()
        .map(|r| r["category"].as_str().expect("category"))
        .collect();
    let mut sorted = cats.clone();
    sorted.sort();
    assert_eq!(cats, sorted, "grouped by category");
    let exec = rules
        .iter()
        .find(|r| r["predicate"] == "gateway_can_execute")
        .expect("gateway_can_execute listed");
    assert_eq!(exec["arity"], 2);
    assert_eq!(exec["category"], "permission");
    assert_eq!(exec["source_file"], "gateway.pl");
    assert!(exec["line_number"].as_u64().expect("line") > 0);

    let routing = admin
        .ok("governance.rules", json!({"category": "routing"}))
        .await;
    let routing_rules = routing["rules"].as_array().expect("rules");
    assert!(!routing_rules.is_empty());
    assert!(routing_rules.iter().all(|r| r["category"] == "routing"));
    assert!(routing_rules
        .iter()
        .any(|r| r["predicate"] == "send_verdict"));
    assert_eq!(
        routing["categories"].as_object().map(|m| m.len()),
        Some(1),
        "{routing}"
    );

    let found = admin
        .ok("governance.rules", json!({"search": "CAN_EXEC"}))
        .await;
    let names: Vec<&str> = found["rules"]
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| r["predicate"].as_str().expect("predicate"))
        .collect();
    assert!(names.contains(&"gateway_can_execute"), "{names:?}");
    assert!(names.iter().all(|n| n.contains("can_exec")), "{names:?}");
    let nothing = admin
        .ok("governance.rules", json!({"category": "no_such_category"}))
        .await;
    assert_eq!(nothing["total"], 0);
}

// REQ-014-046
#[tokio::test]
async fn governance_rules_is_admin_only_and_validates_params() {
    let stack = Stack::start().await;
    for token in [TOKEN, READ_ONLY_TOKEN] {
        let mut c = stack.client(token).await;
        let e = c.err("governance.rules", json!({})).await;
        assert_eq!(e["code"], -32001, "{token}: {e}");
        assert_eq!(reason(&e), "insufficient_scope");
        assert_eq!(e["data"]["required_scope"], "admin");
    }
    let mut admin = stack.client(ADMIN_TOKEN).await;
    for bad in [
        json!({"category": ""}),
        json!({"search": 3}),
        json!({"predicate": "x"}),
    ] {
        let e = admin.err("governance.rules", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
        assert_eq!(reason(&e), "invalid_params", "{bad} -> {e}");
    }
}

// REQ-014-041 REQ-014-046 REQ-014-036
#[tokio::test]
async fn without_governance_evaluate_and_rules_are_unavailable_but_query_reads_the_log() {
    let stack = Stack::start_with(With::NoGovernance).await;
    let recorded = stack.decide("U:Ox", "cxp.send", "U:Zz").await;
    let mut admin = stack.client(ADMIN_TOKEN).await;
    let e = admin
        .err(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "cxp.send"}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "governance_unavailable");
    let e = admin.err("governance.rules", json!({})).await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "governance_unavailable");
    let q = admin
        .ok("governance.query", json!({"volk_id": "U:Ox"}))
        .await;
    assert_eq!(ids(&q), vec![id(&recorded)]);
    // A gateway without projections cannot query either.
    let bare = TestGateway::sled(ws::test_config()).await;
    let mut c = bare.client(TOKEN).await;
    let e = c.err("governance.query", json!({})).await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "projections_unavailable");
}
