//! Back-pressure and limits of the gateway (spec 014 REQ-014-186..191, 194..195,
//! ERR-003, ERR-005, ERR-014), with real WebSocket clients over loopback and a gateway
//! over a real sled log in a temp dir.

mod support;

use std::collections::BTreeSet;
use std::time::Duration;

use orchestrata::gateway::GatewayConfig;
use serde_json::{json, Value};
use support::ws::{self, packet_sent, TestGateway, TOKEN};

// REQ-014-186 REQ-014-189 REQ-014-194
#[test]
fn limits_default_to_the_contract_values() {
    let c = GatewayConfig::default();
    assert_eq!(c.rate_limit_per_second, 500);
    assert_eq!(c.event_buffer_per_client, 1000);
    assert_eq!(c.max_subscriptions_per_client, 50);
    let c = GatewayConfig::from_yaml(
        "gateway:\n  rate_limit_per_second: 7\n  event_buffer_per_client: 9\n  max_subscriptions_per_client: 3\n",
    )
    .expect("valid config");
    assert_eq!(
        (
            c.rate_limit_per_second,
            c.event_buffer_per_client,
            c.max_subscriptions_per_client
        ),
        (7, 9, 3)
    );
    let e = GatewayConfig::from_yaml("gateway:\n  rate_limit_per_second: 0\n")
        .expect_err("zero rate refused");
    assert!(
        e.to_string().contains("gateway.rate_limit_per_second"),
        "{e}"
    );
}

// REQ-014-186 REQ-014-187 ERR-003
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn each_call_of_a_batch_takes_a_token_and_the_excess_is_rate_limited_with_retry_after() {
    let mut config = ws::test_config();
    config.rate_limit_per_second = 5;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await; // auth took the first of 5 tokens
    let batch: Vec<Value> = (0..10)
        .map(|i| json!({"jsonrpc": "2.0", "id": 100 + i, "method": "gateway.ping"}))
        .collect();
    c.send_text(&Value::Array(batch).to_string()).await;
    let answers = c.next_json().await.expect("batch answer");
    let answers = answers.as_array().expect("array answer");
    assert_eq!(answers.len(), 10, "every call of the batch is answered");
    let ok = answers
        .iter()
        .take_while(|a| a.get("result").is_some())
        .count();
    assert!(
        (4..=5).contains(&ok),
        "4 tokens left (5 if the machine stalled 200 ms): {answers:?}"
    );
    for a in &answers[ok..] {
        let e = &a["error"];
        assert_eq!(e["code"], -32002, "{a}");
        assert_eq!(e["message"], "Rate limited");
        assert_eq!(e["data"]["reason"], "rate_limited");
        assert_eq!(e["data"]["limit_per_second"], 5);
        let retry = e["data"]["retry_after_ms"]
            .as_u64()
            .expect("retry_after_ms");
        assert!(
            (1..=200).contains(&retry),
            "one token refills in 200 ms: {retry}"
        );
    }
    let retry = answers[ok]["error"]["data"]["retry_after_ms"]
        .as_u64()
        .expect("retry_after_ms");
    tokio::time::sleep(Duration::from_millis(retry + 20)).await;
    let r = c.ok("gateway.ping", json!({})).await;
    assert!(
        r["server_timestamp"].is_string(),
        "after retry_after_ms the call passes"
    );
}

// REQ-014-194 REQ-014-195 ERR-005
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_51st_subscription_is_refused_with_the_current_count() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = gw.client(TOKEN).await;
    let mut ids = Vec::new();
    for i in 0..50 {
        let r = c
            .ok(
                "cxp.subscribe",
                json!({"filters": {"thread_id": format!("t-{i}")}}),
            )
            .await;
        ids.push(r["subscription_id"].as_str().expect("id").to_owned());
    }
    let e = c
        .err(
            "gateway.subscribe",
            json!({"topic": "volk.lifecycle", "filters": {"volk_alias": "U:Ox"}}),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["message"], "Invalid params");
    assert_eq!(e["data"]["reason"], "subscription_limit");
    assert_eq!(e["data"]["current_count"], 50);
    assert_eq!(e["data"]["max"], 50);
    let info = c.ok("gateway.clients", json!({})).await;
    assert_eq!(
        info["clients"][0]["subscriptions"].as_array().map(Vec::len),
        Some(50)
    );
    c.ok("cxp.unsubscribe", json!({"subscription_id": ids[0]}))
        .await;
    let r = c
        .ok(
            "gateway.subscribe",
            json!({"topic": "volk.lifecycle", "filters": {"volk_alias": "U:Ox"}}),
        )
        .await;
    assert!(
        r["subscription_id"].is_string(),
        "room again after unsubscribe"
    );
    // Another client has its own allowance.
    let mut other = gw.client(TOKEN).await;
    other.ok("cxp.subscribe", json!({})).await;
}

fn seq(n: &Value) -> u64 {
    n["params"]["sequence"].as_u64().expect("sequence")
}

fn dropped_total(metrics: &str) -> u64 {
    metrics
        .lines()
        .find(|l| l.starts_with("orchestrata_gateway_events_dropped_total{topic=\"cxp.traffic\"}"))
        .and_then(|l| l.rsplit(' ').next())
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no cxp.traffic drop counter in\n{metrics}"))
}

// REQ-014-189 REQ-014-190 REQ-014-191 REQ-014-192 REQ-014-133 REQ-014-134 REQ-014-150 ERR-014
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_gets_a_gap_it_can_fill_while_others_get_everything() {
    const EVENTS: u64 = 300;
    let config = GatewayConfig {
        event_buffer_per_client: 16,
        ..ws::test_config()
    };
    let gw = TestGateway::sled(config).await;
    let mut stuck = gw.client(TOKEN).await;
    let sub = stuck.ok("cxp.subscribe", json!({})).await;
    let sub_id = sub["subscription_id"].as_str().expect("id").to_owned();
    let epoch = sub["epoch"].clone();
    let mut reader = gw.client(TOKEN).await;
    reader.ok("cxp.subscribe", json!({})).await;
    // 300 events of 64 KiB: ~19 MiB, far more than the socket buffers between the
    // gateway and a client that does not read.
    let log = gw.log.clone();
    let big = "z".repeat(64 * 1024);
    let writer = tokio::spawn(async move {
        let mut seqs = Vec::new();
        for i in 0..EVENTS {
            let s = log
                .append(&packet_sent("U:Ox", "U:Vz", &format!("{big}{i}"), "t"))
                .await
                .expect("append");
            seqs.push(s);
        }
        seqs
    });
    // The reading client receives every event, in order, with no gap, while the other
    // client reads nothing.
    let got = reader.notifications(EVENTS as usize).await;
    let appended = writer.await.expect("writer");
    assert_eq!(got.iter().map(seq).collect::<Vec<_>>(), appended);
    assert!(got.iter().all(|n| n["method"] == "cxp.traffic"));

    // Now the stuck client catches up: events and gap notices, up to the last event.
    let last = *appended.last().expect("events");
    let mut delivered = Vec::new();
    let mut gaps = Vec::new();
    while delivered.last() != Some(&last) {
        let n = stuck.next_json().await.expect("still connected");
        match n["method"].as_str() {
            Some("cxp.traffic") => delivered.push(seq(&n)),
            Some("gateway.gap") => gaps.push(n["params"].clone()),
            _ => panic!("unexpected frame {n}"),
        }
    }
    assert!(
        !gaps.is_empty(),
        "a client that stopped reading lost events"
    );
    let mut missing = BTreeSet::new();
    let mut dropped = 0;
    for g in &gaps {
        assert_eq!(g["topic"], "cxp.traffic");
        assert_eq!(g["subscription"], sub_id.as_str());
        assert_eq!(g["epoch"], epoch);
        let (from, to) = (
            g["sequence_from"].as_u64().expect("from"),
            g["sequence_to"].as_u64().expect("to"),
        );
        let n = g["dropped"].as_u64().expect("dropped");
        assert_eq!(
            n,
            to - from + 1,
            "unfiltered: the range is exactly the dropped events"
        );
        dropped += n;
        missing.extend(from..=to);
    }
    // Delivered and dropped partition what was appended, in order.
    assert!(delivered.windows(2).all(|w| w[0] < w[1]), "in order");
    assert!(
        delivered.iter().all(|s| !missing.contains(s)),
        "no duplicate"
    );
    let mut all: Vec<u64> = delivered
        .iter()
        .copied()
        .chain(missing.iter().copied())
        .collect();
    all.sort_unstable();
    assert_eq!(all, appended, "delivered + dropped = everything");

    // Each gap is filled exactly by gateway.replay over its range.
    for g in &gaps {
        let r = stuck
            .ok(
                "gateway.replay",
                // Truncated payloads keep the answer under the client's frame limit.
                json!({"topic": "cxp.traffic", "sequence_from": g["sequence_from"],
                       "sequence_to": g["sequence_to"], "max_payload_size": 64}),
            )
            .await;
        let seqs: Vec<u64> = r["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["sequence"].as_u64().expect("sequence"))
            .collect();
        let want: Vec<u64> = (g["sequence_from"].as_u64().unwrap_or(0)
            ..=g["sequence_to"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(seqs, want);
        assert_eq!(r["epoch"], epoch);
    }

    // Nothing was closed, and the drops are counted.
    let (_, metrics) = gw.http_get("/metrics").await;
    assert_eq!(dropped_total(&metrics), dropped, "{metrics}");
    assert!(stuck.ok("gateway.ping", json!({})).await["server_timestamp"].is_string());
    let after = gw
        .log
        .append(&packet_sent("U:Ox", "U:Vz", "after", "t"))
        .await
        .expect("append");
    assert_eq!(seq(&stuck.notification().await), after, "still subscribed");
    assert_eq!(seq(&reader.notification().await), after);
}

// REQ-014-190 REQ-014-191
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_filtered_subscription_gap_counts_only_its_events_and_replay_with_its_filters_fills_it() {
    const EVENTS: u64 = 240;
    let config = GatewayConfig {
        event_buffer_per_client: 8,
        ..ws::test_config()
    };
    let gw = TestGateway::sled(config).await;
    let mut stuck = gw.client(TOKEN).await;
    let filters = json!({"thread_id": "even"});
    stuck.ok("cxp.subscribe", json!({"filters": filters})).await;
    let big = "y".repeat(64 * 1024);
    let mut matching = Vec::new();
    for i in 0..EVENTS {
        let thread = if i % 2 == 0 { "even" } else { "odd" };
        let s = gw
            .log
            .append(&packet_sent("U:Ox", "U:Vz", &format!("{big}{i}"), thread))
            .await
            .expect("append");
        if i % 2 == 0 {
            matching.push(s);
        }
    }
    let last = *matching.last().expect("events");
    let mut delivered = Vec::new();
    let mut gaps = Vec::new();
    while delivered.last() != Some(&last) {
        let n = stuck.next_json().await.expect("connected");
        match n["method"].as_str() {
            Some("cxp.traffic") => delivered.push(seq(&n)),
            Some("gateway.gap") => gaps.push(n["params"].clone()),
            _ => panic!("unexpected {n}"),
        }
    }
    assert!(!gaps.is_empty(), "events were dropped");
    let mut refilled = Vec::new();
    for g in &gaps {
        let r = stuck
            .ok(
                "gateway.replay",
                json!({"topic": "cxp.traffic", "sequence_from": g["sequence_from"],
                       "sequence_to": g["sequence_to"], "filters": filters,
                       "max_payload_size": 64}),
            )
            .await;
        let seqs: Vec<u64> = r["events"]
            .as_array()
            .expect("events")
            .iter()
            .map(|e| e["sequence"].as_u64().expect("sequence"))
            .collect();
        assert_eq!(seqs.len() as u64, g["dropped"].as_u64().expect("dropped"));
        refilled.extend(seqs);
    }
    let mut all: Vec<u64> = delivered.into_iter().chain(refilled).collect();
    all.sort_unstable();
    assert_eq!(
        all, matching,
        "delivered + refilled = every matching event, once"
    );
}
