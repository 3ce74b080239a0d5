use orchestrata_schemas::events::Envelope;
use proptest::prelude::*;

use crate::sample::Workload;
use crate::stored::{StoredEntry, Touched};
use crate::testkit::Shelf;
use crate::{
    DecisionIndex, GraphView, PacketIndex, SessionView, ThreadView, View, VolkView, WorkflowView,
};

/// Entries a view that lets committed entries go keeps in memory in these tests: few,
/// so that events about let-go entries are common.
const HOT: usize = 8;

fn json<V: View>(view: &V) -> String {
    serde_json::to_string(view).expect("view serializes")
}

/// A view as its restore gives the fold back. Every view restores what it folded,
/// except the decision bodies the decision index leaves in the log: its restore holds
/// the fold's decisions with every body let go, and cannot be serialized whole.
trait Restores: View + PartialEq + std::fmt::Debug {
    fn as_restored(folded: Self) -> Self {
        folded
    }

    fn assert_restored(restored: &Self, folded: Self) {
        assert_eq!(json(restored), json(&folded), "{}", Self::NAME);
        assert_eq!(*restored, Self::as_restored(folded), "{}", Self::NAME);
    }
}

impl Restores for ThreadView {}
impl Restores for PacketIndex {}
impl Restores for SessionView {}
impl Restores for VolkView {}
impl Restores for GraphView {}
impl Restores for WorkflowView {}

impl Restores for DecisionIndex {
    fn as_restored(mut folded: Self) -> Self {
        folded.take_changes(false).expect("changes");
        folded.committed(0);
        folded
    }

    fn assert_restored(restored: &Self, folded: Self) {
        assert_eq!(restored.in_memory(), 0, "no body restored");
        assert_eq!(*restored, Self::as_restored(folded));
    }
}

/// Folds `events` committing after each event whose index is in `commits`, restoring
/// the view from its shelf after each index in `restarts` (and going on from there),
/// then checks the last restore against a plain fold.
fn restored_equals_folded<V: Restores>(events: &[Envelope], commits: &[usize], restarts: &[usize]) {
    let mut shelf = Shelf::default();
    let mut view = V::default();
    shelf.commit(&mut view, true, HOT);
    for (i, envelope) in events.iter().enumerate() {
        shelf.apply(&mut view, envelope);
        if commits.contains(&i) {
            shelf.commit(&mut view, false, HOT);
        }
        if restarts.contains(&i) {
            // What a crash after the last commit leaves: the shelf (a loaded view lets
            // entries go at once, as the runner's does), then the log again.
            view = shelf.restore();
            view.committed(HOT);
            for again in &events[..=i] {
                shelf.apply(&mut view, again);
            }
        }
    }
    shelf.commit(&mut view, false, HOT);
    V::assert_restored(&shelf.restore::<V>(), crate::fold(events));
}

/// Folds `events` as a runner does for a view that folds while storing
/// ([`View::FOLDS_WHILE_STORING`]): a commit takes the view's changes after each index
/// in `takes`, `lag` more events are folded (reading let-go entries from the shelf as
/// it was before the write) before the write lands and the view is told; then checks
/// the last commit's shelf against a plain fold. Were a change made during a commit
/// forgotten, or an entry changed meanwhile let go of, the shelf would miss it.
fn folded_while_storing_equals_folded<V: Restores>(
    events: &[Envelope],
    takes: &[usize],
    lag: usize,
) {
    assert!(
        V::FOLDS_WHILE_STORING,
        "{} folds only between commits",
        V::NAME
    );
    let mut shelf = Shelf::default();
    let mut view = V::default();
    shelf.commit(&mut view, true, HOT);
    let mut flight: Option<(crate::stored::Changes, usize)> = None;
    for (i, envelope) in events.iter().enumerate() {
        shelf.apply(&mut view, envelope);
        if let Some((changes, until)) = flight.take() {
            if i < until {
                flight = Some((changes, until));
            } else {
                shelf.write(changes, false);
                view.committed(HOT);
            }
        }
        if flight.is_none() && takes.contains(&i) {
            flight = Some((view.take_changes(false).expect("changes"), i + lag));
        }
    }
    if let Some((changes, _)) = flight {
        shelf.write(changes, false);
        view.committed(HOT);
    }
    shelf.commit(&mut view, false, HOT);
    V::assert_restored(&shelf.restore::<V>(), crate::fold(events));
}

fn every_view(events: &[Envelope], commits: &[usize], restarts: &[usize]) {
    restored_equals_folded::<ThreadView>(events, commits, restarts);
    restored_equals_folded::<DecisionIndex>(events, commits, restarts);
    restored_equals_folded::<PacketIndex>(events, commits, restarts);
    restored_equals_folded::<SessionView>(events, commits, restarts);
    restored_equals_folded::<VolkView>(events, commits, restarts);
    restored_equals_folded::<GraphView>(events, commits, restarts);
    restored_equals_folded::<WorkflowView>(events, commits, restarts);
}

// REQ-004-US-004-013 REQ-004-US-005-013
#[test]
fn a_view_restored_from_its_commits_equals_the_view_folded_from_the_log() {
    let events = Workload::new(5).envelopes(6_000);
    let commits: Vec<usize> = (0..6_000).step_by(97).collect();
    every_view(&events, &commits, &[2_500, 4_000]);
}

#[test]
fn a_commit_writes_what_changed_not_the_history() {
    let events = Workload::new(9).envelopes(12_000);
    let mut view = ThreadView::default();
    let mut decisions = DecisionIndex::default();
    let mut packets = PacketIndex::default();
    for envelope in &events[..11_900] {
        view.apply(envelope);
        decisions.apply(envelope);
        packets.apply(envelope);
    }
    let all = view.take_changes(true).expect("encodes").entries.len();
    decisions.take_changes(true).expect("encodes");
    // The thread view, the decision index and the packet index forget what they
    // handed out once the store has it.
    view.committed(usize::MAX);
    decisions.committed(usize::MAX);
    packets.take_changes(true).expect("encodes");
    packets.committed(usize::MAX);
    assert!(all > 2_000, "the sample keeps {all} threads and packets");
    for envelope in &events[11_900..] {
        view.apply(envelope);
        decisions.apply(envelope);
        packets.apply(envelope);
    }
    let changed = view.take_changes(false).expect("encodes").entries.len();
    assert!(
        changed > 0 && changed <= 200,
        "{changed} entries for 100 events"
    );
    let repeat = view.take_changes(false).expect("encodes").entries.len();
    assert_eq!(
        repeat, changed,
        "changes are handed out until the store has them"
    );
    view.committed(usize::MAX);
    let after = view.take_changes(false).expect("encodes").entries.len();
    assert_eq!(after, 0, "and then no more");
    let decided = decisions
        .take_changes(false)
        .expect("encodes")
        .entries
        .len();
    assert!(decided <= 100, "{decided} decision entries for 100 events");
    let sent = packets.take_changes(false).expect("encodes").entries.len();
    assert!(sent <= 200, "{sent} packet index entries for 100 events");
}

#[test]
fn a_whole_view_has_no_entries_and_a_keyed_head_is_refused_as_a_whole_view() {
    let events = Workload::new(3).envelopes(500);
    let mut sessions: SessionView = crate::fold(&events);
    let changes = sessions.take_changes(false).expect("encodes");
    assert!(changes.entries.is_empty());
    let mut threads: ThreadView = crate::fold(&events);
    let keyed = threads.take_changes(true).expect("encodes");
    let entries: Vec<StoredEntry> = keyed
        .entries
        .into_iter()
        .filter_map(|(k, v)| v.map(|v| (k, v)))
        .collect();
    assert!(SessionView::from_stored(&changes.head, entries.clone()).is_err());
    assert!(ThreadView::from_stored(&keyed.head, vec![(b"x".to_vec(), vec![1])]).is_err());
    assert!(ThreadView::from_stored(b"\xc1", entries).is_err());
}

#[test]
fn the_graph_view_stores_its_evictions() {
    // Past MAX_PACKETS packets the oldest are evicted with their relationships: their
    // entries must leave the store too (decisions are evicted by the same code).
    let events = Workload::new(21).envelopes(60_000);
    let graph: GraphView = crate::fold(&events);
    let (packets, _) = graph.evicted();
    assert!(packets > 1_000, "evicted {packets} packets");
    let commits: Vec<usize> = (0..60_000).step_by(1_111).collect();
    restored_equals_folded::<GraphView>(&events, &commits, &[30_000]);
}

/// New entries of `V` sort after every stored entry of their kind — for index rows
/// (the thread view's `P`, `T`, the packet index's `r`: kind, generation, id), after
/// every stored row of an earlier generation: ids are random, so within the newest generation they land
/// anywhere, but only among that generation's pages.
fn new_keys_come_last<V: View>(events: &[Envelope], least: usize) {
    let (before, after) = events.split_at(events.len() / 2);
    let mut view = V::default();
    let mut shelf = Shelf::default();
    for e in before {
        view.apply(e);
    }
    shelf.commit(&mut view, true, HOT);
    for e in after {
        shelf.apply(&mut view, e);
    }
    let changes = view.take_changes(false).expect("encodes");
    let mut added = 0;
    for (key, value) in &changes.entries {
        if value.is_none() || shelf.entries.contains_key(key) {
            continue;
        }
        added += 1;
        let kind = key[0];
        let last = shelf.entries.range(vec![kind]..vec![kind + 1]).next_back();
        if let Some((last, _)) = last {
            let rows = (V::NAME == ThreadView::NAME && matches!(kind, b'P' | b'T'))
                || (V::NAME == PacketIndex::NAME && kind == b'r');
            let (key, last) = if rows {
                (&key[..9], &last[..9])
            } else {
                (&key[..], &last[..])
            };
            assert!(
                if rows { key >= last } else { key > last },
                "{}: new key {key:?} sorts before stored {last:?}",
                V::NAME
            );
        }
    }
    assert!(added >= least, "{}: {added} new entries", V::NAME);
}

// Entries are keyed so that new ones land at the end of each view's key space: a
// commit then rewrites a few B-tree pages at the end rather than one page per entry,
// whose cost would grow with the history.
#[test]
fn new_entries_are_keyed_after_the_stored_ones() {
    let events = Workload::new(17).envelopes(30_000);
    new_keys_come_last::<ThreadView>(&events, 100);
    // One block of summaries per commit.
    new_keys_come_last::<DecisionIndex>(&events, 1);
    new_keys_come_last::<PacketIndex>(&events, 100);
    new_keys_come_last::<GraphView>(&events, 100);
}

#[test]
fn touched_keys_past_their_bound_ask_for_a_full_commit() {
    let mut touched = Touched::default();
    touched.mark("a", 10);
    touched.mark("a", 10);
    let (keys, lost) = touched.take();
    assert_eq!(keys.len(), 1);
    assert!(!lost);
    for i in 0..8_500 {
        touched.mark(&i.to_string(), 10);
    }
    // Half way to the bound it asks for a commit, and keeps every key.
    assert!(touched.pressing(10));
    let (keys, lost) = touched.take();
    assert_eq!((keys.len(), lost), (8_500, false));
    assert!(!touched.pressing(10));
    for i in 0..17_000 {
        touched.mark(&i.to_string(), 10);
    }
    assert!(touched.pressing(10));
    let (keys, lost) = touched.take();
    assert!(
        keys.is_empty() && lost,
        "past 8 x 10 + 16,384 keys the set is dropped"
    );
    let (_, lost) = touched.take();
    assert!(!lost, "a take resets it");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    // REQ-004-US-004-013
    #[test]
    fn any_commit_and_restart_points_restore_the_folded_view(
        seed in 0u64..1_000,
        commits in proptest::collection::vec(0usize..1_500, 0..20),
        restarts in proptest::collection::vec(0usize..1_500, 0..3),
    ) {
        let events = Workload::new(seed).envelopes(1_500);
        every_view(&events, &commits, &restarts);
    }

    // ISSUE-15: the thread view and the packet index fold on while their commits
    // are written.
    #[test]
    fn folding_while_a_commit_is_written_restores_the_folded_view(
        seed in 0u64..1_000,
        takes in proptest::collection::vec(0usize..1_500, 0..30),
        lag in 1usize..200,
    ) {
        let events = Workload::new(seed).envelopes(1_500);
        folded_while_storing_equals_folded::<ThreadView>(&events, &takes, lag);
        folded_while_storing_equals_folded::<PacketIndex>(&events, &takes, lag);
    }
}
