//! A connection's requests run concurrently (issue 15, item 5): answers go out as they
//! complete and are matched by id, the per-connection bound applies back-pressure,
//! frames that change the connection (authentication, subscriptions) keep their
//! order, the rate limit is taken in arrival order, and closing the connection cancels
//! what still runs (ERR-012). Real gateways on loopback over sled logs in temp dirs,
//! real WebSocket clients; the slow request is a `knowledge.query` against a Bolt peer
//! that accepts connections and never answers.

mod support;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use orchestrata::gateway::{self, backends::Views, GatewayConfig, RunningGateway, Services};
use orchestrata::projection::neo4j::Neo4jConfig;
use orchestrata::projection::Projections;
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, TOKEN};

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

/// A Bolt peer that accepts TCP connections, never answers, and counts the
/// connections accepted and those still open (the gateway's side not closed yet).
struct MutePeer {
    addr: std::net::SocketAddr,
    accepted: Arc<AtomicUsize>,
    open: Arc<AtomicUsize>,
    task: tokio::task::JoinHandle<()>,
}

impl MutePeer {
    async fn start() -> MutePeer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let accepted = Arc::new(AtomicUsize::new(0));
        let open = Arc::new(AtomicUsize::new(0));
        let (a, o) = (accepted.clone(), open.clone());
        let task = tokio::spawn(async move {
            while let Ok((mut socket, _)) = listener.accept().await {
                a.fetch_add(1, Ordering::SeqCst);
                o.fetch_add(1, Ordering::SeqCst);
                let o = o.clone();
                tokio::spawn(async move {
                    use tokio::io::AsyncReadExt;
                    let mut buf = [0u8; 1024];
                    // Read (and ignore) whatever comes until the peer closes.
                    while matches!(socket.read(&mut buf).await, Ok(n) if n > 0) {}
                    o.fetch_sub(1, Ordering::SeqCst);
                });
            }
        });
        MutePeer {
            addr,
            accepted,
            open,
            task,
        }
    }

    fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }

    fn open(&self) -> usize {
        self.open.load(Ordering::SeqCst)
    }
}

impl Drop for MutePeer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A gateway (no kernel) whose `knowledge.query` talks to `peer`.
async fn gateway_with(peer: &MutePeer, edit: impl FnOnce(&mut GatewayConfig)) -> TestGateway {
    let mut config = ws::test_config();
    config.neo4j = Some(Neo4jConfig {
        uri: format!("neo4j://{}", peer.addr),
        user: "neo4j".into(),
        password: "secret".into(),
    });
    edit(&mut config);
    TestGateway::sled(config).await
}

fn request(id: impl Into<Value>, method: &str, params: Value) -> String {
    json!({"jsonrpc": "2.0", "id": id.into(), "method": method, "params": params}).to_string()
}

/// A `knowledge.query` that waits on the mute peer for `secs` seconds, then answers
/// -32603 `query_timeout`.
fn slow_query(id: impl Into<Value>, secs: u32) -> String {
    request(
        id,
        "knowledge.query",
        json!({"cypher": "MATCH (n) RETURN n", "timeout_seconds": secs}),
    )
}

/// Waits (up to the tests' usual `WAIT`) until `done` holds.
async fn eventually(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + ws::WAIT;
    while !done() {
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// The value of an unlabelled series in the gateway's `/metrics`.
async fn metric(gw: &TestGateway, name: &str) -> Option<f64> {
    let (_, body) = gw.http_get("/metrics").await;
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' ')?.trim().parse().ok())
}

// ISSUE-15: concurrent requests — a slow request does not hold up a quick one sent after it
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_request_does_not_hold_up_a_quick_one_sent_after_it() {
    let peer = MutePeer::start().await;
    let gw = gateway_with(&peer, |_| {}).await;
    let mut c = gw.client(TOKEN).await;
    c.send_text(&slow_query("slow", 60)).await;
    c.send_text(&request("quick", "gateway.ping", json!({})))
        .await;
    let first = c.next_json().await.expect("an answer");
    assert_eq!(first["id"], "quick", "the ping is answered first: {first}");
    assert!(first["result"]["server_timestamp"].is_string(), "{first}");
    // Still concurrent after that: another quick call overtakes the slow one too.
    let info = c.ok("gateway.info", json!({})).await;
    assert!(info["version"].is_string(), "{info}");
}

// ISSUE-15: concurrent requests — answers go out as they complete, matched by id;
// notifications get none; more than the bound pipelined are all answered
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pipelined_requests_far_past_the_bound_are_all_answered_by_id() {
    let mut config = ws::test_config();
    config.max_in_flight_per_connection = 4;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    let mut sent = BTreeMap::new();
    for i in 0..300u32 {
        let method = if i % 3 == 0 {
            "gateway.info"
        } else {
            "gateway.ping"
        };
        let id = format!("r{i}");
        c.send_text(&request(id.clone(), method, json!({}))).await;
        sent.insert(id, method);
        if i % 50 == 0 {
            // A notification: it runs, and is never answered.
            c.send_text(&json!({"jsonrpc": "2.0", "method": "gateway.ping"}).to_string())
                .await;
        }
    }
    let mut seen = BTreeSet::new();
    while seen.len() < sent.len() {
        let answer = c.next_json().await.expect("an answer per request");
        let id = answer["id"].as_str().expect("every answer carries its id");
        let method = sent
            .get(id)
            .unwrap_or_else(|| panic!("unknown id: {answer}"));
        match *method {
            "gateway.info" => assert!(answer["result"]["version"].is_string(), "{answer}"),
            _ => assert!(answer["result"]["server_timestamp"].is_string(), "{answer}"),
        }
        assert!(seen.insert(id.to_owned()), "answered twice: {answer}");
    }
    // Nothing more: the notifications got no answer.
    let last = c.ok("gateway.ping", json!({})).await;
    assert!(last["server_timestamp"].is_string());
    assert!(c.notifications.is_empty(), "{:?}", c.notifications);
}

// ISSUE-15: concurrent requests — when the bound is reached the reader stops reading
// (back-pressure): requests behind a full bound run only once a slot frees
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_bound_holds_later_requests_until_a_running_one_finishes() {
    let peer = MutePeer::start().await;
    let gw = gateway_with(&peer, |c| c.max_in_flight_per_connection = 2).await;
    let mut c = gw.client(TOKEN).await;
    c.send_text(&slow_query(1, 1)).await;
    c.send_text(&slow_query(2, 1)).await;
    for i in 3..=22 {
        c.send_text(&request(i, "gateway.ping", json!({}))).await;
    }
    // Were the pings read beside the two queries, they would be answered first.
    let first = c.next_json().await.expect("an answer");
    assert!(
        first["id"] == 1 || first["id"] == 2,
        "a slow query is answered before any ping: {first}"
    );
    assert_eq!(reason(&first["error"]), "query_timeout", "{first}");
    let mut ids = BTreeSet::from([first["id"].as_i64().expect("numeric id")]);
    while ids.len() < 22 {
        let answer = c.next_json().await.expect("every request is answered");
        ids.insert(answer["id"].as_i64().expect("numeric id"));
    }
    assert_eq!(ids, (1..=22).collect::<BTreeSet<i64>>());
}

// ERR-012 REQ-014-120 ISSUE-15: closing the connection cancels its in-flight requests:
// the slow query's own connection to the database is closed, the cancellation counted
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn closing_the_connection_cancels_its_in_flight_requests() {
    let peer = MutePeer::start().await;
    let gw = gateway_with(&peer, |_| {}).await;
    let mut c = gw.client(TOKEN).await;
    // A query that would wait a minute on the database.
    c.send_text(&slow_query("slow", 60)).await;
    // The reachability probe connects and leaves; the driver's connection stays,
    // waiting for a handshake that never comes.
    eventually("the query holds a database connection", || {
        peer.accepted() >= 2 && peer.open() == 1
    })
    .await;
    assert_eq!(
        metric(&gw, "orchestrata_gateway_rpc_in_flight").await,
        Some(1.0)
    );
    assert_eq!(
        metric(&gw, "orchestrata_gateway_rpc_cancelled_total").await,
        Some(0.0)
    );
    c.close().await;
    eventually("the query's database connection is closed", || {
        peer.open() == 0
    })
    .await;
    let deadline = Instant::now() + ws::WAIT;
    while metric(&gw, "orchestrata_gateway_rpc_cancelled_total").await != Some(1.0) {
        assert!(
            Instant::now() < deadline,
            "the cancellation is never counted"
        );
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert_eq!(
        metric(&gw, "orchestrata_gateway_rpc_in_flight").await,
        Some(0.0)
    );
}

// ERR-001 REQ-014-087 ISSUE-15: requests pipelined around auth.authenticate keep their
// order: those before it are refused, those after it are authorized by it
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_before_authentication_are_refused_and_those_after_it_authorized() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = gw.connect().await;
    let auth = json!({"strategy": "static_token", "token": TOKEN});
    c.send_text(&request(1, "gateway.ping", json!({}))).await;
    c.send_text(&request(2, "auth.authenticate", auth.clone()))
        .await;
    for i in 3..=12 {
        c.send_text(&request(i, "gateway.ping", json!({}))).await;
    }
    let refused = c.next_json().await.expect("answer 1");
    assert_eq!(refused["id"], 1, "{refused}");
    assert_eq!(refused["error"]["code"], -32001, "{refused}");
    assert_eq!(reason(&refused["error"]), "authentication_required");
    let granted = c.next_json().await.expect("answer 2");
    assert_eq!(granted["id"], 2, "{granted}");
    assert_eq!(granted["result"]["scope"], "read_write", "{granted}");
    let mut ids = BTreeSet::new();
    while ids.len() < 10 {
        let answer = c.next_json().await.expect("answers 3..12");
        assert!(answer["result"]["server_timestamp"].is_string(), "{answer}");
        ids.insert(answer["id"].as_i64().expect("numeric id"));
    }
    assert_eq!(ids, (3..=12).collect::<BTreeSet<i64>>());

    // A batch authenticating first runs in order too.
    let mut c = gw.connect().await;
    c.send_text(
        &json!([
            {"jsonrpc": "2.0", "id": 1, "method": "auth.authenticate", "params": auth},
            {"jsonrpc": "2.0", "id": 2, "method": "gateway.ping"},
        ])
        .to_string(),
    )
    .await;
    let answers = c.next_json().await.expect("batch answer");
    assert_eq!(answers[0]["result"]["scope"], "read_write", "{answers}");
    assert!(
        answers[1]["result"]["server_timestamp"].is_string(),
        "{answers}"
    );
}

// ERR-003 REQ-014-186 ISSUE-15: the rate limit is taken per request in arrival order
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rate_limit_refuses_the_latest_requests_of_a_pipelined_burst() {
    let mut config = ws::test_config();
    config.rate_limit_per_second = 4;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await; // one of the 4 tokens
    for i in 1..=10 {
        c.send_text(&request(i, "gateway.ping", json!({}))).await;
    }
    let mut answers = BTreeMap::new();
    while answers.len() < 10 {
        let a = c.next_json().await.expect("every request is answered");
        answers.insert(a["id"].as_i64().expect("numeric id"), a);
    }
    let ok: Vec<i64> = answers
        .iter()
        .filter(|(_, a)| a.get("result").is_some())
        .map(|(id, _)| *id)
        .collect();
    // The tokens left (3, or 4 if one refilled meanwhile) go to the first arrivals.
    assert!((3..=4).contains(&ok.len()), "{answers:?}");
    assert_eq!(ok, (1..=ok.len() as i64).collect::<Vec<_>>(), "{answers:?}");
    for a in answers.values().filter(|a| a.get("error").is_some()) {
        assert_eq!(a["error"]["code"], -32002, "{a}");
    }
}

// REQ-014-175 ISSUE-15: a batch answers once, as one array in request order, when all
// its members are done; it does not hold up frames sent after it
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_batch_answers_as_one_array_once_all_members_are_done() {
    let peer = MutePeer::start().await;
    let gw = gateway_with(&peer, |_| {}).await;
    let mut c = gw.client(TOKEN).await;
    let slow: Value = serde_json::from_str(&slow_query(1, 2)).expect("json");
    c.send_text(
        &json!([
            slow,
            {"jsonrpc": "2.0", "id": 2, "method": "gateway.ping"},
            {"jsonrpc": "2.0", "method": "gateway.ping"},
            {"jsonrpc": "2.0", "id": 3, "method": "gateway.info"},
        ])
        .to_string(),
    )
    .await;
    c.send_text(&request("after", "gateway.ping", json!({})))
        .await;
    let first = c.next_json().await.expect("an answer");
    assert_eq!(first["id"], "after", "the later frame overtakes: {first}");
    let batch = c.next_json().await.expect("the batch answer");
    let items = batch.as_array().expect("one array");
    assert_eq!(items.len(), 3, "the notification has no answer: {batch}");
    assert_eq!(items[0]["id"], 1);
    assert_eq!(reason(&items[0]["error"]), "query_timeout", "{batch}");
    assert_eq!(items[1]["id"], 2);
    assert!(items[1]["result"]["server_timestamp"].is_string());
    assert_eq!(items[2]["id"], 3);
    assert!(items[2]["result"]["version"].is_string());
}

/// A gateway over the kernel and the views (for `cxp.send`).
struct Stack {
    running: RunningGateway,
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
        let services = Services::new(log).with_kernel(kernel, Views::of(&projections));
        let running = gateway::start(ws::test_config(), services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            _projections: projections,
            _dir: dir,
        }
    }

    async fn client(&self) -> Ws {
        let mut ws = Ws::connect(&format!("ws://{}/", self.running.local_addr())).await;
        ws.auth(TOKEN).await;
        ws
    }
}

// REQ-014-128 ISSUE-15: a request sent right after a subscribe, without waiting for its
// answer, finds the subscription in place: the packet it sends is delivered
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_send_pipelined_after_a_subscribe_is_delivered_to_it() {
    let stack = Stack::start().await;
    let mut c = stack.client().await;
    c.send_text(&request(1, "cxp.subscribe", json!({}))).await;
    c.send_text(&request(
        2,
        "cxp.send",
        json!({"from": "U:Cx", "target": "U:Ox", "subject": "pipelined", "payload": {}}),
    ))
    .await;
    let subscribed = c.response(json!(1)).await;
    assert!(
        subscribed["result"]["subscription_id"].is_string(),
        "{subscribed}"
    );
    let sent = c.response(json!(2)).await;
    let message_id = sent["result"]["message_id"]
        .as_str()
        .unwrap_or_else(|| panic!("cxp.send answered: {sent}"))
        .to_owned();
    loop {
        let n = c.notification().await;
        if n["params"]["event_type"] == "packet_sent" {
            assert_eq!(
                n["params"]["payload"]["packet"]["message_id"], message_id,
                "{n}"
            );
            break;
        }
    }
}

// ISSUE-15: concurrent requests — the bound is configuration, 256 by default
#[test]
fn max_in_flight_per_connection_defaults_to_256_and_is_configurable() {
    assert_eq!(
        GatewayConfig::default().max_in_flight_per_connection,
        gateway::config::DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION
    );
    assert_eq!(gateway::config::DEFAULT_MAX_IN_FLIGHT_PER_CONNECTION, 256);
    let c = GatewayConfig::from_yaml("gateway:\n  max_in_flight_per_connection: 8\n")
        .expect("valid config");
    assert_eq!(c.max_in_flight_per_connection, 8);
    let e = GatewayConfig::from_yaml("gateway:\n  max_in_flight_per_connection: 0\n")
        .expect_err("zero refused");
    assert!(
        e.to_string()
            .contains("gateway.max_in_flight_per_connection"),
        "{e}"
    );
}
