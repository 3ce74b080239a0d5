use chrono::Utc;
use orchestrata_projections::{fold, GraphView, View};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::{PacketAcknowledged, PacketSent};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::{Envelope, Event, EventRecord};
use uuid::Uuid;

use super::*;

fn env(sequence: u64, event: impl Into<Event>) -> Envelope {
    let event = event.into();
    Envelope {
        stream: event.stream(),
        sequence,
        epoch: "test".into(),
        record: EventRecord::new("test", "k", event, Utc::now()),
    }
}

fn sent(sequence: u64, id: u128) -> Envelope {
    sent_in(sequence, id, "t-1")
}

fn sent_in(sequence: u64, id: u128, thread: &str) -> Envelope {
    env(
        sequence,
        PacketSent {
            packet: Packet {
                message_id: Uuid::from_u128(id),
                from_agent: "U:Ox".into(),
                to_agent: "U:Vz".into(),
                thread_id: thread.into(),
                subject: "review".into(),
                payload: PacketPayload::Json(json!({}).into()),
                created_at: Utc::now(),
                priority: 5,
                delivery_status: DeliveryStatus::Queued,
                work_status: WorkStatus::Pending,
                protocol_version: "1.0.0".into(),
                in_reply_to: None,
                metadata: Json(json!({})),
            },
        },
    )
}

fn registered() -> Envelope {
    env(
        0,
        VolkRegistered {
            alias: "U:Ox".into(),
            capabilities: vec!["code".into(), "review".into()],
            parent: None,
            protocols: vec![],
            session_id: None,
            metadata: Json(json!({"team": "core"})),
        },
    )
}

// REQ-014-163
#[test]
fn statements_merge_nodes_by_label_and_id_then_relationships_by_endpoints() {
    let view: GraphView = fold(&[registered(), sent(0, 1)]);
    let written = Written::default();
    let changes = diff(&view, &written);
    assert_eq!(changes.nodes.len(), 4, "2 Volks, a thread and a packet");
    let s = statements(&changes, BATCH_ROWS);
    let texts: Vec<&str> = s.iter().map(|s| s.cypher.as_str()).collect();
    assert_eq!(
        texts[0],
        "UNWIND $rows AS row MERGE (n:Volk {id: row.id}) SET n += row.properties"
    );
    assert!(texts.contains(
        &"UNWIND $rows AS row MATCH (a:Packet {id: row.from}) MATCH (b:Volk {id: row.to}) \
          MERGE (a)-[r:SENT_BY {id: row.id}]->(b) SET r += row.properties"
    ));
    assert!(texts.contains(&merge_rels(RelType::SentTo, NodeLabel::Volk, NodeLabel::Volk).as_str()));
    assert!(texts
        .contains(&merge_rels(RelType::InThread, NodeLabel::Packet, NodeLabel::Thread).as_str()));
    let first_rel = texts
        .iter()
        .position(|t| t.contains("MERGE (a)"))
        .expect("rels");
    assert!(
        texts[..first_rel].iter().all(|t| t.contains("MERGE (n:")),
        "every node is merged before any relationship: {texts:?}"
    );
    // Volk rows: properties flattened for Neo4j (lists of strings stay, maps become
    // JSON text), with the id as a property too.
    let volks = &s[0].params["rows"];
    let ox = volks
        .as_array()
        .and_then(|rows| rows.iter().find(|r| r["id"] == "volk:U:Ox"))
        .expect("U:Ox row");
    assert_eq!(ox["properties"]["capabilities"], json!(["code", "review"]));
    assert_eq!(ox["properties"]["metadata"], json!("{\"team\":\"core\"}"));
    assert_eq!(ox["properties"]["id"], json!("volk:U:Ox"));
}

// REQ-014-163
#[test]
fn only_what_changed_since_the_last_write_is_written_again() {
    let mut view: GraphView = fold(&[registered(), sent(0, 1)]);
    let mut written = Written::default();
    let first = diff(&view, &written);
    written.commit(&first);
    assert!(diff(&view, &written).is_empty(), "idempotent: nothing new");
    view.apply(&env(
        1,
        PacketAcknowledged {
            message_id: Uuid::from_u128(1),
            thread_id: "t-1".into(),
            acknowledged_by: "U:Vz".into(),
        },
    ));
    let next = diff(&view, &written);
    assert_eq!(next.nodes.len(), 1);
    assert_eq!(next.nodes[0].id, format!("packet:{}", Uuid::from_u128(1)));
    assert!(next.rels.is_empty());
    let s = statements(&next, BATCH_ROWS);
    assert_eq!(s.len(), 1);
    assert_eq!(s[0].cypher, merge_nodes(NodeLabel::Packet));
    assert_eq!(
        s[0].params["rows"][0]["properties"]["delivery_status"],
        "acknowledged"
    );
}

// REQ-014-163
#[test]
fn evicted_nodes_are_detach_deleted_and_rows_are_batched() {
    let mut view = GraphView::default();
    let n = orchestrata_projections::graph::MAX_PACKETS as u64 + 2;
    for i in 0..n {
        view.apply(&sent(i, u128::from(i) + 1));
    }
    let mut written = Written::default();
    // Pretend the two evicted packets had been written before.
    let old: GraphView = fold(&[sent(0, 1), sent(1, 2)]);
    written.commit(&diff(&old, &Written::default()));
    let changes = diff(&view, &written);
    assert_eq!(
        changes.removed_nodes,
        [
            format!("packet:{}", Uuid::from_u128(1)),
            format!("packet:{}", Uuid::from_u128(2))
        ]
    );
    let s = statements(&changes, 1000);
    let deletes: Vec<_> = s.iter().filter(|s| s.cypher.contains("DELETE")).collect();
    assert_eq!(
        deletes.len(),
        4,
        "SENT_BY, SENT_TO and IN_THREAD of the evicted packets, then the packets"
    );
    let last = s.last().expect("statements");
    assert_eq!(
        last.cypher,
        "UNWIND $ids AS id MATCH (n:Packet {id: id}) DETACH DELETE n"
    );
    assert_eq!(last.params["ids"].as_array().map(Vec::len), Some(2));
    // 10,000 packet rows at 1,000 per statement.
    let packet_batches = s
        .iter()
        .filter(|s| s.cypher == merge_nodes(NodeLabel::Packet))
        .count();
    assert_eq!(packet_batches, 10);
}

// ISSUE-18: a thread that left the graph with its last packet leaves
// Neo4j too, so what the sink has written stays bounded like the view.
#[test]
fn a_thread_that_left_the_window_is_detach_deleted() {
    let mut view = GraphView::default();
    view.apply(&sent_in(0, 1, "t-old"));
    let n = orchestrata_projections::graph::MAX_PACKETS as u64 + 1;
    for i in 1..n {
        view.apply(&sent(i, u128::from(i) + 1));
    }
    let mut written = Written::default();
    let old: GraphView = fold(&[sent_in(0, 1, "t-old")]);
    written.commit(&diff(&old, &Written::default()));
    let changes = diff(&view, &written);
    assert!(changes.removed_nodes.contains(&"thread:t-old".to_owned()));
    let s = statements(&changes, 1000);
    let thread_delete = s
        .iter()
        .find(|s| s.cypher == "UNWIND $ids AS id MATCH (n:Thread {id: id}) DETACH DELETE n")
        .expect("threads that left are deleted");
    assert_eq!(thread_delete.params["ids"], json!(["thread:t-old"]));
    written.commit(&changes);
    assert!(diff(&view, &written).is_empty());
    assert!(written.counts().0 <= 2 * orchestrata_projections::graph::MAX_PACKETS + 3);
}

// REQ-014-163
#[test]
fn constraints_and_neo4j_values() {
    let c = constraints();
    assert_eq!(c.len(), 5);
    assert_eq!(
        c[0].cypher,
        "CREATE CONSTRAINT orchestrata_volk_id IF NOT EXISTS FOR (n:Volk) REQUIRE n.id IS UNIQUE"
    );
    let mut p = Properties::new();
    p.insert("mixed".into(), json!([1, "a"]));
    p.insert("nested".into(), json!([[1]]));
    p.insert("nums".into(), json!([1, 2]));
    p.insert("none".into(), json!(null));
    let out = neo4j_properties(&p);
    assert_eq!(out["mixed"], json!("[1,\"a\"]"));
    assert_eq!(out["nested"], json!("[[1]]"));
    assert_eq!(out["nums"], json!([1, 2]));
    assert_eq!(out["none"], json!(null));
    assert_eq!(label_of("session:s-1"), Some(NodeLabel::Session));
    assert_eq!(label_of("nothing"), None);
}
