//! The bridge's pieces, byte for byte (its live path is tests/knowledge_bolt.rs).

use super::packstream::{decode, encode, Value};
use super::*;

#[test]
fn packstream_round_trips_every_marker_width() {
    let long = "x".repeat(300);
    let value = Value::List(vec![
        Value::Null,
        Value::Bool(true),
        Value::Bool(false),
        Value::Int(0),
        Value::Int(-16),
        Value::Int(127),
        Value::Int(-17),
        Value::Int(-129),
        Value::Int(40_000),
        Value::Int(-3_000_000_000),
        Value::Float(1.5),
        Value::Bytes(vec![1, 2, 3]),
        Value::text("hé"),
        Value::String(long.clone()),
        Value::map([("k", Value::List((0..20).map(Value::Int).collect()))]),
        Value::Struct(tag::NODE, vec![Value::Int(1)]),
    ]);
    let bytes = encode(&value);
    assert_eq!(decode(&bytes), Ok(value));
    // Known encodings from the PackStream spec.
    assert_eq!(encode(&Value::Int(-17)), [0xC8, 0xEF]);
    assert_eq!(encode(&Value::text("a")), [0x81, b'a']);
    assert_eq!(encode(&Value::String(long))[..3], [0xD1, 0x01, 0x2C]);
    assert_eq!(
        encode(&Value::map([("a", Value::Int(1))])),
        [0xA1, 0x81, b'a', 0x01]
    );
}

#[test]
fn packstream_refuses_what_is_not_packstream() {
    for bad in [
        &[0xC7][..],             // unknown marker
        &[0x82, b'a'][..],       // string shorter than its length
        &[0xA1, 0x01, 0x01][..], // map key not a string
        &[0xC0, 0xC0][..],       // trailing bytes
        &[0x81, 0xFF][..],       // not UTF-8
    ] {
        assert!(decode(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn the_highest_bolt4_proposal_is_chosen() {
    // neo4rs 0.8: 4.1, 4.0.
    let neo4rs = [0, 0, 1, 4, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(choose_bolt4(&neo4rs), Some((4, 1)));
    let mixed = [0, 0, 4, 5, 0, 2, 4, 4, 0, 0, 3, 4, 0, 0, 0, 0];
    assert_eq!(choose_bolt4(&mixed), Some((4, 4)));
    let five_only = [0, 0, 4, 5, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0];
    assert_eq!(choose_bolt4(&five_only), None);
}

fn hello(password: &str) -> Value {
    Value::map([
        ("user_agent", Value::text("neo4rs")),
        ("scheme", Value::text("basic")),
        ("principal", Value::text("neo4j")),
        ("credentials", Value::text(password)),
        ("routing", Value::Null),
    ])
}

#[test]
fn bolt4_hello_becomes_hello_then_logon() {
    let up = upstream_hello(&hello("pw"), 4);
    let Value::Struct(tag::HELLO, fields) = &up else {
        panic!("{up:?}")
    };
    assert_eq!(fields[0].get("user_agent"), Some(&Value::text("neo4rs")));
    assert!(fields[0].get("bolt_agent").is_some());
    assert_eq!(fields[0].get("credentials"), None, "auth moves to LOGON");
    assert_eq!(fields[0].get("routing"), None);
    let logon = upstream_logon(&hello("pw"));
    let Value::Struct(tag::LOGON, fields) = &logon else {
        panic!("{logon:?}")
    };
    assert_eq!(fields[0].get("principal"), Some(&Value::text("neo4j")));
    assert_eq!(fields[0].get("credentials"), Some(&Value::text("pw")));
    // FalkorDB's passwordless user refuses empty credentials: none are sent.
    let logon = upstream_logon(&hello(""));
    let Value::Struct(_, fields) = &logon else {
        panic!()
    };
    assert_eq!(fields[0].get("credentials"), None);
    assert_eq!(fields[0].get("scheme"), Some(&Value::text("basic")));
    // Bolt 5.0 still authenticates in HELLO.
    let Value::Struct(_, fields) = upstream_hello(&hello("pw"), 0) else {
        panic!()
    };
    assert_eq!(fields[0].get("credentials"), Some(&Value::text("pw")));
}

#[test]
fn records_lose_their_element_ids_at_any_depth() {
    let props = Value::map([("id", Value::text("volk:U:Ox"))]);
    let node5 = Value::Struct(
        tag::NODE,
        vec![
            Value::Int(7),
            Value::List(vec![Value::text("Volk")]),
            props.clone(),
            Value::text("7"),
        ],
    );
    let node4 = Value::Struct(
        tag::NODE,
        vec![
            Value::Int(7),
            Value::List(vec![Value::text("Volk")]),
            props.clone(),
        ],
    );
    let rel5 = Value::Struct(
        tag::RELATIONSHIP,
        vec![
            Value::Int(1),
            Value::Int(7),
            Value::Int(8),
            Value::text("CHILD_OF"),
            Value::map([]),
            Value::text("1"),
            Value::text("7"),
            Value::text("8"),
        ],
    );
    let unbound5 = Value::Struct(
        tag::UNBOUND,
        vec![
            Value::Int(1),
            Value::text("CHILD_OF"),
            Value::map([]),
            Value::text("1"),
        ],
    );
    let record = Value::Struct(
        tag::RECORD,
        vec![Value::List(vec![
            node5.clone(),
            rel5,
            Value::map([("nested", Value::List(vec![node5.clone()]))]),
            Value::Struct(
                0x50,
                vec![Value::List(vec![node5]), Value::List(vec![unbound5])],
            ),
            Value::Int(3),
        ])],
    );
    let out =
        decode(&server_message_to_bolt4(encode(&record)).expect("a record")).expect("decodes");
    let Value::Struct(tag::RECORD, fields) = out else {
        panic!("{out:?}")
    };
    let Value::List(row) = &fields[0] else {
        panic!()
    };
    assert_eq!(row[0], node4);
    assert!(matches!(&row[1], Value::Struct(tag::RELATIONSHIP, f) if f.len() == 5));
    assert_eq!(
        row[2].get("nested"),
        Some(&Value::List(vec![node4.clone()]))
    );
    let Value::Struct(0x50, path) = &row[3] else {
        panic!()
    };
    assert_eq!(path[0], Value::List(vec![node4]));
    assert!(
        matches!(&path[1], Value::List(u) if matches!(&u[0], Value::Struct(tag::UNBOUND, f) if f.len() == 3))
    );
    assert_eq!(row[4], Value::Int(3));
    // Other messages pass as they came, even when not decodable.
    let success = vec![0xB1, tag::SUCCESS, 0xA0];
    assert_eq!(server_message_to_bolt4(success.clone()), Ok(success));
}

#[tokio::test]
async fn messages_are_chunked_and_noops_skipped() {
    let big = vec![7u8; 70_000];
    let mut wire = Vec::new();
    write_message(&mut wire, &big).await.expect("write");
    assert_eq!(&wire[..2], &[0xFF, 0xFF]);
    let mut framed = vec![0, 0, 0, 0]; // two no-op chunks first
    framed.extend(&wire);
    let mut reader = &framed[..];
    assert_eq!(read_message(&mut reader).await.expect("read"), Some(big));
    assert_eq!(read_message(&mut reader).await.expect("read"), None);
}

#[test]
fn discard_goes_upstream_as_pull_and_the_rest_as_it_came() {
    let discard = encode(&Value::Struct(
        tag::DISCARD,
        vec![Value::map([("n", Value::Int(-1)), ("qid", Value::Int(-1))])],
    ));
    let (up, dropped) = request_upstream(discard.clone());
    assert!(dropped);
    assert_eq!(up[1], tag::PULL);
    assert_eq!(up[2..], discard[2..]);
    let commit = vec![0xB0, 0x12];
    assert_eq!(request_upstream(commit.clone()), (commit, false));
}
