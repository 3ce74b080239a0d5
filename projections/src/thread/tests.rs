use chrono::Duration;
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::*;
use orchestrata_schemas::events::session::SessionOpened;
use uuid::Uuid;

use super::*;
use crate::testkit::{env, json, packet, t};
use crate::{fold, PageRequest, View};

const TH: &str = "7d0f7a4e-0000-4000-8000-000000000001";

fn sent(
    seq: u64,
    secs: i64,
    id: u128,
    from: &str,
    to: &str,
    priority: i32,
) -> orchestrata_schemas::events::Envelope {
    env(
        seq,
        secs,
        PacketSent {
            packet: packet(id, TH, from, to, priority),
        },
    )
}

fn work(
    seq: u64,
    secs: i64,
    id: u128,
    old: WorkStatus,
    new: WorkStatus,
) -> orchestrata_schemas::events::Envelope {
    env(
        seq,
        secs,
        WorkStatusChanged {
            message_id: Uuid::from_u128(id),
            thread_id: TH.into(),
            old,
            new,
            changed_by: "U:Vz".into(),
            assigned_to: (new == WorkStatus::InProgress).then(|| "U:Vz".into()),
            resolution: None,
            notes: Some(format!("to {}", new.as_str())),
        },
    )
}

fn conversation() -> Vec<orchestrata_schemas::events::Envelope> {
    vec![
        env(
            0,
            0,
            ThreadOpened {
                thread_id: TH.into(),
                subject: "analyse".into(),
                opened_by: "U:Cx".into(),
                participants: vec!["U:Cx".into()],
            },
        ),
        sent(1, 1, 1, "U:Cx", "U:Ox", 5),
        env(
            2,
            2,
            PacketDelivered {
                message_id: Uuid::from_u128(1),
                thread_id: TH.into(),
                to_agent: "U:Ox".into(),
            },
        ),
        env(
            3,
            3,
            PacketAcknowledged {
                message_id: Uuid::from_u128(1),
                thread_id: TH.into(),
                acknowledged_by: "U:Ox".into(),
            },
        ),
        sent(4, 4, 2, "U:Ox", "U:Vz", 8),
        env(
            5,
            5,
            PacketFailed {
                message_id: Uuid::from_u128(2),
                thread_id: TH.into(),
                reason: "inbox full".into(),
                retry_count: 0,
                will_retry: true,
            },
        ),
        env(
            6,
            6,
            PacketRetried {
                message_id: Uuid::from_u128(2),
                thread_id: TH.into(),
                attempt: 1,
            },
        ),
        env(
            7,
            7,
            PacketDelivered {
                message_id: Uuid::from_u128(2),
                thread_id: TH.into(),
                to_agent: "U:Vz".into(),
            },
        ),
        work(8, 8, 2, WorkStatus::Pending, WorkStatus::InProgress),
        env(
            9,
            9,
            PriorityChanged {
                message_id: Uuid::from_u128(2),
                thread_id: TH.into(),
                old: 8,
                new: 10,
                changed_by: "U:Ox".into(),
                reason: Some("urgent".into()),
            },
        ),
        sent(10, 10, 3, "U:Vz", "U:Cx", 5),
    ]
}

// REQ-004-US-008-005 REQ-004-US-008-006 REQ-004-US-008-011 REQ-004-US-008-012
// REQ-004-US-008-013 REQ-004-US-008-015 REQ-004-US-008-016 REQ-004-US-008-017
#[test]
fn a_conversation_folds_into_one_thread_in_send_order() {
    let view: ThreadView = fold(&conversation());
    let thread = view.thread(TH).expect("thread exists");
    assert_eq!(thread.subject, "analyse");
    assert_eq!(thread.opened_by, "U:Cx");
    assert_eq!(thread.created_at, t(0));
    assert_eq!(thread.message_count, 3);
    let participants: Vec<_> = thread.participants.iter().map(String::as_str).collect();
    assert_eq!(participants, ["U:Cx", "U:Ox", "U:Vz"]);
    let order: Vec<_> = view
        .thread_packets(TH)
        .map(|p| p.packet.message_id.as_u128())
        .collect();
    assert_eq!(order, [1, 2, 3]);
    assert_eq!(view.thread_status(TH), Some(ThreadStatus::Active));
    assert_eq!(thread.last_activity, t(10));
    assert!(view.thread("no-such-thread").is_none());
    assert_eq!(view.thread_packets("no-such-thread").count(), 0);
}

// REQ-004-US-004-012 REQ-004-US-004-018 REQ-004-US-005-012 REQ-004-US-005-018
// REQ-004-US-009-009 REQ-004-INTG-002 REQ-004-INTG-011 REQ-004-INTG-013
#[test]
fn packets_keep_delivery_work_and_priority_histories() {
    let view: ThreadView = fold(&conversation());
    let p1 = view.packet(&Uuid::from_u128(1)).expect("packet 1");
    let delivery: Vec<_> = p1
        .delivery_history
        .iter()
        .map(|h| (h.status, h.at))
        .collect();
    assert_eq!(
        delivery,
        [
            (DeliveryStatus::Queued, t(1)),
            (DeliveryStatus::Delivered, t(2)),
            (DeliveryStatus::Acknowledged, t(3))
        ]
    );
    let p2 = view.packet(&Uuid::from_u128(2)).expect("packet 2");
    let statuses: Vec<_> = p2.delivery_history.iter().map(|h| h.status).collect();
    assert_eq!(
        statuses,
        [
            DeliveryStatus::Queued,
            DeliveryStatus::Failed,
            DeliveryStatus::Queued,
            DeliveryStatus::Delivered
        ]
    );
    assert_eq!(p2.delivery_history[1].note.as_deref(), Some("inbox full"));
    assert_eq!(p2.failure_reason.as_deref(), Some("inbox full"));
    assert_eq!(p2.retry_count, 1);
    assert_eq!(p2.work_status, WorkStatus::InProgress);
    assert_eq!(p2.assigned_to.as_deref(), Some("U:Vz"));
    assert_eq!(
        p2.work_history.last().map(|h| h.by.as_deref()),
        Some(Some("U:Vz"))
    );
    assert_eq!(p2.priority, 10);
    let priorities: Vec<_> = p2.priority_history.iter().map(|h| h.status).collect();
    assert_eq!(priorities, [8, 10]);
    assert!(view.packet(&Uuid::from_u128(99)).is_none());
}

// REQ-004-US-008-018 REQ-004-US-008-019 REQ-004-US-008-014
#[test]
fn thread_closes_when_all_work_is_archived_and_reopens() {
    let mut events = vec![
        sent(0, 0, 1, "U:Cx", "U:Ox", 5),
        sent(1, 1, 2, "U:Ox", "U:Cx", 5),
    ];
    let mut seq = 2;
    for id in [1, 2] {
        for (old, new) in [
            (WorkStatus::Pending, WorkStatus::InProgress),
            (WorkStatus::InProgress, WorkStatus::Resolved),
            (WorkStatus::Resolved, WorkStatus::Archived),
        ] {
            events.push(work(seq, seq as i64, id, old, new));
            seq += 1;
        }
        let view: ThreadView = fold(&events);
        let expected = if id == 1 {
            ThreadStatus::Active
        } else {
            ThreadStatus::Resolved
        };
        assert_eq!(
            view.thread_status(TH),
            Some(expected),
            "after archiving packet {id}"
        );
    }
    events.push(env(
        seq,
        20,
        ThreadReopened {
            thread_id: TH.into(),
            reopened_by: "U:Cx".into(),
            reason: Some("more".into()),
        },
    ));
    let view: ThreadView = fold(&events);
    assert_eq!(view.thread_status(TH), Some(ThreadStatus::Active));
    events.push(env(
        seq + 1,
        21,
        ThreadClosed {
            thread_id: TH.into(),
            closed_by: "U:Ox".into(),
            reason: None,
        },
    ));
    let view: ThreadView = fold(&events);
    assert_eq!(view.thread_status(TH), Some(ThreadStatus::Resolved));
    // A new packet into a resolved thread makes it active again.
    events.push(sent(seq + 2, 22, 3, "U:Cx", "U:Ox", 5));
    let view: ThreadView = fold(&events);
    let thread = view.thread(TH).expect("thread");
    assert_eq!(thread.status, ThreadStatus::Active);
    let history: Vec<_> = thread.status_history.iter().map(|h| h.status).collect();
    use ThreadStatus::*;
    assert_eq!(history, [Active, Resolved, Active, Resolved, Active]);
    // Explicit archive is terminal for new packets.
    events.push(env(
        seq + 3,
        23,
        ThreadArchived {
            thread_id: TH.into(),
            archived_by: "U:Ox".into(),
            reason: None,
        },
    ));
    events.push(sent(seq + 4, 24, 4, "U:Cx", "U:Ox", 5));
    let view: ThreadView = fold(&events);
    assert_eq!(view.thread_status(TH), Some(Archived));
    assert_eq!(view.thread(TH).map(|t| t.message_count), Some(4));
}

// REQ-004-US-008-020
#[test]
fn threads_idle_for_30_days_of_event_time_are_archived() {
    let day = 86_400;
    let other = "other-thread";
    let mut events = vec![sent(0, 0, 1, "U:Cx", "U:Ox", 5)];
    // Exactly 30 days later: not yet archived (the rule is strictly more than 30 days).
    events.push(env(
        1,
        30 * day,
        ThreadOpened {
            thread_id: other.into(),
            subject: "s".into(),
            opened_by: "U:Ox".into(),
            participants: vec![],
        },
    ));
    let view: ThreadView = fold(&events);
    assert_eq!(view.thread_status(TH), Some(ThreadStatus::Active));
    // One second more of event time anywhere in the stream archives the idle thread.
    events.push(env(
        2,
        30 * day + 1,
        ThreadClosed {
            thread_id: other.into(),
            closed_by: "U:Ox".into(),
            reason: None,
        },
    ));
    let view: ThreadView = fold(&events);
    assert_eq!(view.thread_status(TH), Some(ThreadStatus::Archived));
    assert_eq!(
        view.thread(TH).map(|t| t.status),
        Some(ThreadStatus::Active),
        "recorded status is untouched"
    );
    // "As of" queries: active at day 10, archived at day 31.
    assert_eq!(
        view.thread_status_at(TH, t(10 * day)),
        Some(ThreadStatus::Active)
    );
    assert_eq!(
        view.thread_status_at(TH, t(31 * day)),
        Some(ThreadStatus::Archived)
    );
    // A late event about the idle thread records the archive first, at day 30.
    events.push(sent(3, 40 * day, 2, "U:Ox", "U:Cx", 5));
    let view: ThreadView = fold(&events);
    let thread = view.thread(TH).expect("thread");
    assert_eq!(thread.status, ThreadStatus::Archived);
    let last = thread.status_history.last().expect("history");
    assert_eq!(
        (last.status, last.at, last.by.as_deref()),
        (
            ThreadStatus::Archived,
            t(0) + Duration::days(30),
            Some(AGE_RULE)
        )
    );
    assert_eq!(thread.message_count, 2);
    // The wall clock plays no part: the same events fold the same way.
    assert_eq!(json(&view), json(&fold::<ThreadView>(&events)));
}

// REQ-004-US-008-007 REQ-004-US-008-008 REQ-004-US-008-009 REQ-004-US-004-019
// REQ-004-US-005-019 REQ-004-INTG-003 REQ-004-INTG-004 REQ-004-INTG-005
#[test]
fn packet_queries_filter_and_paginate_in_send_order() {
    let view: ThreadView = fold(&conversation());
    let ids = |q: &PacketQuery| -> Vec<u128> {
        view.packets(q, &PageRequest::first(100))
            .expect("a whole view")
            .items
            .iter()
            .map(|p| p.packet.message_id.as_u128())
            .collect()
    };
    assert_eq!(ids(&PacketQuery::default()), [1, 2, 3]);
    assert_eq!(
        ids(&PacketQuery {
            thread_id: Some(TH.into()),
            ..Default::default()
        }),
        [1, 2, 3]
    );
    assert_eq!(
        ids(&PacketQuery {
            thread_id: Some("nope".into()),
            ..Default::default()
        }),
        Vec::<u128>::new()
    );
    assert_eq!(
        ids(&PacketQuery {
            sender: Some("U:Ox".into()),
            ..Default::default()
        }),
        [2]
    );
    assert_eq!(
        ids(&PacketQuery {
            recipient: Some("U:Cx".into()),
            ..Default::default()
        }),
        [3]
    );
    assert_eq!(
        ids(&PacketQuery {
            sender: Some("U:Qa".into()),
            ..Default::default()
        }),
        Vec::<u128>::new()
    );
    assert_eq!(
        ids(&PacketQuery {
            delivery_status: Some(DeliveryStatus::Acknowledged),
            ..Default::default()
        }),
        [1]
    );
    assert_eq!(
        ids(&PacketQuery {
            delivery_status: Some(DeliveryStatus::Queued),
            ..Default::default()
        }),
        [3]
    );
    assert_eq!(
        ids(&PacketQuery {
            work_status: Some(WorkStatus::InProgress),
            ..Default::default()
        }),
        [2]
    );
    assert_eq!(
        ids(&PacketQuery {
            priority: Some(10),
            ..Default::default()
        }),
        [2]
    );
    assert_eq!(
        ids(&PacketQuery {
            sent_from: Some(t(2)),
            sent_until: Some(t(10)),
            ..Default::default()
        }),
        [2]
    );
    assert_eq!(
        ids(&PacketQuery {
            sender: Some("U:Cx".into()),
            recipient: Some("U:Ox".into()),
            ..Default::default()
        }),
        [1]
    );
    // Pages of one, following cursors, visit every packet once.
    let mut seen = Vec::new();
    let mut page = PageRequest::first(1);
    loop {
        let result = view
            .packets(&PacketQuery::default(), &page)
            .expect("a whole view");
        seen.extend(result.items.iter().map(|p| p.packet.message_id.as_u128()));
        match result.next {
            Some(cursor) => page = PageRequest::after(cursor, 1),
            None => break,
        }
    }
    assert_eq!(seen, [1, 2, 3]);
    // Thread listing by status and participant.
    let q = ThreadQuery {
        status: Some(ThreadStatus::Active),
        participant: Some("U:Vz".into()),
    };
    assert_eq!(
        view.threads(&q, &PageRequest::first(10))
            .expect("a whole view")
            .items
            .len(),
        1
    );
    let q = ThreadQuery {
        status: Some(ThreadStatus::Resolved),
        participant: None,
    };
    assert!(view
        .threads(&q, &PageRequest::first(10))
        .expect("a whole view")
        .items
        .is_empty());
}

// REQ-004-INTG-011
#[test]
fn repeats_stragglers_and_other_streams_are_ignored() {
    let events = conversation();
    let clean: ThreadView = fold(&events);
    let mut view = ThreadView::default();
    for e in &events {
        assert!(view.apply(e), "new event {} applied", e.sequence);
        assert!(!view.apply(e), "repeat {} ignored", e.sequence);
    }
    // An older event delivered late changes nothing.
    assert!(!view.apply(&events[2]));
    // Events of another stream are not this view's business.
    assert!(!view.apply(&env(
        99,
        99,
        SessionOpened {
            session_id: "s".into(),
            portfolio_id: "p".into(),
            goals: vec![],
            opened_by: "U:Ox".into()
        }
    )));
    assert_eq!(json(&view), json(&clean));
    assert_eq!(
        view.checkpoint()
            .last(orchestrata_schemas::events::Stream::CxpTraffic),
        Some(10)
    );
    // Events about unknown packets or threads only move the checkpoint.
    let mut view = ThreadView::default();
    assert!(view.apply(&env(
        0,
        0,
        PacketDelivered {
            message_id: Uuid::from_u128(5),
            thread_id: "x".into(),
            to_agent: "U:Ox".into()
        }
    )));
    assert_eq!((view.thread_count(), view.packet_count()), (0, 0));
    // The same packet logged twice counts once.
    let mut view: ThreadView = fold(&[sent(0, 0, 1, "U:Cx", "U:Ox", 5)]);
    view.apply(&sent(1, 1, 1, "U:Cx", "U:Ox", 5));
    assert_eq!(view.thread(TH).map(|t| t.message_count), Some(1));
}

// REQ-004-INTG-011
#[test]
fn views_round_trip_through_json_byte_for_byte() {
    let view: ThreadView = fold(&conversation());
    let text = json(&view);
    let back: ThreadView = serde_json::from_str(&text).expect("parses");
    assert_eq!(back, view);
    assert_eq!(json(&back), text);
}
