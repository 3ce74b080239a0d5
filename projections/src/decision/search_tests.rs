//! Searches over more decisions than one block of times holds, on a view holding them all
//! and on one that let the old blocks go to its store, answer exactly as a plain
//! filter over every decision does.

use orchestrata_schemas::events::types::DecisionResult;
use proptest::prelude::*;

use super::tests::{decision, newest, page_of};
use super::times::BLOCK;
use super::*;
use crate::fold;
use crate::testkit::Shelf;
use crate::PageRequest;

const SUBJECTS: [&str; 3] = ["U:Vz", "U:Ox", "U:Qa"];
const ACTIONS: [&str; 2] = ["cxp.send", "session.open"];
const RESULTS: [DecisionResult; 3] = [
    DecisionResult::Allow,
    DecisionResult::Deny,
    DecisionResult::Escalate,
];

/// (sequence, secs, subject, action, result) in log order, with gaps in the sequence
/// and times that mostly advance but sometimes step back (clocks of several writers).
type Row = (u64, i64, &'static str, &'static str, DecisionResult);

fn history() -> impl Strategy<Value = Vec<Row>> {
    proptest::collection::vec(
        (1u64..4, -1i64..3, 0usize..3, 0usize..2, 0usize..3),
        0..(3 * BLOCK + 60),
    )
    .prop_map(|items| {
        let (mut seq, mut secs) = (0, 0);
        items
            .into_iter()
            .map(|(gap, dt, s, a, r)| {
                seq += gap;
                secs += dt;
                (seq, secs, SUBJECTS[s], ACTIONS[a], RESULTS[r])
            })
            .collect()
    })
}

fn query() -> impl Strategy<Value = DecisionQuery> {
    (
        proptest::option::of(0usize..4),
        proptest::option::of(0usize..3),
        proptest::option::of(0usize..3),
        proptest::option::of(0i64..600),
        proptest::option::of(0i64..600),
        proptest::option::of(any::<bool>()),
    )
        .prop_map(|(s, a, r, from, until, dry_run)| DecisionQuery {
            // Index 3 names a subject nobody has.
            subject: s.map(|s| SUBJECTS.get(s).copied().unwrap_or("U:None").into()),
            action: a.map(|a| ACTIONS.get(a).copied().unwrap_or("nothing").into()),
            result: r.map(|r| RESULTS[r]),
            from: from.map(crate::testkit::t),
            until: until.map(crate::testkit::t),
            dry_run,
            ..Default::default()
        })
}

fn matches(q: &DecisionQuery, row: &Row) -> bool {
    let at = crate::testkit::t(row.1);
    q.subject.as_deref().is_none_or(|s| s == row.2)
        && q.action.as_deref().is_none_or(|a| a == row.3)
        && q.result.is_none_or(|r| r == row.4)
        && q.from.is_none_or(|f| at >= f)
        && q.until.is_none_or(|u| at < u)
        // No decision of these rows is a dry run.
        && q.dry_run != Some(true)
}

/// [`DecisionIndex::newest`] on a view that let its old times go, reading the blocks it
/// asks for from `shelf` as a view handle reads them from the view store: the total,
/// the page's sequences, and how many blocks were read.
fn newest_stored(
    view: &DecisionIndex,
    shelf: &Shelf,
    q: &DecisionQuery,
    offset: usize,
    limit: usize,
) -> (usize, Vec<u64>, usize) {
    let mut stored = StoredTimes::default();
    let mut read = 0;
    for _ in 0..3 {
        match view.newest(q, offset, limit, &stored) {
            Ok((total, page)) => return (total, page.iter().map(|d| d.sequence).collect(), read),
            Err(needs) => {
                assert!(!needs.keys.is_empty());
                for key in needs.keys {
                    stored
                        .add(&key, &shelf.entries[&key])
                        .expect("a stored block");
                    read += 1;
                }
            }
        }
    }
    panic!("a search asked for blocks three times over");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    // REQ-014-032 REQ-014-036 REQ-014-037 REQ-014-038 REQ-014-039
    #[test]
    fn searches_on_bitmaps_and_stored_times_answer_as_a_plain_filter(
        rows in history(),
        queries in proptest::collection::vec(query(), 4),
        start in 0u64..1000,
        offset in 0usize..300,
        limit in 1usize..50,
    ) {
        let events: Vec<Envelope> = rows
            .iter()
            .map(|(seq, secs, s, a, r)| decision(*seq, *secs, s, a, *r))
            .collect();
        let view: DecisionIndex = fold(&events);
        prop_assert_eq!(view.len(), rows.len());
        // The same view committed, keeping 40 decisions in memory: its old blocks of
        // times are read from the store when a search needs them.
        let mut cold = view.clone();
        let mut shelf = Shelf::default();
        shelf.commit(&mut cold, false, 40);
        for q in &queries {
            let expected: Vec<u64> = rows.iter().filter(|r| matches(q, r)).map(|r| r.0).collect();
            let forward: Vec<u64> = page_of(&view, q, &PageRequest::first(1_000_000))
                .items
                .iter()
                .map(|d| d.sequence)
                .collect();
            prop_assert_eq!(&forward, &expected);
            let after: Vec<u64> = page_of(&view, q, &PageRequest::after(start, 1_000_000))
                .items
                .iter()
                .map(|d| d.sequence)
                .collect();
            let expected_after: Vec<u64> = expected.iter().copied().filter(|s| *s > start).collect();
            prop_assert_eq!(after, expected_after);
            let (total, page) = newest(&view, q, offset, limit);
            prop_assert_eq!(total, expected.len());
            let newest: Vec<u64> = page.iter().map(|d| d.sequence).collect();
            let expected_page: Vec<u64> = expected.iter().rev().skip(offset).take(limit).copied().collect();
            prop_assert_eq!(&newest, &expected_page);
            let (cold_total, cold_page, _) = newest_stored(&cold, &shelf, q, offset, limit);
            prop_assert_eq!((cold_total, cold_page), (total, newest));
        }
        for (seq, secs, ..) in &rows {
            let found = view.decision(&Uuid::from_u128(u128::from(*seq) + 100));
            prop_assert_eq!(found.and_then(|d| Some((d.sequence, d.body?.at))), Some((*seq, crate::testkit::t(*secs))));
        }
    }
}

/// The subject and action sets are bitmaps split in containers of 2^16 positions: a
/// search that starts in one container and runs through the next, either way, lists
/// every position once and in order.
// REQ-014-032 REQ-014-036
#[test]
fn searches_by_subject_run_across_the_bitmaps_containers() {
    let rows: Vec<Row> = (0..140_000u64)
        .map(|i| {
            let subject = if i % 7 == 0 {
                "U:Qa"
            } else {
                SUBJECTS[(i % 2) as usize]
            };
            (i + 1, 0, subject, ACTIONS[0], RESULTS[0])
        })
        .collect();
    let events: Vec<Envelope> = rows
        .iter()
        .map(|(seq, secs, s, a, r)| decision(*seq, *secs, s, a, *r))
        .collect();
    let view: DecisionIndex = fold(&events);
    let q = DecisionQuery {
        subject: Some("U:Qa".into()),
        ..Default::default()
    };
    let expected: Vec<u64> = rows.iter().filter(|r| r.2 == "U:Qa").map(|r| r.0).collect();
    let start = 65_000;
    let after: Vec<u64> = page_of(&view, &q, &PageRequest::after(start, 1_000_000))
        .items
        .iter()
        .map(|d| d.sequence)
        .collect();
    let expected_after: Vec<u64> = expected.iter().copied().filter(|s| *s > start).collect();
    assert_eq!(after, expected_after);
    let (total, page) = newest(&view, &q, 9_000, 4_000);
    assert_eq!(total, expected.len());
    let newest: Vec<u64> = page.iter().map(|d| d.sequence).collect();
    let expected_page: Vec<u64> = expected
        .iter()
        .rev()
        .skip(9_000)
        .take(4_000)
        .copied()
        .collect();
    assert_eq!(newest, expected_page);
}

/// A server's history, times following the log: once its old blocks of times left
/// memory, a search bounded by time reads only the blocks its bounds fall in, and one
/// without a time bound reads none.
// REQ-014-037 ISSUE-18: bounded memory, searches by time stay correct for old data
#[test]
fn a_search_by_time_reads_only_the_blocks_at_its_bounds() {
    let rows: Vec<Row> = (0..40 * BLOCK as u64)
        .map(|i| {
            (
                i + 1,
                i as i64,
                SUBJECTS[(i % 3) as usize],
                ACTIONS[0],
                RESULTS[0],
            )
        })
        .collect();
    let events: Vec<Envelope> = rows
        .iter()
        .map(|(seq, secs, s, a, r)| decision(*seq, *secs, s, a, *r))
        .collect();
    let folded: DecisionIndex = fold(&events);
    let mut view = folded.clone();
    let mut shelf = Shelf::default();
    shelf.commit(&mut view, false, 100);
    let q = DecisionQuery {
        subject: Some("U:Ox".into()),
        from: Some(crate::testkit::t(1_000)),
        until: Some(crate::testkit::t(5_000)),
        ..Default::default()
    };
    assert!(view.newest(&q, 0, 10, &StoredTimes::default()).is_err());
    let (total, page, read) = newest_stored(&view, &shelf, &q, 3, 10);
    let (want_total, want) = newest(&folded, &q, 3, 10);
    let want: Vec<u64> = want.iter().map(|d| d.sequence).collect();
    assert_eq!((total, page), (want_total, want));
    assert_eq!(total, 4_000 / 3 + 1);
    assert_eq!(read, 2, "the blocks of t(1000) and t(5000)");
    let all = DecisionQuery {
        subject: Some("U:Qa".into()),
        ..Default::default()
    };
    let (total, _, read) = newest_stored(&view, &shelf, &all, 0, 5);
    assert_eq!((total, read), (rows.len() / 3, 0));
}
