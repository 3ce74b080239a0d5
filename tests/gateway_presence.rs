//! Presence and heartbeat (spec 014 US-007, REQ-014-106..120, ERR-012): every
//! connection's life is on the `gateway.presence` stream of the log, pushed live to
//! subscribers, and silent clients are found by the heartbeat. Real WebSockets, real
//! sled log.

mod support;

use std::sync::Arc;
use std::time::{Duration, Instant};

use orchestrata::log::EventLog;
use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, TOKEN};

async fn presence(log: &Arc<dyn EventLog>) -> Vec<Value> {
    log.read(Stream::GatewayPresence, 0, None, 10_000)
        .await
        .expect("read presence")
        .iter()
        .map(|e| serde_json::to_value(e).expect("json"))
        .collect()
}

fn kind(e: &Value) -> String {
    e["event_type"]
        .as_str()
        .or_else(|| e["type"].as_str())
        .unwrap_or("")
        .to_owned()
}

/// Polls the presence stream until `done` holds (at most `within`).
async fn wait_for(
    log: &Arc<dyn EventLog>,
    within: Duration,
    done: impl Fn(&[Value]) -> bool,
) -> Vec<Value> {
    let deadline = Instant::now() + within;
    loop {
        let events = presence(log).await;
        if done(&events) {
            return events;
        }
        assert!(
            Instant::now() < deadline,
            "presence not reached within {within:?}: {events:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn of<'e>(events: &'e [Value], client: &str) -> Vec<&'e Value> {
    events
        .iter()
        .filter(|e| e["payload"]["client_id"] == client)
        .collect()
}

async fn my_id(c: &mut Ws) -> String {
    let all = c.ok("gateway.clients", json!({})).await;
    // The newest authenticated client is the caller in these single-client checks.
    all["clients"]
        .as_array()
        .expect("clients")
        .last()
        .expect("one client")["client_id"]
        .as_str()
        .expect("id")
        .to_owned()
}

// REQ-014-113 REQ-014-114 REQ-014-115 REQ-014-118 REQ-014-119
#[tokio::test]
async fn connect_metadata_update_and_clean_close_are_on_the_log_and_pushed_live() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut watcher = gw.client(TOKEN).await;
    watcher
        .ok("gateway.subscribe", json!({"topic": "gateway.presence"}))
        .await;
    let mut c = gw.connect().await;
    let r = c
        .ok(
            "auth.authenticate",
            json!({"strategy": "static_token", "token": TOKEN,
                   "metadata": {"client_name": "ops-cli", "client_version": "2.1", "purpose": "triage"}}),
        )
        .await;
    let id = r["client_id"].as_str().expect("id").to_owned();
    // Pushed live to the subscriber.
    let pushed = watcher.notification().await;
    assert_eq!(pushed["method"], "gateway.presence", "{pushed}");
    assert_eq!(pushed["params"]["payload"]["client_id"], id.as_str());
    // Re-authenticating with other metadata records metadata_updated.
    c.ok(
        "auth.authenticate",
        json!({"strategy": "static_token", "token": TOKEN,
               "client_metadata": {"client_name": "ops-cli", "client_version": "2.2"}}),
    )
    .await;
    c.close().await;
    let events = wait_for(&gw.log, Duration::from_secs(5), |ev| of(ev, &id).len() >= 3).await;
    let mine = of(&events, &id);
    let kinds: Vec<String> = mine.iter().map(|e| kind(e)).collect();
    assert_eq!(
        kinds,
        ["connected", "metadata_updated", "disconnected"],
        "{mine:#?}"
    );
    assert_eq!(mine[0]["payload"]["client_name"], "ops-cli");
    assert_eq!(mine[0]["payload"]["client_version"], "2.1");
    assert_eq!(mine[0]["payload"]["purpose"], "triage");
    assert_eq!(mine[0]["payload"]["auth_scope"], "read_write");
    assert_eq!(mine[1]["payload"]["metadata"]["client_version"], "2.2");
    assert_eq!(mine[2]["payload"]["reason"], "clean_close");
}

// REQ-014-106 REQ-014-107 REQ-014-108 REQ-014-110 REQ-014-115 REQ-014-119
#[tokio::test]
async fn a_client_that_never_answers_pings_times_out_and_both_events_are_logged() {
    let mut config = ws::test_config();
    config.heartbeat_interval = Duration::from_millis(150);
    config.heartbeat_timeout = Duration::from_millis(50);
    config.heartbeat_max_misses = 2;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    let id = my_id(&mut c).await;
    // tungstenite answers pings only while the socket is read: not reading = no pongs.
    tokio::time::sleep(Duration::from_millis(700)).await;
    let closed = c.closed().await;
    assert_eq!(
        (closed.code, closed.reason.as_str()),
        (1001, "heartbeat_timeout")
    );
    let events = wait_for(&gw.log, Duration::from_secs(2), |ev| of(ev, &id).len() >= 3).await;
    let mine = of(&events, &id);
    let kinds: Vec<String> = mine.iter().map(|e| kind(e)).collect();
    assert_eq!(kinds, ["connected", "timeout", "disconnected"], "{mine:#?}");
    assert_eq!(mine[1]["payload"]["missed_heartbeats"], 2);
    assert_eq!(mine[2]["payload"]["reason"], "timeout");
}

// REQ-014-109 REQ-014-108
#[tokio::test]
async fn any_client_message_counts_as_activity() {
    let mut config = ws::test_config();
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_timeout = Duration::from_millis(50);
    config.heartbeat_max_misses = 2;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    let first = c.ok("gateway.clients", json!({})).await["clients"][0]["last_activity"]
        .as_str()
        .expect("last_activity")
        .to_owned();
    // Busy for a second, well past two missed heartbeats: never dropped.
    for _ in 0..20 {
        tokio::time::sleep(Duration::from_millis(50)).await;
        c.ok("gateway.ping", json!({})).await;
    }
    let later = c.ok("gateway.clients", json!({})).await["clients"][0]["last_activity"]
        .as_str()
        .expect("last_activity")
        .to_owned();
    assert!(later > first, "{later} after {first}");
}

// REQ-014-116 REQ-014-120 REQ-014-ERR-012 REQ-014-119
#[tokio::test]
async fn a_dropped_connection_loses_its_subscriptions_within_a_second() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut observer = gw.client(TOKEN).await;
    let mut c = gw.client(TOKEN).await;
    c.ok("cxp.subscribe", json!({})).await;
    let count = |info: &Value| info["subscription_counts"]["cxp.traffic"].as_i64();
    assert_eq!(
        count(&observer.ok("gateway.info", json!({})).await),
        Some(1)
    );
    // The peer vanishes mid-session (binary garbage, then the socket is dropped).
    c.send_binary(vec![0, 1, 2]).await;
    drop(c);
    let dropped_at = Instant::now();
    loop {
        let info = observer.ok("gateway.info", json!({})).await;
        if count(&info) == Some(0) {
            break;
        }
        assert!(
            dropped_at.elapsed() < Duration::from_secs(1),
            "subscription still live after 1 s: {info}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let events = wait_for(&gw.log, Duration::from_secs(1), |ev| {
        ev.iter().any(|e| kind(e) == "disconnected")
    })
    .await;
    let gone = events
        .iter()
        .find(|e| kind(e) == "disconnected")
        .expect("disconnected");
    assert_eq!(gone["payload"]["reason"], "error", "{gone}");
    // The registry entry goes too, within the same second (ERR-012).
    loop {
        let listed = observer.ok("gateway.clients", json!({})).await;
        if listed["total"] == 1 {
            break;
        }
        assert!(
            dropped_at.elapsed() < Duration::from_secs(1),
            "only the observer should be left after 1 s: {listed}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
