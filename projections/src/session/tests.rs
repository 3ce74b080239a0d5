use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::session::*;
use serde_json::json;

use super::*;
use crate::testkit::{env, json, t};
use crate::{fold, PageRequest};

fn opened(seq: u64, secs: i64, id: &str, portfolio: &str) -> Envelope {
    env(
        seq,
        secs,
        SessionOpened {
            session_id: id.into(),
            portfolio_id: portfolio.into(),
            goals: vec!["ship v1".into()],
            opened_by: "U:Ox".into(),
        },
    )
}

fn closed(seq: u64, secs: i64, id: &str, carryover: &[&str]) -> Envelope {
    env(
        seq,
        secs,
        SessionClosed {
            session_id: id.into(),
            summary: format!("{id} done"),
            carryover: carryover.iter().map(|c| (*c).into()).collect(),
        },
    )
}

// REQ-004-INTG-006 REQ-004-INTG-007 REQ-004-INTG-008 REQ-004-INTG-009
#[test]
fn sessions_fold_context_facts_errors_close_and_resume() {
    let events = vec![
        opened(0, 0, "s1", "p"),
        env(
            1,
            1,
            SessionContextUpdated {
                session_id: "s1".into(),
                patch: Json(json!({"a": 1, "nested": {"x": 1, "y": 2}})),
                updated_by: "U:Ox".into(),
            },
        ),
        env(
            2,
            2,
            SessionContextUpdated {
                session_id: "s1".into(),
                patch: Json(json!({"a": null, "nested": {"y": 3}})),
                updated_by: "U:Ox".into(),
            },
        ),
        env(
            3,
            3,
            SessionFactAsserted {
                session_id: "s1".into(),
                fact_type: "decision".into(),
                data: Json(json!({"use": "sled"})),
                asserted_by: "U:Ar".into(),
            },
        ),
        env(
            4,
            4,
            SessionErrorOccurred {
                session_id: "s1".into(),
                code: "E42".into(),
                message: "provider down".into(),
                recoverable: true,
            },
        ),
        closed(5, 10, "s1", &["finish docs"]),
        env(
            6,
            20,
            SessionRecovered {
                session_id: "s1".into(),
                recovered_by: "U:Ox".into(),
                reason: Some("resume".into()),
            },
        ),
        closed(7, 25, "s1", &[]),
    ];
    let view: SessionView = fold(&events[..6]);
    let s = view.session("s1").expect("session");
    assert_eq!(s.status, SessionStatus::Closed);
    assert_eq!(s.context, json!({"nested": {"x": 1, "y": 3}}));
    assert_eq!(s.facts.len(), 1);
    assert_eq!(s.facts[0].asserted_by, "U:Ar");
    assert_eq!(s.errors[0].code, "E42");
    assert_eq!(s.carryover, ["finish docs"]);
    assert_eq!(s.summary.as_deref(), Some("s1 done"));
    assert_eq!((s.opened_at, s.closed_at), (t(0), Some(t(10))));
    assert_eq!(s.duration_ms, 10_000);
    let view: SessionView = fold(&events);
    let s = view.session("s1").expect("session");
    assert_eq!(s.status, SessionStatus::Closed);
    assert_eq!(s.duration_ms, 15_000, "10 s, then 5 s after resuming");
    let statuses: Vec<_> = s.status_history.iter().map(|h| h.status).collect();
    assert_eq!(
        statuses,
        [
            SessionStatus::Open,
            SessionStatus::Closed,
            SessionStatus::Open,
            SessionStatus::Closed
        ]
    );
    assert!(s.carryover.is_empty());
}

// REQ-004-INTG-006
#[test]
fn portfolio_statistics_count_totals_durations_and_completion() {
    let events = vec![
        opened(0, 0, "a", "p1"),
        opened(1, 0, "b", "p1"),
        opened(2, 0, "c", "p1"),
        opened(3, 0, "d", "p2"),
        closed(4, 10, "a", &[]),
        closed(5, 30, "b", &["left over"]),
    ];
    let view: SessionView = fold(&events);
    let p1 = view.portfolio("p1").expect("p1");
    assert_eq!((p1.total, p1.active, p1.closed, p1.completed), (3, 1, 2, 1));
    assert!((p1.completion_rate - 0.5).abs() < 1e-9);
    assert_eq!(
        (p1.total_duration_ms, p1.mean_duration_ms),
        (40_000, 20_000)
    );
    let p2 = view.portfolio("p2").expect("p2");
    assert_eq!((p2.total, p2.active, p2.completion_rate), (1, 1, 0.0));
    assert!(view.portfolio("nope").is_none());
    assert_eq!(view.portfolios().len(), 2);
    assert_eq!(view.active_count(), 2);
    let open: Vec<_> = view
        .sessions(Some(SessionStatus::Open), &PageRequest::first(10))
        .items
        .iter()
        .map(|s| s.session_id.clone())
        .collect();
    assert_eq!(open, ["c", "d"]);
    let page = view.sessions(None, &PageRequest::first(3));
    assert_eq!((page.items.len(), page.next), (3, Some(2)));
    assert_eq!(
        view.sessions(None, &PageRequest::after(2, 3)).items.len(),
        1
    );
}

// REQ-004-INTG-011
#[test]
fn unknown_sessions_repeats_and_reopens_are_ignored() {
    let mut view = SessionView::default();
    assert!(
        view.apply(&closed(0, 0, "ghost", &[])),
        "moves the checkpoint"
    );
    assert!(view.session("ghost").is_none());
    assert!(view.apply(&opened(1, 1, "s", "p")));
    assert!(!view.apply(&opened(1, 1, "s", "p")));
    assert!(
        view.apply(&opened(2, 5, "s", "other")),
        "a second open is a no-op"
    );
    assert_eq!(
        view.session("s").map(|s| s.portfolio_id.as_str()),
        Some("p")
    );
    let text = json(&view);
    let back: SessionView = serde_json::from_str(&text).expect("parses");
    assert_eq!(json(&back), text);
}
