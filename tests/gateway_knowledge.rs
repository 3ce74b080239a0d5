//! `knowledge.*` over real WebSocket clients on loopback: a gateway started in-process
//! over a sled log in a temp dir, with a governed kernel (standard roster), a real
//! governance engine (default policy) and the projection runner, whose graph view
//! answers `knowledge.nodes` / `knowledge.relationships`.
//!
//! No Neo4j runs here (none can be installed on the test machine, and none is faked):
//! `knowledge.query` is tested up to the database — validation, governance, and the
//! real failure modes of an absent, refused or stalled server. The Cypher the graph sink
//! writes is unit-tested in `src/projection/neo4j/plan`; the live Neo4j path is
//! exercised by the compose stack.

mod support;

use std::time::{Duration, Instant};

use orchestrata::gateway::GatewayConfig;
use orchestrata::governance::{GovernanceConfig, Policy};
use orchestrata::projection::neo4j::Neo4jConfig;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};
use support::ws::{self, Ws, ADMIN_TOKEN, READ_ONLY_TOKEN, TOKEN};

/// The default policy (with one text replaced in it) plus the test principals.
fn test_policy(replace: Option<(&str, &str)>) -> Policy {
    support::policy::edited(|files| {
        if let Some((from, to)) = replace {
            for f in files.iter_mut() {
                f.text = f.text.replace(from, to);
            }
        }
    })
}

type Stack = support::stack::Governed;

async fn start() -> Stack {
    with(ws::test_config()).await
}

/// The default policy plus the test principals; `prolog_policy` on.
async fn with(config: GatewayConfig) -> Stack {
    with_policy(config, test_policy(None)).await
}

async fn with_policy(mut config: GatewayConfig, policy: Policy) -> Stack {
    config.prolog_policy = true;
    let stack = Stack::start(config, GovernanceConfig::default()).await;
    stack
        .governance
        .load_policy(policy)
        .await
        .expect("policy loads");
    stack
}

impl Stack {
    /// A client the test policy registers: `dashboard`, read_only (prolog_policy).
    async fn dashboard(&self) -> Ws {
        let mut ws = self.connect().await;
        let r = ws
            .ok(
                "auth.authenticate",
                json!({"strategy": "prolog_policy", "client_id": "dashboard"}),
            )
            .await;
        assert_eq!(r["scope"], "read_only", "{r}");
        ws
    }

    /// Recorded `knowledge.query` decisions.
    async fn kg_decisions(&self) -> Vec<(String, String)> {
        self.log
            .read(Stream::GovernanceDecisions, 0, None, usize::MAX)
            .await
            .expect("read decisions")
            .into_iter()
            .filter_map(|e| match e.record.event {
                Event::DecisionRecorded(d) if d.action == "knowledge.query" => {
                    Some((d.subject, format!("{:?}", d.result).to_lowercase()))
                }
                _ => None,
            })
            .collect()
    }
}

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

/// Calls `method` until `done` holds for the answer (the graph view folds the log
/// asynchronously), at most 10 s.
async fn until(c: &mut Ws, method: &str, params: Value, done: impl Fn(&Value) -> bool) -> Value {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let r = c.ok(method, params.clone()).await;
        if done(&r) || Instant::now() > deadline {
            return r;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

fn ids(page: &Value, key: &str) -> Vec<String> {
    page[key]
        .as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|i| i["id"].as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Registers U:Db under U:Ox, sends U:Cx -> U:Ox, opens a session; waits until the
/// graph holds them. Returns the packet's message id.
async fn traffic(stack: &Stack) -> String {
    let mut admin = stack.client(ADMIN_TOKEN).await;
    admin
        .ok(
            "volk.register",
            json!({"alias": "U:Db", "capabilities": ["query"], "parent": "U:Ox"}),
        )
        .await;
    let mut rw = stack.client(TOKEN).await;
    let sent = rw
        .ok(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "subject": "CREATE the login page",
                   "payload": {"feature": "login"}}),
        )
        .await;
    let message_id = sent["message_id"].as_str().expect("message id").to_owned();
    rw.ok(
        "session.open",
        json!({"session_id": "s-kg", "portfolio": "checkout"}),
    )
    .await;
    until(
        &mut rw,
        "knowledge.nodes",
        json!({"node_type": "Session"}),
        |r| r["total"] == 1,
    )
    .await;
    until(
        &mut rw,
        "knowledge.nodes",
        json!({"node_type": "Packet"}),
        |r| r["total"] == 1,
    )
    .await;
    until(
        &mut rw,
        "knowledge.nodes",
        json!({"node_type": "Volk", "properties": {"alias": "U:Db", "status": "registered"}}),
        |r| r["total"] == 1,
    )
    .await;
    message_id
}

// REQ-014-156 REQ-014-157 REQ-014-158 REQ-014-159 REQ-014-155
#[tokio::test]
async fn nodes_and_relationships_follow_registrations_packets_and_sessions() {
    let stack = start().await;
    let message_id = traffic(&stack).await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let packet = format!("packet:{message_id}");

    let packets = c
        .ok("knowledge.nodes", json!({"node_type": "Packet"}))
        .await;
    assert_eq!(ids(&packets, "nodes"), [packet.as_str()], "{packets}");
    let node = &packets["nodes"][0];
    assert_eq!(node["labels"], json!(["Packet"]));
    assert_eq!(node["properties"]["from_agent"], "U:Cx");
    assert_eq!(node["properties"]["to_agent"], "U:Ox");
    assert_eq!(node["properties"]["subject"], "CREATE the login page");

    let db = c
        .ok(
            "knowledge.nodes",
            json!({"label": "Volk", "properties": {"alias": "U:Db"}}),
        )
        .await;
    assert_eq!(db["total"], 1, "{db}");
    assert_eq!(
        db["nodes"][0]["properties"]["capabilities"],
        json!(["query"])
    );
    assert_eq!(db["nodes"][0]["properties"]["status"], "registered");

    let session = c
        .ok("knowledge.nodes", json!({"node_type": "Session"}))
        .await;
    assert_eq!(session["nodes"][0]["id"], "session:s-kg");
    assert_eq!(
        session["nodes"][0]["properties"]["portfolio_id"],
        "checkout"
    );
    assert_eq!(session["nodes"][0]["properties"]["status"], "open");

    for (t, from, to) in [
        ("CHILD_OF", "volk:U:Db", "volk:U:Ox"),
        ("SENT_BY", packet.as_str(), "volk:U:Cx"),
        ("SENT_TO", packet.as_str(), "volk:U:Ox"),
        ("SENT_TO", "volk:U:Cx", "volk:U:Ox"),
    ] {
        let r = c
            .ok(
                "knowledge.relationships",
                json!({"relationship_type": t, "from": from, "to": to}),
            )
            .await;
        assert_eq!(r["total"], 1, "{t} {from}->{to}: {r}");
        let rel = &r["relationships"][0];
        assert_eq!(rel["type"], t);
        assert_eq!(
            (rel["source"].as_str(), rel["target"].as_str()),
            (Some(from), Some(to))
        );
        assert!(rel["properties"].is_object(), "{rel}");
    }
    let in_thread = c
        .ok(
            "knowledge.relationships",
            json!({"type": "IN_THREAD", "from": packet}),
        )
        .await;
    assert_eq!(in_thread["total"], 1, "{in_thread}");
    assert!(
        in_thread["relationships"][0]["target"]
            .as_str()
            .is_some_and(|t| t.starts_with("thread:")),
        "{in_thread}"
    );
    // The governed kernel's decisions about U:Cx sending are in the graph too.
    let about = until(
        &mut c,
        "knowledge.relationships",
        json!({"type": "DECIDED_ABOUT", "to": "volk:U:Cx"}),
        |r| r["total"].as_u64() >= Some(1),
    )
    .await;
    assert!(about["total"].as_u64() >= Some(1), "{about}");
}

// REQ-014-156 REQ-014-157 REQ-014-160
#[tokio::test]
async fn browsing_pages_with_offset_and_limit_and_filters_by_property_values() {
    let stack = start().await;
    traffic(&stack).await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let all = c
        .ok(
            "knowledge.nodes",
            json!({"node_type": "Volk", "limit": 1000}),
        )
        .await;
    let total = all["total"].as_u64().expect("total");
    assert!(total >= 4, "roster plus U:Db: {all}");
    let first = c
        .ok("knowledge.nodes", json!({"node_type": "Volk", "limit": 3}))
        .await;
    let second = c
        .ok(
            "knowledge.nodes",
            json!({"node_type": "Volk", "offset": 3, "limit": 3}),
        )
        .await;
    assert_eq!(first["total"], total);
    assert_eq!(first["has_more"], true);
    assert_eq!(ids(&first, "nodes").len(), 3);
    let mut paged = ids(&first, "nodes");
    paged.extend(ids(&second, "nodes"));
    assert_eq!(
        paged[..],
        ids(&all, "nodes")[..paged.len()],
        "pages in id order"
    );

    let ox = c
        .ok("knowledge.nodes", json!({"properties": {"alias": "U:Ox"}}))
        .await;
    assert_eq!(ids(&ox, "nodes"), ["volk:U:Ox"], "{ox}");
    let none = c
        .ok(
            "knowledge.nodes",
            json!({"node_type": "Volk", "properties": {"alias": "U:Nobody"}}),
        )
        .await;
    assert_eq!(none["total"], 0);
    assert_eq!(none["has_more"], false);
    let counted = c
        .ok(
            "knowledge.relationships",
            json!({"type": "SENT_TO", "properties": {"packets": 1}}),
        )
        .await;
    assert_eq!(
        ids(&counted, "relationships"),
        ["SENT_TO:volk:U:Cx->volk:U:Ox"],
        "{counted}"
    );

    for (method, bad) in [
        ("knowledge.nodes", json!({"node_type": "Robot"})),
        ("knowledge.nodes", json!({"limit": 0})),
        (
            "knowledge.nodes",
            json!({"node_type": "Volk", "label": "Packet"}),
        ),
        ("knowledge.relationships", json!({"type": "LIKES"})),
        ("knowledge.relationships", json!({"offset": -1})),
        ("knowledge.relationships", json!({"colour": "blue"})),
    ] {
        let e = c.err(method, bad.clone()).await;
        assert_eq!(e["code"], -32602, "{method} {bad}: {e}");
    }
}

// REQ-014-153 ERR-007
#[tokio::test]
async fn every_write_clause_is_refused_as_mutation_not_allowed() {
    let stack = start().await;
    let mut c = stack.dashboard().await;
    for cypher in [
        "CREATE (n:Volk {alias: 'U:Evil'})",
        "MATCH (n) merge (m:Volk {alias: 'x'}) RETURN m",
        "MATCH (n) DELETE n",
        "MATCH (n) DETACH DELETE n",
        "MATCH (n:Volk) SET n.status = 'gone'",
        "MATCH (n:Volk) REMOVE n.status",
        "DROP INDEX volk_id",
        "CALL db.labels()",
        "LOAD CSV FROM 'file:///etc/passwd' AS l RETURN l",
        "MATCH (n) FOREACH (x IN [1] | CREATE (m))",
    ] {
        let e = c.err("knowledge.query", json!({"cypher": cypher})).await;
        assert_eq!(e["code"], -32602, "{cypher}: {e}");
        assert_eq!(reason(&e), "mutation_not_allowed", "{cypher}: {e}");
        assert_eq!(e["data"]["field"], "cypher");
    }
    assert!(
        stack.kg_decisions().await.is_empty(),
        "refused before governance is asked"
    );
}

// REQ-014-151 REQ-014-152 REQ-014-162 ERR-010
#[tokio::test]
async fn a_read_only_query_passes_validation_and_governance_then_needs_neo4j() {
    let stack = start().await;
    let mut c = stack.dashboard().await;
    for cypher in [
        "MATCH (p:Packet) WHERE p.subject = 'CREATE the login page' RETURN p",
        "MATCH (v:Volk) /* SET v.x = 1 */ RETURN v.alias AS alias ORDER BY alias LIMIT 5",
        "OPTIONAL MATCH (v:Volk)-[:CHILD_OF]->(p) WITH v, p UNWIND [1] AS x RETURN v, p SKIP 0",
    ] {
        let e = c.err("knowledge.query", json!({"cypher": cypher})).await;
        assert_eq!(e["code"], -32603, "{cypher}: {e}");
        assert_eq!(reason(&e), "neo4j_unavailable", "{cypher}: {e}");
    }
    let decisions = stack.kg_decisions().await;
    assert_eq!(decisions.len(), 3, "{decisions:?}");
    assert!(
        decisions
            .iter()
            .all(|(s, r)| s == "dashboard" && r == "allow"),
        "{decisions:?}"
    );
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": "EXPLAIN MATCH (n) RETURN n"}),
        )
        .await;
    assert_eq!(reason(&e), "invalid_cypher", "{e}");
    for bad in [
        json!({}),
        json!({"cypher": ""}),
        json!({"cypher": "MATCH (n) RETURN n", "timeout_seconds": 0}),
        json!({"cypher": "MATCH (n) RETURN n", "max_results": 0}),
        json!({"cypher": "MATCH (n) RETURN n", "params": []}),
    ] {
        let e = c.err("knowledge.query", bad.clone()).await;
        assert_eq!(e["code"], -32602, "{bad}: {e}");
    }
}

// REQ-014-161 REQ-014-162 REQ-014-163
#[tokio::test]
async fn governance_denies_clients_the_policy_does_not_grant_graph_access() {
    // A site policy that keeps the graph for admins: token clients are judged by their
    // scope (scope_can_query_kg/2), and this policy grants read_only nothing.
    let policy = test_policy(Some((
        "scope_can_query_kg(Scope, Pattern) :-",
        "scope_can_query_kg(Scope, Pattern) :-\n    Scope \\== read_only,",
    )));
    let stack = with_policy(ws::test_config(), policy).await;
    let mut viewer = stack.client(READ_ONLY_TOKEN).await;
    let e = viewer
        .err(
            "knowledge.query",
            json!({"cypher": "MATCH (v:Volk) RETURN v"}),
        )
        .await;
    assert_eq!(e["code"], -32001, "{e}");
    assert_eq!(reason(&e), "governance_denied");
    assert!(e["data"]["decision_id"].is_string(), "{e}");
    assert_eq!(
        stack.kg_decisions().await,
        [("viewer".to_owned(), "deny".to_owned())]
    );
    // The audit record is a Decision node of the graph (which the sink writes to
    // Neo4j), with the pattern asked about; browsing is a plain read_only method.
    let audit = until(
        &mut viewer,
        "knowledge.nodes",
        json!({"node_type": "Decision", "properties": {"action": "knowledge.query"}}),
        |r| r["total"] == 1,
    )
    .await;
    assert_eq!(audit["total"], 1, "{audit}");
    let props = &audit["nodes"][0]["properties"];
    assert_eq!(props["subject"], "viewer");
    assert_eq!(props["result"], "deny");
    assert_eq!(props["resource"], "MATCH (v:Volk) RETURN v");
}

/// A gateway configured with a Neo4j at `uri`, with the query defaults given.
async fn with_neo4j(uri: String) -> Stack {
    let mut config = ws::test_config();
    config.neo4j = Some(Neo4jConfig {
        uri,
        user: "neo4j".into(),
        password: "secret".into(),
    });
    with(config).await
}

// REQ-014-151 ERR-010
#[tokio::test]
async fn a_configured_neo4j_that_refuses_connections_is_unavailable() {
    let port = support::free_port();
    let stack = with_neo4j(format!("neo4j://127.0.0.1:{port}")).await;
    let mut c = stack.dashboard().await;
    let e = c
        .err("knowledge.query", json!({"cypher": "MATCH (n) RETURN n"}))
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "neo4j_unavailable");
    assert!(
        e["data"]["detail"]
            .as_str()
            .is_some_and(|d| d.contains(&port.to_string()) && !d.contains("secret")),
        "{e}"
    );
}

// REQ-014-154 ERR-008
#[tokio::test]
async fn a_query_that_outlives_its_timeout_is_cancelled() {
    // A server that accepts TCP connections and never answers the Bolt handshake.
    let (addr, held) = support::mute_server().await;
    let stack = with_neo4j(format!("neo4j://{addr}")).await;
    let mut c = stack.dashboard().await;
    let e = c
        .err(
            "knowledge.query",
            json!({"cypher": "MATCH (n) RETURN n", "timeout_seconds": 1}),
        )
        .await;
    assert_eq!(e["code"], -32603, "{e}");
    assert_eq!(reason(&e), "query_timeout", "{e}");
    assert_eq!(e["data"]["timeout_ms"], 1000);
    held.abort();
}
