//! Topics straight from the log — live subscriptions, filters, replay and resume — on
//! both log backends (sled in a temp dir, Kafka on a real Kafka-protocol broker), with
//! real WebSocket clients.

mod support;

use std::time::Duration;

use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};
use support::ws::{self, packet_sent, volk_registered, TestGateway, READ_ONLY_TOKEN, TOKEN};

/// Instantiates each scenario for both backends.
macro_rules! on_both_backends {
    ($(fn $name:ident;)*) => {
        mod sled {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::TestGateway::sled(super::ws::test_config()).await).await;
                }
            )*
        }
        mod kafka {
            $(
                #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
                async fn $name() {
                    super::$name(super::TestGateway::kafka(super::ws::test_config()).await).await;
                }
            )*
        }
    };
}

fn seq(n: &Value) -> u64 {
    n["params"]["sequence"].as_u64().expect("sequence")
}

fn subjects(ns: &[Value]) -> Vec<String> {
    ns.iter()
        .map(|n| {
            n["params"]["payload"]["packet"]["subject"]
                .as_str()
                .unwrap_or("")
                .to_owned()
        })
        .collect()
}

async fn append(gw: &TestGateway, record: orchestrata_schemas::events::EventRecord) -> u64 {
    gw.log.append(&record).await.expect("append")
}

// REQ-014-001 REQ-014-002 REQ-014-010 REQ-014-131 REQ-014-174
async fn live_cxp_traffic_carries_log_sequence_epoch_and_payload(gw: TestGateway) {
    let before = append(&gw, packet_sent("U:Ox", "U:Vz", "before", "t-0")).await;
    let mut c = gw.client(TOKEN).await;
    let sub = c.ok("cxp.subscribe", json!({})).await;
    assert_eq!(sub["topic"], "cxp.traffic");
    assert!(sub["subscription_id"]
        .as_str()
        .unwrap_or("")
        .starts_with("sub-"));
    assert_eq!(sub["filters"], json!({}));
    let epoch = gw.log.epoch(Stream::CxpTraffic).await.expect("epoch");
    assert_eq!(sub["epoch"], epoch);
    let s1 = append(&gw, packet_sent("U:Ox", "U:Vz", "first", "t-1")).await;
    let s2 = append(&gw, packet_sent("U:Vz", "U:Ox", "second", "t-1")).await;
    assert_eq!(s1, before + 1);
    let ns = c.notifications(2).await;
    assert_eq!(ns[0]["jsonrpc"], "2.0");
    assert!(ns[0].get("id").is_none());
    assert_eq!(ns[0]["method"], "cxp.traffic");
    let p = &ns[0]["params"];
    assert_eq!(p["topic"], "cxp.traffic");
    assert_eq!(p["sequence"], s1);
    assert_eq!(p["epoch"], epoch);
    assert_eq!(p["source"], "kernel.postman");
    assert_eq!(p["event_type"], "packet_sent");
    assert!(chrono::DateTime::parse_from_rfc3339(p["timestamp"].as_str().unwrap_or("")).is_ok());
    assert_eq!(p["payload"]["packet"]["from_agent"], "U:Ox");
    assert_eq!(seq(&ns[1]), s2);
    assert_eq!(
        subjects(&ns),
        ["first", "second"],
        "the earlier event is not pushed"
    );
}

// REQ-014-003 REQ-014-004 REQ-014-005 REQ-014-006 REQ-014-007
async fn cxp_filters_match_volk_either_side_thread_subject_glob_and_status_with_and(
    gw: TestGateway,
) {
    let mut by_volk = gw.client(TOKEN).await;
    let mut by_thread = gw.client(TOKEN).await;
    let mut by_glob_and_volk = gw.client(TOKEN).await;
    let mut by_status = gw.client(TOKEN).await;
    by_volk
        .ok("cxp.subscribe", json!({"filters": {"volk_id": "U:Qa"}}))
        .await;
    by_thread
        .ok("cxp.subscribe", json!({"filters": {"thread_id": "t-9"}}))
        .await;
    by_glob_and_volk
        .ok(
            "cxp.subscribe",
            json!({"filters": {"subject": "review_*", "volk_id": "U:Ox"}}),
        )
        .await;
    by_status
        .ok(
            "cxp.subscribe",
            json!({"filters": {"delivery_status": "queued", "thread_id": "t-8"}}),
        )
        .await;
    append(&gw, packet_sent("U:Qa", "U:Ox", "review_code", "t-8")).await; // volk(from), glob+volk(to), status
    append(&gw, packet_sent("U:Ox", "U:Vz", "deploy", "t-9")).await; // thread
    append(&gw, packet_sent("U:Vz", "U:Qa", "review_docs", "t-7")).await; // volk(to); glob but not U:Ox
    append(&gw, packet_sent("U:Ox", "U:Vz", "review_plan", "t-9")).await; // thread, glob+volk
    append(&gw, packet_sent("U:Vz", "U:Xy", "marker", "t-0")).await; // nobody
    assert_eq!(
        subjects(&by_volk.notifications(2).await),
        ["review_code", "review_docs"]
    );
    assert_eq!(
        subjects(&by_thread.notifications(2).await),
        ["deploy", "review_plan"]
    );
    assert_eq!(
        subjects(&by_glob_and_volk.notifications(2).await),
        ["review_code", "review_plan"]
    );
    assert_eq!(subjects(&by_status.notifications(1).await), ["review_code"]);
    for c in [
        &mut by_volk,
        &mut by_thread,
        &mut by_glob_and_volk,
        &mut by_status,
    ] {
        c.assert_silent(Duration::from_millis(300)).await;
    }
}

// REQ-014-008 REQ-014-196 REQ-014-147
async fn unsubscribe_stops_delivery_and_unknown_ids_are_refused(gw: TestGateway) {
    let mut c = gw.client(TOKEN).await;
    let sub = c.ok("cxp.subscribe", json!({})).await;
    let id = sub["subscription_id"].clone();
    append(&gw, packet_sent("U:Ox", "U:Vz", "one", "t")).await;
    assert_eq!(subjects(&c.notifications(1).await), ["one"]);
    let r = c
        .ok("cxp.unsubscribe", json!({"subscription_id": id}))
        .await;
    assert_eq!(r["unsubscribed"], true);
    append(&gw, packet_sent("U:Ox", "U:Vz", "two", "t")).await;
    c.assert_silent(Duration::from_millis(400)).await;
    let e = c
        .err("cxp.unsubscribe", json!({"subscription_id": id}))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["reason"], "unknown_subscription");
    let (_, metrics) = gw.http_get("/metrics").await;
    assert!(
        metrics.contains("orchestrata_gateway_subscription_count{topic=\"cxp.traffic\"} 0"),
        "{metrics}"
    );
}

// REQ-014-009
async fn payloads_over_max_payload_size_are_truncated(gw: TestGateway) {
    let mut small = gw.client(TOKEN).await;
    let mut full = gw.client(TOKEN).await;
    small
        .ok("cxp.subscribe", json!({"max_payload_size": 64}))
        .await;
    full.ok("cxp.subscribe", json!({})).await;
    append(&gw, packet_sent("U:Ox", "U:Vz", "big", "t")).await;
    let cut = small.notification().await;
    assert_eq!(cut["params"]["truncated"], true);
    assert_eq!(cut["params"]["payload"]["truncated"], true);
    let size = cut["params"]["payload"]["size_bytes"]
        .as_u64()
        .expect("size");
    assert!(size > 64);
    assert!(
        cut["params"]["payload"]["preview"]
            .as_str()
            .unwrap_or("")
            .len()
            <= 64
    );
    let whole = full.notification().await;
    assert!(whole["params"].get("truncated").is_none());
    assert_eq!(whole["params"]["payload"]["packet"]["subject"], "big");
}

// REQ-014-193 REQ-014-192
async fn every_subscriber_gets_the_same_bytes(gw: TestGateway) {
    let mut clients = Vec::new();
    for _ in 0..5 {
        let mut c = gw.client(TOKEN).await;
        c.ok("cxp.subscribe", json!({})).await;
        clients.push(c);
    }
    append(&gw, packet_sent("U:Ox", "U:Vz", "shared", "t")).await;
    let mut frames = Vec::new();
    for c in &mut clients {
        frames.push(c.notification().await.to_string());
    }
    assert!(frames.windows(2).all(|w| w[0] == w[1]), "identical frames");
}

// REQ-014-197 REQ-014-194 REQ-014-195
async fn duplicate_subscriptions_reuse_the_id_and_the_limit_is_enforced(gw: TestGateway) {
    let mut c = gw.client(TOKEN).await;
    let a = c
        .ok(
            "gateway.subscribe",
            json!({"topic": "cxp.traffic", "filters": {"volk_id": "U:Ox", "thread_id": "t"}}),
        )
        .await;
    let b = c
        .ok(
            "cxp.subscribe",
            json!({"filters": {"thread_id": "t", "volk_id": "U:Ox"}}),
        )
        .await;
    assert_eq!(a["subscription_id"], b["subscription_id"]);
    assert_eq!(b["duplicate"], true);
    let mut n = 1;
    let mut error = None;
    for i in 0..60 {
        let r = c
            .call(
                "cxp.subscribe",
                json!({"filters": {"thread_id": format!("t-{i}")}}),
            )
            .await;
        if let Some(e) = r.get("error") {
            error = Some(e.clone());
            break;
        }
        n += 1;
    }
    assert_eq!(n, 50, "50 subscriptions per client");
    let e = error.expect("the 51st is refused");
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["reason"], "subscription_limit");
    assert_eq!(e["data"]["current_count"], 50);
}

// REQ-014-021 REQ-014-022 REQ-014-023 REQ-014-025 REQ-014-031 REQ-014-056
async fn every_topic_can_be_subscribed_and_filtered(gw: TestGateway) {
    let mut c = gw.client(TOKEN).await;
    for topic in [
        "cxp.traffic",
        "volk.lifecycle",
        "governance.decisions",
        "session.events",
        "workflow.events",
        "kernel.events",
        "gateway.presence",
        "provider.events",
    ] {
        let r = c.ok("gateway.subscribe", json!({"topic": topic})).await;
        assert_eq!(r["topic"], topic);
    }
    let mut ox = gw.client(TOKEN).await;
    ox.ok(
        "gateway.subscribe",
        json!({"topic": "volk.lifecycle", "filters": {"volk_alias": "U:Ox"}}),
    )
    .await;
    append(&gw, volk_registered("U:Vz")).await;
    let s = append(&gw, volk_registered("U:Ox")).await;
    let n = ox.notification().await;
    assert_eq!(n["method"], "volk.lifecycle");
    assert_eq!(n["params"]["sequence"], s);
    assert_eq!(n["params"]["event_type"], "registered");
    assert_eq!(n["params"]["payload"]["alias"], "U:Ox");
    // The subscription itself produced an allow decision on governance.decisions,
    // which the first client sees live.
    let mut seen = Vec::new();
    while !(seen.iter().any(|m| m == "governance.decisions")
        && seen.iter().filter(|m| *m == "volk.lifecycle").count() == 2)
    {
        assert!(seen.len() < 50, "{seen:?}");
        let n = c.notification().await;
        seen.push(n["method"].as_str().unwrap_or("").to_owned());
    }
    assert!(
        seen.contains(&"governance.decisions".to_owned()),
        "{seen:?}"
    );
    assert!(seen.contains(&"volk.lifecycle".to_owned()), "{seen:?}");
}

// REQ-014-114 REQ-014-115 REQ-014-119
async fn presence_events_announce_connects_and_disconnects(gw: TestGateway) {
    let mut watcher = gw.client(READ_ONLY_TOKEN).await;
    watcher
        .ok("gateway.subscribe", json!({"topic": "gateway.presence"}))
        .await;
    let other = gw.client(TOKEN).await;
    let n = watcher.notification().await;
    assert_eq!(n["params"]["event_type"], "connected");
    assert_eq!(n["params"]["payload"]["auth_scope"], "read_write");
    assert_eq!(n["params"]["payload"]["client_name"], "gateway-tests");
    let id = n["params"]["payload"]["client_id"].clone();
    other.close().await;
    let n = watcher.notification().await;
    assert_eq!(n["params"]["event_type"], "disconnected");
    assert_eq!(n["params"]["payload"]["client_id"], id);
    assert_eq!(n["params"]["payload"]["reason"], "clean_close");
}

// REQ-014-127 REQ-014-128 REQ-014-129 REQ-014-130
async fn replay_by_count_returns_the_last_matching_events_oldest_first(gw: TestGateway) {
    for i in 0..10 {
        let (from, to) = if i % 2 == 0 {
            ("U:Ox", "U:Vz")
        } else {
            ("U:Qa", "U:Ox")
        };
        append(&gw, packet_sent(from, to, &format!("m{i}"), "t")).await;
    }
    let mut c = gw.client(READ_ONLY_TOKEN).await;
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "count": 3, "filters": {"volk_id": "U:Vz"}}),
        )
        .await;
    let events = r["events"].as_array().expect("events");
    let subj: Vec<&str> = events
        .iter()
        .map(|e| e["payload"]["packet"]["subject"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(subj, ["m4", "m6", "m8"]);
    assert_eq!(r["total_matched"], 3);
    let seqs: Vec<u64> = events
        .iter()
        .filter_map(|e| e["sequence"].as_u64())
        .collect();
    assert!(
        seqs.windows(2).all(|w| w[0] < w[1]),
        "chronological: {seqs:?}"
    );
    assert_eq!(
        r["buffer_range"],
        json!({"oldest_sequence": 0, "newest_sequence": 9})
    );
    assert_eq!(events[0]["topic"], "cxp.traffic");
    assert_eq!(events[0]["source"], "kernel.postman");
    let all = c
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "count": 100}),
        )
        .await;
    assert_eq!(all["events"].as_array().map(Vec::len), Some(10));
}

// REQ-014-126 REQ-014-129
async fn replay_by_time_range_selects_by_event_timestamp(gw: TestGateway) {
    let t0 = chrono::Utc::now() - chrono::Duration::hours(3);
    for h in 0..3 {
        let mut r = packet_sent("U:Ox", "U:Vz", &format!("h{h}"), "t");
        r.timestamp = t0 + chrono::Duration::hours(h);
        append(&gw, r).await;
    }
    let mut c = gw.client(TOKEN).await;
    let since = (t0 + chrono::Duration::minutes(30)).to_rfc3339();
    let until = (t0 + chrono::Duration::minutes(150)).to_rfc3339();
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "since": since, "until": until}),
        )
        .await;
    let subj: Vec<&str> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| e["payload"]["packet"]["subject"].as_str().unwrap_or(""))
        .collect();
    assert_eq!(subj, ["h1", "h2"]);
    assert_eq!(r["total_matched"], 2);
    let e = c
        .err(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "since": until, "until": since}),
        )
        .await;
    assert_eq!(e["data"]["reason"], "invalid_range");
}

// REQ-014-132 REQ-014-133 REQ-014-134
async fn replay_by_sequence_range_fills_a_gap_exactly(gw: TestGateway) {
    for i in 0..8 {
        append(&gw, packet_sent("U:Ox", "U:Vz", &format!("s{i}"), "t")).await;
    }
    let mut c = gw.client(TOKEN).await;
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 3, "sequence_to": 5}),
        )
        .await;
    let seqs: Vec<u64> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["sequence"].as_u64())
        .collect();
    assert_eq!(seqs, [3, 4, 5]);
    assert_eq!(r["total_matched"], 3);
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 6, "count": 1}),
        )
        .await;
    let seqs: Vec<u64> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| e["sequence"].as_u64())
        .collect();
    assert_eq!(seqs, [6]);
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 100}),
        )
        .await;
    assert_eq!(r["events"], json!([]));
    let e = c
        .err(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 5, "sequence_to": 3}),
        )
        .await;
    assert_eq!(e["data"]["reason"], "invalid_range");
}

// REQ-014-131 REQ-014-132 REQ-014-134
async fn resume_replays_from_the_next_sequence_then_goes_live_without_gap_or_duplicate(
    gw: TestGateway,
) {
    for i in 0..5 {
        append(&gw, packet_sent("U:Ox", "U:Vz", &format!("old{i}"), "t")).await;
    }
    let epoch = gw.log.epoch(Stream::CxpTraffic).await.expect("epoch");
    // Keep appending while the client resumes, to race the seam.
    let log = gw.log.clone();
    let writer = tokio::spawn(async move {
        for i in 0..20 {
            log.append(&packet_sent("U:Ox", "U:Vz", &format!("new{i}"), "t"))
                .await
                .expect("append");
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    let mut c = gw.client(TOKEN).await;
    let r = c
        .ok(
            "cxp.subscribe",
            json!({"since": {"epoch": epoch, "sequence": 1}}),
        )
        .await;
    assert_eq!(r["resumed_from_sequence"], 2);
    writer.await.expect("writer");
    let ns = c.notifications(23).await; // 2..=4 old, 20 new
    let seqs: Vec<u64> = ns.iter().map(seq).collect();
    assert_eq!(
        seqs,
        (2..25).collect::<Vec<u64>>(),
        "gapless, no duplicates"
    );
    c.assert_silent(Duration::from_millis(300)).await;
}

// REQ-014-132 REQ-014-134
async fn resume_after_a_dropped_connection_continues_where_the_client_left(gw: TestGateway) {
    let mut c = gw.client(TOKEN).await;
    c.ok("cxp.subscribe", json!({})).await;
    for i in 0..3 {
        append(&gw, packet_sent("U:Ox", "U:Vz", &format!("a{i}"), "t")).await;
    }
    let seen = c.notifications(3).await;
    let last = seen.last().expect("last");
    let (epoch, last_seq) = (last["params"]["epoch"].clone(), seq(last));
    drop(c); // the connection drops without a close handshake
    for i in 0..4 {
        append(&gw, packet_sent("U:Ox", "U:Vz", &format!("b{i}"), "t")).await;
    }
    let mut again = gw.client(TOKEN).await;
    again
        .ok(
            "cxp.subscribe",
            json!({"since": {"epoch": epoch, "sequence": last_seq}}),
        )
        .await;
    append(&gw, packet_sent("U:Ox", "U:Vz", "c0", "t")).await;
    let ns = again.notifications(5).await;
    assert_eq!(subjects(&ns), ["b0", "b1", "b2", "b3", "c0"]);
    let seqs: Vec<u64> = ns.iter().map(seq).collect();
    assert_eq!(seqs, (last_seq + 1..last_seq + 6).collect::<Vec<_>>());
}

// REQ-014-132
async fn resume_with_another_epoch_says_the_position_is_void(gw: TestGateway) {
    append(&gw, packet_sent("U:Ox", "U:Vz", "x", "t")).await;
    let mut c = gw.client(TOKEN).await;
    let e = c
        .err(
            "cxp.subscribe",
            json!({"since": {"epoch": "some-other-epoch", "sequence": 0}}),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["reason"], "epoch_mismatch");
    let epoch = gw.log.epoch(Stream::CxpTraffic).await.expect("epoch");
    assert_eq!(e["data"]["epoch"], epoch);
}

on_both_backends! {
    fn live_cxp_traffic_carries_log_sequence_epoch_and_payload;
    fn cxp_filters_match_volk_either_side_thread_subject_glob_and_status_with_and;
    fn unsubscribe_stops_delivery_and_unknown_ids_are_refused;
    fn payloads_over_max_payload_size_are_truncated;
    fn every_subscriber_gets_the_same_bytes;
    fn duplicate_subscriptions_reuse_the_id_and_the_limit_is_enforced;
    fn every_topic_can_be_subscribed_and_filtered;
    fn presence_events_announce_connects_and_disconnects;
    fn replay_by_count_returns_the_last_matching_events_oldest_first;
    fn replay_by_time_range_selects_by_event_timestamp;
    fn replay_by_sequence_range_fills_a_gap_exactly;
    fn resume_replays_from_the_next_sequence_then_goes_live_without_gap_or_duplicate;
    fn resume_after_a_dropped_connection_continues_where_the_client_left;
    fn resume_with_another_epoch_says_the_position_is_void;
}

// Slow clients (bounded buffer, drop-oldest, gap notices): tests/gateway_limits.rs.
