//! API juniors from the outside (issue 16 item 2; spec 005 US-007, FR14, NFR10): a real
//! `orchestrata up` whose `agents.providers` point at OpenAI-compatible servers this
//! test runs on loopback. A client acting as U:Vz spawns API juniors with
//! `agents.spawn`; every call they make is a `provider.events` event, the quota is
//! counted by the kernel from those events (so it holds across a restart), an exhausted
//! provider falls back to the next, and when every provider is exhausted the senior's
//! escalation reaches the human queue.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::llm::{self, Mode};
use support::up::Up;
use support::ws::Ws;
use support::{checked_ok, replay};

const TOKEN: &str = "api-juniors-operator";
const VZ_TOKEN: &str = "api-juniors-vz";

fn grant() -> String {
    format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]")
}

async fn client(port: u16) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(VZ_TOKEN).await;
    ws
}

/// Spawns a junior of U:Vz on `driver` with `task`; returns its answer packet
/// (`junior_result`) once it is on `cxp.traffic`.
async fn ask(ws: &mut Ws, driver: &str, task: &str) -> Value {
    let spawned = checked_ok(
        ws,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": driver, "task": task }),
    )
    .await;
    assert_eq!(spawned["kind"], "api", "{spawned}");
    let task_id = spawned["task_id"].as_str().expect("task id").to_owned();
    for _ in 0..400 {
        let traffic = replay(ws, "cxp.traffic").await;
        let answer = traffic.iter().find(|e| {
            e["event_type"] == "packet_sent"
                && e["payload"]["packet"]["subject"] == "junior_result"
                && e.to_string().contains(&task_id)
        });
        if let Some(a) = answer {
            return a["payload"]["packet"].clone();
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    panic!("no junior_result for {task_id}");
}

fn of_type<'a>(events: &'a [Value], t: &str) -> Vec<&'a Value> {
    events.iter().filter(|e| e["event_type"] == t).collect()
}

fn config(small: &str, quota: u32, backup: &str) -> String {
    format!(
        "agents:\n  providers:\n    - {{ name: small, base_url: \"{small}\", model: m-1, quota_tokens: {quota}, api_key_env: SMALL_KEY }}\n    - {{ name: backup, base_url: \"{backup}\", model: m-2 }}\n  drivers:\n    writer: {{ api: [small, backup], timeout_s: 10 }}\n"
    )
}

// REQ-005-FR14-001 REQ-005-US-007-001 ISSUE-16: an API junior's calls are recorded
// as provider.events with their usage; the kernel counts the tokens against the quota,
// records quota_exhausted when they reach it, and the next junior falls back to the
// next provider without calling the exhausted one — also after a restart (the quota is
// folded from the log); a new quota in the configuration starts a new account.
#[tokio::test]
async fn quotas_are_counted_on_the_log_fall_back_and_survive_a_restart() {
    let small = llm::serve("small", Mode::Ok).await;
    let backup = llm::serve("backup", Mode::Ok).await;
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let env = [
        ("ORCHESTRATA_GATEWAY__TOKENS", grant()),
        ("SMALL_KEY", "sk-small".to_owned()),
    ];
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let yaml = config(&small.base_url(), 15, &backup.base_url());
    let mut up = Up::with_config(dir.path(), &yaml, port, TOKEN, &env);
    let mut vz = client(port).await;

    let one = ask(&mut vz, "writer", "one").await;
    let text = one.to_string();
    assert!(text.contains("small: one [Bearer sk-small]"), "{text}");
    assert!(text.contains("\"junior_status\":\"succeeded\""), "{text}");
    // 10 of 15 tokens: small answers again, and its quota is reached by that call.
    assert!(ask(&mut vz, "writer", "two")
        .await
        .to_string()
        .contains("small: two"));
    let three = ask(&mut vz, "writer", "three").await.to_string();
    assert!(three.contains("backup: three"), "{three}");
    assert_eq!(small.calls(), 2, "an exhausted provider is not called");

    let events = replay(&mut vz, "provider.events").await;
    assert_eq!(of_type(&events, "registered").len(), 2, "{events:?}");
    let completed = of_type(&events, "request_completed");
    assert_eq!(completed.len(), 3, "{events:?}");
    assert!(completed
        .iter()
        .all(|e| e["payload"]["input_tokens"] == 4 && e["payload"]["output_tokens"] == 6));
    let exhausted = of_type(&events, "quota_exhausted");
    assert_eq!(exhausted.len(), 1, "{events:?}");
    assert_eq!(
        (
            &exhausted[0]["payload"]["provider"],
            &exhausted[0]["payload"]["used_tokens"]
        ),
        (&json!("small"), &json!(20))
    );

    // A restart folds the account again: small stays skipped.
    assert!(up.stop(), "up stops cleanly");
    let mut up = Up::with_config(dir.path(), &yaml, port, TOKEN, &env);
    let mut vz = client(port).await;
    assert!(ask(&mut vz, "writer", "four")
        .await
        .to_string()
        .contains("backup: four"));
    assert_eq!(small.calls(), 2, "still exhausted after the restart");
    let events = replay(&mut vz, "provider.events").await;
    assert_eq!(
        of_type(&events, "registered").len(),
        2,
        "an unchanged provider is not registered again: {events:?}"
    );

    // The operator raises the quota: a new registration, a new account.
    assert!(up.stop(), "up stops cleanly");
    let yaml = config(&small.base_url(), 1000, &backup.base_url());
    let _up = Up::with_config(dir.path(), &yaml, port, TOKEN, &env);
    let mut vz = client(port).await;
    assert!(ask(&mut vz, "writer", "five")
        .await
        .to_string()
        .contains("small: five"));
    assert_eq!(small.calls(), 3);
    let events = replay(&mut vz, "provider.events").await;
    assert_eq!(of_type(&events, "registered").len(), 3, "{events:?}");
}

// REQ-005-NFR10-001 REQ-005-AC10-001 ISSUE-16: rate limits are waited out and recorded
// (rate_limited, request_failed, then request_completed); a refused key (401) and a
// server error (500) are recorded failures and the junior's answer is a failed
// junior_result; a provider reporting insufficient_quota is exhausted, and with every
// provider exhausted the senior escalates to the human queue.
#[tokio::test]
async fn failures_are_recorded_and_exhaustion_reaches_the_human_queue() {
    let flaky = llm::serve("flaky", Mode::RateLimitFirst(1)).await;
    let locked = llm::serve("locked", Mode::Status(401)).await;
    let broken = llm::serve("broken", Mode::Status(500)).await;
    let empty = llm::serve("empty", Mode::NoQuota).await;
    let yaml = format!(
        "agents:\n  providers:\n    - {{ name: flaky, base_url: \"{}\", model: m }}\n    - {{ name: locked, base_url: \"{}\", model: m }}\n    - {{ name: broken, base_url: \"{}\", model: m }}\n    - {{ name: empty, base_url: \"{}\", model: m }}\n  drivers:\n    flaky: {{ api: [flaky] }}\n    refused: {{ api: [locked, broken] }}\n    empty: {{ api: [empty] }}\n",
        flaky.base_url(),
        locked.base_url(),
        broken.base_url(),
        empty.base_url()
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let grant = grant();
    let _up = Up::with_config(
        dir.path(),
        &yaml,
        port,
        TOKEN,
        &[("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str())],
    );
    let mut vz = client(port).await;

    assert!(ask(&mut vz, "flaky", "hello")
        .await
        .to_string()
        .contains("flaky: hello"));
    assert_eq!(flaky.calls(), 2, "one 429, then the answer");

    let refused = ask(&mut vz, "refused", "hello").await.to_string();
    assert!(
        refused.contains("\"junior_status\":\"failed\""),
        "{refused}"
    );
    assert!(
        refused.contains("HTTP 500"),
        "the last provider's error: {refused}"
    );
    assert_eq!((locked.calls(), broken.calls()), (1, 1), "both were tried");

    let exhausted = ask(&mut vz, "empty", "hello").await.to_string();
    assert!(exhausted.contains("quota_exhausted"), "{exhausted}");

    let events = replay(&mut vz, "provider.events").await;
    let failed = of_type(&events, "request_failed");
    let by = |p: &str| {
        failed
            .iter()
            .find(|e| e["payload"]["provider"] == p)
            .map(|e| e["payload"]["retryable"].clone())
    };
    assert_eq!(by("flaky"), Some(json!(true)), "{events:?}");
    assert_eq!(
        by("locked"),
        Some(json!(false)),
        "a refused key: {events:?}"
    );
    assert_eq!(
        by("broken"),
        Some(json!(true)),
        "a server error: {events:?}"
    );
    assert_eq!(of_type(&events, "rate_limited").len(), 1, "{events:?}");
    let quota = of_type(&events, "quota_exhausted");
    assert_eq!(quota.len(), 1, "{events:?}");
    assert_eq!(quota[0]["payload"]["provider"], "empty");

    let mut human = Vec::new();
    for _ in 0..200 {
        let queue = checked_ok(&mut vz, "agents.escalations", json!({})).await;
        human = queue["escalations"].as_array().cloned().unwrap_or_default();
        if !human.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let entry = human
        .iter()
        .find(|e| e.to_string().contains("every provider's quota is used up"))
        .unwrap_or_else(|| panic!("no human escalation for the exhausted quotas: {human:?}"));
    assert!(entry.to_string().contains("U:Vz"), "{entry}");
}
