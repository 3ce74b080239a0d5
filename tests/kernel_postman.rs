//! The Postman: per-recipient queues in serving order, inbox reads, acknowledgement,
//! failures, retries with exponential backoff, final failure with the sender notified.
//! Real sled log; retries run on tokio's paused clock, so they are deterministic and
//! the tests do not really sleep.

mod kernel_common;

use std::time::Duration;

use kernel_common::{config, events, harness, Harness};
use orchestrata::kernel::{cmd, KernelConfig};
use orchestrata_schemas::cxp::DeliveryStatus;
use orchestrata_schemas::events::{Event, Stream};

/// Waits (on the paused clock) until `check` holds, at most `seconds` simulated seconds.
async fn eventually<F>(h: &Harness, seconds: u64, check: F)
where
    F: Fn(&orchestrata::kernel::KernelState) -> bool + Send + Sync + Copy + 'static,
{
    for _ in 0..seconds * 4 {
        if h.kernel.read(check).await.expect("read") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    panic!("condition not reached within {seconds} s of kernel time");
}

/// The first packet the Postman (`U:PS`) sent: a `delivery_failed` notice.
fn postman_notice(
    log: &[orchestrata_schemas::events::Envelope],
) -> Option<orchestrata_schemas::events::types::Packet> {
    log.iter().find_map(|e| match &e.record.event {
        Event::PacketSent(s) if s.packet.from_agent == "U:PS" => Some(s.packet.clone()),
        _ => None,
    })
}

// REQ-004-INTG-012 REQ-004-US-009-005 REQ-004-US-009-006 REQ-004-US-009-008
#[tokio::test]
async fn inbox_serves_priority_descending_then_oldest_first() {
    let h = harness(config()).await;
    let mut sent = Vec::new();
    for (i, prio) in [3, 9, 5, 9, 0, 5].into_iter().enumerate() {
        let mut p = cmd::packet(
            "U:Ox",
            "U:Vz",
            &format!("task {i}"),
            serde_json::json!({"i": i}),
        );
        p.priority = prio;
        h.kernel
            .execute(cmd::send("U:Ox", p.clone()))
            .await
            .expect("sent");
        sent.push(p);
    }
    let inbox = h.kernel.inbox("U:Vz", 10).await.expect("inbox");
    let order: Vec<String> = inbox
        .packets
        .iter()
        .map(|p| p.subject().to_owned())
        .collect();
    assert_eq!(
        order,
        ["task 1", "task 3", "task 2", "task 5", "task 0", "task 4"]
    );
    assert_eq!(inbox.events.len(), 6);
    let delivered: Vec<uuid::Uuid> = events(&h.log, Stream::CxpTraffic)
        .await
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PacketDelivered(d) => Some(d.message_id),
            _ => None,
        })
        .collect();
    let expected: Vec<uuid::Uuid> = [1, 3, 2, 5, 0, 4]
        .iter()
        .map(|&i| sent[i].message_id)
        .collect();
    assert_eq!(delivered, expected, "delivery events follow serving order");
}

// REQ-004-INTG-012 REQ-004-US-009-008
#[tokio::test]
async fn raising_a_queued_packets_priority_moves_it_ahead() {
    let h = harness(config()).await;
    let first = cmd::packet("U:Ox", "U:Vz", "first", serde_json::json!({}));
    let second = cmd::packet("U:Ox", "U:Vz", "second", serde_json::json!({}));
    h.kernel
        .execute(cmd::send("U:Ox", first))
        .await
        .expect("sent");
    h.kernel
        .execute(cmd::send("U:Ox", second.clone()))
        .await
        .expect("sent");
    h.kernel
        .execute(cmd::priority("U:Ox", second.message_id, 8))
        .await
        .expect("raised");
    let inbox = h.kernel.inbox("U:Vz", 1).await.expect("inbox");
    assert_eq!(inbox.packets.len(), 1);
    assert_eq!(inbox.packets[0].subject(), "second");
}

// REQ-004-INTG-011 REQ-004-INTG-012 REQ-004-INTG-015 REQ-004-INTG-017
#[tokio::test]
async fn inbox_delivers_up_to_the_limit_and_acknowledged_packets_leave_it() {
    let h = harness(config()).await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let p = cmd::packet(
            "U:Ox",
            "U:Qa",
            &format!("review {i}"),
            serde_json::json!({}),
        );
        ids.push(p.message_id);
        h.kernel.execute(cmd::send("U:Ox", p)).await.expect("sent");
    }
    let inbox = h.kernel.inbox("U:Qa", 2).await.expect("inbox");
    assert_eq!(inbox.packets.len(), 2);
    assert_eq!(
        h.kernel
            .packet(ids[2])
            .await
            .expect("third")
            .delivery_status(),
        DeliveryStatus::Queued
    );
    let again = h.kernel.inbox("U:Qa", 2).await.expect("inbox again");
    assert!(
        again.events.is_empty(),
        "nothing new delivered while two are unacknowledged"
    );
    for p in &inbox.packets {
        h.kernel
            .execute(cmd::acknowledge("U:Qa", p.message_id()))
            .await
            .expect("ack");
    }
    let next = h.kernel.inbox("U:Qa", 2).await.expect("inbox");
    assert_eq!(next.packets.len(), 1);
    assert_eq!(next.packets[0].message_id(), ids[2]);
    let unknown = h.kernel.inbox("U:Zz", 5).await.expect_err("unknown volk");
    assert_eq!(unknown.code(), "unknown_volk");
    h.kernel
        .execute(cmd::deregister("U:Ox", "U:Qa", "maintenance"))
        .await
        .expect("gone");
    let gone = h.kernel.inbox("U:Qa", 5).await.expect_err("deregistered");
    assert_eq!(gone.code(), "volk_unavailable");
}

// REQ-004-INTG-013 REQ-004-US-004-021 REQ-004-US-004-022 REQ-004-US-004-023 REQ-004-US-004-024
#[tokio::test(start_paused = true)]
async fn retries_back_off_exponentially_then_fail_and_notify_the_sender() {
    let h = harness(config()).await;
    h.kernel
        .execute(cmd::deregister("U:Ox", "U:Vz", "offline"))
        .await
        .expect("deregistered");
    let p = cmd::packet("U:Ox", "U:Vz", "generate", serde_json::json!({}));
    let out = h
        .kernel
        .execute(cmd::send("U:Ox", p.clone()))
        .await
        .expect("accepted");
    assert_eq!(
        out.event_types(),
        ["thread_opened", "packet_sent", "packet_failed"]
    );
    let id = p.message_id;
    eventually(&h, 60, move |s| {
        s.packet(&id)
            .is_some_and(|p| p.packet.retry_count() == 3 && !p.packet.can_retry())
    })
    .await;
    let log = events(&h.log, Stream::CxpTraffic).await;
    let steps: Vec<(String, chrono::DateTime<chrono::Utc>)> = log
        .iter()
        .filter(|e| match &e.record.event {
            Event::PacketFailed(f) => f.message_id == id,
            Event::PacketRetried(r) => r.message_id == id,
            _ => false,
        })
        .map(|e| (e.record.event_type().to_owned(), e.record.timestamp))
        .collect();
    let kinds: Vec<&str> = steps.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(
        kinds,
        [
            "packet_failed",
            "packet_retried",
            "packet_failed",
            "packet_retried",
            "packet_failed",
            "packet_retried",
            "packet_failed"
        ]
    );
    for (n, pair) in steps.windows(2).step_by(2).enumerate() {
        let waited = (pair[1].1 - pair[0].1).to_std().expect("ordered");
        let backoff = Duration::from_secs(1 << n);
        assert!(
            waited >= backoff,
            "retry {n} waited {waited:?}, backoff is {backoff:?}"
        );
        assert!(
            waited < backoff + Duration::from_secs(1),
            "retry {n} waited {waited:?}"
        );
    }
    let finals: Vec<(i32, bool)> = log
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PacketFailed(f) if f.message_id == id => Some((f.retry_count, f.will_retry)),
            _ => None,
        })
        .collect();
    assert_eq!(finals.last(), Some(&(3, false)));
    let notice = postman_notice(&log).expect("the sender is notified");
    assert_eq!(notice.to_agent, "U:Ox");
    assert_eq!(notice.subject, "delivery_failed");
    assert_eq!(notice.in_reply_to, Some(id));
    let original = h.kernel.packet(id).await.expect("known");
    assert_eq!(notice.thread_id, original.thread_id());
    assert_eq!(original.delivery_status(), DeliveryStatus::Failed);
    let inbox = h.kernel.inbox("U:Ox", 10).await.expect("sender inbox");
    assert!(inbox
        .packets
        .iter()
        .any(|p| p.subject() == "delivery_failed"));
}

// REQ-004-INTG-013 REQ-004-US-004-021
#[tokio::test(start_paused = true)]
async fn a_failed_delivery_is_retried_and_succeeds_once_the_recipient_is_back() {
    let h = harness(config()).await;
    h.kernel
        .execute(cmd::deregister("U:Ox", "U:Ux", "restarting"))
        .await
        .expect("deregistered");
    let p = h.send_new("U:Ox", "U:Ux", "design").await;
    let id = p.message_id;
    assert_eq!(
        h.kernel.packet(id).await.expect("known").delivery_status(),
        DeliveryStatus::Failed
    );
    h.kernel
        .execute(cmd::register("U:Ox", "U:Ux", Some("U:Ox")))
        .await
        .expect("back");
    eventually(&h, 10, move |s| {
        s.packet(&id)
            .is_some_and(|p| p.packet.delivery_status() == DeliveryStatus::Queued)
    })
    .await;
    let inbox = h.kernel.inbox("U:Ux", 5).await.expect("inbox");
    assert_eq!(inbox.packets.len(), 1);
    h.kernel
        .execute(cmd::acknowledge("U:Ux", id))
        .await
        .expect("ack");
    let packet = h.kernel.packet(id).await.expect("known");
    assert_eq!(packet.delivery_status(), DeliveryStatus::Acknowledged);
    assert_eq!(packet.retry_count(), 1);
}

// REQ-004-INTG-012 REQ-004-INTG-013 REQ-004-US-004-020
#[tokio::test(start_paused = true)]
async fn a_full_inbox_refuses_the_overflow_for_good_and_a_retry_delivers_it_once_room_is_made() {
    let h = harness(KernelConfig {
        inbox_capacity: 2,
        ..config()
    })
    .await;
    let mut ids = Vec::new();
    for i in 0..3 {
        let p = cmd::packet("U:Ox", "U:PM", &format!("plan {i}"), serde_json::json!({}));
        ids.push(p.message_id);
        let out = h
            .kernel
            .execute(cmd::send("U:Ox", p))
            .await
            .expect("accepted");
        let failed = out.event_types().contains(&"packet_failed");
        assert_eq!(failed, i == 2, "only the third overflows");
    }
    let third = ids[2];
    // Longer than every backoff of the budget (1 + 2 + 4 s): no timed retry comes.
    tokio::time::sleep(Duration::from_secs(30)).await;
    let log = events(&h.log, Stream::CxpTraffic).await;
    let about_third: Vec<(String, Option<(i32, bool)>)> = log
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PacketFailed(f) if f.message_id == third => Some((
                e.record.event_type().to_owned(),
                Some((f.retry_count, f.will_retry)),
            )),
            Event::PacketRetried(r) if r.message_id == third => {
                Some((e.record.event_type().to_owned(), None))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        about_third,
        [("packet_failed".to_owned(), Some((0, false)))],
        "a full inbox fails the packet once, for good"
    );
    let packet = h.kernel.packet(third).await.expect("third");
    assert!(packet.failure_reason().is_some_and(|r| r.contains("full")));
    let notice = postman_notice(&log).expect("the sender is told");
    assert_eq!(
        (notice.to_agent.as_str(), notice.in_reply_to),
        ("U:Ox", Some(third))
    );

    // A restart does not reschedule it either: the fold keeps `will_retry: false`.
    h.kernel.stop().await;
    let (kernel, _) = orchestrata::kernel::Kernel::start(
        h.log.clone(),
        KernelConfig {
            inbox_capacity: 2,
            ..config()
        },
        std::sync::Arc::new(orchestrata::kernel::TokioClock::new()),
    )
    .await
    .expect("restarts");
    tokio::time::sleep(Duration::from_secs(30)).await;
    assert!(kernel
        .read(move |s| s.retryable().all(|p| p.packet.message_id() != third))
        .await
        .expect("read"));
    let retried = events(&h.log, Stream::CxpTraffic)
        .await
        .iter()
        .any(|e| matches!(&e.record.event, Event::PacketRetried(r) if r.message_id == third));
    assert!(!retried, "no timed retry after the restart");

    // Room made, the sender's explicit retry goes through and is delivered.
    let inbox = kernel.inbox("U:PM", 2).await.expect("inbox");
    for p in &inbox.packets {
        kernel
            .execute(cmd::acknowledge("U:PM", p.message_id()))
            .await
            .expect("ack");
    }
    kernel
        .execute(cmd::retry("U:Ox", third))
        .await
        .expect("an explicit retry is accepted");
    let inbox = kernel.inbox("U:PM", 2).await.expect("inbox");
    assert_eq!(inbox.packets.len(), 1);
    assert_eq!(inbox.packets[0].message_id(), third);
    assert_eq!(inbox.packets[0].retry_count(), 1);
}

// REQ-004-INTG-013 REQ-014-029: packets in flight to a deregistered Volk fail at once,
// with the reason, rather than waiting forever.
#[tokio::test]
async fn deregistering_a_recipient_fails_its_queued_packets() {
    let h = harness(config()).await;
    let p = h.send_new("U:Ox", "U:Ar", "design").await;
    let out = h
        .kernel
        .execute(cmd::deregister("U:Ox", "U:Ar", "retired"))
        .await
        .expect("deregistered");
    assert_eq!(out.event_types(), ["deregistered", "packet_failed"]);
    let packet = h.kernel.packet(p.message_id).await.expect("known");
    assert_eq!(packet.delivery_status(), DeliveryStatus::Failed);
    assert!(packet
        .failure_reason()
        .is_some_and(|r| r.contains("deregistered")));
}
