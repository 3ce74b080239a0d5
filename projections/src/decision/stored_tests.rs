//! The decision index's stored form (`decision/stored.rs`): blocks of summaries, bodies
//! an earlier version stored, blocks of times, commits taken again, restores.

use std::collections::BTreeMap;

use orchestrata_schemas::events::types::DecisionResult;
use orchestrata_schemas::events::Envelope;
use uuid::Uuid;

use super::tests::{decision, newest, page_of};
use super::*;
use crate::fold;
use crate::testkit::t;
use crate::PageRequest;

fn seven() -> Vec<Envelope> {
    (1..=7)
        .map(|s| {
            let subject = if s % 2 == 0 { "U:Vz" } else { "U:Ox" };
            decision(s, s as i64 * 10, subject, "cxp.send", DecisionResult::Allow)
        })
        .collect()
}

fn bodies(view: &DecisionIndex, query: &DecisionQuery) -> Vec<(u64, bool)> {
    page_of(view, query, &PageRequest::first(100))
        .items
        .iter()
        .map(|e| (e.sequence, e.body.is_some()))
        .collect()
}

/// `view` as a runner holds it once a commit stored everything and let every body go:
/// what a restore from summaries gives.
fn all_let_go(mut view: DecisionIndex) -> DecisionIndex {
    view.take_changes(false).expect("changes");
    view.committed(0);
    view
}

/// The sequence a stored entry names for decision `id`, if any.
fn named(entry: &(Vec<u8>, Option<Vec<u8>>), id: u128) -> Option<u64> {
    let value = entry.1.as_deref().expect("written");
    DecisionIndex::sequence_in_entry(&entry.0, value, &Uuid::from_u128(id)).expect("decodes")
}

/// Bodies stored one entry each, as versions before summary blocks wrote them.
fn old_bodies(view: &DecisionIndex) -> Vec<(Vec<u8>, Vec<u8>)> {
    view.bodies
        .iter()
        .map(|entry| {
            let key = crate::stored::key(b'd', &entry.sequence.to_be_bytes());
            (
                key,
                crate::stored::encode("decision", entry).expect("encodes"),
            )
        })
        .collect()
}

// ISSUE-18: bounded memory — once committed, a decision's body leaves memory (the newest
// `keep_hot` stay); searches still find every decision, and the commit stored where it is
// ISSUE-15: one block of summaries per commit, not a second copy of every body
#[test]
fn committed_bodies_leave_memory_and_their_summaries_name_them() {
    let events = seven();
    let folded: DecisionIndex = fold(&events);
    let mut view = folded.clone();
    let changes = view.take_changes(false).expect("changes");
    assert_eq!(
        changes.entries.len(),
        1,
        "one block for the commit's decisions"
    );
    // Nothing leaves before the store confirms the commit.
    assert_eq!(view.in_memory(), 7);
    view.committed(2);
    assert_eq!((view.len(), view.in_memory()), (7, 2));
    let all = DecisionQuery::default();
    assert_eq!(
        bodies(&view, &all),
        [
            (1, false),
            (2, false),
            (3, false),
            (4, false),
            (5, false),
            (6, true),
            (7, true)
        ]
    );
    let vz = DecisionQuery {
        subject: Some("U:Vz".into()),
        ..Default::default()
    };
    assert_eq!(bodies(&view, &vz), [(2, false), (4, false), (6, true)]);
    // A cold decision is found by a search, by its sequence: its body is the log's
    // event there.
    let page = page_of(&view, &all, &PageRequest::first(10));
    let cold = page
        .items
        .iter()
        .find(|d| d.sequence == 3)
        .expect("decision 3");
    assert_eq!((cold.sequence, cold.body), (3, None));
    assert_eq!(
        DecisionEntry::of(&events[2]).as_ref(),
        folded.decision(&Uuid::from_u128(103)).and_then(|e| e.body)
    );
    // By id, a live view finds the decisions whose body it holds, and no other; the
    // stored block names every decision of the commit.
    assert!(view.decision(&Uuid::from_u128(103)).is_none());
    assert_eq!(
        view.decision(&Uuid::from_u128(107))
            .map(|d| (d.sequence, d.body.is_some())),
        Some((7, true))
    );
    let block = &changes.entries[0];
    assert_eq!(named(block, 103), Some(3));
    assert_eq!(named(block, 107), Some(7));
    assert_eq!(named(block, 108), None);
    // The view goes on folding; the next commit writes a block of the new decision only.
    assert!(view.apply(&decision(8, 80, "U:Vz", "cxp.send", DecisionResult::Deny)));
    let next = view.take_changes(false).expect("changes");
    assert_eq!(next.entries.len(), 1);
    assert_eq!(named(&next.entries[0], 108), Some(8));
    assert_eq!(named(&next.entries[0], 107), None);
    // A view that let bodies go cannot be written whole, and says so.
    assert!(view.take_changes(true).is_err());
    assert!(serde_json::to_string(&view).is_err());
}

// ISSUE-15 ISSUE-18: the store keeps what searches filter on, not the bodies the log
// already holds: a commit writes under half their bytes even for the sample's bodies,
// which carry no query (a server's carry its goal: most of a kilobyte)
#[test]
fn a_commit_writes_summaries_a_fraction_of_the_bodies() {
    let events = crate::sample::Workload::new(4).envelopes(20_000);
    let mut folded: DecisionIndex = fold(&events);
    let bodies: usize = old_bodies(&folded)
        .iter()
        .map(|(k, v)| k.len() + v.len())
        .sum();
    let changes = folded.take_changes(false).expect("changes");
    let stored: usize = changes
        .entries
        .iter()
        .filter(|(k, _)| k.first() == Some(&b's'))
        .map(|(k, v)| k.len() + v.as_ref().map_or(0, Vec::len))
        .sum();
    assert!(folded.len() > 500, "{} decisions", folded.len());
    assert!(
        stored * 2 < bodies,
        "summaries {stored} bytes against bodies {bodies} bytes"
    );
}

// ISSUE-18: a commit of many decisions (a rebuild's, a long-delayed one's) writes blocks
// of at most 4,096 summaries, each keyed by its first sequence, and restores from them
#[test]
fn many_decisions_are_stored_in_bounded_blocks() {
    let events: Vec<Envelope> = (1..=9_000)
        .map(|s| decision(s, s as i64, "U:Vz", "cxp.send", DecisionResult::Allow))
        .collect();
    let mut view: DecisionIndex = fold(&events);
    let changes = view.take_changes(false).expect("changes");
    let blocks: Vec<_> = changes
        .entries
        .iter()
        .filter(|(k, _)| k.first() == Some(&b's'))
        .collect();
    let firsts: Vec<Vec<u8>> = [1u64, 4_097, 8_193]
        .iter()
        .map(|s| crate::stored::key(b's', &s.to_be_bytes()))
        .collect();
    assert_eq!(
        blocks.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>(),
        firsts
    );
    assert_eq!(named(blocks[1], 100 + 8_192), Some(8_192));
    assert_eq!(named(blocks[2], 100 + 8_193), Some(8_193));
    let entries = changes
        .entries
        .into_iter()
        .map(|(k, v)| (k, v.expect("written")))
        .collect();
    let restored = DecisionIndex::from_stored(&changes.head, entries).expect("restores");
    assert_eq!(restored, all_let_go(fold(&events)));
}

// ISSUE-18: a commit that failed is taken again: nothing is lost and nothing leaves
// memory before the store has it
#[test]
fn changes_of_a_failed_commit_are_taken_again() {
    let mut view: DecisionIndex = fold(&seven()[..4]);
    const { assert!(DecisionIndex::RETAKES_UNCOMMITTED) };
    let first = view.take_changes(false).expect("changes");
    assert_eq!(first.entries.len(), 1);
    assert_eq!(named(&first.entries[0], 104), Some(4));
    // The store refused that commit: no `committed`. The next one carries them again,
    // under the same key (it replaces the refused block if that was written after all).
    view.apply(&seven()[4]);
    let again = view.take_changes(false).expect("changes");
    assert_eq!(again.entries.len(), 1);
    assert_eq!(again.entries[0].0, first.entries[0].0);
    for (id, sequence) in [(101, 1), (104, 4), (105, 5)] {
        assert_eq!(named(&again.entries[0], id), Some(sequence));
    }
    view.committed(0);
    assert_eq!(view.in_memory(), 0);
    assert!(view
        .take_changes(false)
        .expect("changes")
        .entries
        .is_empty());
}

// ISSUE-18: the store's head and entries restore the view folded from the log, whatever
// the live view let go (every body then stays in the log)
#[test]
fn a_view_restored_from_its_entries_equals_the_fold() {
    let events = seven();
    let folded: DecisionIndex = fold(&events);
    let mut live = folded.clone();
    let mut entries = Vec::new();
    let first = live.take_changes(false).expect("changes");
    live.committed(1);
    live.apply(&decision(
        8,
        80,
        "U:Qa",
        "session.open",
        DecisionResult::Deny,
    ));
    let second = live.take_changes(false).expect("changes");
    live.committed(1);
    for (key, value) in first.entries.into_iter().chain(second.entries) {
        entries.push((key, value.expect("written")));
    }
    let restored = DecisionIndex::from_stored(&second.head, entries).expect("restores");
    let mut all = events.clone();
    all.push(decision(
        8,
        80,
        "U:Qa",
        "session.open",
        DecisionResult::Deny,
    ));
    assert_eq!(restored, all_let_go(fold::<DecisionIndex>(&all)));
    assert_eq!(restored.in_memory(), 0);
    assert_eq!(live.len(), restored.len());
    assert_eq!(live.in_memory(), 1);
    let qa = DecisionQuery {
        subject: Some("U:Qa".into()),
        result: Some(DecisionResult::Deny),
        ..Default::default()
    };
    assert_eq!(bodies(&restored, &qa), [(8, false)]);
}

// ISSUE-18: a store an earlier version wrote (one body per decision) restores, and the
// summary blocks later commits add after its bodies restore with them
#[test]
fn bodies_an_earlier_version_stored_restore_beside_later_summaries() {
    let events = seven();
    let mut old: DecisionIndex = fold(&events[..4]);
    let bodies = old_bodies(&old);
    old.take_changes(false).expect("changes");
    old.committed(4);
    for e in &events[4..] {
        old.apply(e);
    }
    let later = old.take_changes(false).expect("changes");
    let block = later.entries[0].clone();
    let mut restorer = DecisionIndex::restorer(&later.head, 4).expect("head decodes");
    for (k, v) in bodies {
        restorer.entry(k, v).expect("old body");
    }
    // Only old bodies so far: held, as an earlier version's restore held them.
    restorer
        .entry(block.0, block.1.expect("written"))
        .expect("summaries");
    let restored = restorer.finish().expect("restores");
    assert_eq!(restored, all_let_go(fold::<DecisionIndex>(&events)));
    assert_eq!(bodies_of(&restored), (1..=7).collect::<Vec<u64>>());
}

fn bodies_of(view: &DecisionIndex) -> Vec<u64> {
    page_of(view, &DecisionQuery::default(), &PageRequest::first(100))
        .items
        .iter()
        .map(|d| d.sequence)
        .collect()
}

// ISSUE-18: a runner's start reads the decisions one at a time and lets old bodies go
// as it reads: the same view as a whole restore followed by a commit
#[test]
fn a_restore_that_lets_go_as_it_reads_equals_a_whole_restore_then_a_commit() {
    let events = crate::sample::Workload::new(4).envelopes(60_000);
    let mut folded: DecisionIndex = fold(&events);
    assert!(folded.len() > 2_100, "{} decisions", folded.len());
    // As an earlier version stored them (one body each), then as blocks of summaries.
    let old: Vec<_> = old_bodies(&folded);
    let changes = folded.take_changes(true).expect("changes");
    let entries: Vec<_> = changes
        .entries
        .into_iter()
        .map(|(k, v)| (k, v.expect("written")))
        .collect();
    let old: Vec<_> = old
        .into_iter()
        .chain(entries.iter().filter(|(k, _)| k[0] == b't').cloned())
        .collect();
    for (stored, held) in [(old, 4), (entries, 0)] {
        let mut whole =
            DecisionIndex::from_stored(&changes.head, stored.clone()).expect("restores");
        whole.committed(4);
        let mut restorer = DecisionIndex::restorer(&changes.head, 4).expect("head decodes");
        for (k, v) in stored {
            restorer.entry(k, v).expect("entry decodes");
        }
        let streamed = restorer.finish().expect("finishes");
        assert_eq!(streamed.in_memory(), held);
        assert_eq!(streamed, whole);
    }
    let mut unknown = DecisionIndex::restorer(&changes.head, 4).expect("head decodes");
    assert!(unknown.entry(b"x".to_vec(), vec![]).is_err());
}

// ISSUE-18: a store written before blocks of times were stored (its head has no count
// of them) restores, keeps every block in memory, and its next commit stores them all;
// a restore from the new store lets the old blocks go again
#[test]
fn a_store_from_before_blocks_of_times_gets_them_at_its_next_commit() {
    let events: Vec<Envelope> = (1..=(3 * times::BLOCK as u64 + 10))
        .map(|s| decision(s, s as i64, "U:Vz", "cxp.send", DecisionResult::Allow))
        .collect();
    let mut folded: DecisionIndex = fold(&events);
    let bodies = old_bodies(&folded);
    folded.take_changes(true).expect("changes");
    // The head as earlier versions wrote it: checkpoint and policies only.
    let old_head = crate::stored::encode(
        "old head",
        &(
            folded.checkpoint().clone(),
            BTreeMap::<String, PolicyEntry>::new(),
        ),
    )
    .expect("encodes");
    let mut restorer = DecisionIndex::restorer(&old_head, 4).expect("old head decodes");
    for (k, v) in bodies.clone() {
        restorer.entry(k, v).expect("entry");
    }
    let mut restored = restorer.finish().expect("restores");
    // What a runner holds after committing the fold, keeping 4 bodies.
    folded.committed(4);
    assert_eq!(restored, folded);
    let all = DecisionQuery {
        until: Some(t(100)),
        ..Default::default()
    };
    // No block was let go: the store has none.
    assert_eq!(newest(&restored, &all, 0, 1).0, 99);
    let mut shelf = crate::testkit::Shelf {
        head: old_head,
        entries: bodies.into_iter().collect(),
    };
    shelf.commit(&mut restored, false, 4);
    let stored_blocks = shelf.entries.keys().filter(|k| k[0] == b't').count();
    assert_eq!(stored_blocks, 3);
    assert!(restored
        .newest(&all, 0, 1, &StoredTimes::default())
        .is_err());
    let mut again = DecisionIndex::restorer(&shelf.head, 4).expect("head decodes");
    for (k, v) in &shelf.entries {
        again.entry(k.clone(), v.clone()).expect("entry");
    }
    let again = again.finish().expect("restores");
    assert_eq!(again, folded);
    assert!(again.newest(&all, 0, 1, &StoredTimes::default()).is_err());
}
