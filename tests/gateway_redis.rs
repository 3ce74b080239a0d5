//! Several gateways, one truth (spec 014 REQ-014-094/098/103/111/117, ERR-009, ERR-013):
//! two gateway instances, each over its own sled log, share one real `redis-server`.
//! The outage test starts a private Redis, stops it mid-run and starts it again.

mod support;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata::gateway::auth_hmac::sign;
use orchestrata::gateway::config::HmacConfig;
use orchestrata::gateway::shared::{RedisState, SharedState, StoredGrant};
use orchestrata::gateway::{self, GatewayConfig, Scope, Services};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};
use support::ws::{self, Backend, TestGateway, TOKEN};

const SECRET: &str = "shared-hmac-secret";

/// A `redis-server` this test started on a free port; killed on drop.
struct PrivateRedis {
    child: Option<Child>,
    port: u16,
}

impl PrivateRedis {
    fn start() -> Self {
        let mut r = PrivateRedis {
            child: None,
            port: support::free_port(),
        };
        r.restart();
        r
    }

    fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// Starts (again) on the same port and waits until it accepts connections.
    fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed (tests/run.sh installs it)");
        self.child = Some(child);
        let deadline = Instant::now() + Duration::from_secs(10);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not listen");
            std::thread::sleep(Duration::from_millis(20));
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

fn config(instance: &str) -> GatewayConfig {
    let mut c = ws::test_config()
        .with_hmac(HmacConfig::new([SECRET]).with_client("billing-bot", Scope::ReadWrite))
        .expect("valid hmac settings");
    c.instance_id = instance.into();
    // Some tests share policy decisions through Redis: the site turned
    // `prolog_policy` on and registers its clients (tests/fixtures/policy/clients.pl).
    c.prolog_policy = true;
    c
}

/// A gateway over its own sled log (and its own governance) sharing state in `redis`.
async fn gateway_on(redis: &str, instance: &str) -> (TestGateway, Arc<RedisState>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
        .await
        .expect("open sled log");
    let state = Arc::new(
        RedisState::connect(redis, instance)
            .await
            .expect("valid redis url"),
    );
    let governance = Governance::start(log.clone(), GovernanceConfig::default())
        .await
        .expect("governance starts");
    governance
        .load_policy(support::policy::with_clients())
        .await
        .expect("test policy loads");
    let services = Services::new(log.clone())
        .with_governance(governance)
        .with_shared_state(state.clone());
    let running = gateway::start(config(instance), services)
        .await
        .expect("gateway starts");
    let gw = TestGateway {
        running: Some(running),
        log,
        backend: Backend::Sled(dir),
    };
    (gw, state)
}

fn hmac(client_id: &str, nonce: &str) -> Value {
    let ts = Utc::now().to_rfc3339();
    json!({"strategy": "hmac", "client_id": client_id, "timestamp": ts, "nonce": nonce,
           "signature": sign(SECRET, &ts, nonce, client_id)})
}

fn reason(e: &Value) -> &str {
    e["data"]["reason"].as_str().unwrap_or("")
}

fn nonce() -> String {
    uuid::Uuid::new_v4().simple().to_string()
}

fn ids(listing: &Value) -> Vec<(String, String)> {
    let mut v: Vec<(String, String)> = listing["clients"]
        .as_array()
        .expect("clients")
        .iter()
        .map(|c| {
            (
                c["client_id"].as_str().unwrap_or("").to_owned(),
                c["instance_id"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    v.sort();
    v
}

// REQ-014-098 REQ-014-ERR-013
#[tokio::test]
async fn a_nonce_used_on_one_gateway_is_refused_on_the_other() {
    let redis = PrivateRedis::start();
    let (a, _) = gateway_on(&redis.url(), "gw-a").await;
    let (b, _) = gateway_on(&redis.url(), "gw-b").await;
    let n = nonce();
    let params = hmac("billing-bot", &n);
    let mut on_a = a.connect().await;
    on_a.ok("auth.authenticate", params.clone()).await;
    let mut on_b = b.connect().await;
    let e = on_b.err("auth.authenticate", params).await;
    assert_eq!(e["code"], -32001);
    assert_eq!(reason(&e), "nonce_replay");
    on_b.ok("auth.authenticate", hmac("billing-bot", &nonce()))
        .await;
}

// REQ-014-111 REQ-014-112 REQ-014-117
#[tokio::test]
async fn gateway_clients_on_either_instance_lists_the_clients_of_both() {
    let redis = PrivateRedis::start();
    let (a, _) = gateway_on(&redis.url(), "gw-a").await;
    let (b, _) = gateway_on(&redis.url(), "gw-b").await;
    let mut on_a = a.client(TOKEN).await;
    let mut on_b = b.client(TOKEN).await;
    let a_id = on_a.ok("gateway.clients", json!({})).await["clients"][0]["client_id"]
        .as_str()
        .expect("id")
        .to_owned();
    let leaving = b.client(TOKEN).await;
    let from_a = on_a.ok("gateway.clients", json!({})).await;
    let from_b = on_b.ok("gateway.clients", json!({})).await;
    assert_eq!(from_a["total"], 3, "{from_a}");
    assert_eq!(ids(&from_a), ids(&from_b), "one truth");
    let instances: Vec<String> = ids(&from_a).into_iter().map(|(_, i)| i).collect();
    assert_eq!(instances.iter().filter(|i| *i == "gw-a").count(), 1);
    assert_eq!(instances.iter().filter(|i| *i == "gw-b").count(), 2);
    let remote = from_b["clients"]
        .as_array()
        .expect("clients")
        .iter()
        .find(|c| c["client_id"] == a_id.as_str())
        .expect("a's client listed on b")
        .clone();
    assert_eq!(remote["auth_scope"], "read_write");
    assert_eq!(remote["client_metadata"]["client_name"], "gateway-tests");
    assert!(remote["connected_at"].is_string() && remote["last_activity"].is_string());
    // A client that leaves b disappears from a's listing too.
    leaving.close().await;
    let deadline = Instant::now() + Duration::from_secs(1);
    loop {
        let from_a = on_a.ok("gateway.clients", json!({})).await;
        if from_a["total"] == 2 {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "registry entry not removed: {from_a}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

// REQ-014-094
#[tokio::test]
async fn a_token_rotated_in_the_shared_store_is_accepted_and_revoked_everywhere() {
    let redis = PrivateRedis::start();
    let (a, state_a) = gateway_on(&redis.url(), "gw-a").await;
    let (b, _) = gateway_on(&redis.url(), "gw-b").await;
    let token = format!("rotated-{}", nonce());
    let auth = json!({"strategy": "static_token", "token": token});
    state_a
        .put_token(
            &token,
            StoredGrant {
                scope: Scope::ReadOnly,
                name: Some("rotated".into()),
            },
        )
        .await
        .expect("stored in redis");
    let mut on_b = b.connect().await;
    let r = on_b.ok("auth.authenticate", auth.clone()).await;
    assert_eq!(r["scope"], "read_only");
    // Only the digest is stored, never the token.
    let mut conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let stored: Vec<String> = redis::cmd("HKEYS")
        .arg("orchestrata:gateway:tokens")
        .query_async(&mut conn)
        .await
        .expect("hkeys");
    assert_eq!(stored.len(), 1);
    assert_ne!(stored[0], token);
    assert!(state_a.revoke_token(&token).await.expect("revoked"));
    let mut again = b.connect().await;
    let e = again.err("auth.authenticate", auth).await;
    assert_eq!(reason(&e), "invalid_token");
    let mut on_a = a.connect().await;
    on_a.auth(TOKEN).await;
}

// REQ-014-103
#[tokio::test]
async fn a_policy_decision_made_on_one_gateway_is_served_from_the_cache_on_the_other() {
    let redis = PrivateRedis::start();
    let (a, _) = gateway_on(&redis.url(), "gw-a").await;
    let (b, _) = gateway_on(&redis.url(), "gw-b").await;
    let auth = json!({"strategy": "prolog_policy", "client_id": "operator"});
    let mut on_a = a.connect().await;
    assert_eq!(
        on_a.ok("auth.authenticate", auth.clone()).await["scope"],
        "read_write"
    );
    let mut on_b = b.connect().await;
    assert_eq!(
        on_b.ok("auth.authenticate", auth).await["scope"],
        "read_write"
    );
    let asked_on_b = b
        .log
        .read(Stream::GovernanceDecisions, 0, None, 1000)
        .await
        .expect("read")
        .iter()
        .filter(|e| serde_json::to_value(e).expect("json")["payload"]["action"] == "gateway.access")
        .count();
    assert_eq!(asked_on_b, 0, "b answered from the shared cache");
    let mut conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let ttl: i64 = redis::cmd("PTTL")
        .arg("orchestrata:gateway:auth:operator")
        .query_async(&mut conn)
        .await
        .expect("pttl");
    assert!(ttl > 290_000 && ttl <= 300_000, "TTL 300 s, got {ttl} ms");
}

async fn until(what: &str, mut check: impl AsyncFnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(15);
    while !check().await {
        assert!(Instant::now() < deadline, "{what} within 15 s");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

// REQ-014-ERR-009 REQ-014-117
#[tokio::test]
async fn when_redis_goes_away_uncached_auth_is_denied_sessions_go_on_and_it_recovers() {
    let mut redis = PrivateRedis::start();
    let (a, state) = gateway_on(&redis.url(), "gw-a").await;
    let mut connected = a.client(TOKEN).await;
    let mut cached = a.connect().await;
    let dashboard = json!({"strategy": "prolog_policy", "client_id": "dashboard"});
    cached.ok("auth.authenticate", dashboard.clone()).await;
    assert!(state.available());

    redis.stop();
    // The first command after the outage notices it; from then on it fails fast.
    let mut newcomer = a.connect().await;
    let e = newcomer
        .err("auth.authenticate", hmac("billing-bot", &nonce()))
        .await;
    assert_eq!(e["code"], -32001);
    assert_eq!(reason(&e), "shared_state_unavailable", "{e}");
    assert!(!state.available());
    let e = newcomer
        .err(
            "auth.authenticate",
            json!({"strategy": "prolog_policy", "client_id": "operator"}),
        )
        .await;
    assert_eq!(reason(&e), "shared_state_unavailable", "uncached: denied");
    let r = newcomer.ok("auth.authenticate", dashboard).await;
    assert_eq!(r["scope"], "read_only", "cached before the outage: allowed");
    // Connected clients keep working; the registry falls back to this instance.
    connected.ok("gateway.ping", json!({})).await;
    let listing = connected.ok("gateway.clients", json!({})).await;
    assert_eq!(listing["total"], 3, "{listing}");
    assert_eq!(listing["shared_state_available"], false);
    let gone = a.client(TOKEN).await;
    gone.close().await;

    redis.restart();
    until("recovery", async || state.available()).await;
    let mut after = a.connect().await;
    after
        .ok("auth.authenticate", hmac("billing-bot", &nonce()))
        .await;
    // The registry was re-published into the fresh Redis: this instance's 4 clients.
    let mut conn = redis::Client::open(redis.url())
        .expect("url")
        .get_multiplexed_async_connection()
        .await
        .expect("connect");
    let members: Vec<String> = redis::cmd("SMEMBERS")
        .arg("orchestrata:gateway:clients")
        .query_async(&mut conn)
        .await
        .expect("smembers");
    assert_eq!(members.len(), 4, "{members:?}");
    let listing = connected.ok("gateway.clients", json!({})).await;
    assert_eq!(listing["shared_state_available"], true);
}

// REQ-014-ERR-009
#[tokio::test]
async fn a_malformed_redis_url_is_a_config_error_naming_the_field() {
    let err = match RedisState::connect("http://not-redis", "gw-x").await {
        Err(e) => e,
        Ok(_) => panic!("an http URL is not a Redis URL"),
    };
    assert!(err.to_string().contains("gateway.redis_url"), "{err}");
}

/// `orchestrata up` on `port` with its own data dir, sharing `redis` through the
/// `--redis` flag or, when `by_env`, `ORCHESTRATA_GATEWAY__REDIS_URL`.
fn start_up(config: &Path, data: &Path, port: u16, redis: &str, by_env: bool) -> Child {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
    cmd.args(["up", "--listen", &format!("127.0.0.1:{port}"), "--config"])
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    if by_env {
        cmd.env("ORCHESTRATA_GATEWAY__REDIS_URL", redis);
    } else {
        cmd.args(["--redis", redis]);
    }
    let mut child = cmd.spawn().expect("start orchestrata up");
    let mut lines = BufReader::new(child.stdout.take().expect("stdout")).lines();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let line = lines
            .next()
            .expect("up prints its banner")
            .expect("read line");
        if line.contains("gateway listening on") {
            break;
        }
        assert!(Instant::now() < deadline, "up did not start the gateway");
    }
    std::thread::spawn(move || for _ in lines {});
    child
}

/// Kills the `up` processes when the test ends, whatever happens.
struct Processes(Vec<Child>);

impl Drop for Processes {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

// REQ-014-098 REQ-014-111 REQ-014-ERR-013 REQ-014-117
#[tokio::test]
async fn two_orchestrata_up_processes_share_nonces_and_the_client_registry_through_redis() {
    let redis = PrivateRedis::start();
    let dir = tempfile::tempdir().expect("temp dir");
    let config = dir.path().join("orchestrata.yaml");
    std::fs::write(
        &config,
        format!(
            "gateway:\n  static_token: {TOKEN}\n  hmac:\n    secrets: [{SECRET}]\n    clients: {{billing-bot: read_write}}\n"
        ),
    )
    .expect("write config");
    let (pa, pb) = (support::free_port(), support::free_port());
    let _procs = Processes(vec![
        start_up(&config, &dir.path().join("a"), pa, &redis.url(), false),
        start_up(&config, &dir.path().join("b"), pb, &redis.url(), true),
    ]);
    let mut on_a = support::ws::Ws::connect(&format!("ws://127.0.0.1:{pa}/")).await;
    let mut on_b = support::ws::Ws::connect(&format!("ws://127.0.0.1:{pb}/")).await;
    let params = hmac("billing-bot", &nonce());
    on_a.ok("auth.authenticate", params.clone()).await;
    let e = on_b.err("auth.authenticate", params).await;
    assert_eq!(reason(&e), "nonce_replay", "{e}");
    on_b.auth(TOKEN).await;
    let from_a = on_a.ok("gateway.clients", json!({})).await;
    let from_b = on_b.ok("gateway.clients", json!({})).await;
    assert_eq!(from_a["total"], 2, "{from_a}");
    assert_eq!(ids(&from_a), ids(&from_b));
    assert_eq!(from_a["shared_state"], "redis");
    let instances: std::collections::BTreeSet<String> =
        ids(&from_a).into_iter().map(|(_, i)| i).collect();
    assert_eq!(instances.len(), 2, "one client per process: {from_a}");
}
