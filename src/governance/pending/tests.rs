//! The waiting packet changes fold into what eager changes would have left in the
//! engine, in as many clauses or fewer.

use super::*;
use crate::governance::fact_goals::goals;

fn packet(id: &str, sequence: u64, delivery: &str, priority: i64) -> PacketFact {
    PacketFact {
        message_id: id.into(),
        from: "U:Ox".into(),
        to: "U:Vz".into(),
        delivery: delivery.into(),
        work: "pending".into(),
        priority,
        sequence,
        ..PacketFact::default()
    }
}

/// What the facts view emits for a packet sent at `sequence`.
fn sent(id: &str, sequence: u64) -> Vec<FactChange> {
    vec![
        FactChange::Assert(Fact::Packet(packet(id, sequence, "queued", 5))),
        FactChange::Assert(Fact::DeliveryStatus(id.into(), "queued".into(), 1)),
        FactChange::Assert(Fact::WorkStatus(id.into(), "pending".into(), 1)),
    ]
}

/// What the facts view emits when the packet's delivery goes from `old` to `new`.
fn delivery(id: &str, sequence: u64, old: (&str, i64), new: (&str, i64)) -> Vec<FactChange> {
    vec![
        FactChange::Retract(Fact::Packet(packet(id, sequence, old.0, 5))),
        FactChange::Retract(Fact::DeliveryStatus(id.into(), old.0.into(), old.1)),
        FactChange::Retract(Fact::WorkStatus(id.into(), "pending".into(), 1)),
        FactChange::Assert(Fact::Packet(packet(id, sequence, new.0, 5))),
        FactChange::Assert(Fact::DeliveryStatus(id.into(), new.0.into(), new.1)),
        FactChange::Assert(Fact::WorkStatus(id.into(), "pending".into(), 1)),
    ]
}

/// Offers `change`; whether it now waits.
fn offered(pending: &mut PendingPackets, change: FactChange) -> bool {
    pending.offer(change).is_none()
}

fn offer_all(pending: &mut PendingPackets, changes: &[FactChange]) {
    for change in changes {
        assert!(
            offered(pending, change.clone()),
            "a packet change waits: {change:?}"
        );
    }
}

// ISSUE-15: a packet sent and delivered before anything reads it costs one clause
#[test]
fn a_new_packet_and_its_later_statuses_become_one_base() {
    let mut pending = PendingPackets::default();
    offer_all(&mut pending, &sent("m-1", 7));
    offer_all(
        &mut pending,
        &delivery("m-1", 7, ("queued", 1), ("delivered", 2)),
    );
    assert_eq!(pending.len(), 1);
    let goals = goals(&pending.take());
    assert_eq!(goals.len(), 1, "{goals:?}");
    assert!(
        goals[0].starts_with("assertz(cxp_packet_base('m-1',0,0,7,")
            && goals[0].contains("('delivered'),2,('pending'),1"),
        "{goals:?}"
    );
    assert!(pending.is_empty());
    assert!(pending.take().is_empty(), "nothing waits after a take");
}

// ISSUE-15: a packet the engine holds gets only the status that changed, once
#[test]
fn a_held_packet_gets_its_last_changed_status_appended() {
    let mut pending = PendingPackets::default();
    offer_all(
        &mut pending,
        &delivery("m-1", 7, ("queued", 1), ("delivered", 2)),
    );
    offer_all(
        &mut pending,
        &delivery("m-1", 7, ("delivered", 2), ("acknowledged", 3)),
    );
    let goals = goals(&pending.take());
    assert_eq!(
        goals,
        ["assertz(cxp_status('m-1',0,0,('d'),('acknowledged'),3))"],
        "the work status, asserted back unchanged, is not appended"
    );
    // A status that went and came back appends nothing.
    offer_all(
        &mut pending,
        &delivery("m-1", 7, ("failed", 4), ("queued", 5)),
    );
    offer_all(
        &mut pending,
        &delivery("m-1", 7, ("queued", 5), ("failed", 4)),
    );
    assert!(goals_of(&mut pending).is_empty());
}

fn goals_of(pending: &mut PendingPackets) -> Vec<String> {
    goals(&pending.take())
}

// ISSUE-15: a packet sent again with other fields replaces the base the engine holds
#[test]
fn a_changed_base_is_retracted_and_asserted_again() {
    let mut pending = PendingPackets::default();
    offered(
        &mut pending,
        FactChange::Retract(Fact::Packet(packet("m-1", 7, "queued", 5))),
    );
    offered(
        &mut pending,
        FactChange::Assert(Fact::Packet(packet("m-1", 9, "queued", 8))),
    );
    let goals = goals_of(&mut pending);
    assert_eq!(goals.len(), 2, "{goals:?}");
    assert!(goals[0].starts_with("(retract(cxp_packet_base('m-1'"));
    assert!(goals[1].starts_with("assertz(cxp_packet_base('m-1',0,0,9,"));
    // Retracted and never asserted again: only the retract.
    offered(
        &mut pending,
        FactChange::Retract(Fact::Packet(packet("m-2", 3, "queued", 5))),
    );
    let goals = goals_of(&mut pending);
    assert_eq!(goals.len(), 1, "{goals:?}");
    assert!(goals[0].starts_with("(retract(cxp_packet_base('m-2'"));
}

// ISSUE-18: packets the window hides are dropped, never compiled, and the waiting set
// stays bounded while nothing reads it
#[test]
fn hidden_packets_are_dropped_and_the_waiting_set_stays_bounded() {
    let mut pending = PendingPackets::default();
    let window = 1_000u64;
    let mut most = 0;
    for sequence in 0..50_000u64 {
        offer_all(&mut pending, &sent(&format!("m-{sequence}"), sequence));
        if sequence >= window && sequence % 64 == 0 {
            // The facts view's slide: the floor trails the newest packet by the window.
            assert!(!offered(
                &mut pending,
                FactChange::Assert(Fact::Floor(sequence - window))
            ));
        }
        assert!(
            !pending.must_apply(),
            "a window keeps it under the hard limit"
        );
        most = most.max(pending.len());
    }
    assert!(
        most <= 2 * COMPACT_FROM.max(2 * window as usize),
        "{most} waited at most"
    );
    let changes = pending.take();
    let shown = changes
        .iter()
        .filter(|c| matches!(c, FactChange::Assert(Fact::Packet(_))))
        .count();
    assert!(
        (1_000..=1_064).contains(&shown),
        "{shown} packets left to compile"
    );
    assert!(changes.iter().all(|c| match c {
        FactChange::Assert(Fact::Packet(p)) => p.sequence >= 49_000 - 64,
        _ => true,
    }));
}

// ISSUE-18: without a window nothing is hidden, so the changes are applied past the limit
#[test]
fn without_a_window_the_hard_limit_applies_them() {
    let mut pending = PendingPackets::default();
    let mut applied_at = None;
    for sequence in 0..(HARD_LIMIT as u64 + 10) {
        offer_all(&mut pending, &sent(&format!("m-{sequence}"), sequence));
        if pending.must_apply() {
            applied_at = Some(sequence);
            break;
        }
    }
    assert_eq!(applied_at, Some(HARD_LIMIT as u64));
}

#[test]
fn other_facts_do_not_wait() {
    let mut pending = PendingPackets::default();
    for fact in [
        Fact::VolkStatus("U:Ox".into(), "active".into()),
        Fact::Sends("U:Ox".into(), "s1".into(), 3),
        Fact::Floor(5),
    ] {
        assert!(!offered(&mut pending, FactChange::Assert(fact.clone())));
        assert!(!offered(&mut pending, FactChange::Retract(fact)));
    }
    assert!(pending.is_empty());
    offered(
        &mut pending,
        FactChange::Assert(Fact::Packet(packet("m-1", 1, "queued", 5))),
    );
    pending.clear();
    assert!(pending.is_empty());
}

// ISSUE-15: a packet sent again gets its statuses appended, as eager changes do, even
// when they equal what the engine held (statuses appended before the resend would
// otherwise still be the last ones)
#[test]
fn a_resent_packet_gets_its_statuses_appended() {
    let mut pending = PendingPackets::default();
    let mut resend = vec![
        FactChange::Retract(Fact::Packet(packet("m-1", 7, "queued", 5))),
        FactChange::Retract(Fact::DeliveryStatus("m-1".into(), "queued".into(), 1)),
        FactChange::Retract(Fact::WorkStatus("m-1".into(), "pending".into(), 1)),
    ];
    resend.extend(sent("m-1", 9));
    offer_all(&mut pending, &resend);
    let goals = goals_of(&mut pending);
    assert_eq!(goals.len(), 4, "{goals:?}");
    assert!(goals[0].starts_with("(retract(cxp_packet_base('m-1',0,0,7,"));
    assert!(goals[1].starts_with("assertz(cxp_packet_base('m-1',0,0,9,"));
    assert_eq!(
        &goals[2..],
        [
            "assertz(cxp_status('m-1',0,0,('d'),('queued'),1))",
            "assertz(cxp_status('m-1',0,0,('w'),('pending'),1))"
        ]
    );
}

// ISSUE-15: a read by id takes that packet's changes alone; a hidden one gives none
#[test]
fn one_packet_is_taken_alone_and_a_hidden_one_gives_nothing() {
    let mut pending = PendingPackets::default();
    offer_all(&mut pending, &sent("m-1", 7));
    offer_all(&mut pending, &sent("m-2", 8));
    offer_all(&mut pending, &sent("m-3", 9));
    let one = goals(&pending.take_one("m-2"));
    assert_eq!(one.len(), 1, "{one:?}");
    assert!(one[0].starts_with("assertz(cxp_packet_base('m-2',0,0,8,"));
    assert_eq!(pending.len(), 2);
    assert!(
        pending.take_one("m-2").is_empty(),
        "nothing of it waits now"
    );
    assert!(pending.take_one("m-9").is_empty(), "never seen");
    assert!(!offered(&mut pending, FactChange::Assert(Fact::Floor(8))));
    assert!(pending.take_one("m-1").is_empty(), "hidden by the floor");
    assert_eq!(pending.len(), 1);
}
