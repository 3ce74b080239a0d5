//! The packet index and the facts filters read: unit cases and a property test over
//! random histories and random replay orders.

use std::collections::BTreeSet;

use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::cxp_traffic::{
    PacketAcknowledged, PacketDelivered, PacketFailed, PacketRetried, PacketSent, PriorityChanged,
    WorkStatusChanged,
};
use orchestrata_schemas::events::{Envelope, Event};
use proptest::prelude::*;
use uuid::Uuid;

use super::{facts_of, PacketIndex};
use crate::testkit::{env, json, packet};
use crate::View;

pub(super) const VOLKS: [&str; 5] = ["U:Aa", "U:Bb", "U:Cc", "U:Dd", "U:Ee"];

pub(super) fn sent(seq: u64, id: u128, from: &str, to: &str) -> Envelope {
    let p = packet(id, "t-1", from, to, 3);
    env(seq, seq as i64, PacketSent { packet: p })
}

/// A transition of packet `id` of kind `kind` (0..6) naming `actor` where it names one.
pub(super) fn transition(seq: u64, kind: u8, id: u128, actor: &str) -> Envelope {
    let message_id = Uuid::from_u128(id);
    let thread_id = "t-1".to_owned();
    let event: Event = match kind % 6 {
        0 => PacketDelivered {
            message_id,
            thread_id,
            to_agent: actor.into(),
        }
        .into(),
        1 => PacketAcknowledged {
            message_id,
            thread_id,
            acknowledged_by: actor.into(),
        }
        .into(),
        2 => PacketFailed {
            message_id,
            thread_id,
            reason: "down".into(),
            retry_count: 1,
            will_retry: true,
        }
        .into(),
        3 => PacketRetried {
            message_id,
            thread_id,
            attempt: 1,
        }
        .into(),
        4 => WorkStatusChanged {
            message_id,
            thread_id,
            old: WorkStatus::Pending,
            new: WorkStatus::Resolved,
            changed_by: actor.into(),
            assigned_to: None,
            resolution: None,
            notes: None,
        }
        .into(),
        _ => PriorityChanged {
            message_id,
            thread_id,
            old: 3,
            new: 1,
            changed_by: actor.into(),
            reason: None,
        }
        .into(),
    };
    env(seq, seq as i64, event)
}

// ISSUE-15: filters are a function of the log
#[test]
fn a_transition_gets_its_packets_parties_and_subject() {
    let mut index = PacketIndex::default();
    let log = [
        sent(0, 1, "U:Aa", "U:Bb"),
        transition(1, 0, 1, "U:Bb"),
        transition(2, 4, 1, "U:Bb"),
        transition(3, 0, 9, "U:Cc"),
    ];
    for e in &log {
        assert!(index.apply(e));
    }
    assert!(!index.apply(&log[1]), "a repeat changes nothing");
    let f = facts_of(&log[2], &index);
    assert_eq!(f.volks, ["U:Aa", "U:Bb"]);
    assert_eq!(f.subject.as_deref(), Some("subject 1"));
    assert_eq!(f.thread_id.as_deref(), Some("t-1"));
    let unknown = facts_of(&log[3], &index);
    assert_eq!(
        unknown.volks,
        ["U:Cc"],
        "a packet never sent has no parties"
    );
    assert_eq!(unknown.subject, None);
    assert_eq!(index.len(), 1);
}

// ISSUE-15: filters are a function of the log
#[test]
fn the_first_send_fixes_the_parties_and_only_a_send_before_counts() {
    let mut index = PacketIndex::default();
    let log = [
        transition(0, 1, 7, "U:Cc"),
        sent(1, 7, "U:Aa", "U:Bb"),
        sent(2, 7, "U:Dd", "U:Ee"),
        transition(3, 1, 7, "U:Bb"),
    ];
    for e in &log {
        index.apply(e);
    }
    let before = facts_of(&log[0], &index);
    assert_eq!(
        before.volks,
        ["U:Cc"],
        "a transition logged before its packet's send does not see it"
    );
    assert_eq!(
        facts_of(&log[3], &index).volks,
        ["U:Aa", "U:Bb", "U:Bb"],
        "the first send's parties, then who acknowledged"
    );
}

// ISSUE-15: filters are a function of the log
#[test]
fn settles_says_when_a_partly_folded_index_answers_finally() {
    let log = [
        sent(0, 1, "U:Aa", "U:Bb"),
        sent(1, 2, "U:Cc", "U:Dd"),
        transition(2, 0, 2, "U:Dd"),
    ];
    let mut index = PacketIndex::default();
    index.apply(&log[0]);
    assert!(
        !index.settles(&log[2]),
        "packet 2 is not known yet and sequence 2 is not folded"
    );
    assert!(index.settles(&log[1]), "a send needs no look-up");
    index.apply(&log[1]);
    assert!(index.settles(&log[2]), "packet 2 is known");
}

// ISSUE-15: filters are a function of the log
#[test]
fn stored_form_round_trips_and_rebuilds_the_name_table() {
    let log = [sent(0, 1, "U:Aa", "U:Bb"), sent(1, 2, "U:Bb", "U:Aa")];
    let index: PacketIndex = crate::fold(&log);
    let text = json(&index);
    let mut back: PacketIndex = serde_json::from_str(&text).unwrap();
    assert_eq!(back, index);
    assert_eq!(
        json(&crate::fold::<PacketIndex>(&log)),
        text,
        "serialization is deterministic"
    );
    // Interning still works after a load: a known name is not added again.
    back.apply(&sent(2, 3, "U:Aa", "U:Cc"));
    assert_eq!(json(&back).matches("U:Aa").count(), 1);
    let corrupt = text.replace("\"to\":1", "\"to\":9");
    let err = serde_json::from_str::<PacketIndex>(&corrupt).unwrap_err();
    assert!(err.to_string().contains("names Volk #9"), "{err}");
}

// ISSUE-18: packets waiting for a commit past PRESSING_ENTRIES ask for one
#[test]
fn many_waiting_packets_ask_for_a_commit() {
    let mut index = PacketIndex::default();
    let one = |seq| sent(seq, u128::from(seq) + 1, "U:Ox", "U:Vz");
    crate::testkit::Shelf::default().presses_past_the_bound(&mut index, one, 10);
}

/// One step of a random history.
#[derive(Debug, Clone)]
pub(super) enum Step {
    /// Packet `id` sent from `from` to `to` (a repeated id is a duplicate send).
    Send { id: u8, from: usize, to: usize },
    /// A transition of packet `id` (possibly never sent) naming Volk `actor`.
    Move { kind: u8, id: u8, actor: usize },
}

pub(super) fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..12, 0..VOLKS.len(), 0..VOLKS.len()).prop_map(|(id, from, to)| Step::Send {
            id,
            from,
            to
        }),
        (0u8..6, 0u8..12, 0..VOLKS.len()).prop_map(|(kind, id, actor)| Step::Move {
            kind,
            id,
            actor
        }),
    ]
}

pub(super) fn history(steps: &[Step]) -> Vec<Envelope> {
    steps
        .iter()
        .enumerate()
        .map(|(i, s)| match *s {
            Step::Send { id, from, to } => sent(i as u64, u128::from(id), VOLKS[from], VOLKS[to]),
            Step::Move { kind, id, actor } => {
                transition(i as u64, kind, u128::from(id), VOLKS[actor])
            }
        })
        .collect()
}

/// The reference: the Volks and subject of event `at`, computed from the history
/// alone (no index): a transition concerns the parties of the first send of its
/// packet earlier in the log, plus the Volk it names itself.
fn reference(log: &[Envelope], at: usize) -> (BTreeSet<String>, Option<String>) {
    let mut volks = BTreeSet::new();
    let mut subject = None;
    let id = match &log[at].record.event {
        Event::PacketSent(e) => {
            volks.insert(e.packet.from_agent.clone());
            volks.insert(e.packet.to_agent.clone());
            return (volks, Some(e.packet.subject.clone()));
        }
        Event::PacketDelivered(e) => {
            volks.insert(e.to_agent.clone());
            e.message_id
        }
        Event::PacketAcknowledged(e) => {
            volks.insert(e.acknowledged_by.clone());
            e.message_id
        }
        Event::PacketFailed(e) => e.message_id,
        Event::PacketRetried(e) => e.message_id,
        Event::WorkStatusChanged(e) => e.message_id,
        Event::PriorityChanged(e) => e.message_id,
        other => panic!("unexpected event {other:?}"),
    };
    let first_send = log[..at].iter().find_map(|e| match &e.record.event {
        Event::PacketSent(s) if s.packet.message_id == id => Some(&s.packet),
        _ => None,
    });
    if let Some(p) = first_send {
        volks.insert(p.from_agent.clone());
        volks.insert(p.to_agent.clone());
        subject = Some(p.subject.clone());
    }
    (volks, subject)
}

/// A replay of `lo..=hi` filtered on `volk`, the way the gateway runs one: fold the
/// index until it settles every event of the range, then filter on the facts.
fn replay(log: &[Envelope], index: &mut PacketIndex, lo: usize, hi: usize, volk: &str) -> Vec<u64> {
    while !log[lo..=hi].iter().all(|e| index.settles(e)) {
        let next = index.checkpoint().next(log[0].stream) as usize;
        index.apply(&log[next]);
    }
    log[lo..=hi]
        .iter()
        .filter(|e| facts_of(e, index).volks.iter().any(|v| v == volk))
        .map(|e| e.sequence)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // ISSUE-15: filters are a function of the log
    // REQ-014-003 REQ-014-005 REQ-014-129: a volk_id (to or from) or subject filter
    // matches a packet's later transitions, in replay as live, whatever was replayed
    // before.
    #[test]
    fn replay_answers_are_a_function_of_the_log(
        steps in prop::collection::vec(step(), 1..80),
        queries in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), 0..VOLKS.len()), 1..12),
        order in any::<prop::sample::Index>(),
    ) {
        let log = history(&steps);
        let queries: Vec<(usize, usize, usize)> = queries
            .iter()
            .map(|(a, b, v)| {
                let (a, b) = (a.index(log.len()), b.index(log.len()));
                (a.min(b), a.max(b), *v)
            })
            .collect();
        // The reference, from the whole history with no index.
        let expected: Vec<Vec<u64>> = queries
            .iter()
            .map(|&(lo, hi, v)| {
                (lo..=hi)
                    .filter(|&i| reference(&log, i).0.contains(VOLKS[v]))
                    .map(|i| i as u64)
                    .collect()
            })
            .collect();
        // 1. An index folded only as far as each replay needs, queries in order.
        let mut lazy = PacketIndex::default();
        for (q, &(lo, hi, v)) in queries.iter().enumerate() {
            prop_assert_eq!(&replay(&log, &mut lazy, lo, hi, VOLKS[v]), &expected[q]);
        }
        // 2. A fresh lazy index, the same queries rotated (another history of replays).
        let mut rotated = PacketIndex::default();
        let shift = order.index(queries.len());
        for q in (0..queries.len()).map(|i| (i + shift) % queries.len()).rev() {
            let (lo, hi, v) = queries[q];
            prop_assert_eq!(&replay(&log, &mut rotated, lo, hi, VOLKS[v]), &expected[q]);
        }
        // 3. The index folded over the whole log, every query twice.
        let mut full: PacketIndex = crate::fold(&log);
        for _ in 0..2 {
            for (q, &(lo, hi, v)) in queries.iter().enumerate() {
                prop_assert_eq!(&replay(&log, &mut full, lo, hi, VOLKS[v]), &expected[q]);
            }
        }
        // Every event's facts equal the reference, subject included, and anything a
        // partly folded index settles equals what the full index answers.
        for i in 0..log.len() {
            let facts = facts_of(&log[i], &full);
            let (volks, subject) = reference(&log, i);
            prop_assert_eq!(facts.volks.iter().cloned().collect::<BTreeSet<_>>(), volks);
            prop_assert_eq!(facts.subject, subject);
            if lazy.settles(&log[i]) {
                prop_assert_eq!(facts_of(&log[i], &lazy), facts_of(&log[i], &full));
            }
        }
    }
}
