//! Spec 014's error table, row by row (ERR-001..018), through a real gateway on loopback
//! with real WebSocket clients: each test checks the code and the `data` field the
//! table names, where the table puts it (`data.reason`, `data.retry_after_ms`,
//! `data.current_count`, `data.prolog_error`, or the WebSocket close code).
//!
//! Real components only: sled logs in temp dirs, the kernel and a governance engine
//! with the default policy (or a deliberately broken clause for ERR-016), a private
//! `redis-server` stopped mid-run (ERR-009), a Neo4j URI nothing listens on (ERR-010)
//! and a TCP server that never answers the Bolt handshake (ERR-008).
//!
//! ERR-011 (Prolog engine unavailable) is covered by the governance restart tests of
//! the engine work (`governance_*`), not here.

mod governance_support;
mod support;

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use orchestrata::gateway::auth_hmac::sign;
use orchestrata::gateway::config::HmacConfig;
use orchestrata::gateway::shared::RedisState;
use orchestrata::gateway::{self, GatewayConfig, Scope, Services};
use orchestrata::governance::{GovernanceConfig, Policy};
use orchestrata::projection::neo4j::Neo4jConfig;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::ws::{self, packet_sent, TestGateway, Ws, ADMIN_TOKEN, TOKEN};

const SECRET: &str = "err-table-hmac-secret";

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

/// A governed stack: kernel (standard roster), governance (default policy or the one in
/// `policy_dir`), projections, gateway with `config`.
type Stack = support::stack::Governed;

/// The governed stack with `config`, under the default policy or the one in `policy_dir`.
async fn start(config: GatewayConfig, policy_dir: Option<std::path::PathBuf>) -> Stack {
    let governance = GovernanceConfig {
        policy_dir,
        ..Default::default()
    };
    Stack::start(config, governance).await
}

fn hmac_config() -> GatewayConfig {
    ws::test_config()
        .with_hmac(HmacConfig::new([SECRET]).with_client("err-bot", Scope::ReadWrite))
        .expect("valid hmac settings")
}

fn hmac(client_id: &str, nonce: &str, secret: &str) -> Value {
    let ts = Utc::now().to_rfc3339();
    json!({"strategy": "hmac", "client_id": client_id, "timestamp": ts, "nonce": nonce,
           "signature": sign(secret, &ts, nonce, client_id)})
}

fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

// REQ-014-ERR-001: a method before auth.authenticate is -32001 (Unauthorized), and the
// connection is closed after the grace period.
#[tokio::test]
async fn err_001_a_method_before_authentication_is_unauthorized_then_disconnected() {
    let mut config = ws::test_config();
    config.auth_grace = Duration::from_millis(300);
    let gw = TestGateway::sled(config).await;
    let mut c = gw.connect().await;
    let e = c.err("gateway.ping", json!({})).await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(e["message"], "Unauthorized");
    assert_eq!(reason(&e), "authentication_required");
    let closed = c.closed().await;
    assert_eq!(closed.code, 1008, "{closed:?}");
}

// REQ-014-ERR-002: invalid credentials are -32001 with data.reason.
#[tokio::test]
async fn err_002_invalid_credentials_are_unauthorized_with_a_reason() {
    let gw = TestGateway::sled(hmac_config()).await;
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            json!({"strategy": "static_token", "token": "not-a-token"}),
        )
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "invalid_token", "{e}");
    let e = c
        .err(
            "auth.authenticate",
            hmac("err-bot", &nonce(), "wrong-secret"),
        )
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "invalid_signature", "{e}");
}

// REQ-014-ERR-003: over the rate limit is -32002 with data.retry_after_ms.
#[tokio::test]
async fn err_003_over_the_rate_limit_is_rate_limited_with_retry_after() {
    let mut config = ws::test_config();
    config.rate_limit_per_second = 3;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    let mut limited = None;
    for _ in 0..20 {
        let r = c.call("gateway.ping", json!({})).await;
        if let Some(e) = r.get("error") {
            limited = Some(e.clone());
            break;
        }
    }
    let e = limited.expect("the limit was hit");
    assert_eq!(e["code"], -32002, "{e}");
    assert!(e["data"]["retry_after_ms"].is_u64(), "{e}");
}

// REQ-014-ERR-004: a frame over max_message_size_bytes closes with 1009.
#[tokio::test]
async fn err_004_a_frame_over_the_size_limit_closes_with_1009() {
    let mut config = ws::test_config();
    config.max_message_size_bytes = 1024;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    c.send_text(&format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"gateway.ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2048)
    ))
    .await;
    assert_eq!(c.closed().await.code, 1009);
}

// REQ-014-ERR-005: one subscription over the limit is -32602 with data.current_count.
#[tokio::test]
async fn err_005_a_subscription_over_the_limit_is_invalid_params_with_the_count() {
    let mut config = ws::test_config();
    config.max_subscriptions_per_client = 2;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    c.ok("cxp.subscribe", json!({"filters": {"volk_id": "U:Ox"}}))
        .await;
    c.ok("cxp.subscribe", json!({"filters": {"volk_id": "U:Vz"}}))
        .await;
    let e = c
        .err("cxp.subscribe", json!({"filters": {"volk_id": "U:Cd"}}))
        .await;
    assert_eq!(e["code"], -32602, "{e}");
    assert_eq!(e["data"]["current_count"], 2, "{e}");
}

// REQ-014-ERR-006: cxp.send to an unknown target is -32602 `unknown_target_volk`,
// decided before governance is asked (no decision about it is recorded).
#[tokio::test]
async fn err_006_an_unknown_target_is_invalid_params_before_governance() {
    let stack = start(ws::test_config(), None).await;
    let mut c = stack.client(TOKEN).await;
    for params in [
        json!({"target": "U:Zz", "payload": {}}),
        json!({"from": "U:Ox", "target": "U:Zz", "subject": "x", "payload": {}}),
    ] {
        let e = c.err("cxp.send", params.clone()).await;
        assert_eq!(e["code"], -32602, "{params}: {e}");
        assert_eq!(reason(&e), "unknown_target_volk", "{params}: {e}");
    }
    // Governance was never asked about the send (nothing recorded names U:Zz as the
    // resource of a cxp.send).
    let decisions = stack
        .log
        .read(Stream::GovernanceDecisions, 0, None, usize::MAX)
        .await
        .expect("read decisions");
    let about_zz: Vec<_> = decisions
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::DecisionRecorded(d) if d.action == "cxp.send" && d.resource == "U:Zz" => {
                Some(d.subject.clone())
            }
            _ => None,
        })
        .collect();
    assert!(about_zz.is_empty(), "governance was asked: {about_zz:?}");
    // A known target still goes through governance and the kernel.
    let sent = c
        .ok(
            "cxp.send",
            json!({"from": "U:Ox", "target": "U:Cx", "subject": "known", "payload": {}}),
        )
        .await;
    assert_eq!(sent["delivery_status"], "queued", "{sent}");
}

// REQ-014-ERR-007: a mutation keyword in knowledge.query is -32602 `mutation_not_allowed`.
#[tokio::test]
async fn err_007_a_mutation_in_a_query_is_refused() {
    let stack = start(ws::test_config(), None).await;
    let mut c = stack.client(ADMIN_TOKEN).await;
    for cypher in [
        "CREATE (n:Volk) RETURN n",
        "MATCH (n) MERGE (m:X) RETURN m",
        "MATCH (n) DETACH DELETE n",
        "MATCH (n) SET n.x = 1",
        "MATCH (n) REMOVE n.x",
    ] {
        let e = c.err("knowledge.query", json!({"cypher": cypher})).await;
        assert_eq!(e["code"], -32602, "{cypher}: {e}");
        assert_eq!(reason(&e), "mutation_not_allowed", "{cypher}: {e}");
    }
}

/// A stack whose gateway has a Neo4j at `uri`.
async fn with_neo4j(uri: String) -> Stack {
    let mut config = ws::test_config();
    config.neo4j = Some(Neo4jConfig {
        uri,
        user: "neo4j".into(),
        password: "secret".into(),
    });
    start(config, None).await
}

// REQ-014-ERR-008: a query that outlives its timeout is cancelled: -32603 `query_timeout`.
#[tokio::test]
async fn err_008_a_query_past_its_timeout_is_internal_error_query_timeout() {
    // A server that accepts TCP connections and never answers the Bolt handshake.
    let (addr, held) = support::mute_server().await;
    let stack = with_neo4j(format!("neo4j://{addr}")).await;
    let mut c = stack.client(ADMIN_TOKEN).await;
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": "MATCH (n) RETURN n", "timeout_seconds": 1}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "query_timeout", "{e}");
    held.abort();
}

/// A `redis-server` this test started on a free port; killed on drop.
struct PrivateRedis {
    child: Option<Child>,
    port: u16,
}

impl PrivateRedis {
    fn start() -> PrivateRedis {
        let port = support::free_port();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (tests/run.sh installs it)");
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
        }
        PrivateRedis {
            child: Some(child),
            port,
        }
    }

    fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for PrivateRedis {
    fn drop(&mut self) {
        self.stop();
    }
}

// REQ-014-ERR-009: Redis goes away mid-run: connected clients go on (in-memory
// fallback), uncached authentication is denied.
#[tokio::test]
async fn err_009_without_redis_sessions_go_on_and_uncached_auth_is_denied() {
    let mut redis = PrivateRedis::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&orchestrata::config::LogConfig::sled(dir.path()))
        .await
        .expect("open sled log");
    let state = Arc::new(
        RedisState::connect(&format!("redis://127.0.0.1:{}/", redis.port), "gw-err")
            .await
            .expect("valid redis url"),
    );
    let services = Services::new(log).with_shared_state(state.clone());
    let running = gateway::start(hmac_config(), services)
        .await
        .expect("gateway starts");
    let url = format!("ws://{}/", running.local_addr());
    let mut connected = Ws::connect(&url).await;
    connected.auth(TOKEN).await;
    redis.stop();
    let mut newcomer = Ws::connect(&url).await;
    let e = newcomer
        .err("auth.authenticate", hmac("err-bot", &nonce(), SECRET))
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "shared_state_unavailable", "{e}");
    assert!(
        connected.ok("gateway.ping", json!({})).await["server_timestamp"].is_string(),
        "a connected client goes on"
    );
    let listing = connected.ok("gateway.clients", json!({})).await;
    assert_eq!(listing["shared_state_available"], false, "{listing}");
}

// REQ-014-180
// REQ-014-ERR-010: Neo4j unavailable: knowledge.* answers -32603 `neo4j_unavailable`.
#[tokio::test]
async fn err_010_an_unreachable_neo4j_is_internal_error_neo4j_unavailable() {
    let port = support::free_port();
    let stack = with_neo4j(format!("neo4j://127.0.0.1:{port}")).await;
    let mut c = stack.client(ADMIN_TOKEN).await;
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": "MATCH (v:Volk) RETURN v.alias AS alias"}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "neo4j_unavailable", "{e}");
}

// REQ-014-ERR-012: a connection dropped mid-RPC loses its subscriptions within a second.
#[tokio::test]
async fn err_012_a_dropped_connection_loses_its_subscriptions() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut observer = gw.client(TOKEN).await;
    let mut c = gw.client(TOKEN).await;
    c.ok("cxp.subscribe", json!({})).await;
    // A request in flight, then the socket goes away before reading the answer.
    c.send_text(r#"{"jsonrpc":"2.0","id":9,"method":"gateway.replay","params":{"topic":"cxp.traffic","count":10}}"#)
        .await;
    drop(c);
    let count = |info: &Value| info["subscription_counts"]["cxp.traffic"].as_i64();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let info = observer.ok("gateway.info", json!({})).await;
        if count(&info) == Some(0) {
            break;
        }
        assert!(Instant::now() < deadline, "subscription still live: {info}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

// REQ-014-ERR-013: the same HMAC nonce twice: first accepted, second -32001 `nonce_replay`.
#[tokio::test]
async fn err_013_a_replayed_nonce_is_refused() {
    let gw = TestGateway::sled(hmac_config()).await;
    let n = nonce();
    let mut first = gw.connect().await;
    first
        .ok("auth.authenticate", hmac("err-bot", &n, SECRET))
        .await;
    let mut second = gw.connect().await;
    let e = second
        .err("auth.authenticate", hmac("err-bot", &n, SECRET))
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "nonce_replay", "{e}");
}

// REQ-014-ERR-014: a client whose buffer overflows gets a gap notice with the dropped
// count and the sequence range.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn err_014_an_overflowing_buffer_sends_a_gap_notice() {
    let config = GatewayConfig {
        event_buffer_per_client: 16,
        ..ws::test_config()
    };
    let gw = TestGateway::sled(config).await;
    let mut stuck = gw.client(TOKEN).await;
    stuck.ok("cxp.subscribe", json!({})).await;
    let big = "z".repeat(64 * 1024);
    let mut last = 0;
    for i in 0..300 {
        last = gw
            .log
            .append(&packet_sent("U:Ox", "U:Vz", &format!("{big}{i}"), "t"))
            .await
            .expect("append");
    }
    let mut gap = None;
    loop {
        let n = stuck.next_json().await.expect("still connected");
        if n["method"] == "gateway.gap" && gap.is_none() {
            gap = Some(n["params"].clone());
        }
        if n["method"] == "cxp.traffic" && n["params"]["sequence"] == last {
            break;
        }
    }
    let gap = gap.expect("a gap notice");
    let (from, to) = (
        gap["sequence_from"].as_u64().expect("sequence_from"),
        gap["sequence_to"].as_u64().expect("sequence_to"),
    );
    assert!(from <= to, "{gap}");
    assert!(gap["dropped"].as_u64().is_some_and(|d| d > 0), "{gap}");
}

// REQ-014-ERR-015: a client beyond max_clients is closed with 1013.
#[tokio::test]
async fn err_015_a_client_beyond_max_clients_is_closed_with_1013() {
    let mut config = ws::test_config();
    config.max_clients = 2;
    let gw = TestGateway::sled(config).await;
    let _a = gw.client(TOKEN).await;
    let _b = gw.client(TOKEN).await;
    let mut c = gw.connect().await;
    // Refused at connection or at authentication (slots are counted for authenticated
    // clients): either way the close code is 1013.
    c.send_text(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "auth.authenticate",
                "params": {"strategy": "static_token", "token": TOKEN}})
        .to_string(),
    )
    .await;
    assert_eq!(c.closed().await.code, 1013);
}

// REQ-014-180
// REQ-014-ERR-016: governance.evaluate hitting a Prolog error is -32603 with the error in
// data.prolog_error.
#[tokio::test]
async fn err_016_a_prolog_error_in_a_dry_run_is_internal_error_with_the_error() {
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
    let stack = start(ws::test_config(), Some(dir.path().into())).await;
    let mut c = stack.client(TOKEN).await;
    let e = c
        .err(
            "governance.evaluate",
            json!({"volk_id": "U:Ox", "action": "broken", "resource": "x"}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert!(e["data"]["prolog_error"].is_string(), "{e}");
}

// REQ-014-ERR-017: a batch of more than 50 is -32600 `batch_too_large`, whole.
#[tokio::test]
async fn err_017_a_batch_over_fifty_is_invalid_request_batch_too_large() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = gw.client(TOKEN).await;
    let batch: Vec<Value> = (0..51)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "gateway.ping"}))
        .collect();
    c.send_text(&Value::Array(batch).to_string()).await;
    let r = c.next_json().await.expect("response");
    assert_eq!(r["error"]["code"], -32600, "{r}");
    assert_eq!(reason(&r["error"]), "batch_too_large", "{r}");
}

// REQ-014-ERR-018: a binary frame closes with 1003.
#[tokio::test]
async fn err_018_a_binary_frame_closes_with_1003() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = gw.client(TOKEN).await;
    c.send_binary(vec![1, 2, 3]).await;
    assert_eq!(c.closed().await.code, 1003);
}
