//! The decision index keeps only its newest decisions whole in memory (issue 18, bounded
//! memory), and its store keeps no bodies at all (issue 15: they are in the log): a
//! default `orchestrata up` (a separate process: sled log, governance, projections)
//! restarted with `projections.hot_entries` = 4 holds no body after the restart and
//! answers `governance.query` for every older decision by reading its body from the
//! log, exactly as it answered it from memory, searches bounded by time included (the
//! index keeps the times of old decisions in the store, a block of 256 at a time);
//! `/metrics` shows how many bodies it holds.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::checked_ok;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "decision-bodies-test-token";
const HOT: u64 = 4;
/// Sends before the restart: two decisions each, enough for two blocks of times.
const SENDS: usize = 300;

/// Gauge `name` on `/metrics` of the server at `port`.
async fn gauge(port: u16, name: &str) -> u64 {
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    let (status, body) = support::ws::http_get(addr, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    body.lines()
        .find_map(|l| l.strip_prefix(name)?.strip_prefix(' '))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {name} in {body}"))
}

/// Waits until the decision index holds `indexed` decisions (at least) with exactly
/// `in_memory` bodies (commits let the others go; `None`: all of them).
async fn settle(port: u16, indexed: u64, in_memory: Option<u64>) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let n = gauge(port, "orchestrata_projection_decisions").await;
        let m = gauge(port, "orchestrata_projection_decision_bodies_in_memory").await;
        if n >= indexed && m == in_memory.unwrap_or(n) {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "decision index at {n} decisions, {m} in memory; wanted {indexed}+, {in_memory:?}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn client(port: u16) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    ws
}

/// Every decision, newest first, as `governance.query` answers them page by page
/// (`limit` 7: pages straddle the boundary between bodies in memory and in the store).
async fn every_decision(ws: &mut Ws) -> Vec<Value> {
    let mut all = Vec::new();
    loop {
        let page = checked_ok(
            ws,
            "governance.query",
            json!({"offset": all.len(), "limit": 7}),
        )
        .await;
        let decisions = page["decisions"].as_array().expect("decisions").clone();
        all.extend(decisions);
        if page["has_more"] != json!(true) {
            assert_eq!(page["total"].as_u64(), Some(all.len() as u64), "{page}");
            return all;
        }
    }
}

// REQ-014-032 REQ-014-036 REQ-014-037 ISSUE-18 ISSUE-15: a decision whose body left
// memory is answered by governance.query with its body read from the log, field for
// field as before, and a time range over decisions whose times left memory matches the
// same decisions
#[tokio::test]
async fn old_decisions_are_answered_from_the_log_as_they_were_from_memory() {
    let data = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let mut up = Up::start(data.path(), port, TOKEN, &[], &[]);
    let mut ws = client(port).await;
    for _ in 0..SENDS {
        checked_ok(&mut ws, "cxp.send", support::spec_send()).await;
    }
    // Each send records the gateway's scope check and the policy's decision.
    settle(port, 2 * SENDS as u64, None).await;
    let from_memory = every_decision(&mut ws).await;
    assert!(from_memory.len() >= 2 * SENDS, "{}", from_memory.len());
    assert!(
        from_memory.iter().all(|d| d["decision_id"].is_string()),
        "{from_memory:?}"
    );
    drop(ws);
    assert!(up.stop(), "up stops cleanly");

    let hot = HOT.to_string();
    let env = [("ORCHESTRATA_PROJECTIONS__HOT_ENTRIES", hot.as_str())];
    let up = Up::start(data.path(), port, TOKEN, &[], &env);
    let mut ws = client(port).await;
    // Restored from summaries: every body stays in the log.
    settle(port, from_memory.len() as u64, Some(0)).await;
    let after_restart = every_decision(&mut ws).await;
    for old in &from_memory {
        let id = &old["decision_id"];
        let now = after_restart
            .iter()
            .find(|d| d["decision_id"] == *id)
            .unwrap_or_else(|| panic!("decision {id} is missing after the restart"));
        assert_eq!(now, old, "decision {id} read back from the log");
    }
    // Filters read what every decision keeps in memory; the bodies come from the log.
    let policy = checked_ok(
        &mut ws,
        "governance.query",
        json!({"action": "cxp.send", "volk_id": "U:GW", "limit": 1000}),
    )
    .await;
    let expected: Vec<&Value> = from_memory
        .iter()
        .filter(|d| d["action"] == "cxp.send" && d["volk_id"] == "U:GW")
        .collect();
    assert_eq!(policy["total"].as_u64(), Some(expected.len() as u64));
    assert_eq!(
        policy["decisions"]
            .as_array()
            .map(|a| a.iter().collect::<Vec<_>>()),
        Some(expected)
    );

    // Bounds that fall inside old blocks of times, which only the store holds now.
    let at = |d: &Value| -> chrono::DateTime<chrono::Utc> {
        d["timestamp"]
            .as_str()
            .and_then(|t| t.parse().ok())
            .unwrap_or_else(|| panic!("timestamp of {d}"))
    };
    let (from, until) = (
        at(&from_memory[from_memory.len() * 3 / 4]),
        at(&from_memory[from_memory.len() / 3]),
    );
    let bounded = checked_ok(
        &mut ws,
        "governance.query",
        json!({"date_from": from, "date_to": until, "limit": 1000}),
    )
    .await;
    let expected: Vec<&Value> = from_memory
        .iter()
        .filter(|d| at(d) >= from && at(d) < until)
        .collect();
    assert!(
        expected.len() > 100,
        "{} decisions in bounds",
        expected.len()
    );
    assert_eq!(bounded["total"].as_u64(), Some(expected.len() as u64));
    assert_eq!(
        bounded["decisions"]
            .as_array()
            .map(|a| a.iter().collect::<Vec<_>>()),
        Some(expected)
    );

    // New decisions are kept, then let go in their turn as commits store them.
    for _ in 0..5 {
        checked_ok(&mut ws, "cxp.send", support::spec_send()).await;
    }
    settle(port, after_restart.len() as u64 + 10, Some(HOT)).await;
    let later = every_decision(&mut ws).await;
    assert_eq!(later.len(), after_restart.len() + 10);
    assert_eq!(&later[10..], &after_restart[..]);
    drop(up);
}
