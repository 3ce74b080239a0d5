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
