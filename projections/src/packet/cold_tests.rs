//! A packet index that lets packets go once stored answers as one that keeps them all.

use orchestrata_schemas::events::Envelope;
use proptest::prelude::*;

use super::tests::{history, sent, step, transition};
use super::{facts_of, facts_with, transition_of, Facts, Lookup, PacketIndex};
use crate::stored::StoredEntry;
use crate::testkit::Shelf;
use crate::View;

/// The facts of `envelope` as the gateway finds them in a live index: from memory, or
/// from the store for a packet the index let go of.
fn live_facts(index: &PacketIndex, shelf: &Shelf, envelope: &Envelope) -> Facts {
    let parties = transition_of(&envelope.record.event).and_then(|id| match index.lookup(id) {
        Lookup::Memory(p) => Some(p.into()),
        Lookup::Store(key) => shelf
            .entries
            .get(&key)
            .map(|bytes| index.decode_stored(bytes).unwrap()),
        Lookup::Indexed(rows) => rows.iter().find_map(|row| {
            let key = PacketIndex::indexed_key(row, shelf.entries.get(row)?).unwrap();
            Some(index.decode_stored(&shelf.entries[&key]).unwrap())
        }),
        Lookup::Unknown => None,
    });
    facts_with(envelope, parties.as_ref().map(|p| p.as_parties()))
}

/// Folds `log` as a runner does: reads back what each event needs, commits every
/// `per_commit` events keeping `keep_hot` packets in memory.
fn live(log: &[Envelope], keep_hot: usize, per_commit: usize) -> (PacketIndex, Shelf) {
    let mut index = PacketIndex::default();
    let mut shelf = Shelf::default();
    shelf.commit(&mut index, true, keep_hot);
    for (i, envelope) in log.iter().enumerate() {
        shelf.apply(&mut index, envelope);
        if (i + 1) % per_commit == 0 {
            shelf.commit(&mut index, false, keep_hot);
        }
    }
    shelf.commit(&mut index, false, keep_hot);
    (index, shelf)
}

fn entries(shelf: &Shelf) -> Vec<StoredEntry> {
    shelf
        .entries
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    // ISSUE-18: the packet index keeps keep_hot packets in memory, reads the others
    // from the store, and answers as an index that keeps every packet
    #[test]
    fn an_index_that_lets_packets_go_answers_as_one_that_keeps_them(
        steps in prop::collection::vec(step(), 1..80),
        keep_hot in 0usize..4,
        per_commit in 1usize..9,
    ) {
        let log = history(&steps);
        let full: PacketIndex = crate::fold(&log);
        let (index, shelf) = live(&log, keep_hot, per_commit);
        prop_assert!(index.in_memory() <= keep_hot, "{} packets in memory", index.in_memory());
        for envelope in &log {
            prop_assert_eq!(live_facts(&index, &shelf, envelope), facts_of(envelope, &full));
        }
        // What the store holds is the whole index: a repeated send of a let-go packet
        // did not replace its first.
        let restored: PacketIndex = shelf.restore();
        prop_assert_eq!(&restored, &full);
        // A start keeping keep_hot equals a whole load followed by a commit.
        let mut restorer = PacketIndex::restorer(&shelf.head, keep_hot).unwrap();
        for (k, v) in entries(&shelf) {
            restorer.entry(k, v).unwrap();
        }
        let mut started = restorer.finish().unwrap();
        let mut whole: PacketIndex = shelf.restore();
        whole.committed(keep_hot);
        prop_assert_eq!(&started, &whole);
        // A runner confirms what it loaded; its next commit then writes nothing again.
        started.committed(keep_hot);
        let again = started.take_changes(false).unwrap().entries;
        prop_assert!(again.is_empty(), "{} entries written again", again.len());
    }
}

// ISSUE-18: a let-go packet is read from the store; a repeated send of it changes nothing
#[test]
fn a_repeated_send_of_a_let_go_packet_keeps_the_first() {
    let log = [
        sent(0, 1, "U:Aa", "U:Bb"),
        sent(1, 2, "U:Cc", "U:Dd"),
        sent(2, 1, "U:Ee", "U:Cc"),
        sent(3, 3, "U:Ee", "U:Dd"),
        transition(4, 0, 1, "U:Bb"),
    ];
    let (index, shelf) = live(&log, 1, 1);
    let id = uuid::Uuid::from_u128(1);
    let Lookup::Indexed(rows) = index.lookup(&id) else {
        panic!("packet 1 should be in the store only, found through its row");
    };
    let key = PacketIndex::indexed_key(&rows[0], &shelf.entries[&rows[0]]).unwrap();
    let stored = index.decode_stored(&shelf.entries[&key]).unwrap();
    assert_eq!(
        (stored.sequence, stored.from.as_str(), stored.to.as_str()),
        (0, "U:Aa", "U:Bb")
    );
    let facts = live_facts(&index, &shelf, &log[4]);
    assert_eq!(facts.volks, ["U:Aa", "U:Bb", "U:Bb"]);
    assert_eq!(index.lookup(&uuid::Uuid::from_u128(9)), Lookup::Unknown);
    assert_eq!(index.len(), 3);
    assert_eq!(index.in_memory(), 1);
    let err = serde_json::to_string(&index).unwrap_err();
    assert!(err.to_string().contains("in the store only"), "{err}");
}

// ISSUE-18: a store written before index rows existed is restored whole and written
// whole, rows included, by the next commit; from then on the index lets go and every
// event's facts are found as before, and a repeated send of a let-go packet still
// keeps the first.
#[test]
fn a_store_without_index_rows_is_restored_whole_then_written_whole_with_them() {
    let mut log: Vec<Envelope> = (0..40)
        .map(|i| sent(i, u128::from(i) + 1, "U:Aa", &format!("U:B{}", i % 3)))
        .collect();
    let (_, mut shelf) = live(&log, 4, 5);
    shelf.entries.retain(|k, _| k[0] != b'r');
    shelf.head = super::stored::head_without_rows(&shelf.head);
    let mut restorer = PacketIndex::restorer(&shelf.head, 4).unwrap();
    for (k, v) in entries(&shelf) {
        restorer.entry(k, v).unwrap();
    }
    let mut index = restorer.finish().unwrap();
    // A runner confirms what it loaded, as it does for any store of the current form.
    index.committed(4);
    assert_eq!(index.in_memory(), 40, "kept whole");
    // More packets, a repeat of an old one, transitions of old ones.
    log.push(sent(40, 41, "U:Cc", "U:Dd"));
    log.push(sent(41, 2, "U:Zz", "U:Zz"));
    log.push(transition(42, 0, 3, "U:B2"));
    for envelope in &log[40..] {
        shelf.apply(&mut index, envelope);
    }
    shelf.commit(&mut index, false, 4);
    assert_eq!(index.in_memory(), 4, "lets go once rows are stored");
    let rows = shelf.entries.keys().filter(|k| k[0] == b'r').count();
    assert_eq!(rows, 41, "a row for every packet");
    let full: PacketIndex = crate::fold(&log);
    for envelope in &log {
        assert_eq!(
            live_facts(&index, &shelf, envelope),
            facts_of(envelope, &full)
        );
    }
    let restored: PacketIndex = shelf.restore();
    assert_eq!(restored, full);
}
