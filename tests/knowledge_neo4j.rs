//! The knowledge graph on a real Neo4j (issue 59 item 7): Neo4j 5.26 community with
//! its Bolt connector (tests/neo4j/server.sh, from Maven Central), a real `orchestrata
//! up` (its own process: sled log, governance, projections, the graph sink with its
//! default 2 s interval) configured with `gateway.neo4j`, clients over loopback
//! WebSocket, and Neo4j's own Python driver reading what the sink wrote.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use orchestrata::projection::neo4j::Neo4jConfig;
use serde_json::{json, Value};
use support::neo4j::{self, Neo4j};
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "knowledge-neo4j-token";

/// Nodes by id, as Neo4j holds them.
const BY_ID: &str = "MATCH (n) WHERE n.id IN $ids \
                     RETURN n.id AS id, labels(n) AS labels, n.subject AS subject ORDER BY id";

/// `orchestrata up` on a fresh data dir in `dir` and a free port, writing its
/// knowledge graph to `neo4j`; a client authenticated with the operator's token.
async fn up_with(dir: &Path, neo4j: &Neo4jConfig) -> (Up, Ws) {
    let port = support::free_port();
    let up = Up::start(
        &dir.join("data"),
        port,
        TOKEN,
        &[],
        &[
            ("ORCHESTRATA_GATEWAY__NEO4J__URI", neo4j.uri.as_str()),
            ("ORCHESTRATA_GATEWAY__NEO4J__USER", neo4j.user.as_str()),
            (
                "ORCHESTRATA_GATEWAY__NEO4J__PASSWORD",
                neo4j.password.as_str(),
            ),
        ],
    );
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    (up, ws)
}

/// Sends a packet U:GW -> U:Vz with `subject`; the ids of its packet and thread nodes.
async fn send(ws: &mut Ws, subject: &str) -> [String; 2] {
    let sent = ws
        .ok(
            "cxp.send",
            json!({"target": "U:Vz", "subject": subject, "payload": {"n": 1}}),
        )
        .await;
    let id = |field: &str| sent[field].as_str().expect(field).to_owned();
    [
        format!("packet:{}", id("message_id")),
        format!("thread:{}", id("thread_id")),
    ]
}

/// `knowledge.query` for the nodes `ids` (an error answer as is).
async fn by_id(ws: &mut Ws, ids: &[String]) -> Value {
    ws.call(
        "knowledge.query",
        json!({"cypher": BY_ID, "params": {"ids": ids}}),
    )
    .await
}

/// Asks `knowledge.query` for the nodes `ids` until all are there or `deadline`
/// passed; the last answer.
async fn until_written(ws: &mut Ws, ids: &[String], deadline: Instant) -> Value {
    loop {
        let r = by_id(ws, ids).await;
        if r["result"]["count"].as_u64() == Some(ids.len() as u64) || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// The ids of the view's nodes labelled `label` (`knowledge.nodes`: no database).
async fn view_ids(ws: &mut Ws, label: &str) -> Vec<String> {
    let r = ws
        .ok(
            "knowledge.nodes",
            json!({"node_type": label, "limit": 1000}),
        )
        .await;
    let nodes = r["nodes"].as_array().expect("nodes");
    nodes
        .iter()
        .map(|n| n["id"].as_str().expect("id").to_owned())
        .collect()
}

/// The ids of `answer`'s records (or nodes), in order.
fn ids_of(rows: &Value) -> Vec<String> {
    rows.as_array()
        .map(|rows| {
            rows.iter()
                .filter_map(|r| r["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

fn sorted(mut ids: Vec<String>) -> Vec<String> {
    ids.sort();
    ids.dedup();
    ids
}

// REQ-014-151 REQ-014-155 REQ-014-158: a new user's first three packets through a real
// `orchestrata up` are in Neo4j within 5 s of the last send on an otherwise quiet
// server (their Volks, threads and packets, and the Volk -> Volk SENT_TO count);
// knowledge.query reads them back through the gateway, and Neo4j's Python driver sees
// exactly the same nodes and the relationships between them.
#[tokio::test(flavor = "multi_thread")]
async fn three_packets_sent_through_up_are_in_neo4j_within_five_seconds() {
    let server = Neo4j::spawn();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut up, mut ws) = up_with(dir.path(), &server.config()).await;
    let mut ids = vec!["volk:U:GW".to_owned(), "volk:U:Vz".to_owned()];
    for n in 1..=3 {
        ids.extend(send(&mut ws, &format!("first packet {n}")).await);
    }
    let ids = sorted(ids);
    let r = until_written(&mut ws, &ids, Instant::now() + Duration::from_secs(5)).await;
    let result = &r["result"];
    assert_eq!(ids_of(&result["records"]), ids, "{r}\n{}", server.log());
    let labels: Vec<&Value> = result["records"]
        .as_array()
        .expect("records")
        .iter()
        .map(|rec| &rec["labels"][0])
        .collect();
    assert_eq!(
        (
            labels.iter().filter(|l| **l == "Packet").count(),
            labels.iter().filter(|l| **l == "Thread").count(),
            labels.iter().filter(|l| **l == "Volk").count()
        ),
        (3, 3, 2),
        "{r}"
    );
    let sent = ws
        .ok(
            "knowledge.query",
            json!({"cypher": "MATCH (:Volk {id: 'volk:U:GW'})-[s:SENT_TO]->(:Volk {id: 'volk:U:Vz'}) RETURN s.packets AS packets"}),
        )
        .await;
    assert_eq!(sent["records"], json!([{"packets": 3}]), "{sent}");

    // The official Python driver, in its own process, reads the same nodes.
    let seen = neo4j::python_reads(&server.config(), &ids);
    assert_eq!(ids_of(&seen["nodes"]), ids, "{seen}");
    assert_eq!(seen["server"]["agent"], "Neo4j/5.26.30", "{seen}");
    let packets = view_ids(&mut ws, "Packet").await;
    for node in seen["nodes"].as_array().expect("nodes") {
        let id = node["id"].as_str().expect("id");
        if id.starts_with("packet:") {
            assert!(packets.iter().any(|p| p == id), "{id} not in the view");
            assert_eq!(node["labels"], json!(["Packet"]), "{node}");
            assert!(
                node["properties"]["subject"]
                    .as_str()
                    .is_some_and(|s| s.starts_with("first packet ")),
                "{node}"
            );
        }
    }
    // Each packet: sent by U:GW, to U:Vz, in its thread.
    let rels = seen["relationships"].as_array().expect("relationships");
    for packet in ids.iter().filter(|id| id.starts_with("packet:")) {
        let mut kinds: Vec<(&str, &str)> = rels
            .iter()
            .filter(|r| r["source"] == packet.as_str())
            .map(|r| {
                (
                    r["type"].as_str().unwrap_or(""),
                    r["target"].as_str().unwrap_or(""),
                )
            })
            .collect();
        kinds.sort();
        assert_eq!(kinds.len(), 3, "{packet}: {kinds:?}");
        assert_eq!(kinds[0], ("IN_THREAD", kinds[0].1), "{packet}: {kinds:?}");
        assert!(kinds[0].1.starts_with("thread:"), "{packet}: {kinds:?}");
        assert_eq!(
            &kinds[1..],
            [("SENT_BY", "volk:U:GW"), ("SENT_TO", "volk:U:Vz")],
            "{packet}"
        );
    }
    assert!(up.stop(), "up stops cleanly");
}

// REQ-014-ERR-010 REQ-014-151: Neo4j stops (cleanly, as an operator would) and starts
// again on the same data dir and port: meanwhile knowledge.query answers
// neo4j_unavailable and the sink defers its writes; afterwards everything sent before
// and during the outage is in Neo4j, once, without restarting `up`.
#[tokio::test(flavor = "multi_thread")]
async fn a_neo4j_restart_defers_the_sinks_writes_and_loses_nothing() {
    let mut server = Neo4j::spawn();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut up, mut ws) = up_with(dir.path(), &server.config()).await;
    let mut ids = send(&mut ws, "before the restart").await.to_vec();
    let r = until_written(&mut ws, &ids, Instant::now() + Duration::from_secs(120)).await;
    assert_eq!(ids_of(&r["result"]["records"]), sorted(ids.clone()), "{r}");

    server.stop();
    for n in 1..=3 {
        ids.extend(send(&mut ws, &format!("during the outage {n}")).await);
    }
    let e = by_id(&mut ws, &ids).await;
    assert_eq!(
        (
            e["error"]["code"].as_i64(),
            e["error"]["data"]["reason"].as_str()
        ),
        (Some(-32603), Some("neo4j_unavailable")),
        "{e}"
    );
    // The view has them all the while.
    assert_eq!(view_ids(&mut ws, "Packet").await.len(), 4);
    // Long enough for the sink (every 2 s) to have tried and failed.
    tokio::time::sleep(Duration::from_secs(3)).await;

    server.start();
    let ids = sorted(ids);
    let r = until_written(&mut ws, &ids, Instant::now() + Duration::from_secs(120)).await;
    assert_eq!(
        ids_of(&r["result"]["records"]),
        ids,
        "{r}\n{}",
        server.log()
    );
    // Once each, and the same for the Python driver.
    let count = ws
        .ok(
            "knowledge.query",
            json!({"cypher": "MATCH (p:Packet) RETURN count(p) AS packets"}),
        )
        .await;
    assert_eq!(count["records"], json!([{"packets": 4}]), "{count}");
    let seen = neo4j::python_reads(&server.config(), &ids);
    assert_eq!(ids_of(&seen["nodes"]), ids, "{seen}");
    assert_eq!(
        sorted(view_ids(&mut ws, "Packet").await),
        ids.iter()
            .filter(|id| id.starts_with("packet:"))
            .cloned()
            .collect::<Vec<_>>()
    );
    assert!(up.stop(), "up stops cleanly");
}

// REQ-014-151 REQ-014-154 REQ-014-155 REQ-014-158 REQ-014-164 REQ-014-165 REQ-014-ERR-008:
// knowledge.query on the real engine: nodes come back whole, max_results caps the
// rows, a statement Neo4j refuses is the client's error, and a genuinely slow query
// is cancelled at its timeout.
#[tokio::test(flavor = "multi_thread")]
async fn knowledge_query_answers_nodes_caps_rows_and_times_out_on_neo4j() {
    let server = neo4j::shared();
    let dir = tempfile::tempdir().expect("temp dir");
    let (mut up, mut ws) = up_with(dir.path(), &server.config).await;
    let subject = format!("graph {}", uuid::Uuid::new_v4());
    let [packet, thread] = send(&mut ws, &subject).await;
    let ids = vec![packet.clone(), thread];
    let r = until_written(&mut ws, &ids, Instant::now() + Duration::from_secs(120)).await;
    assert_eq!(r["result"]["count"], 2, "{r}");

    let r = ws
        .ok(
            "knowledge.query",
            json!({"cypher": "MATCH (p:Packet {id: $id})-[:SENT_BY]->(v:Volk) RETURN p, v.alias AS sender",
                   "params": {"id": packet}}),
        )
        .await;
    assert_eq!(r["count"], 1, "{r}");
    assert_eq!(r["records"][0]["sender"], "U:GW", "{r}");
    assert_eq!(r["records"][0]["p"]["subject"], subject.as_str(), "{r}");
    assert!(r["execution_time_ms"].as_f64().is_some(), "{r}");

    let r = ws
        .ok(
            "knowledge.query",
            json!({"cypher": "MATCH (v:Volk) RETURN v.alias AS alias", "max_results": 1}),
        )
        .await;
    assert_eq!(
        (r["count"].as_u64(), &r["truncated"]),
        (Some(1), &json!(true)),
        "{r}"
    );

    let e = ws
        .err(
            "knowledge.query",
            json!({"cypher": "MATCH (n) RETURN nosuchfunction(n)"}),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), e["data"]["reason"].as_str()),
        (Some(-32602), Some("cypher_error")),
        "{e}"
    );

    let e = ws
        .err(
            "knowledge.query",
            json!({"cypher": "UNWIND range(1, 20000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x) AS c",
                   "timeout_seconds": 1}),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), e["data"]["reason"].as_str()),
        (Some(-32603), Some("query_timeout")),
        "{e}"
    );
    assert_eq!(e["data"]["timeout_ms"], 1000, "{e}");
    assert!(up.stop(), "up stops cleanly");
}
