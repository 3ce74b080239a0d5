//! The gateway's control methods over the kernel and the views, through real WebSocket
//! clients on loopback: a gateway started in-process on 127.0.0.1:0 over a sled log in a
//! temp dir, with the kernel (standard roster) and the projection runner wired in.

mod support;

use orchestrata::gateway::{self, backends::Views, RunningGateway, Services};
use orchestrata::kernel::Kernel;
use orchestrata::projection::Projections;
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, READ_ONLY_TOKEN, TOKEN};

/// A gateway with kernel and projections over one sled log.
struct Stack {
    running: RunningGateway,
    kernel: Kernel,
    _projections: Projections,
    _dir: tempfile::TempDir,
}

impl Stack {
    async fn start() -> Stack {
        let support::stack::Core {
            dir,
            log,
            kernel,
            projections,
        } = support::stack::Core::start().await;
        let services = Services::new(log).with_kernel(kernel.clone(), Views::of(&projections));
        let running = gateway::start(ws::test_config(), services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            kernel,
            _projections: projections,
            _dir: dir,
        }
    }

    async fn client(&self, token: &str) -> Ws {
        let mut ws = Ws::connect(&format!("ws://{}/", self.running.local_addr())).await;
        ws.auth(token).await;
        ws
    }
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

/// Sends `U:Cx -> U:Ox` and returns the `cxp.send` result.
async fn send(c: &mut Ws, subject: &str) -> Value {
    c.ok(
        "cxp.send",
        json!({"from": "U:Cx", "target": "U:Ox", "subject": subject,
               "payload": {"feature": "login"}, "priority": 7}),
    )
    .await
}

// REQ-014-071 REQ-014-072 REQ-014-074
#[tokio::test]
async fn cxp_send_queues_the_packet_through_the_kernel_and_answers_its_routing() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let r = send(&mut c, "build_feature").await;
    assert_eq!(r["status"], "queued", "{r}");
    assert_eq!(r["work_status"], "pending");
    assert_eq!(r["routed_via"], "U:PS");
    let thread = r["thread_id"].as_str().expect("thread id");
    assert!(
        uuid::Uuid::parse_str(thread).is_ok(),
        "kernel thread id: {r}"
    );
    assert!(uuid::Uuid::parse_str(r["message_id"].as_str().unwrap_or("")).is_ok());
    let events = r["events"].as_array().expect("event types");
    assert!(events.contains(&json!("packet_sent")), "{r}");
    // The packet reached the kernel's state, not just the view.
    let inbox = stack.kernel.inbox("U:Ox", 10).await.expect("inbox");
    assert_eq!(inbox.packets.len(), 1);
    assert_eq!(inbox.packets[0].subject(), "build_feature");
}

// REQ-014-075 REQ-014-072
#[tokio::test]
async fn cxp_send_failures_are_structured_errors_with_the_kernel_reason() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let e = c
        .err(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Zz", "payload": {}}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "unknown_target_volk");
    // A principal may only name a Volk it acts as; an admin (any Volk) reaches the
    // kernel's own check of the sender.
    let e = c
        .err(
            "cxp.send",
            json!({"from": "U:Qq", "target": "U:Ox", "payload": {}}),
        )
        .await;
    assert_eq!(reason(&e), "not_acting_as", "{e}");
    let mut admin = stack.client(ws::ADMIN_TOKEN).await;
    let e = admin
        .err(
            "cxp.send",
            json!({"from": "U:Qq", "target": "U:Ox", "payload": {}}),
        )
        .await;
    assert_eq!(reason(&e), "unknown_sender_volk", "{e}");
    // Schema: the alias pattern and the priority range.
    let e = c
        .err("cxp.send", json!({"target": "ox", "payload": {}}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    let e = c
        .err(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "payload": {}, "priority": 11}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
}

// REQ-014-071 REQ-014-015
#[tokio::test]
async fn cxp_send_needs_read_write_scope() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let e = c
        .err(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "payload": {}}),
        )
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "insufficient_scope");
    // Reading is allowed at read_only.
    let e = c.err("cxp.status", json!({"thread_id": "nope"})).await;
    assert_eq!(reason(&e), "unknown_thread", "{e}");
}

// REQ-014-011 REQ-014-012 REQ-014-013
#[tokio::test]
async fn cxp_status_shows_delivery_and_work_status_with_their_transitions() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let sent = send(&mut c, "build_feature").await;
    let thread = sent["thread_id"].clone();
    let id = sent["message_id"].clone();
    stack.kernel.inbox("U:Ox", 10).await.expect("deliver");
    let acked = c
        .ok("cxp.ack", json!({"message_id": id, "by": "U:Ox"}))
        .await;
    assert_eq!(acked["status"], "acknowledged", "{acked}");
    let moved = c
        .ok(
            "cxp.work",
            json!({"message_id": id, "status": "in_progress", "assigned_to": "U:Ox", "notes": "on it"}),
        )
        .await;
    assert_eq!(moved["work_status"], "in_progress", "{moved}");
    assert_eq!(moved["assigned_to"], "U:Ox");

    let s = c.ok("cxp.status", json!({"thread_id": thread})).await;
    assert_eq!(s["total"], 1, "{s}");
    let p = &s["packets"][0];
    assert_eq!(p["packet"]["message_id"], id);
    assert_eq!(p["delivery_status"], "acknowledged");
    assert_eq!(p["work_status"], "in_progress");
    let delivery: Vec<&Value> = p["delivery_history"]
        .as_array()
        .expect("delivery history")
        .iter()
        .map(|t| &t["status"])
        .collect();
    assert_eq!(
        delivery,
        [
            &json!("queued"),
            &json!("delivered"),
            &json!("acknowledged")
        ],
        "{p}"
    );
    let work: Vec<&Value> = p["work_history"]
        .as_array()
        .expect("work history")
        .iter()
        .map(|t| &t["status"])
        .collect();
    assert_eq!(work, [&json!("pending"), &json!("in_progress")], "{p}");
    assert!(p["updated_at"].is_string(), "timestamps: {p}");
}

// REQ-014-014
#[tokio::test]
async fn cxp_status_of_an_unknown_thread_is_a_clear_error() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let e = c
        .err("cxp.status", json!({"thread_id": "no-such-thread"}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "unknown_thread");
    assert_eq!(e["data"]["field"], "thread_id");
    let e = c.err("cxp.status", json!({})).await;
    assert_eq!(e["code"], -32602, "missing thread_id: {e}");
}

// REQ-014-075 REQ-004-US-004-006
#[tokio::test]
async fn cxp_ack_refuses_strangers_unknown_packets_and_repeats() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let sent = send(&mut c, "build_feature").await;
    let id = sent["message_id"].clone();
    let e = c
        .err("cxp.ack", json!({"message_id": id, "by": "U:Vz"}))
        .await;
    assert_eq!(reason(&e), "not_recipient", "{e}");
    let status = c
        .ok("cxp.status", json!({"thread_id": sent["thread_id"]}))
        .await;
    assert_eq!(
        status["delivery_status"], "queued",
        "a refused ack delivers nothing: {status}"
    );
    let e = c
        .err(
            "cxp.ack",
            json!({"message_id": uuid::Uuid::new_v4(), "by": "U:Ox"}),
        )
        .await;
    assert_eq!(reason(&e), "unknown_packet", "{e}");
    let e = c
        .err("cxp.ack", json!({"message_id": "not-a-uuid", "by": "U:Ox"}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    c.ok("cxp.ack", json!({"message_id": id})).await;
    let e = c.err("cxp.ack", json!({"message_id": id})).await;
    assert_eq!(e["code"], -32602, "acknowledged twice: {e}");
    assert_eq!(reason(&e), "invalid_transition", "{e}");
}

// REQ-014-075 REQ-004-US-004-006 REQ-004-US-004-007
#[tokio::test]
async fn the_recipient_acknowledging_a_queued_packet_takes_delivery_first() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let sent = send(&mut c, "build_feature").await;
    let ack = c
        .ok("cxp.ack", json!({"message_id": sent["message_id"]}))
        .await;
    assert_eq!(ack["status"], "acknowledged", "{ack}");
    let status = c
        .ok("cxp.status", json!({"thread_id": sent["thread_id"]}))
        .await;
    let delivery: Vec<_> = status["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .filter(|t| t["kind"] == "delivery")
        .map(|t| t["status"].clone())
        .collect();
    assert_eq!(
        delivery,
        [json!("queued"), json!("delivered"), json!("acknowledged")],
        "both moves of the CXP machine are on the log: {status}"
    );
    let inbox = stack.kernel.inbox("U:Ox", 10).await.expect("inbox");
    assert!(
        inbox.packets.is_empty(),
        "the acknowledged packet left the mailbox"
    );
}

// REQ-014-075
#[tokio::test]
async fn cxp_work_refuses_unknown_packets_and_bad_statuses() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let e = c
        .err(
            "cxp.work",
            json!({"message_id": uuid::Uuid::new_v4(), "status": "in_progress"}),
        )
        .await;
    assert_eq!(reason(&e), "unknown_packet", "{e}");
    let sent = send(&mut c, "build_feature").await;
    let e = c
        .err(
            "cxp.work",
            json!({"message_id": sent["message_id"], "status": "done"}),
        )
        .await;
    assert_eq!(e["code"], -32602, "not a work status: {e}");
}

// REQ-014-071
#[tokio::test]
async fn control_methods_answer_kernel_unavailable_on_a_gateway_without_a_kernel() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = gw.client(TOKEN).await;
    let e = c
        .err(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "payload": {}}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert!(
        ["kernel_unavailable", "projections_unavailable"].contains(&reason(&e)),
        "{e}"
    );
    let e = c.err("cxp.status", json!({"thread_id": "t"})).await;
    assert_eq!(reason(&e), "projections_unavailable", "{e}");
}

// REQ-014-016 REQ-014-017 REQ-014-020
#[tokio::test]
async fn volk_list_pages_the_registered_volks() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let all = c.ok("volk.list", json!({})).await;
    let total = all["total"].as_u64().expect("total");
    assert_eq!(total, 9, "standard roster with the operator Volk: {all}");
    let aliases: Vec<&str> = all["volks"]
        .as_array()
        .expect("volks")
        .iter()
        .filter_map(|v| v["alias"].as_str())
        .collect();
    assert!(
        aliases.contains(&"U:Ox") && aliases.contains(&"U:Qa"),
        "{all}"
    );
    assert!(all["volks"][0]["capabilities"].is_array(), "{all}");
    let page = c.ok("volk.list", json!({"offset": 2, "limit": 3})).await;
    let paged: Vec<&str> = page["volks"]
        .as_array()
        .expect("volks")
        .iter()
        .filter_map(|v| v["alias"].as_str())
        .collect();
    assert_eq!(paged, aliases[2..5], "{page}");
    assert_eq!(page["has_more"], true);
    let e = c.err("volk.list", json!({"limit": 0})).await;
    assert_eq!(e["code"], -32602, "{e}");
}

// REQ-014-018 REQ-014-019
#[tokio::test]
async fn volk_get_details_one_volk_and_names_unknown_aliases() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let v = c.ok("volk.get", json!({"alias": "U:Vz"})).await;
    assert_eq!(v["alias"], "U:Vz", "{v}");
    assert_eq!(v["parent"], "U:Ox");
    assert!(v["last_activity"].is_string(), "{v}");
    let e = c.err("volk.get", json!({"alias": "U:Zz"})).await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(reason(&e), "unknown_volk");
    let e = c.err("volk.get", json!({"alias": "vz"})).await;
    assert_eq!(e["code"], -32602, "bad alias: {e}");
}

// REQ-014-026 REQ-014-027 REQ-014-028 REQ-014-030
#[tokio::test]
async fn volk_register_and_deregister_go_through_the_kernel_for_admins_only() {
    let stack = Stack::start().await;
    let params = json!({"alias": "U:Db", "capabilities": ["query", "migrate"], "parent": "U:Ox"});
    let mut rw = stack.client(TOKEN).await;
    let e = rw.err("volk.register", params.clone()).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "insufficient_scope");

    let mut admin = stack.client(ws::ADMIN_TOKEN).await;
    let r = admin.ok("volk.register", params.clone()).await;
    assert_eq!(r["registered"], true, "{r}");
    assert_eq!(r["volk"]["alias"], "U:Db");
    assert_eq!(r["volk"]["capabilities"], json!(["query", "migrate"]));
    assert!(r["sequence"].is_u64(), "{r}");
    let listed = admin.ok("volk.list", json!({"limit": 100})).await;
    assert_eq!(listed["total"], 10, "{listed}");
    let e = admin.err("volk.register", params).await;
    assert_eq!(reason(&e), "volk_exists", "{e}");
    let e = admin.err("volk.register", json!({"alias": "U:Dc"})).await;
    assert_eq!(e["code"], -32602, "capabilities required: {e}");

    let e = rw.err("volk.deregister", json!({"alias": "U:Db"})).await;
    assert_eq!(reason(&e), "insufficient_scope", "{e}");
    let d = admin
        .ok(
            "volk.deregister",
            json!({"alias": "U:Db", "reason": "retired"}),
        )
        .await;
    assert_eq!(d["deregistered"], true, "{d}");
    assert_ne!(d["volk"]["status"], "registered", "{d}");
    let listed = admin.ok("volk.list", json!({"limit": 100})).await;
    assert_eq!(listed["total"], 9, "{listed}");
    let e = admin.err("volk.deregister", json!({"alias": "U:Zz"})).await;
    assert_eq!(reason(&e), "unknown_volk", "{e}");
    // The kernel itself knows the Volk is gone: the Postman fails a packet to it at once.
    let sent = rw
        .ok(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Db", "payload": {}}),
        )
        .await;
    assert_eq!(sent["status"], "failed", "deregistered target: {sent}");
}

// Issue 6: /ready is 200 only while the log, the views and governance are healthy;
// a stopped view runner makes it 503 and names the view.
// REQ-014-138 REQ-014-139 REQ-014-140
#[tokio::test]
async fn ready_covers_the_views_and_turns_503_when_a_view_runner_stops() {
    let stack = Stack::start().await;
    let addr = stack.running.local_addr();
    let mut ws = stack.client(TOKEN).await;
    ws.ok(
        "cxp.send",
        json!({"from": "U:Ox", "target": "U:Vz", "subject": "plan", "payload": {}}),
    )
    .await;
    let (status, body) = ws::http_get(addr, "/ready").await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    let views = &v["components"]["projections"];
    assert_eq!(views["configured"], true, "{v}");
    assert_eq!(
        views["views"]["threads"]["streams"]["cxp.traffic"]["lag"], 0,
        "{v}"
    );
    assert_eq!(v["components"]["kernel"]["mode"], "local", "{v}");
    let (_, metrics) = ws::http_get(addr, "/metrics").await;
    assert!(
        metrics.contains(
            "orchestrata_projection_lag_events{stream=\"cxp.traffic\",view=\"thread\"} 0"
        ),
        "{metrics}"
    );
    let Stack {
        running,
        _projections,
        ..
    } = stack;
    _projections.stop().await.expect("views stop");
    let (status, body) = ws::http_get(addr, "/ready").await;
    assert_eq!(status, 503, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["components"]["projections"]["healthy"], false, "{v}");
    assert_eq!(
        v["components"]["projections"]["views"]["threads"]["running"], false,
        "{v}"
    );
    drop(running);
}

/// `volk.get` of `alias` once `done` holds (the Volk view folds behind the kernel's
/// answer); panics after 10 s with the last answer.
async fn volk_when(c: &mut Ws, alias: &str, done: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    for _ in 0..200 {
        last = c.ok("volk.get", json!({ "alias": alias })).await;
        if done(&last) {
            return last;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    panic!("{alias} never reached the expected state: {last}");
}

// REQ-014-017 REQ-014-022
#[tokio::test]
async fn a_volks_active_tasks_follow_the_work_status_of_its_packets() {
    let stack = Stack::start().await;
    let mut c = stack.client(TOKEN).await;
    let active = |n: u64| move |v: &Value| v["active_tasks"].as_u64() == Some(n);
    volk_when(&mut c, "U:Ox", active(0)).await;
    let a = send(&mut c, "build_feature").await["message_id"].clone();
    let b = send(&mut c, "build_feature").await["message_id"].clone();
    for id in [&a, &b] {
        c.ok(
            "cxp.work",
            json!({"message_id": id, "status": "in_progress"}),
        )
        .await;
    }
    volk_when(&mut c, "U:Ox", active(2)).await;
    c.ok(
        "cxp.work",
        json!({"message_id": a, "status": "resolved", "notes": "shipped"}),
    )
    .await;
    c.ok("cxp.work", json!({"message_id": b, "status": "pending"}))
        .await;
    volk_when(&mut c, "U:Ox", active(0)).await;
    // What a subscriber of volk.lifecycle sees: two starts, a success, a cancellation.
    let replay = c
        .ok(
            "gateway.replay",
            json!({"topic": "volk.lifecycle", "count": 100}),
        )
        .await;
    let tasks: Vec<(String, String, Value)> = replay["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["event_type"]
                .as_str()
                .is_some_and(|t| t.starts_with("task_"))
        })
        .map(|e| {
            let p = &e["payload"];
            (
                e["event_type"].as_str().unwrap_or_default().to_owned(),
                p["task_id"].as_str().unwrap_or_default().to_owned(),
                p["outcome"].clone(),
            )
        })
        .collect();
    let (a, b) = (
        a.as_str().unwrap_or_default(),
        b.as_str().unwrap_or_default(),
    );
    assert_eq!(
        tasks,
        [
            ("task_started".to_owned(), a.to_owned(), Value::Null),
            ("task_started".to_owned(), b.to_owned(), Value::Null),
            (
                "task_completed".to_owned(),
                a.to_owned(),
                json!("succeeded")
            ),
            (
                "task_completed".to_owned(),
                b.to_owned(),
                json!("cancelled")
            ),
        ],
        "{replay}"
    );
}
