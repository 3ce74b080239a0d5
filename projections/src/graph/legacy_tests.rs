//! ISSUE-15: the graph holds its packet and decision windows as records. A store in
//! the earlier form — every packet and decision a node with its relationships, the
//! queues as the ids each brought — still loads, to the view a fold gives, and its
//! next commit replaces that form.

use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{Envelope, Stream};
use serde_json::{json, Value};

use super::legacy::Kept;
use super::*;
use crate::sample::Workload;
use crate::stored::{encode, key};
use crate::testkit::{env, json, packet, Shelf};
use crate::View;

/// The store an earlier version left for `view`: every node and relationship under a
/// slot of its own, the windows as [`Kept`] ids, and a head without `window_records`
/// (and without `threads_follow_packets` unless `follows`).
pub(super) fn earlier_store(view: &GraphView, follows: bool) -> Shelf {
    let shape: Value = serde_json::to_value(view).expect("serializes");
    let mut shelf = Shelf::default();
    let mut slot = 0u64;
    for node in shape["nodes"].as_object().expect("nodes").values() {
        let node: Node = serde_json::from_value(node.clone()).expect("a node");
        let bytes = encode("node", &node).expect("encodes");
        shelf.entries.insert(key(b'n', &slot.to_be_bytes()), bytes);
        slot += 1;
    }
    for rel in shape["relationships"].as_object().expect("rels").values() {
        let rel: Relationship = serde_json::from_value(rel.clone()).expect("a rel");
        let bytes = encode("rel", &rel).expect("encodes");
        shelf.entries.insert(key(b'r', &slot.to_be_bytes()), bytes);
        slot += 1;
    }
    let (packets, decisions) = view.evicted();
    for (kind, queue, first) in [(b'p', "packets", packets), (b'd', "decisions", decisions)] {
        for (ordinal, kept) in (first..).zip(shape[queue].as_array().expect("queue")) {
            let kept: Kept = serde_json::from_value(kept.clone()).expect("kept ids");
            let bytes = encode("kept", &kept).expect("encodes");
            shelf
                .entries
                .insert(key(kind, &ordinal.to_be_bytes()), bytes);
        }
    }
    let checkpoint = view.checkpoint().clone();
    shelf.head = if follows {
        encode("head", &(checkpoint, packets, decisions, slot, true))
    } else {
        encode("head", &(checkpoint, packets, decisions, slot))
    }
    .expect("encodes");
    shelf
}

/// A history that fills both windows and moves packets through every status, with
/// packets naming sessions at the end.
fn history() -> Vec<Envelope> {
    let mut events = Workload::new(5).envelopes(40_000);
    let next = events
        .iter()
        .filter(|e| e.stream == Stream::CxpTraffic)
        .map(|e| e.sequence + 1)
        .max()
        .unwrap_or(0);
    for seq in next..next + 40 {
        let mut p = packet(u128::from(seq) << 64, "t-s", "U:Ox", "U:Vz", 5);
        p.metadata = Json(json!({"session_id": format!("s-{}", seq % 3)}));
        events.push(env(seq, 1_000_000, PacketSent { packet: p }));
    }
    events
}

#[test]
fn a_store_of_the_earlier_form_loads_as_the_fold_and_is_replaced_at_its_next_commit() {
    let events = history();
    let split = events.len() - 20;
    let mut folded: GraphView = crate::fold(&events[..split]);
    let (packets, decisions) = folded.evicted();
    assert!(
        packets > 0 && decisions == 0,
        "{packets} {decisions} evicted"
    );
    let mut shelf = earlier_store(&folded, true);
    let mut loaded: GraphView = shelf.restore();
    assert!(
        json(&loaded) == json(&folded),
        "loaded differs from the fold"
    );
    assert_eq!(loaded.node_count(), folded.node_count());
    assert_eq!(loaded.relationship_count(), folded.relationship_count());

    // Its next commit, though not asked to, writes the view whole in this form: no
    // packet or decision is a node entry any more.
    assert!(loaded.clone().take_changes(false).expect("encodes").full);
    shelf.commit(&mut loaded, false, usize::MAX);
    for (key, value) in &shelf.entries {
        if key[0] == b'n' {
            let node: Node = crate::stored::decode("node", value).expect("a node");
            assert!(!matches!(
                node.label,
                NodeLabel::Packet | NodeLabel::Decision
            ));
        }
    }
    let mut again: GraphView = shelf.restore();
    assert_eq!(
        again, folded,
        "indexes and counts rebuilt as a fold has them"
    );

    // And it folds on as the fold does, sessions and evictions included.
    for e in &events[split..] {
        folded.apply(e);
        again.apply(e);
    }
    assert!(json(&again) == json(&folded), "folds apart after loading");
    assert!(folded.node("session:s-1").is_some());
}

#[test]
fn a_kept_packet_without_its_node_is_a_decode_error_not_a_smaller_view() {
    let folded: GraphView = crate::fold(&history()[..2_000]);
    let mut shelf = earlier_store(&folded, true);
    let packet_node = shelf
        .entries
        .iter()
        .find(|(k, v)| {
            k[0] == b'n'
                && crate::stored::decode::<Node>("node", v)
                    .expect("a node")
                    .label
                    == NodeLabel::Packet
        })
        .map(|(k, _)| k.clone())
        .expect("a packet node");
    shelf.entries.remove(&packet_node);
    let entries = shelf.entries.into_iter().collect();
    let err = GraphView::from_stored(&shelf.head, entries).expect_err("loads");
    assert!(err.to_string().contains("is missing"), "{err}");
}

// The windows' nodes and relationships are written out when read: each one listed is
// found by its id with the same content, a query from one packet lists just its own,
// and ids the view never wrote name nothing.
#[test]
fn window_nodes_and_relationships_are_found_by_id_as_listed() {
    let view: GraphView = crate::fold(&history()[..3_000]);
    let nodes: Vec<Node> = view
        .nodes(&NodeQuery::default())
        .map(|n| n.into_owned())
        .collect();
    let rels: Vec<Relationship> = view
        .relationships(&RelQuery::default())
        .map(|r| r.into_owned())
        .collect();
    assert_eq!(
        (nodes.len(), rels.len()),
        (view.node_count(), view.relationship_count())
    );
    for n in &nodes {
        assert_eq!(view.node(&n.id).as_deref(), Some(n), "{}", n.id);
    }
    for r in &rels {
        assert_eq!(view.relationship(&r.id).as_deref(), Some(r), "{}", r.id);
    }
    let packet = nodes
        .iter()
        .find(|n| n.label == NodeLabel::Packet)
        .expect("a packet");
    let from_it: Vec<&Relationship> = rels.iter().filter(|r| r.from == packet.id).collect();
    let queried: Vec<Relationship> = view
        .relationships(&RelQuery {
            from: Some(packet.id.clone()),
            ..RelQuery::default()
        })
        .map(|r| r.into_owned())
        .collect();
    assert_eq!(queried.iter().collect::<Vec<_>>(), from_it);
    assert_eq!(from_it.len(), 3, "SENT_BY, SENT_TO, IN_THREAD");
    let upper = packet.id.to_uppercase().replacen("PACKET", "packet", 1);
    assert!(view.node(&upper).is_none(), "{upper}");
    let sent_by = &from_it[0].id;
    assert!(view.relationship(&format!("{sent_by}x")).is_none());
    assert!(view.relationship("SENT_BY:packet:").is_none());
    assert!(view.node("decision:not-a-uuid").is_none());
}
