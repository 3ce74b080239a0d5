use orchestrata_schemas::events::governance::{DecisionRecorded, PolicyLoaded};
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use uuid::Uuid;

use super::*;
use crate::fold;
use crate::testkit::{env, json, t};
use crate::{Page, PageRequest};

/// A search whose times are all in memory (a view folded whole, or one that kept them).
pub(super) fn page_of<'a>(
    view: &'a DecisionIndex,
    query: &DecisionQuery,
    page: &PageRequest,
) -> Page<DecisionRef<'a>> {
    view.decisions(query, page, &StoredTimes::default())
        .expect("times in memory")
}

/// [`DecisionIndex::newest`] on a view whose times are all in memory.
pub(super) fn newest<'a>(
    view: &'a DecisionIndex,
    query: &DecisionQuery,
    offset: usize,
    limit: usize,
) -> (usize, Vec<DecisionRef<'a>>) {
    view.newest(query, offset, limit, &StoredTimes::default())
        .expect("times in memory")
}

pub(super) fn decision(
    seq: u64,
    secs: i64,
    subject: &str,
    action: &str,
    result: DecisionResult,
) -> Envelope {
    env(
        seq,
        secs,
        DecisionRecorded {
            decision_id: Uuid::from_u128(u128::from(seq) + 100),
            subject_kind: SubjectKind::Volk,
            subject: subject.into(),
            action: action.into(),
            resource: "thread-1".into(),
            result,
            rule_trace: vec!["r1".into()],
            articles_applied: vec!["Article I".into()],
            policy_hash: "h1".into(),
            latency_us: 40,
            query: None,
            dry_run: false,
            reason: None,
        },
    )
}

// REQ-014-032 REQ-014-036 REQ-014-037 REQ-014-038 REQ-014-039
#[test]
fn decisions_are_indexed_by_time_subject_action_and_result() {
    let events = vec![
        env(
            0,
            0,
            PolicyLoaded {
                policy_hash: "h1".into(),
                origin: "policy.pl".into(),
                text: "allow(_).".into(),
                rule_count: 1,
            },
        ),
        decision(1, 10, "U:Vz", "cxp.send", DecisionResult::Allow),
        decision(2, 20, "U:Vz", "session.open", DecisionResult::Deny),
        decision(3, 30, "U:Ox", "cxp.send", DecisionResult::Escalate),
        decision(4, 40, "U:Vz", "cxp.send", DecisionResult::Allow),
    ];
    let view: DecisionIndex = fold(&events);
    assert_eq!(view.len(), 4);
    assert_eq!(view.policy("h1").map(|p| p.rule_count), Some(1));
    let seqs = |q: DecisionQuery| -> Vec<u64> {
        page_of(&view, &q, &PageRequest::first(10))
            .items
            .iter()
            .map(|e| e.sequence)
            .collect()
    };
    assert_eq!(seqs(DecisionQuery::default()), [1, 2, 3, 4]);
    assert_eq!(
        seqs(DecisionQuery {
            subject: Some("U:Vz".into()),
            ..Default::default()
        }),
        [1, 2, 4]
    );
    assert_eq!(
        seqs(DecisionQuery {
            action: Some("cxp.send".into()),
            ..Default::default()
        }),
        [1, 3, 4]
    );
    assert_eq!(
        seqs(DecisionQuery {
            subject: Some("U:Vz".into()),
            result: Some(DecisionResult::Allow),
            ..Default::default()
        }),
        [1, 4]
    );
    assert_eq!(
        seqs(DecisionQuery {
            from: Some(t(20)),
            until: Some(t(40)),
            ..Default::default()
        }),
        [2, 3]
    );
    assert_eq!(
        seqs(DecisionQuery {
            subject: Some("nobody".into()),
            ..Default::default()
        }),
        Vec::<u64>::new()
    );
    // ISSUE-14: attribution — decisions are filtered by the principal on their envelope.
    let mut by_principal = events.clone();
    by_principal[1].record.principal = Some("operator".into());
    by_principal[4].record.principal = Some("operator".into());
    by_principal[3].record.principal = Some("dashboard".into());
    let attributed: DecisionIndex = fold(&by_principal);
    let principal_seqs = |p: &str| -> Vec<u64> {
        let query = DecisionQuery {
            principal: Some(p.into()),
            ..Default::default()
        };
        page_of(&attributed, &query, &PageRequest::first(10))
            .items
            .iter()
            .map(|e| e.sequence)
            .collect()
    };
    assert_eq!(principal_seqs("operator"), [1, 4]);
    assert_eq!(principal_seqs("dashboard"), [3]);
    assert_eq!(principal_seqs("nobody"), Vec::<u64>::new());
    assert_eq!(
        attributed
            .decision(&Uuid::from_u128(104))
            .and_then(|e| e.body?.principal.as_deref()),
        Some("operator")
    );
    let page = page_of(&view, &DecisionQuery::default(), &PageRequest::after(1, 2));
    assert_eq!((page.items.len(), page.next), (2, Some(3)));
    assert_eq!(
        view.decision(&Uuid::from_u128(102))
            .and_then(|e| e.body.map(|b| b.at)),
        Some(t(20))
    );
    // A repeat, or the same decision logged twice, counts once.
    let mut again = view.clone();
    assert!(!again.apply(&events[4]));
    let mut dup = decision(5, 50, "U:Vz", "cxp.send", DecisionResult::Allow);
    if let orchestrata_schemas::events::Event::DecisionRecorded(d) = &mut dup.record.event {
        d.decision_id = Uuid::from_u128(101);
    }
    assert!(again.apply(&dup));
    assert_eq!(again.len(), 4);
    assert_eq!(json(&fold::<DecisionIndex>(&events)), json(&view));
}

// ISSUE-14: attribution — a decisions view stored before entries had a principal (a
// compact, positional encoding: one element fewer) still loads, with no principal
#[test]
fn entries_stored_before_attribution_load_without_a_principal() {
    let view: DecisionIndex = fold(&[decision(1, 10, "U:Vz", "cxp.send", DecisionResult::Allow)]);
    let entry = view
        .decision(&Uuid::from_u128(101))
        .and_then(|e| e.body)
        .expect("entry")
        .clone();
    let old = serde_json::json!([entry.sequence, entry.at, entry.decision]);
    let loaded: DecisionEntry = serde_json::from_value(old).expect("old entry loads");
    assert_eq!(loaded.principal, None);
    assert_eq!(loaded.decision, entry.decision);
}

// REQ-014-036 REQ-014-039: newest first, with the total, only the page handed out
#[test]
fn newest_first_pages_count_every_match_and_hand_out_only_the_page() {
    let events: Vec<Envelope> = (1..=9)
        .map(|s| {
            let subject = if s % 3 == 0 { "U:Qa" } else { "U:Vz" };
            let result = if s % 2 == 0 {
                DecisionResult::Deny
            } else {
                DecisionResult::Allow
            };
            decision(s, s as i64 * 10, subject, "cxp.send", result)
        })
        .collect();
    let view: DecisionIndex = fold(&events);
    let queries = [
        DecisionQuery::default(),
        DecisionQuery {
            subject: Some("U:Vz".into()),
            ..Default::default()
        },
        DecisionQuery {
            action: Some("cxp.send".into()),
            result: Some(DecisionResult::Deny),
            ..Default::default()
        },
        DecisionQuery {
            subject: Some("nobody".into()),
            ..Default::default()
        },
        DecisionQuery {
            from: Some(t(30)),
            ..Default::default()
        },
    ];
    for query in &queries {
        let forward: Vec<u64> = page_of(&view, query, &PageRequest::first(100))
            .items
            .iter()
            .map(|e| e.sequence)
            .collect();
        let backward: Vec<u64> = forward.iter().rev().copied().collect();
        for (offset, limit) in [(0, 100), (0, 2), (2, 3), (5, 1), (20, 5)] {
            let (total, page) = newest(&view, query, offset, limit);
            assert_eq!(total, forward.len(), "{query:?}");
            let got: Vec<u64> = page.iter().map(|e| e.sequence).collect();
            let want: Vec<u64> = backward.iter().skip(offset).take(limit).copied().collect();
            assert_eq!(got, want, "{query:?} offset {offset} limit {limit}");
        }
    }
}

// ISSUE-18: decisions waiting for a commit past PRESSING_ENTRIES ask for one
#[test]
fn many_waiting_decisions_ask_for_a_commit() {
    let mut view = DecisionIndex::default();
    let one = |seq| decision(seq, 1, "U:Ox", "cxp.send", DecisionResult::Allow);
    crate::testkit::Shelf::default().presses_past_the_bound(&mut view, one, 10);
}
