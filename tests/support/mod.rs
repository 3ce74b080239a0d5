//! Shared helpers of the integration tests: real brokers, unique names.
//!
//! Include with `mod support;` from a test file. Everything here spawns or connects to
//! real components; nothing is mocked.
#![allow(dead_code)]

pub mod contract;
pub mod faulty_log;
mod kafka;
pub mod llm;
pub mod neo4j;
pub mod policy;
pub mod stack;
pub mod up;
pub mod workflows;
pub mod ws;

#[allow(unused_imports)] // each test binary uses some of them
pub use kafka::{
    create_topic, kafka_brokers, spawn_kafka_cluster, spawn_private_kafka, Brokers, Kafka,
};

use std::net::TcpListener;
use std::time::Duration;

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) with a pid of a child we own; no memory is touched.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// A topic prefix no other test uses.
pub fn unique_prefix() -> String {
    format!("test-{}", uuid::Uuid::new_v4().simple())
}

/// A server on loopback that accepts TCP connections, holds them, and never answers
/// (a database that hangs mid-handshake). Its address, and the task to abort when done.
pub async fn mute_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    (addr, held)
}

/// Whether `pid` is a live process (a zombie is not).
pub fn process_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// The spec's `cxp.send` example (014, `cxp.send`), verbatim: no `from`, no extras.
pub fn spec_send() -> serde_json::Value {
    serde_json::json!({
        "target": "U:Vz",
        "subject": "generate_component",
        "payload": {"component": "UserService", "language": "python", "framework": "fastapi"},
        "priority": 7
    })
}

/// Checks `answer` against the result schema of gateway method `method`.
pub fn conforms(method: &str, answer: &serde_json::Value) {
    let text = orchestrata::gateway::schema::result_schema(method).expect("a result schema");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(answer)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{method}: {errors:?} in {answer}");
}

/// `ws.ok(method, params)`, its answer checked against the method's result schema.
pub async fn checked_ok(
    ws: &mut ws::Ws,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    let answer = ws.ok(method, params).await;
    conforms(method, &answer);
    answer
}

/// Every event of `topic` in the log (at most 1,000), as `gateway.replay` answers them.
pub async fn replay(ws: &mut ws::Ws, topic: &str) -> Vec<serde_json::Value> {
    let r = ws
        .ok(
            "gateway.replay",
            serde_json::json!({ "topic": topic, "count": 1000 }),
        )
        .await;
    r["events"].as_array().cloned().unwrap_or_default()
}

/// The `junior_result` packets on `cxp.traffic` in log order, polled (every 25 ms, for
/// up to `polls` tries) until there are at least `want`.
pub async fn junior_results(ws: &mut ws::Ws, want: usize, polls: u32) -> Vec<serde_json::Value> {
    let mut found = Vec::new();
    for _ in 0..polls {
        found = replay(ws, "cxp.traffic")
            .await
            .into_iter()
            .filter(|e| {
                e["event_type"] == "packet_sent"
                    && e["payload"]["packet"]["subject"] == "junior_result"
            })
            .map(|e| e["payload"]["packet"].clone())
            .collect();
        if found.len() >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    found
}
