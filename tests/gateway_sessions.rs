//! `session.*` over real WebSocket clients on loopback: a gateway started in-process on
//! 127.0.0.1:0 over a sled log in a temp dir, with a real kernel (standard roster, real
//! governance attached) and the projection runner wired in.

mod support;

use std::sync::Arc;

use orchestrata::gateway::{self, backends::Views, RunningGateway, Services};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{cmd, Kernel};
use orchestrata::log::EventLog;
use orchestrata::projection::Projections;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, READ_ONLY_TOKEN, TOKEN};

/// A gateway with a governed kernel and projections over one sled log.
struct Stack {
    running: RunningGateway,
    kernel: Kernel,
    log: Arc<dyn EventLog>,
    _projections: Projections,
    _dir: tempfile::TempDir,
}

impl Stack {
    /// With governance attached to the kernel.
    async fn start() -> Stack {
        Stack::start_with(true).await
    }

    /// `governed`: the kernel asks governance before each session command.
    async fn start_with(governed: bool) -> Stack {
        let support::stack::Core {
            dir,
            log,
            kernel,
            projections,
        } = support::stack::Core::start().await;
        let governance = Governance::start(log.clone(), GovernanceConfig::default())
            .await
            .expect("governance starts");
        let kernel = if governed {
            kernel.with_governance(governance.clone())
        } else {
            kernel
        };
        let services = Services::new(log.clone())
            .with_kernel(kernel.clone(), Views::of(&projections))
            .with_governance(governance);
        let running = gateway::start(ws::test_config(), services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            kernel,
            log,
            _projections: projections,
            _dir: dir,
        }
    }

    async fn client(&self, token: &str) -> (Ws, String) {
        let mut ws = Ws::connect(&format!("ws://{}/", self.running.local_addr())).await;
        let auth = ws.auth(token).await;
        let id = auth["client_id"].as_str().expect("client id").to_owned();
        (ws, id)
    }

    /// Every `session.events` event on the log.
    async fn session_events(&self) -> Vec<Event> {
        self.log
            .read(Stream::SessionEvents, 0, None, usize::MAX)
            .await
            .expect("read session.events")
            .into_iter()
            .map(|e| e.record.event)
            .collect()
    }
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

fn text(v: &Value) -> &str {
    v.as_str().expect("a string")
}

async fn open(c: &mut Ws, portfolio: &str, goals: &[&str]) -> String {
    let r = c
        .ok(
            "session.open",
            json!({"portfolio": portfolio, "goals": goals}),
        )
        .await;
    text(&r["session_id"]).to_owned()
}

// REQ-014-061 REQ-014-062 REQ-014-065
#[tokio::test]
async fn session_open_goes_through_the_kernel_and_answers_the_new_session() {
    let stack = Stack::start().await;
    let (mut c, client_id) = stack.client(TOKEN).await;
    let r = c
        .ok(
            "session.open",
            json!({"portfolio": "checkout", "goals": ["ship login", "fix cart"], "context": {}}),
        )
        .await;
    assert_eq!(r["status"], "open", "{r}");
    assert_eq!(r["portfolio_id"], "checkout");
    assert_eq!(r["goals"], json!(["ship login", "fix cart"]));
    let id = text(&r["session_id"]).to_owned();
    assert!(uuid::Uuid::parse_str(&id).is_ok(), "generated id: {r}");
    assert!(
        chrono::DateTime::parse_from_rfc3339(text(&r["opened_at"])).is_ok(),
        "{r}"
    );
    assert!(r["sequence"].is_u64(), "{r}");
    // The kernel holds the session, and the log says who opened it.
    assert!(stack.kernel.session_packets(&id).await.is_ok());
    let events = stack.session_events().await;
    assert!(
        matches!(&events[..], [Event::SessionOpened(o)] if o.session_id == id && o.opened_by == client_id && o.portfolio_id == "checkout"),
        "{events:?}"
    );
    // A caller-chosen id; taken ids are refused by the kernel (governance first: the
    // policy denies opening a session that is already open).
    let r = c.ok("session.open", json!({"session_id": "s-fixed"})).await;
    assert_eq!(r["session_id"], "s-fixed");
    assert_eq!(r["portfolio_id"], "default");
    let e = c
        .err("session.open", json!({"session_id": "s-fixed"}))
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "governance_denied");
    assert!(e["data"]["decision_id"].is_string(), "{e}");
    assert_eq!(stack.session_events().await.len(), 2, "nothing appended");
}

// REQ-014-062
#[tokio::test]
async fn session_open_refuses_bad_params_and_appends_nothing() {
    let stack = Stack::start().await;
    let (mut c, _) = stack.client(TOKEN).await;
    for bad in [
        json!({"goals": "not a list"}),
        json!({"portfolio": ""}),
        json!({"colour": "blue"}),
        json!({"context": []}),
    ] {
        let e = c.err("session.open", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
        assert_eq!(reason(&e), "invalid_params", "{bad} -> {e}");
        assert!(e["data"]["field"].is_string(), "{e}");
    }
    assert!(stack.session_events().await.is_empty());
}

// REQ-014-061 REQ-014-063
#[tokio::test]
async fn session_open_and_close_need_read_write_scope() {
    let stack = Stack::start().await;
    let (mut rw, _) = stack.client(TOKEN).await;
    let id = open(&mut rw, "p", &[]).await;
    let (mut ro, _) = stack.client(READ_ONLY_TOKEN).await;
    let e = ro.err("session.open", json!({"portfolio": "p"})).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "insufficient_scope");
    assert_eq!(e["data"]["required_scope"], "read_write");
    let e = ro.err("session.close", json!({"session_id": id})).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "insufficient_scope");
    // read_only may still read.
    let s = ro.ok("session.get", json!({"session_id": id})).await;
    assert_eq!(s["status"], "open");
    assert_eq!(stack.session_events().await.len(), 1);
}

// REQ-014-063 REQ-014-064 REQ-014-054
#[tokio::test]
async fn session_close_records_summary_and_carryover_including_unresolved_work() {
    let stack = Stack::start().await;
    let (mut c, _) = stack.client(TOKEN).await;
    let id = open(&mut c, "checkout", &["ship login"]).await;
    // Work sent inside the session and never resolved is carried over by the kernel.
    let packet = cmd::in_session(
        cmd::packet("U:Cx", "U:Ox", "build_feature", json!({"feature": "login"})),
        &id,
    );
    let message_id = packet.message_id;
    stack
        .kernel
        .execute(cmd::send("U:Cx", packet))
        .await
        .expect("send in session");
    let r = c
        .ok(
            "session.close",
            json!({"session_id": id, "status": "closed", "summary": "login shipped",
                   "carryover_tasks": ["write docs"]}),
        )
        .await;
    assert_eq!(r["session_id"], id.as_str(), "{r}");
    assert_eq!(r["status"], "closed");
    assert_eq!(r["summary"], "login shipped");
    assert!(r["duration_seconds"].as_f64().expect("duration") >= 0.0);
    assert!(chrono::DateTime::parse_from_rfc3339(text(&r["closed_at"])).is_ok());
    let carried: Vec<&str> = r["carryover_tasks"]
        .as_array()
        .expect("carryover")
        .iter()
        .map(text)
        .collect();
    assert_eq!(carried[0], "write docs", "{r}");
    assert!(
        carried.contains(&format!("packet:{message_id}").as_str()),
        "{r}"
    );
    // session.get sees the close (read-your-write).
    let s = c.ok("session.get", json!({"session_id": id})).await;
    assert_eq!(s["status"], "closed");
    assert_eq!(s["summary"], "login shipped");
    assert_eq!(s["carryover_tasks"], r["carryover_tasks"]);
    assert_eq!(s["duration_seconds"], r["duration_seconds"]);
    assert_eq!(s["status_history"].as_array().map(Vec::len), Some(2), "{s}");
    assert!(matches!(
        stack.session_events().await.last(),
        Some(Event::SessionClosed(e)) if e.summary == "login shipped"
    ));
}

// REQ-014-063 REQ-014-065
#[tokio::test]
async fn session_close_of_an_unknown_or_closed_session_is_refused() {
    let stack = Stack::start().await;
    let (mut c, _) = stack.client(TOKEN).await;
    let e = c.err("session.close", json!({"session_id": "nope"})).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "governance_denied", "policy: session_not_open");
    let id = open(&mut c, "p", &[]).await;
    c.ok("session.close", json!({"session_id": id})).await;
    let e = c.err("session.close", json!({"session_id": id})).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "governance_denied");
    // The denial is on the log with the rule that decided it.
    let decision = e["data"]["decision_id"].as_str().expect("decision id");
    let decisions = stack
        .log
        .read(Stream::GovernanceDecisions, 0, None, usize::MAX)
        .await
        .expect("read decisions");
    assert!(decisions.iter().any(|d| matches!(
        &d.record.event,
        Event::DecisionRecorded(r) if r.decision_id.to_string() == decision
            && r.rule_trace.iter().any(|t| t == "session_not_open")
    )));
    for bad in [
        json!({}),
        json!({"session_id": ""}),
        json!({"session_id": id, "status": 5}),
        json!({"session_id": id, "status": "x".repeat(65)}),
        json!({"session_id": id, "carryover_tasks": "x"}),
    ] {
        let e = c.err("session.close", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
        assert_eq!(reason(&e), "invalid_params", "{bad} -> {e}");
    }
    assert_eq!(stack.session_events().await.len(), 2);
}

// REQ-014-061 REQ-014-063
#[tokio::test]
async fn ungoverned_kernel_refusals_keep_the_kernel_reason() {
    let stack = Stack::start_with(false).await;
    let (mut c, _) = stack.client(TOKEN).await;
    let e = c.err("session.close", json!({"session_id": "nope"})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "unknown_session");
    c.ok("session.open", json!({"session_id": "s1"})).await;
    let e = c.err("session.open", json!({"session_id": "s1"})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "session_exists");
    c.ok("session.close", json!({"session_id": "s1"})).await;
    let e = c.err("session.close", json!({"session_id": "s1"})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "session_closed");
    assert_eq!(stack.session_events().await.len(), 2);
}

// REQ-014-053 REQ-014-054
#[tokio::test]
async fn session_get_answers_full_state_and_unknown_ids_clearly() {
    let stack = Stack::start().await;
    let (mut c, client_id) = stack.client(TOKEN).await;
    let id = open(&mut c, "checkout", &["ship login"]).await;
    let s = c.ok("session.get", json!({"session_id": id})).await;
    assert_eq!(s["session_id"], id.as_str());
    assert_eq!(s["portfolio_id"], "checkout");
    assert_eq!(s["status"], "open");
    assert_eq!(s["opened_by"], client_id.as_str());
    assert_eq!(s["goals"], json!(["ship login"]));
    assert_eq!(s["context"], json!({}));
    assert_eq!(s["facts"], json!([]));
    assert_eq!(s["carryover_tasks"], json!([]));
    assert_eq!(s["summary"], Value::Null);
    assert!(s["duration_seconds"].as_f64().expect("live duration") >= 0.0);
    let e = c.err("session.get", json!({"session_id": "nope"})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "unknown_session");
    assert_eq!(e["data"]["field"], "session_id");
    assert!(text(&e["data"]["detail"]).contains("nope"));
    let e = c.err("session.get", json!({})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "invalid_params");
}

// REQ-014-051 REQ-014-052 REQ-014-055
#[tokio::test]
async fn session_list_filters_by_portfolio_status_and_opener_and_paginates() {
    let stack = Stack::start().await;
    let (mut c, client_id) = stack.client(TOKEN).await;
    let a1 = open(&mut c, "alpha", &["one"]).await;
    let a2 = open(&mut c, "alpha", &["two"]).await;
    let b1 = open(&mut c, "beta", &[]).await;
    let a3 = open(&mut c, "alpha", &[]).await;
    c.ok("session.close", json!({"session_id": a2})).await;
    let all = c.ok("session.list", json!({})).await;
    assert_eq!(all["total"], 4, "{all}");
    let ids: Vec<&str> = all["sessions"]
        .as_array()
        .expect("sessions")
        .iter()
        .map(|s| text(&s["session_id"]))
        .collect();
    assert_eq!(ids, [&a1, &a2, &b1, &a3], "opening order");
    let first = &all["sessions"][0];
    for key in ["portfolio_id", "status", "opened_at", "goals"] {
        assert!(!first[key].is_null(), "{key} missing: {first}");
    }
    assert_eq!(first["goals"], json!(["one"]));
    let alpha_open = c
        .ok(
            "session.list",
            json!({"portfolio_id": "alpha", "status": "open"}),
        )
        .await;
    assert_eq!(alpha_open["total"], 2, "{alpha_open}");
    assert_eq!(alpha_open["sessions"][0]["session_id"], a1.as_str());
    assert_eq!(alpha_open["sessions"][1]["session_id"], a3.as_str());
    let closed = c.ok("session.list", json!({"status": "closed"})).await;
    assert_eq!(closed["total"], 1);
    assert_eq!(closed["sessions"][0]["session_id"], a2.as_str());
    let mine = c.ok("session.list", json!({"opened_by": client_id})).await;
    assert_eq!(mine["total"], 4);
    let nobody = c.ok("session.list", json!({"opened_by": "U:Zz"})).await;
    assert_eq!(nobody["total"], 0);
    assert_eq!(nobody["sessions"], json!([]));
    // Pages.
    let page = c.ok("session.list", json!({"offset": 1, "limit": 2})).await;
    assert_eq!(page["total"], 4);
    assert_eq!(page["has_more"], true);
    assert_eq!(page["sessions"][0]["session_id"], a2.as_str());
    assert_eq!(page["sessions"][1]["session_id"], b1.as_str());
    let last = c.ok("session.list", json!({"offset": 3, "limit": 2})).await;
    assert_eq!(last["has_more"], false);
    assert_eq!(last["sessions"].as_array().map(Vec::len), Some(1));
    for bad in [
        json!({"status": "paused"}),
        json!({"limit": 0}),
        json!({"limit": 101}),
        json!({"offset": -1}),
    ] {
        let e = c.err("session.list", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad} -> {e}");
    }
}

// REQ-014-066 REQ-014-067 REQ-014-068 REQ-014-070
#[tokio::test]
async fn portfolio_stats_count_sessions_completion_and_duration_by_portfolio_and_time() {
    let stack = Stack::start().await;
    let (mut c, _) = stack.client(TOKEN).await;
    let before = chrono::Utc::now();
    let a1 = open(&mut c, "alpha", &[]).await;
    let a2 = open(&mut c, "alpha", &[]).await;
    open(&mut c, "alpha", &[]).await;
    open(&mut c, "beta", &[]).await;
    c.ok(
        "session.close",
        json!({"session_id": a1, "summary": "done"}),
    )
    .await;
    c.ok(
        "session.close",
        json!({"session_id": a2, "carryover_tasks": ["follow up"]}),
    )
    .await;
    let alpha = c
        .ok("session.portfolio.stats", json!({"portfolio_id": "alpha"}))
        .await;
    assert_eq!(alpha["portfolio_id"], "alpha", "{alpha}");
    assert_eq!(alpha["total_sessions"], 3);
    assert_eq!(alpha["active_count"], 1);
    assert_eq!(alpha["closed_count"], 2);
    assert_eq!(alpha["completed_count"], 1);
    assert_eq!(alpha["completion_rate"], 0.5);
    assert!(alpha["total_duration_seconds"].as_f64().expect("duration") >= 0.0);
    assert!(alpha.get("by_portfolio").is_none());
    let all = c.ok("session.portfolio.stats", json!({})).await;
    assert_eq!(all["total_sessions"], 4, "{all}");
    assert_eq!(all["active_count"], 2);
    assert_eq!(all["by_portfolio"]["beta"]["total_sessions"], 1);
    assert_eq!(all["by_portfolio"]["beta"]["completion_rate"], 0.0);
    assert_eq!(all["by_portfolio"]["alpha"], {
        let mut a = alpha.clone();
        for k in ["portfolio_id", "date_from", "date_to"] {
            a.as_object_mut().expect("object").remove(k);
        }
        a
    });
    // Time range: sessions opened in [date_from, date_to).
    let after = chrono::Utc::now() + chrono::Duration::seconds(1);
    let range = json!({"date_from": before.to_rfc3339(), "date_to": after.to_rfc3339()});
    let inside = c.ok("session.portfolio.stats", range).await;
    assert_eq!(inside["total_sessions"], 4, "{inside}");
    let later = c
        .ok(
            "session.portfolio.stats",
            json!({"portfolio_id": "alpha", "date_from": after.to_rfc3339()}),
        )
        .await;
    assert_eq!(later["total_sessions"], 0, "{later}");
    assert_eq!(later["completion_rate"], 0.0);
    let earlier = c
        .ok(
            "session.portfolio.stats",
            json!({"date_to": before.to_rfc3339()}),
        )
        .await;
    assert_eq!(earlier["total_sessions"], 0, "{earlier}");
}

// REQ-014-066 REQ-014-068 REQ-014-070
#[tokio::test]
async fn portfolio_stats_refuse_unknown_portfolios_and_bad_ranges() {
    let stack = Stack::start().await;
    let (mut c, _) = stack.client(TOKEN).await;
    open(&mut c, "alpha", &[]).await;
    let e = c
        .err("session.portfolio.stats", json!({"portfolio_id": "gamma"}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "unknown_portfolio");
    assert_eq!(e["data"]["field"], "portfolio_id");
    let e = c
        .err(
            "session.portfolio.stats",
            json!({"date_from": "2026-03-02T00:00:00Z", "date_to": "2026-03-01T00:00:00Z"}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "invalid_range");
    let e = c
        .err("session.portfolio.stats", json!({"date_from": "yesterday"}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "invalid_params");
}

// REQ-014-051 REQ-014-061
#[tokio::test]
async fn session_methods_without_kernel_and_views_answer_internal_errors() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = gw.client(TOKEN).await;
    for (method, params) in [
        ("session.list", json!({})),
        ("session.get", json!({"session_id": "s"})),
        ("session.open", json!({"portfolio": "p"})),
        ("session.close", json!({"session_id": "s"})),
        ("session.portfolio.stats", json!({})),
    ] {
        let e = c.err(method, params).await;
        assert_eq!(e["code"], -32603, "{method}: {e}");
        assert_eq!(reason(&e), "projections_unavailable", "{method}: {e}");
    }
}
