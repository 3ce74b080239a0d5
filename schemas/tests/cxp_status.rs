//! Delivery and work state machines (US-004, US-005).

mod cxp_common;

use cxp_common::*;
use orchestrata_schemas::cxp::*;
use serde_json::json;

// REQ-004-US-004-001 REQ-004-US-004-002 REQ-004-US-004-003 REQ-004-US-004-004 REQ-004-US-004-005
// REQ-004-US-004-006 REQ-004-US-004-007 REQ-004-US-004-008 REQ-004-US-004-009 REQ-004-US-004-010
// REQ-004-US-004-011
#[test]
fn delivery_transition_table_is_exact() {
    use DeliveryStatus::*;
    let allowed = [
        (Queued, Delivered),
        (Queued, Failed),
        (Delivered, Acknowledged),
        (Delivered, Failed),
        (Failed, Queued),
    ];
    for from in DeliveryStatus::ALL {
        for to in DeliveryStatus::ALL {
            assert_eq!(
                from.can_transition_to(to),
                allowed.contains(&(from, to)),
                "{from}->{to}"
            );
        }
    }
    let mut p = packet();
    p.transition_delivery(Delivered, t(1)).unwrap();
    p.transition_delivery(Acknowledged, t(2)).unwrap();
    let err = p.transition_delivery(Queued, t(3)).unwrap_err();
    assert_eq!(
        err,
        CxpError::InvalidDeliveryTransition {
            from: Acknowledged,
            to: Queued
        }
    );
    assert_eq!(err.field(), Some("delivery_status"));
    assert_eq!(p.delivery_status(), Acknowledged);
}

// REQ-004-US-004-012 REQ-004-US-004-014 REQ-004-US-004-015 REQ-004-US-004-016 REQ-004-US-004-017
// REQ-004-US-004-018
#[test]
fn delivery_history_records_each_transition_with_its_time() {
    let mut p = packet();
    assert!(p.is_queued());
    p.transition_delivery(DeliveryStatus::Delivered, t(1))
        .unwrap();
    assert!(p.is_delivered() && !p.is_queued());
    p.transition_delivery(DeliveryStatus::Acknowledged, t(2))
        .unwrap();
    assert!(p.is_acknowledged() && !p.is_failed());
    let h: Vec<_> = p
        .delivery_history()
        .iter()
        .map(|c| (c.status, c.at))
        .collect();
    assert_eq!(
        h,
        [
            (DeliveryStatus::Delivered, t(1)),
            (DeliveryStatus::Acknowledged, t(2))
        ]
    );
    // The history survives both codecs.
    assert_eq!(CxpPacket::from_json(&p.to_json().unwrap()).unwrap(), p);
    assert_eq!(CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap(), p);
    let mut failed = packet();
    failed.fail_delivery("recipient gone", t(3)).unwrap();
    assert!(failed.is_failed() && !failed.is_queued() && !failed.is_delivered());
}

// REQ-004-US-004-020 REQ-004-US-004-021 REQ-004-US-004-022 REQ-004-US-004-024
#[test]
fn failure_reason_and_bounded_retries() {
    let mut p = packet().with_max_retries(2);
    let err = p
        .transition_delivery(DeliveryStatus::Failed, t(1))
        .unwrap_err();
    assert_eq!(err.field(), Some("failure_reason"));
    assert_eq!(
        p.fail_delivery("  ", t(1)).unwrap_err().field(),
        Some("failure_reason")
    );
    p.fail_delivery("recipient offline", t(1)).unwrap();
    assert!(p.is_failed());
    assert_eq!(p.failure_reason(), Some("recipient offline"));
    assert!(p.can_retry());
    p.retry_delivery(t(2)).unwrap();
    assert_eq!(p.retry_count(), 1);
    assert_eq!(p.failure_reason(), None);
    p.fail_delivery("again", t(3)).unwrap();
    p.retry_delivery(t(4)).unwrap();
    p.fail_delivery("and again", t(5)).unwrap();
    assert!(!p.can_retry());
    assert_eq!(
        p.retry_delivery(t(6)).unwrap_err(),
        CxpError::RetryLimitReached { max: 2 }
    );
    assert_eq!(p.retry_count(), 2);
    assert_eq!(p.max_retries(), 2);
    // The sender learns why: the failure travels with the packet.
    let back = CxpPacket::from_json(&p.to_json().unwrap()).unwrap();
    assert_eq!(back.failure_reason(), Some("and again"));
}

// REQ-004-US-005-001 REQ-004-US-005-002 REQ-004-US-005-003 REQ-004-US-005-004 REQ-004-US-005-005
// REQ-004-US-005-006 REQ-004-US-005-007 REQ-004-US-005-008 REQ-004-US-005-009 REQ-004-US-005-010
// REQ-004-US-005-011
#[test]
fn work_transition_table_is_exact() {
    use WorkStatus::*;
    let allowed = [
        (Pending, InProgress),
        (InProgress, Resolved),
        (InProgress, Pending),
        (Resolved, Archived),
    ];
    for from in WorkStatus::ALL {
        for to in WorkStatus::ALL {
            assert_eq!(
                from.can_transition_to(to),
                allowed.contains(&(from, to)),
                "{from}->{to}"
            );
        }
    }
    let mut p = packet();
    p.transition_work(InProgress, t(1)).unwrap();
    p.transition_work(Resolved, t(2)).unwrap();
    p.transition_work(Archived, t(3)).unwrap();
    let err = p.transition_work(Pending, t(4)).unwrap_err();
    assert_eq!(
        err,
        CxpError::InvalidWorkTransition {
            from: Archived,
            to: Pending
        }
    );
    assert_eq!(err.field(), Some("work_status"));
}

// REQ-004-US-005-012 REQ-004-US-005-014 REQ-004-US-005-015 REQ-004-US-005-016 REQ-004-US-005-017
// REQ-004-US-005-018 REQ-004-US-005-020 REQ-004-US-005-021 REQ-004-US-005-022 REQ-004-US-005-023
// REQ-004-US-005-024
#[test]
fn work_tracking_assignment_resolution_notes_and_time() {
    let mut p = packet();
    assert!(p.is_pending());
    p.start_work(alias("U:Qa"), t(10)).unwrap();
    assert!(p.is_in_progress());
    assert_eq!(p.assigned_to(), Some(alias("U:Qa")));
    assert_eq!(p.time_in_progress(t(15)).num_seconds(), 5);
    p.requeue_work(t(20)).unwrap();
    assert!(p.is_pending());
    assert_eq!(p.assigned_to(), None);
    p.start_work(alias("U:Vz"), t(30)).unwrap();
    p.add_note(alias("U:Vz"), "halfway", t(35)).unwrap();
    assert_eq!(
        p.add_note(alias("U:Vz"), "", t(36)).unwrap_err().field(),
        Some("notes")
    );
    p.resolve_work(json!({"commit": "abc123"}), t(40)).unwrap();
    assert!(p.is_resolved());
    let r = p.resolution().unwrap();
    assert_eq!(
        (r.result.clone(), r.at),
        (json!({"commit": "abc123"}), t(40))
    );
    assert_eq!(p.time_in_progress(t(100)).num_seconds(), 20);
    assert_eq!(p.notes()[0].text, "halfway");
    assert!(!p.is_archived());
    p.archive_work(t(50)).unwrap();
    assert!(p.is_archived());
    let h: Vec<_> = p.work_history().iter().map(|c| (c.status, c.at)).collect();
    use WorkStatus::*;
    assert_eq!(
        h,
        [
            (InProgress, t(10)),
            (Pending, t(20)),
            (InProgress, t(30)),
            (Resolved, t(40)),
            (Archived, t(50))
        ]
    );
    assert_eq!(CxpPacket::from_bytes(&p.to_bytes().unwrap()).unwrap(), p);
}

// REQ-004-US-007-013 REQ-004-US-007-014
#[test]
fn status_consistency_with_history_is_validated_on_decode() {
    let mut p = packet();
    p.transition_delivery(DeliveryStatus::Delivered, t(1))
        .unwrap();
    p.start_work(alias("U:Vz"), t(2)).unwrap();
    let mut v = p.to_json_value().unwrap();
    v["delivery_status"] = json!("queued");
    let err = CxpPacket::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.field(), Some("tracking.delivery_history"));
    let mut v = p.to_json_value().unwrap();
    v["timestamp"] = json!("2020-01-01T00:00:00Z");
    let err = CxpPacket::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.field(), Some("tracking.delivery_history"));
    let mut v = p.to_json_value().unwrap();
    v["tracking"]["work_history"][0]["status"] = json!("resolved");
    v["work_status"] = json!("resolved");
    let err = CxpPacket::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.field(), Some("tracking.work_history"));
    let mut v = p.to_json_value().unwrap();
    v["tracking"]["resolution"] = json!({"result": 1, "at": "2026-01-15T10:30:02Z"});
    let err = CxpPacket::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.field(), Some("tracking.resolution"));
    let mut v = p.to_json_value().unwrap();
    v["tracking"]["failure_reason"] = json!("x");
    let err = CxpPacket::from_json(&v.to_string()).unwrap_err();
    assert_eq!(err.field(), Some("tracking.failure_reason"));
}
