//! The gateway's JSON-RPC surface over real WebSocket clients on loopback: framing,
//! every error code, authentication, scopes, limits, HTTP endpoints, shutdown.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, ADMIN_TOKEN, READ_ONLY_TOKEN, TOKEN};

async fn gateway() -> TestGateway {
    TestGateway::sled(ws::test_config()).await
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

// REQ-014-087 REQ-014-088 REQ-014-181
#[tokio::test]
async fn any_method_before_authentication_is_unauthorized_with_the_contract_hint() {
    let gw = gateway().await;
    let mut c = gw.connect().await;
    for method in ["gateway.ping", "cxp.subscribe", "no.such_method"] {
        let e = c.err(method, json!({})).await;
        assert_eq!(e["code"], -32001, "{method}: {e}");
        assert_eq!(e["message"], "Unauthorized");
        assert_eq!(reason(&e), "authentication_required");
        assert_eq!(
            e["data"]["hint"],
            "Call auth.authenticate before any other method."
        );
    }
}

// REQ-014-089
#[tokio::test]
async fn unauthenticated_connections_are_closed_after_the_grace_period() {
    let mut config = ws::test_config();
    config.auth_grace = Duration::from_millis(300);
    let gw = TestGateway::sled(config).await;
    let mut idle = gw.connect().await;
    let mut authed = gw.client(TOKEN).await;
    let closed = idle.closed().await;
    assert_eq!(closed.code, 1008);
    assert_eq!(closed.reason, "authentication_timeout");
    // An authenticated client is not affected.
    tokio::time::sleep(Duration::from_millis(400)).await;
    assert!(authed.ok("gateway.ping", json!({})).await["server_timestamp"].is_string());
}

// REQ-014-086 REQ-014-091 REQ-014-095 REQ-014-148
#[tokio::test]
async fn static_token_authenticates_with_read_write_scope_by_default() {
    let gw = gateway().await;
    let mut c = gw.connect().await;
    let r = c.auth(TOKEN).await;
    assert_eq!(r["authenticated"], true);
    assert_eq!(r["scope"], "read_write");
    assert!(r["client_id"].as_str().unwrap_or("").starts_with("client-"));
    assert!(r["expires_at"].is_null());
    let caps: Vec<&str> = r["capabilities"]
        .as_array()
        .expect("capabilities")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(
        caps.contains(&"cxp") && caps.contains(&"gateway"),
        "{caps:?}"
    );
    let (_, metrics) = gw.http_get("/metrics").await;
    assert!(
        metrics.contains("orchestrata_gateway_auth_success_total 1"),
        "{metrics}"
    );
}

// REQ-014-092 REQ-014-093 REQ-014-149
#[tokio::test]
async fn wrong_empty_and_missing_tokens_are_rejected_with_a_reason() {
    let gw = gateway().await;
    let mut c = gw.connect().await;
    let cases = [
        (
            json!({"strategy": "static_token", "token": "nope"}),
            "invalid_token",
        ),
        (
            json!({"strategy": "static_token", "token": format!("{TOKEN}x")}),
            "invalid_token",
        ),
        (
            json!({"strategy": "static_token", "token": ""}),
            "empty_token",
        ),
        (json!({"strategy": "static_token"}), "missing_token"),
        (
            json!({"strategy": "hmac", "client_id": "x"}),
            "unsupported_strategy",
        ),
    ];
    for (params, expected) in cases {
        let e = c.err("auth.authenticate", params.clone()).await;
        assert_eq!(e["code"], -32001, "{params}");
        assert_eq!(reason(&e), expected, "{params}: {e}");
    }
    // Still unauthenticated.
    let e = c.err("gateway.ping", json!({})).await;
    assert_eq!(reason(&e), "authentication_required");
    let (_, metrics) = gw.http_get("/metrics").await;
    assert!(
        metrics.contains("orchestrata_gateway_auth_failure_total 5"),
        "{metrics}"
    );
}

// REQ-014-171 REQ-014-172 REQ-014-173 REQ-014-200
#[tokio::test]
async fn a_request_gets_a_response_with_its_id_and_ping_returns_the_server_time() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.send_text(r#"{"jsonrpc":"2.0","id":"abc","method":"gateway.ping"}"#)
        .await;
    let r = c.response(json!("abc")).await;
    assert_eq!(r["jsonrpc"], "2.0");
    let ts = r["result"]["server_timestamp"].as_str().expect("timestamp");
    let parsed = chrono::DateTime::parse_from_rfc3339(ts).expect("RFC 3339");
    let skew = (chrono::Utc::now() - parsed.with_timezone(&chrono::Utc))
        .num_seconds()
        .abs();
    assert!(skew < 5, "server time is now");
    assert!(r.get("error").is_none());
}

// REQ-014-174 REQ-014-171
#[tokio::test]
async fn notifications_without_id_get_no_response() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.send_text(r#"{"jsonrpc":"2.0","method":"gateway.ping"}"#)
        .await;
    c.send_text(r#"{"jsonrpc":"2.0","method":"gateway.ping","id":null}"#)
        .await;
    c.assert_silent(Duration::from_millis(300)).await;
}

// REQ-014-176
#[tokio::test]
async fn invalid_json_is_a_parse_error() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.send_text("{not json").await;
    let r = c.next_json().await.expect("response");
    assert_eq!(r["id"], Value::Null);
    assert_eq!(r["error"]["code"], -32700);
    assert_eq!(r["error"]["message"], "Parse error");
    assert_eq!(reason(&r["error"]), "invalid_json");
}

// REQ-014-177
#[tokio::test]
async fn malformed_requests_are_invalid_requests_naming_the_field() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    let cases = [
        (
            r#"{"jsonrpc":"1.0","id":1,"method":"gateway.ping"}"#,
            "jsonrpc",
        ),
        (r#"{"jsonrpc":"2.0","id":2}"#, "method"),
        (r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#, "method"),
        (
            r#"{"jsonrpc":"2.0","id":4,"method":"gateway.ping","params":5}"#,
            "params",
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"gateway.ping","extra":true}"#,
            "extra",
        ),
        (r#""just a string""#, "request"),
        (r#"[]"#, ""),
    ];
    for (frame, field) in cases {
        c.send_text(frame).await;
        let r = c.next_json().await.expect("response");
        assert_eq!(r["error"]["code"], -32600, "{frame}: {r}");
        if !field.is_empty() {
            assert_eq!(r["error"]["data"]["field"], field, "{frame}: {r}");
        }
    }
}

// REQ-014-178
#[tokio::test]
async fn unknown_methods_are_method_not_found() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    let e = c.err("cxp.teleport", json!({})).await;
    assert_eq!(e["code"], -32601);
    assert_eq!(e["message"], "Method not found");
    assert_eq!(reason(&e), "method_not_found");
}

// REQ-014-179
#[tokio::test]
async fn params_failing_the_schema_are_invalid_params_naming_the_field() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    let e = c
        .err(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "count": 0}),
        )
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "params.count", "{e}");
    let e = c
        .err("cxp.subscribe", json!({"filters": {"volk_id": "Ox"}}))
        .await;
    assert_eq!(e["code"], -32602);
    assert_eq!(e["data"]["field"], "params.filters.volk_id", "{e}");
    let e = c.err("gateway.subscribe", json!({"topic": "nope"})).await;
    assert_eq!(e["code"], -32602, "{e}");
    let e = c
        .err(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "since": "yesterday"}),
        )
        .await;
    assert_eq!(e["code"], -32602, "{e}");
}

// REQ-014-175
#[tokio::test]
async fn batches_answer_each_request_in_one_frame_and_skip_notifications() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.send_text(
        &json!([
            {"jsonrpc": "2.0", "id": 1, "method": "gateway.ping"},
            {"jsonrpc": "2.0", "method": "gateway.ping"},
            {"jsonrpc": "2.0", "id": 2, "method": "cxp.nothing"},
            {"jsonrpc": "2.0", "id": 3, "method": "gateway.info"},
            5
        ])
        .to_string(),
    )
    .await;
    let r = c.next_json().await.expect("batch response");
    let items = r.as_array().expect("array");
    assert_eq!(items.len(), 4, "{r}");
    assert!(items[0]["result"]["server_timestamp"].is_string());
    assert_eq!(items[1]["error"]["code"], -32601);
    assert!(items[2]["result"]["version"].is_string());
    assert_eq!(items[3]["error"]["code"], -32600);
    // A batch of notifications gets no frame at all.
    c.send_text(&json!([{"jsonrpc": "2.0", "method": "gateway.ping"}]).to_string())
        .await;
    c.assert_silent(Duration::from_millis(300)).await;
}

// REQ-014-175 REQ-014-177
#[tokio::test]
async fn a_batch_over_fifty_is_rejected_whole_as_batch_too_large() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    let batch: Vec<Value> = (0..51)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "gateway.ping"}))
        .collect();
    c.send_text(&Value::Array(batch).to_string()).await;
    let r = c.next_json().await.expect("response");
    assert!(r.is_object(), "one error, not a batch answer: {r}");
    assert_eq!(r["error"]["code"], -32600);
    assert_eq!(reason(&r["error"]), "batch_too_large");
    let ok: Vec<Value> = (0..50)
        .map(|i| json!({"jsonrpc": "2.0", "id": i, "method": "gateway.ping"}))
        .collect();
    c.send_text(&Value::Array(ok).to_string()).await;
    let r = c.next_json().await.expect("response");
    assert_eq!(r.as_array().map(Vec::len), Some(50));
}

// REQ-014-182 REQ-014-186 REQ-014-187
#[tokio::test]
async fn clients_over_the_rate_limit_get_rate_limited_with_retry_after() {
    let mut config = ws::test_config();
    config.rate_limit_per_second = 5;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await; // auth is request 1
    let mut limited = None;
    for _ in 0..10 {
        let r = c.call("gateway.ping", json!({})).await;
        if r.get("error").is_some() {
            limited = Some(r["error"].clone());
            break;
        }
    }
    let e = limited.expect("the limit was hit");
    assert_eq!(e["code"], -32002);
    assert_eq!(e["message"], "Rate limited");
    assert_eq!(reason(&e), "rate_limited");
    let retry = e["data"]["retry_after_ms"]
        .as_u64()
        .expect("retry_after_ms");
    assert!(retry <= 1000);
    tokio::time::sleep(Duration::from_millis(retry + 50)).await;
    assert!(c.ok("gateway.ping", json!({})).await["server_timestamp"].is_string());
}

// REQ-014-183
#[tokio::test]
async fn replaying_a_range_larger_than_the_scan_budget_is_budget_exceeded() {
    let mut config = ws::test_config();
    config.max_replay_scan = 10;
    let gw = TestGateway::sled(config).await;
    for i in 0..20 {
        gw.log
            .append(&ws::volk_registered(&format!("U:V{}", (b'a' + i) as char)))
            .await
            .expect("append");
    }
    let mut c = gw.client(TOKEN).await;
    let e = c
        .err(
            "gateway.replay",
            json!({"topic": "volk.lifecycle", "sequence_from": 0, "sequence_to": 19}),
        )
        .await;
    assert_eq!(e["code"], -32003, "{e}");
    assert_eq!(e["message"], "Budget exceeded");
    assert_eq!(reason(&e), "replay_scan_budget");
    assert_eq!(e["data"]["max_scan"], 10);
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "volk.lifecycle", "sequence_from": 0, "sequence_to": 9}),
        )
        .await;
    assert_eq!(r["events"].as_array().map(Vec::len), Some(10));
}

// REQ-014-102 REQ-014-015
#[tokio::test]
async fn scopes_are_enforced_and_each_decision_is_recorded_on_the_log() {
    let gw = gateway().await;
    let mut viewer = gw.client(READ_ONLY_TOKEN).await;
    let e = viewer
        .err(
            "gateway.subscribe",
            json!({"topic": "governance.decisions"}),
        )
        .await;
    assert_eq!(e["code"], -32001);
    assert_eq!(reason(&e), "insufficient_scope");
    assert_eq!(e["data"]["required_scope"], "read_write");
    let e = viewer
        .err("gateway.subscribe", json!({"topic": "kernel.events"}))
        .await;
    assert_eq!(reason(&e), "insufficient_scope");
    // read_only topics are fine.
    viewer
        .ok("gateway.subscribe", json!({"topic": "volk.lifecycle"}))
        .await;
    let mut admin = gw.client(ADMIN_TOKEN).await;
    let r = admin
        .ok(
            "gateway.replay",
            json!({"topic": "governance.decisions", "filters": {"event_type": "decision_recorded"}}),
        )
        .await;
    let results: Vec<(&str, &str)> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .map(|e| {
            (
                e["payload"]["action"].as_str().unwrap_or(""),
                e["payload"]["result"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert!(
        results.contains(&("subscribe:governance.decisions", "deny")),
        "{results:?}"
    );
    assert!(
        results.contains(&("subscribe:kernel.events", "deny")),
        "{results:?}"
    );
    assert!(
        results.contains(&("subscribe:volk.lifecycle", "allow")),
        "{results:?}"
    );
}

// REQ-014-199 REQ-014-201 REQ-014-202 REQ-014-198 REQ-014-203
#[tokio::test]
async fn info_lists_version_uptime_methods_topics_and_subscription_counts() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.ok("cxp.subscribe", json!({})).await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let r = c.ok("gateway.info", Value::Null).await;
    assert_eq!(r["version"], env!("CARGO_PKG_VERSION"));
    assert!(r["uptime_seconds"].as_f64().expect("uptime") > 0.0);
    let caps: Vec<&str> = r["capabilities"]
        .as_array()
        .expect("caps")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    let table: Vec<&str> = orchestrata::gateway::methods::METHODS
        .iter()
        .map(|m| m.name)
        .collect();
    assert_eq!(caps, table, "capabilities are the method table");
    assert_eq!(r["topics"].as_array().map(Vec::len), Some(8));
    assert_eq!(r["subscription_counts"]["cxp.traffic"], 1);
    let first = r["uptime_seconds"].as_f64().unwrap_or(0.0);
    tokio::time::sleep(Duration::from_millis(100)).await;
    let again = c.ok("gateway.info", json!({})).await;
    assert!(again["uptime_seconds"].as_f64().unwrap_or(0.0) >= first + 0.09);
}

// REQ-014-111 REQ-014-112 REQ-014-113
#[tokio::test]
async fn clients_lists_connected_clients_with_scope_activity_and_subscriptions() {
    let gw = gateway().await;
    let mut a = gw.client(TOKEN).await;
    let mut b = gw.client(READ_ONLY_TOKEN).await;
    let sub = b.ok("cxp.subscribe", json!({})).await;
    let r = a.ok("gateway.clients", json!({})).await;
    assert_eq!(r["total"], 2);
    let clients = r["clients"].as_array().expect("clients");
    let viewer = clients
        .iter()
        .find(|c| c["auth_scope"] == "read_only")
        .expect("viewer listed");
    assert_eq!(viewer["subscriptions"], json!([sub["subscription_id"]]));
    assert_eq!(viewer["client_metadata"]["client_name"], "gateway-tests");
    assert!(viewer["connected_at"].is_string() && viewer["last_activity"].is_string());
}

// REQ-014-081 REQ-014-082 REQ-014-083 REQ-014-084 REQ-014-085
#[tokio::test]
async fn config_get_is_read_only_redacts_secrets_and_reads_paths() {
    let gw = gateway().await;
    let mut c = gw.client(READ_ONLY_TOKEN).await;
    let r = c.ok("config.get", json!({})).await;
    assert_eq!(r["config"]["gateway"]["static_token"], "<redacted>");
    assert!(!r.to_string().contains(TOKEN), "no secret anywhere: {r}");
    assert!(r["last_updated"].is_string());
    let r = c
        .ok("config.get", json!({"path": "gateway.max_clients"}))
        .await;
    assert_eq!(r["value"], 100);
    let e = c.err("config.get", json!({"path": "gateway.nope"})).await;
    assert_eq!(reason(&e), "unknown_config_path");
    let e = c
        .err("config.set", json!({"path": "gateway.max_clients"}))
        .await;
    assert_eq!(e["code"], -32601, "there is no way to change config");
}

// REQ-014-184 REQ-014-185
#[tokio::test]
async fn frames_over_the_size_limit_close_the_connection_with_1009() {
    let mut config = ws::test_config();
    config.max_message_size_bytes = 1024;
    let gw = TestGateway::sled(config).await;
    let mut c = gw.client(TOKEN).await;
    let big = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"gateway.ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(2000)
    );
    c.send_text(&big).await;
    let closed = c.closed().await;
    assert_eq!(closed.code, 1009);
    assert_eq!(closed.reason, "message_too_big");
    // Far over the limit: also 1009.
    let mut d = gw.client(TOKEN).await;
    let huge = "y".repeat(200_000);
    d.send_text(&huge).await;
    let closed = d.closed().await;
    assert_eq!(closed.code, 1009, "{closed:?}");
}

// REQ-014-168
#[tokio::test]
async fn binary_frames_close_the_connection_with_1003() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.send_binary(vec![1, 2, 3]).await;
    let closed = c.closed().await;
    assert_eq!(closed.code, 1003);
    assert_eq!(closed.reason, "binary_frames_not_supported");
}

// REQ-014-167
#[tokio::test]
async fn connections_beyond_max_clients_are_closed_with_1013() {
    let mut config = ws::test_config();
    config.max_clients = 2;
    let gw = TestGateway::sled(config).await;
    let mut a = gw.client(TOKEN).await;
    let _b = gw.client(TOKEN).await;
    let mut c = gw.connect().await;
    let closed = c.closed().await;
    assert_eq!(closed.code, 1013);
    assert_eq!(closed.reason, "max_clients");
    assert!(a.ok("gateway.ping", json!({})).await.is_object());
    a.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut d = gw.connect().await;
    d.auth(TOKEN).await;
}

// REQ-014-136 REQ-014-138 REQ-014-139 REQ-014-140
#[tokio::test]
async fn health_and_ready_report_components() {
    let gw = gateway().await;
    let (status, body) = gw.http_get("/health").await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["status"], "ok");
    let (status, body) = gw.http_get("/ready").await;
    assert_eq!(status, 200, "{body}");
    let v: Value = serde_json::from_str(&body).expect("json");
    assert_eq!(v["ready"], true);
    assert_eq!(v["components"]["log"]["healthy"], true);
    assert_eq!(v["components"]["topics"]["healthy"], true);
}

// REQ-014-141 REQ-014-142 REQ-014-143 REQ-014-144 REQ-014-145 REQ-014-146 REQ-014-147 REQ-014-148 REQ-014-149 REQ-014-150
#[tokio::test]
async fn metrics_expose_the_nine_contract_series_in_prometheus_text() {
    let gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    c.ok("gateway.ping", json!({})).await;
    c.ok("cxp.subscribe", json!({})).await;
    let (status, body) = gw.http_get("/metrics").await;
    assert_eq!(status, 200);
    for name in [
        "orchestrata_gateway_connected_clients 1",
        "orchestrata_gateway_total_connections 1",
        "orchestrata_gateway_messages_received_total",
        "orchestrata_gateway_messages_sent_total",
        "orchestrata_gateway_rpc_latency_seconds_bucket{method=\"gateway.ping\"",
        "orchestrata_gateway_subscription_count{topic=\"cxp.traffic\"} 1",
        "orchestrata_gateway_auth_success_total 1",
        "orchestrata_gateway_auth_failure_total 0",
        "# TYPE orchestrata_gateway_events_dropped_total counter",
        "orchestrata_gateway_log_lag_events{topic=\"cxp.traffic\"}",
    ] {
        assert!(body.contains(name), "missing {name} in\n{body}");
    }
}

// REQ-014-170 REQ-014-137 REQ-014-119
#[tokio::test]
async fn shutdown_closes_clients_with_1001_and_records_their_disconnect() {
    let mut gw = gateway().await;
    let mut c = gw.client(TOKEN).await;
    let addr = gw.addr();
    let log = gw.log.clone();
    let stop = tokio::spawn(async move {
        gw.stop().await;
        gw
    });
    let closed = c.closed().await;
    assert_eq!(closed.code, 1001);
    assert_eq!(closed.reason, "server_shutdown");
    let _gw = stop.await.expect("stopped");
    assert!(
        tokio::net::TcpStream::connect(addr).await.is_err(),
        "no longer listening"
    );
    let presence = log
        .read(
            orchestrata_schemas::events::Stream::GatewayPresence,
            0,
            None,
            100,
        )
        .await
        .expect("read presence");
    let kinds: Vec<&str> = presence.iter().map(|e| e.record.event_type()).collect();
    assert_eq!(kinds, ["connected", "disconnected"]);
    let json = serde_json::to_value(&presence[1]).expect("json");
    assert_eq!(json["payload"]["reason"], "server_shutdown");
}

// REQ-014-106 REQ-014-108 REQ-014-109
#[tokio::test]
async fn clients_that_stop_answering_pings_are_dropped() {
    let mut config = ws::test_config();
    config.heartbeat_interval = Duration::from_millis(100);
    config.heartbeat_max_misses = 2;
    let gw = TestGateway::sled(config).await;
    // tungstenite answers pings only while the socket is read: an idle reader misses them.
    let raw = gw.client(TOKEN).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    let mut raw: Ws = raw;
    let closed = raw.closed().await;
    assert_eq!(closed.code, 1001);
    assert_eq!(closed.reason, "heartbeat_timeout");
}
