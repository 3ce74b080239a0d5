//! A Volk's health from the outside (issue 16, item 6; REQ-014-022 `health_changed`):
//! a client acting as `U:Vz` stops answering heartbeats, so `U:Vz` becomes `unknown`;
//! it connects again and `U:Vz` is `healthy`. A real `orchestrata up` with fast
//! heartbeats, real WebSocket clients; the operator watches through `volk.get` and
//! `gateway.replay`.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "volk-health-test-token";
const VZ_TOKEN: &str = "vz-bot-token";

/// `volk.get U:Vz`'s health once it is `want` (15 s at most).
async fn health_becomes(operator: &mut Ws, want: &str) -> Value {
    let mut last = Value::Null;
    for _ in 0..150 {
        last = operator.ok("volk.get", json!({ "alias": "U:Vz" })).await;
        if last["health"] == want {
            return last;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("U:Vz never became {want}: {last}");
}

// REQ-014-022 ISSUE-16: missed heartbeats of the only connection acting as U:Vz make
// it `unknown` (details name the misses); its next connection makes it `healthy`; each
// is a `health_changed` event on volk.lifecycle.
#[tokio::test]
async fn a_volk_is_unknown_after_missed_heartbeats_and_healthy_when_it_connects() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let grant =
        format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]");
    let _up = Up::start(
        data.path(),
        port,
        TOKEN,
        &[],
        &[
            ("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str()),
            ("ORCHESTRATA_GATEWAY__HEARTBEAT_INTERVAL_MS", "300"),
            ("ORCHESTRATA_GATEWAY__HEARTBEAT_TIMEOUT_MS", "1000"),
            ("ORCHESTRATA_GATEWAY__HEARTBEAT_MAX_MISSES", "2"),
        ],
    );
    let url = format!("ws://127.0.0.1:{port}/");
    let mut operator = Ws::connect(&url).await;
    operator.auth(TOKEN).await;
    let mut vz = Ws::connect(&url).await;
    let auth = vz.auth(VZ_TOKEN).await;
    assert_eq!(auth["default_volk"], "U:Vz", "{auth}");
    health_becomes(&mut operator, "healthy").await;

    // The bot stops reading: its pongs never go out.
    let unknown = health_becomes(&mut operator, "unknown").await;
    let history = unknown["health_history"].to_string();
    assert!(history.contains("missed"), "{unknown}");
    drop(vz);

    let mut again = Ws::connect(&url).await;
    again.auth(VZ_TOKEN).await;
    health_becomes(&mut operator, "healthy").await;

    let lifecycle = operator
        .ok(
            "gateway.replay",
            json!({ "topic": "volk.lifecycle", "count": 1000 }),
        )
        .await;
    let changes: Vec<(String, String)> = lifecycle["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event_type"] == "health_changed" && e["payload"]["alias"] == "U:Vz")
        .map(|e| {
            (
                e["payload"]["old"].as_str().unwrap_or_default().to_owned(),
                e["payload"]["new"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(
        changes,
        [pair("healthy", "unknown"), pair("unknown", "healthy")],
        "{lifecycle}"
    );
}
