//! ISSUE-18: the graph's thread nodes follow its packet window, so its memory does not
//! grow with the number of conversations ever held.

use orchestrata_schemas::events::cxp_traffic::{PacketSent, ThreadClosed, ThreadOpened};
use orchestrata_schemas::events::Envelope;
use serde_json::json;

use super::*;
use crate::testkit::{env, json, packet, Shelf};
use crate::View;

fn sent(seq: u64, thread: &str) -> Envelope {
    env(
        seq,
        seq as i64,
        PacketSent {
            packet: packet(u128::from(seq) + 1, thread, "U:Ox", "U:Vz", 5),
        },
    )
}

fn threads(view: &GraphView) -> usize {
    view.nodes(&NodeQuery {
        label: Some(NodeLabel::Thread),
        ..NodeQuery::default()
    })
    .count()
}

fn count(view: &GraphView, thread: &str) -> Option<serde_json::Value> {
    view.node(&format!("thread:{thread}"))
        .map(|n| n.properties["message_count"].clone())
}

#[test]
fn a_thread_leaves_with_its_last_packet_and_comes_back_counting_afresh() {
    let mut view = GraphView::default();
    view.apply(&sent(0, "t-old"));
    view.apply(&sent(1, "t-kept"));
    view.apply(&sent(2, "t-old"));
    let mut seq = 3;
    // The window fills with packets of one busy thread; the first packet goes.
    while seq < MAX_PACKETS as u64 + 1 {
        view.apply(&sent(seq, "t-busy"));
        seq += 1;
    }
    assert_eq!(
        count(&view, "t-old"),
        Some(json!(2)),
        "one of its packets is kept"
    );
    // t-kept is refreshed before its only packet leaves.
    view.apply(&sent(seq, "t-kept"));
    seq += 1;
    view.apply(&sent(seq, "t-busy"));
    seq += 1;
    assert_eq!(
        count(&view, "t-old"),
        None,
        "its last packet left, so did it"
    );
    assert_eq!(count(&view, "t-kept"), Some(json!(2)));
    assert!(view
        .relationship(&RelType::InThread.rel_id(
            &format!("packet:{}", uuid::Uuid::from_u128(3)),
            "thread:t-old"
        ))
        .is_none());
    // A status change of a thread no longer held changes nothing.
    let closed = env(
        seq,
        seq as i64,
        ThreadClosed {
            thread_id: "t-old".into(),
            closed_by: "U:Ox".into(),
            reason: None,
        },
    );
    seq += 1;
    assert!(view.apply(&closed));
    assert_eq!(count(&view, "t-old"), None);
    // A later packet brings it back, counted from there.
    view.apply(&sent(seq, "t-old"));
    assert_eq!(count(&view, "t-old"), Some(json!(1)));
    assert_eq!(
        view.node("thread:t-old")
            .map(|n| n.properties["status"].clone()),
        Some(json!("active"))
    );
}

#[test]
fn a_thread_per_packet_holds_at_most_the_window_of_threads() {
    let mut view = GraphView::default();
    let n = 3 * MAX_PACKETS as u64;
    for seq in 0..n {
        view.apply(&sent(seq, &format!("t-{seq}")));
    }
    assert_eq!(threads(&view), MAX_PACKETS);
    assert!(view.node("thread:t-0").is_none());
    assert!(view.node(&format!("thread:t-{}", n - 1)).is_some());
    // Every kept packet's thread is there: no relationship points at nothing.
    let rels = RelQuery {
        rel_type: Some(RelType::InThread),
        ..RelQuery::default()
    };
    assert_eq!(view.relationships(&rels).count(), MAX_PACKETS);
    assert!(view
        .relationships(&rels)
        .all(|r| view.node(&r.to).is_some()));
}

#[test]
fn a_restored_graph_lets_threads_go_as_the_folded_one_does() {
    let mut folded = GraphView::default();
    let mut shelf = Shelf::default();
    let mut seq = 0;
    // Threads of two packets each, half of them across the first commit.
    while seq < MAX_PACKETS as u64 + 500 {
        folded.apply(&sent(seq, &format!("t-{}", seq / 2)));
        seq += 1;
        if seq == 7_001 {
            shelf.commit(&mut folded, true, usize::MAX);
        }
    }
    shelf.commit(&mut folded, false, usize::MAX);
    let mut restored: GraphView = shelf.restore();
    assert_eq!(json(&restored), json(&folded));
    assert_eq!(restored, folded, "thread counts are rebuilt on restore");
    while seq < 2 * MAX_PACKETS as u64 + 999 {
        let e = sent(seq, &format!("t-{}", seq / 2));
        folded.apply(&e);
        restored.apply(&e);
        seq += 1;
    }
    assert_eq!(json(&restored), json(&folded));
    assert!(threads(&folded) <= MAX_PACKETS / 2 + 1);
    shelf.commit(&mut restored, false, usize::MAX);
    assert_eq!(json(&shelf.restore::<GraphView>()), json(&folded));
}

#[test]
fn a_store_from_before_lets_its_idle_threads_go_when_loaded() {
    let mut view = GraphView::default();
    let opened = env(
        0,
        0,
        ThreadOpened {
            thread_id: "t-bare".into(),
            subject: "s".into(),
            opened_by: "U:Ox".into(),
            participants: vec!["U:Ox".into()],
        },
    );
    view.apply(&opened);
    view.apply(&sent(1, "t-1"));
    let mut shelf = Shelf::default();
    shelf.commit(&mut view, true, usize::MAX);
    // This version keeps a thread opened without packets.
    assert!(shelf.restore::<GraphView>().node("thread:t-bare").is_some());
    // The store an earlier version wrote (no `threads_follow_packets`).
    let mut shelf = super::legacy_tests::earlier_store(&view, false);
    let mut old: GraphView = shelf.restore();
    assert!(old.node("thread:t-bare").is_none(), "idle thread kept");
    assert!(old.node("thread:t-1").is_some());
    // Its next commit removes the thread from the store too.
    shelf.commit(&mut old, false, usize::MAX);
    let again: GraphView = shelf.restore();
    assert!(again.node("thread:t-bare").is_none());
    assert_eq!(json(&again), json(&old));
}
