use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::cxp_traffic::{
    PacketAcknowledged, PacketSent, ThreadClosed, WorkStatusChanged,
};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::session::{SessionClosed, SessionOpened};
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use orchestrata_schemas::events::volk_lifecycle::{VolkDeregistered, VolkRegistered, VolkSpawned};
use orchestrata_schemas::events::Envelope;
use serde_json::json;
use uuid::Uuid;

use super::*;
use crate::testkit::{env, json, packet};
use crate::{fold, View};

fn registered(seq: u64, alias: &str, parent: Option<&str>, session: Option<&str>) -> Envelope {
    env(
        seq,
        seq as i64,
        VolkRegistered {
            alias: alias.into(),
            capabilities: vec!["code".into()],
            parent: parent.map(Into::into),
            protocols: vec!["cxp".into()],
            session_id: session.map(Into::into),
            metadata: Json(json!({"team": "core"})),
        },
    )
}

fn sent(seq: u64, id: u128, thread: &str, from: &str, to: &str) -> Envelope {
    env(
        seq,
        seq as i64,
        PacketSent {
            packet: packet(id, thread, from, to, 5),
        },
    )
}

fn decided(seq: u64, id: u128, kind: SubjectKind, subject: &str) -> Envelope {
    env(
        seq,
        seq as i64,
        DecisionRecorded {
            decision_id: Uuid::from_u128(id),
            subject_kind: kind,
            subject: subject.into(),
            action: "cxp.send".into(),
            resource: "U:Vz".into(),
            result: DecisionResult::Allow,
            rule_trace: vec!["cxp_send".into()],
            articles_applied: vec![],
            policy_hash: "h".into(),
            latency_us: 10,
            query: None,
            dry_run: false,
            reason: None,
        },
    )
}

fn ids<'a>(it: impl Iterator<Item = std::borrow::Cow<'a, Node>>) -> Vec<String> {
    it.map(|n| n.id.clone()).collect()
}

// REQ-014-156 REQ-014-158 REQ-014-159
#[test]
fn volks_packets_threads_sessions_and_decisions_become_nodes_and_relationships() {
    let mut p = packet(7, "t-1", "U:Ox", "U:Vz", 5);
    p.metadata = Json(json!({"session_id": "s-1"}));
    let events = vec![
        registered(0, "U:Ox", None, Some("s-1")),
        registered(1, "U:Vz", Some("U:Ox"), None),
        env(2, 2, PacketSent { packet: p }),
        env(
            0,
            3,
            SessionOpened {
                session_id: "s-1".into(),
                portfolio_id: "checkout".into(),
                goals: vec!["ship".into()],
                opened_by: "operator".into(),
            },
        ),
        decided(0, 99, SubjectKind::Volk, "U:Ox"),
        decided(1, 98, SubjectKind::Client, "dashboard"),
    ];
    let view: GraphView = fold(&events);
    let volks = ids(view.nodes(&NodeQuery {
        label: Some(NodeLabel::Volk),
        ..NodeQuery::default()
    }));
    assert_eq!(volks, ["volk:U:Ox", "volk:U:Vz"]);
    let ox = view.node("volk:U:Ox").expect("U:Ox");
    assert_eq!(ox.properties["capabilities"], json!(["code"]));
    assert_eq!(ox.properties["status"], json!("registered"));
    assert_eq!(ox.properties["metadata"], json!({"team": "core"}));
    let packet_id = format!("packet:{}", Uuid::from_u128(7));
    let packet = view.node(&packet_id).expect("packet node");
    assert_eq!(packet.label, NodeLabel::Packet);
    assert_eq!(packet.properties["from_agent"], json!("U:Ox"));
    let session = view.node("session:s-1").expect("session node");
    assert_eq!(session.properties["portfolio_id"], json!("checkout"));
    assert_eq!(session.properties["status"], json!("open"));
    assert_eq!(
        view.node("thread:t-1").expect("thread").properties["message_count"],
        json!(1)
    );
    for (t, from, to) in [
        (RelType::SentBy, packet_id.as_str(), "volk:U:Ox"),
        (RelType::SentTo, packet_id.as_str(), "volk:U:Vz"),
        (RelType::SentTo, "volk:U:Ox", "volk:U:Vz"),
        (RelType::InThread, packet_id.as_str(), "thread:t-1"),
        (RelType::InSession, packet_id.as_str(), "session:s-1"),
        (RelType::InSession, "volk:U:Ox", "session:s-1"),
        (RelType::ChildOf, "volk:U:Vz", "volk:U:Ox"),
    ] {
        let rel = view
            .relationship(&t.rel_id(from, to))
            .unwrap_or_else(|| panic!("{t} {from}->{to}"));
        assert_eq!((rel.from.as_str(), rel.to.as_str()), (from, to));
    }
    let about = RelQuery {
        rel_type: Some(RelType::DecidedAbout),
        ..RelQuery::default()
    };
    let decided: Vec<_> = view.relationships(&about).collect();
    assert_eq!(
        decided.len(),
        1,
        "client decisions have no Volk to point at"
    );
    assert_eq!(decided[0].to, "volk:U:Ox");
    assert_eq!(
        view.relationship(&RelType::SentTo.rel_id("volk:U:Ox", "volk:U:Vz"))
            .map(|r| r.properties["packets"].clone()),
        Some(json!(1))
    );
    // Relationship JSON carries source, target, type and properties (REQ-014-159).
    let rel = serde_json::to_value(&decided[0]).expect("json");
    assert_eq!(rel["type"], "DECIDED_ABOUT");
    assert!(rel["from"].is_string() && rel["to"].is_string() && rel["properties"].is_object());
}

// REQ-014-160
#[test]
fn nodes_and_relationships_filter_by_label_type_endpoints_and_property_values() {
    let events = vec![
        registered(0, "U:Ox", None, None),
        registered(1, "U:Vz", None, None),
        env(
            2,
            2,
            VolkDeregistered {
                alias: "U:Vz".into(),
                reason: "done".into(),
            },
        ),
        sent(0, 1, "t-1", "U:Ox", "U:Vz"),
        sent(1, 2, "t-1", "U:Ox", "U:Vz"),
        sent(2, 3, "t-2", "U:Vz", "U:Qa"),
    ];
    let view: GraphView = fold(&events);
    let mut props = Properties::new();
    props.insert("status".into(), json!("deregistered"));
    let gone = ids(view.nodes(&NodeQuery {
        label: Some(NodeLabel::Volk),
        properties: props,
    }));
    assert_eq!(gone, ["volk:U:Vz"]);
    let mut props = Properties::new();
    props.insert("thread_id".into(), json!("t-1"));
    assert_eq!(
        view.nodes(&NodeQuery {
            label: Some(NodeLabel::Packet),
            properties: props
        })
        .count(),
        2
    );
    let to_vz = RelQuery {
        rel_type: Some(RelType::SentTo),
        to: Some("volk:U:Vz".into()),
        ..RelQuery::default()
    };
    assert_eq!(
        view.relationships(&to_vz).count(),
        3,
        "2 packets + 1 Volk pair"
    );
    let mut props = Properties::new();
    props.insert("packets".into(), json!(2));
    let busy = RelQuery {
        from: Some("volk:U:Ox".into()),
        properties: props,
        ..RelQuery::default()
    };
    assert_eq!(view.relationships(&busy).count(), 1);
    assert_eq!(
        view.nodes(&NodeQuery {
            label: Some(NodeLabel::Decision),
            ..NodeQuery::default()
        })
        .count(),
        0
    );
}

// REQ-014-156 REQ-004-INTG-011
#[test]
fn packet_thread_and_session_updates_change_properties_and_repeats_change_nothing() {
    let id = Uuid::from_u128(1);
    let events = vec![
        sent(0, 1, "t-1", "U:Ox", "U:Vz"),
        env(
            1,
            1,
            PacketAcknowledged {
                message_id: id,
                thread_id: "t-1".into(),
                acknowledged_by: "U:Vz".into(),
            },
        ),
        env(
            2,
            2,
            WorkStatusChanged {
                message_id: id,
                thread_id: "t-1".into(),
                old: WorkStatus::Pending,
                new: WorkStatus::InProgress,
                changed_by: "U:Vz".into(),
                assigned_to: Some("U:Vz".into()),
                resolution: None,
                notes: None,
            },
        ),
        env(
            3,
            3,
            ThreadClosed {
                thread_id: "t-1".into(),
                closed_by: "U:Ox".into(),
                reason: None,
            },
        ),
        env(
            0,
            4,
            SessionClosed {
                session_id: "s-9".into(),
                summary: "done".into(),
                carryover: vec![],
            },
        ),
    ];
    let mut view: GraphView = fold(&events);
    let node = view.node(&format!("packet:{id}")).expect("packet");
    assert_eq!(node.properties["delivery_status"], json!("acknowledged"));
    assert_eq!(node.properties["work_status"], json!("in_progress"));
    assert_eq!(node.properties["assigned_to"], json!("U:Vz"));
    assert_eq!(
        view.node("thread:t-1").expect("thread").properties["status"],
        json!("resolved")
    );
    assert_eq!(
        view.node("session:s-9").expect("session").properties["status"],
        json!("closed")
    );
    let before = json(&view);
    for e in &events {
        assert!(!view.apply(e), "a repeat is ignored");
    }
    assert_eq!(json(&view), before);
}

// REQ-014-156
#[test]
fn spawned_volks_are_children_of_their_parent() {
    let events = vec![env(
        0,
        0,
        VolkSpawned {
            alias: "U:Jr1".into(),
            parent: "U:Ox".into(),
            driver: "cli".into(),
            purpose: "lint".into(),
            lifespan_ms: None,
        },
    )];
    let view: GraphView = fold(&events);
    assert!(
        view.node("volk:U:Ox").is_some(),
        "the parent exists as a node"
    );
    let child = view
        .relationship(&RelType::ChildOf.rel_id("volk:U:Jr1", "volk:U:Ox"))
        .expect("CHILD_OF");
    assert_eq!(child.rel_type, RelType::ChildOf);
    assert_eq!(
        view.node("volk:U:Jr1").expect("junior").properties["driver"],
        json!("cli")
    );
}

// ISSUE-18: bounded memory — the graph keeps a window of packets and decisions.
#[test]
fn packets_and_decisions_beyond_the_cap_evict_the_oldest_with_their_relationships() {
    let extra = 3;
    let mut view = GraphView::default();
    for i in 0..(MAX_PACKETS + extra) as u64 {
        view.apply(&sent(i, u128::from(i) + 1, "t-1", "U:Ox", "U:Vz"));
    }
    for i in 0..(MAX_DECISIONS + extra) as u64 {
        view.apply(&decided(i, u128::from(i) + 1, SubjectKind::Volk, "U:Ox"));
    }
    let count = |label| {
        view.nodes(&NodeQuery {
            label: Some(label),
            ..NodeQuery::default()
        })
        .count()
    };
    assert_eq!(count(NodeLabel::Packet), MAX_PACKETS);
    assert_eq!(count(NodeLabel::Decision), MAX_DECISIONS);
    assert_eq!(view.evicted(), (extra as u64, extra as u64));
    let first = format!("packet:{}", Uuid::from_u128(1));
    assert!(view.node(&first).is_none(), "the oldest packet is gone");
    assert!(view
        .relationship(&RelType::SentBy.rel_id(&first, "volk:U:Ox"))
        .is_none());
    let newest = format!("packet:{}", Uuid::from_u128((MAX_PACKETS + extra) as u128));
    assert!(view.node(&newest).is_some());
    assert!(view
        .relationship(&RelType::InThread.rel_id(&newest, "thread:t-1"))
        .is_some());
    assert!(view
        .node(&format!("decision:{}", Uuid::from_u128(1)))
        .is_none());
    // The aggregate Volk edge keeps counting every packet ever sent.
    assert_eq!(
        view.relationship(&RelType::SentTo.rel_id("volk:U:Ox", "volk:U:Vz"))
            .map(|r| r.properties["packets"].clone()),
        Some(json!(MAX_PACKETS + extra))
    );
    assert_eq!(
        view.relationships(&RelQuery {
            rel_type: Some(RelType::DecidedAbout),
            ..RelQuery::default()
        })
        .count(),
        MAX_DECISIONS
    );
}

// REQ-014-156
#[test]
fn labels_and_types_parse_as_written_in_cypher_only() {
    for l in NodeLabel::ALL {
        assert_eq!(NodeLabel::parse(l.as_str()), Some(l));
    }
    for t in RelType::ALL {
        assert_eq!(RelType::parse(t.as_str()), Some(t));
        assert_eq!(serde_json::to_value(t).expect("json"), json!(t.as_str()));
    }
    assert_eq!(NodeLabel::parse("volk"), None);
    assert_eq!(RelType::parse("sent_to"), None);
    assert_eq!(GraphView::NAME.as_str(), "graph");
}

// ISSUE-18 ISSUE-15: commit cost follows the work — packets churning through the
// bounded window (each in a thread of its own) between two commits leave nothing to
// write once they are gone: the view never asks for an early commit however long the
// churn (a live server committed the graph every ~12 s under load for this alone), and
// the commit that follows is incremental, writing the window it holds and removing
// what the last commit stored — never every packet that passed through.
#[test]
fn churn_between_commits_leaves_nothing_to_write_for_what_came_and_went() {
    let apply = |view: &mut GraphView, from: u64, n: u64| -> u64 {
        let mut asked = 0;
        for seq in from..from + n {
            let id = u128::from(seq);
            view.apply(&sent(seq, id, &format!("t-{seq}"), "U:Ox", "U:Vz"));
            asked += u64::from(view.needs_commit());
        }
        asked
    };
    let mut view = GraphView::default();
    let mut shelf = crate::testkit::Shelf::default();
    // A history: the window full of packets, committed once.
    apply(&mut view, 0, 12_000);
    let stored = view.take_changes(true).expect("encodes").entries.len();
    shelf.commit(&mut view, true, usize::MAX);
    // Then 120,000 packets — twelve windows — with no commit.
    assert_eq!(apply(&mut view, 12_000, 120_000), 0, "asked for a commit");
    let changes = view.clone().take_changes(false).expect("encodes");
    assert!(!changes.full, "the record of changes was lost");
    let live = view.node_count() + view.relationship_count();
    let written = changes.entries.iter().filter(|(_, v)| v.is_some()).count();
    let removed = changes.entries.len() - written;
    // The live window's nodes and relationships, its queue entries, plus the Volk
    // pair edge; removals: what the history's commit stored and the window let go.
    assert!(
        written <= live + MAX_PACKETS + 1,
        "{written} written, {live} live"
    );
    assert!(removed <= stored, "{removed} removed, {stored} stored");
    assert!(
        written + removed < 3 * stored,
        "{written} + {removed} entries"
    );
    // And what it stores restores the view it holds.
    shelf.commit(&mut view, false, usize::MAX);
    let restored = crate::testkit::json(&shelf.restore::<GraphView>());
    assert!(
        restored == crate::testkit::json(&view),
        "the restored graph differs"
    );
}

// REQ-014-156: knowledge.nodes and knowledge.relationships list in id order; the view
// holds them hashed, so every reader that promises the order must sort
#[test]
fn readers_list_nodes_and_relationships_in_id_order_whatever_the_hash_order() {
    let mut events = vec![registered(0, "U:Ox", None, None)];
    for i in 1..200u64 {
        let (from, to) = if i % 2 == 0 {
            ("U:Ox", "U:Vz")
        } else {
            ("U:Vz", "U:Qa")
        };
        events.push(sent(
            i,
            u128::from(i) * 7_919,
            &format!("t-{}", i % 13),
            from,
            to,
        ));
        events.push(decided(i, u128::from(i) * 104_729, SubjectKind::Volk, from));
    }
    let a: GraphView = fold(&events);
    let b: GraphView = fold(&events);

    let nodes: Vec<String> = ids(a.nodes(&NodeQuery::default()));
    assert!(nodes.len() > 400, "{} nodes", nodes.len());
    assert!(
        nodes.windows(2).all(|w| w[0] < w[1]),
        "nodes not in id order"
    );
    let rels: Vec<String> = a
        .relationships(&RelQuery::default())
        .map(|r| r.id.clone())
        .collect();
    assert!(rels.len() > 600, "{} relationships", rels.len());
    assert!(
        rels.windows(2).all(|w| w[0] < w[1]),
        "relationships not in id order"
    );
    // Two folds hash with different seeds; what they print is the same.
    assert_eq!(
        serde_json::to_string(&a).expect("JSON"),
        serde_json::to_string(&b).expect("JSON")
    );
}
