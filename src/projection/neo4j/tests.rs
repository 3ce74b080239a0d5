use super::*;

// REQ-014-163 ERR-010
#[test]
fn bolt_addresses_are_read_from_every_uri_form() {
    for (uri, host, port) in [
        ("neo4j://db.local:7688", "db.local", 7688),
        ("bolt+s://db.local", "db.local", 7687),
        ("neo4j://user@10.0.0.5:7687/neo4j", "10.0.0.5", 7687),
        ("127.0.0.1:7999", "127.0.0.1", 7999),
        ("neo4j", "neo4j", 7687),
    ] {
        assert_eq!(
            address_of(uri).expect(uri),
            (host.to_owned(), port),
            "{uri}"
        );
    }
    for bad in ["neo4j://", "neo4j://:7687", "neo4j://h:port"] {
        let e = address_of(bad).expect_err(bad);
        assert!(e.to_string().contains("gateway.neo4j.uri"), "{e}");
    }
}

// REQ-014-163
#[test]
fn the_password_never_shows_in_debug_output() {
    let c: Neo4jConfig =
        serde_yaml_ng::from_str("uri: neo4j://h:7687\npassword: hunter2").expect("parses");
    assert_eq!(c.user, "neo4j", "default user");
    let shown = format!("{c:?}");
    assert!(
        !shown.contains("hunter2") && shown.contains("<redacted>"),
        "{shown}"
    );
    let e = serde_yaml_ng::from_str::<Neo4jConfig>("uri: x\npasword: typo").expect_err("typo");
    assert!(e.to_string().contains("pasword"), "{e}");
}

// REQ-014-151 ERR-010
#[tokio::test]
async fn a_closed_port_is_unavailable_at_once() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    drop(listener);
    let c = Neo4jConfig {
        uri: format!("neo4j://127.0.0.1:{port}"),
        user: "neo4j".into(),
        password: String::new(),
    };
    let e = reachable(&c, std::time::Duration::from_secs(2))
        .await
        .expect_err("nothing listens");
    assert!(matches!(e, Neo4jError::Unavailable { .. }), "{e}");
}

// REQ-014-154 REQ-014-164
#[test]
fn gateway_config_reads_neo4j_and_the_query_defaults() {
    use crate::gateway::GatewayConfig;
    let c = GatewayConfig::from_yaml("gateway: {}").expect("defaults");
    assert!(c.neo4j.is_none());
    assert_eq!(c.knowledge_timeout, std::time::Duration::from_secs(10));
    assert_eq!(c.knowledge_max_results, 1000);
    let c = GatewayConfig::from_yaml(
        "gateway:\n  neo4j: {uri: 'neo4j://db:7687', user: ops, password: pw}\n  \
         knowledge_timeout_ms: 2500\n  knowledge_max_results: 7\n",
    )
    .expect("neo4j config");
    let n = c.neo4j.expect("neo4j");
    assert_eq!(
        (n.uri.as_str(), n.user.as_str()),
        ("neo4j://db:7687", "ops")
    );
    assert_eq!(c.knowledge_timeout, std::time::Duration::from_millis(2500));
    assert_eq!(c.knowledge_max_results, 7);
    for (bad, field) in [
        ("gateway:\n  neo4j: {uri: ' '}\n", "gateway.neo4j.uri"),
        (
            "gateway:\n  knowledge_max_results: 0\n",
            "gateway.knowledge_max_results",
        ),
        (
            "gateway:\n  knowledge_timeout_ms: 0\n",
            "gateway.knowledge_timeout_ms",
        ),
    ] {
        let e = GatewayConfig::from_yaml(bad).expect_err(bad);
        assert!(e.to_string().contains(field), "{bad}: {e}");
    }
}
