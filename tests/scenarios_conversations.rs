//! End-to-end scenarios of spec 004's testing checklist that need no gateway, run
//! through the kernel on a real sled log.

mod kernel_common;

use std::time::Duration;

use futures::future::join_all;
use kernel_common::{config, harness, Harness};
use orchestrata::kernel::{cmd, KernelConfig};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::types::Packet;

/// `to` reads its inbox, expects exactly `subjects`, acknowledges them all.
async fn read_and_ack(h: &Harness, to: &str, subjects: &[&str]) -> Vec<uuid::Uuid> {
    let inbox = h.kernel.inbox(to, 100).await.expect("inbox");
    let got: Vec<&str> = inbox.packets.iter().map(|p| p.subject()).collect();
    assert_eq!(got, subjects, "inbox of {to}");
    let mut ids = Vec::new();
    for p in &inbox.packets {
        h.kernel
            .execute(cmd::acknowledge(to, p.message_id()))
            .await
            .expect("ack");
        ids.push(p.message_id());
    }
    ids
}

async fn work_on(h: &Harness, who: &str, id: uuid::Uuid, result: serde_json::Value) {
    h.kernel
        .execute(cmd::work(who, id, WorkStatus::InProgress))
        .await
        .expect("start");
    h.kernel
        .execute(cmd::resolve(who, id, result))
        .await
        .expect("resolve");
}

async fn send(h: &Harness, p: &Packet) {
    h.kernel
        .execute(cmd::send(&p.from_agent, p.clone()))
        .await
        .expect("send");
}

fn forward(from: &Packet, to: &str, subject: &str) -> Packet {
    let mut p = cmd::packet(&from.to_agent, to, subject, serde_json::json!({}));
    p.in_reply_to = Some(from.message_id);
    p
}

// REQ-004-INTG-014 REQ-004-INTG-015 REQ-004-INTG-017 REQ-004-US-008-004 REQ-004-US-008-017
#[tokio::test]
async fn full_conversation_concierge_orchestrator_vizint_concierge() {
    let h = harness(config()).await;
    let request = cmd::packet(
        "U:Cx",
        "U:Ox",
        "build_feature",
        serde_json::json!({"feature": "login"}),
    );
    send(&h, &request).await;
    read_and_ack(&h, "U:Ox", &["build_feature"]).await;
    let task = forward(&request, "U:Vz", "generate_code");
    send(&h, &task).await;
    read_and_ack(&h, "U:Vz", &["generate_code"]).await;
    work_on(&h, "U:Vz", task.message_id, serde_json::json!({"files": 3})).await;
    let done = forward(&task, "U:Cx", "feature_ready");
    send(&h, &done).await;
    read_and_ack(&h, "U:Cx", &["feature_ready"]).await;
    let thread = h
        .kernel
        .packet(request.message_id)
        .await
        .expect("known")
        .thread_id()
        .to_owned();
    let packets = h
        .kernel
        .thread_packets(&thread, None)
        .await
        .expect("thread");
    let subjects: Vec<&str> = packets.iter().map(|p| p.subject()).collect();
    assert_eq!(
        subjects,
        ["build_feature", "generate_code", "feature_ready"]
    );
    assert!(packets
        .iter()
        .all(|p| p.delivery_status() == DeliveryStatus::Acknowledged));
    let participants = h
        .kernel
        .read(move |s| {
            s.thread(&thread)
                .map(|t| t.participants.iter().map(str::to_owned).collect::<Vec<_>>())
        })
        .await
        .expect("read")
        .expect("thread");
    assert_eq!(participants, ["U:Cx", "U:Ox", "U:Vz"]);
}

// REQ-004-US-009-005
#[tokio::test]
async fn escalation_vizint_orchestrator_architect() {
    let h = harness(config()).await;
    let mut stuck = cmd::packet(
        "U:Vz",
        "U:Ox",
        "needs_decision",
        serde_json::json!({"why": "schema"}),
    );
    stuck.priority = 7;
    send(&h, &stuck).await;
    let mut routine = cmd::packet("U:PM", "U:Ox", "status", serde_json::json!({}));
    routine.priority = 3;
    send(&h, &routine).await;
    read_and_ack(&h, "U:Ox", &["needs_decision", "status"]).await;
    let mut up = forward(&stuck, "U:Ar", "decide_schema");
    up.priority = 9;
    send(&h, &up).await;
    read_and_ack(&h, "U:Ar", &["decide_schema"]).await;
    work_on(
        &h,
        "U:Ar",
        up.message_id,
        serde_json::json!({"decision": "normalize"}),
    )
    .await;
    let answer = forward(&up, "U:Vz", "decision");
    send(&h, &answer).await;
    read_and_ack(&h, "U:Vz", &["decision"]).await;
    let decided = h.kernel.packet(up.message_id).await.expect("known");
    assert!(decided.is_resolved());
    assert_eq!(
        decided.thread_id(),
        h.kernel
            .packet(stuck.message_id)
            .await
            .expect("known")
            .thread_id()
    );
}

// REQ-004-INTG-012 REQ-004-US-008-017
#[tokio::test]
async fn parallel_tasks_orchestrator_to_vizint_ux_pm() {
    let h = harness(config()).await;
    let kickoff = cmd::packet("U:Cx", "U:Ox", "release", serde_json::json!({}));
    send(&h, &kickoff).await;
    let tasks: Vec<Packet> = [("U:Vz", "code"), ("U:Ux", "screens"), ("U:PM", "plan")]
        .iter()
        .map(|(to, s)| forward(&kickoff, to, s))
        .collect();
    let outs = join_all(
        tasks
            .iter()
            .map(|t| h.kernel.execute(cmd::send("U:Ox", t.clone()))),
    )
    .await;
    assert!(outs.iter().all(|o| o.is_ok()));
    for (t, (to, subject)) in
        tasks
            .iter()
            .zip([("U:Vz", "code"), ("U:Ux", "screens"), ("U:PM", "plan")])
    {
        read_and_ack(&h, to, &[subject]).await;
        work_on(&h, to, t.message_id, serde_json::json!({"done": subject})).await;
    }
    let thread = h
        .kernel
        .packet(kickoff.message_id)
        .await
        .expect("known")
        .thread_id()
        .to_owned();
    let packets = h
        .kernel
        .thread_packets(&thread, None)
        .await
        .expect("thread");
    assert_eq!(packets.len(), 4);
    assert_eq!(packets.iter().filter(|p| p.is_resolved()).count(), 3);
}

// REQ-004-INTG-013 REQ-004-US-004-021
#[tokio::test(start_paused = true)]
async fn failed_delivery_then_retry_then_success() {
    let h = harness(config()).await;
    h.kernel
        .execute(cmd::deregister("U:Ox", "U:Qa", "restart"))
        .await
        .expect("down");
    let p = cmd::packet("U:Vz", "U:Qa", "review_code", serde_json::json!({}));
    send(&h, &p).await;
    assert!(h
        .kernel
        .packet(p.message_id)
        .await
        .expect("known")
        .is_failed());
    h.kernel
        .execute(cmd::register("U:Ox", "U:Qa", Some("U:Ox")))
        .await
        .expect("up");
    tokio::time::sleep(Duration::from_secs(2)).await;
    read_and_ack(&h, "U:Qa", &["review_code"]).await;
    let done = h.kernel.packet(p.message_id).await.expect("known");
    assert!(done.is_acknowledged());
    assert_eq!(done.retry_count(), 1);
}

// REQ-004-US-009-005 REQ-004-US-009-006 REQ-004-INTG-012
#[tokio::test]
async fn priority_order_under_load() {
    let h = harness(config()).await;
    let packets: Vec<Packet> = (0..1000)
        .map(|i| {
            let mut p = cmd::packet(
                "U:Ox",
                "U:Qa",
                &format!("t{i}"),
                serde_json::json!({"i": i}),
            );
            p.priority = i * 7919 % 11;
            p
        })
        .collect();
    let outs = join_all(
        packets
            .iter()
            .map(|p| h.kernel.execute(cmd::send("U:Ox", p.clone()))),
    )
    .await;
    assert!(outs.iter().all(|o| o.is_ok()));
    let inbox = h.kernel.inbox("U:Qa", 100).await.expect("inbox");
    assert_eq!(inbox.packets.len(), 100);
    let prios: Vec<u8> = inbox.packets.iter().map(|p| p.priority().value()).collect();
    assert!(
        prios.windows(2).all(|w| w[0] >= w[1]),
        "priority descending"
    );
    assert_eq!(prios[0], 10);
    // Within one priority, the packet queued first is served first.
    let tens: Vec<usize> = inbox
        .packets
        .iter()
        .filter(|p| p.priority().value() == 10)
        .filter_map(|p| p.subject()[1..].parse().ok())
        .collect();
    let expected: Vec<usize> = (0..1000).filter(|i| i * 7919 % 11 == 10).collect();
    assert_eq!(tens, expected[..tens.len()]);
}

// REQ-004-INTG-010 REQ-004-US-009-008 REQ-004-PERF-013
#[tokio::test]
async fn ten_thousand_packets_in_memory() {
    let h = harness(KernelConfig {
        inbox_capacity: 10_000,
        ..config()
    })
    .await;
    let recipients = ["U:Vz", "U:Qa", "U:Ar", "U:Ux", "U:PM", "U:Cx"];
    let thread = {
        let first = cmd::packet("U:Ox", "U:Vz", "bulk", serde_json::json!({}));
        send(&h, &first).await;
        h.kernel
            .packet(first.message_id)
            .await
            .expect("known")
            .thread_id()
            .to_owned()
    };
    for chunk in (1..10_000).collect::<Vec<usize>>().chunks(1000) {
        let batch: Vec<Packet> = chunk
            .iter()
            .map(|i| {
                let mut p = cmd::packet(
                    "U:Ox",
                    recipients[i % recipients.len()],
                    "bulk",
                    serde_json::json!({"i": i}),
                );
                p.thread_id = thread.clone();
                p
            })
            .collect();
        let outs = join_all(
            batch
                .iter()
                .map(|p| h.kernel.execute(cmd::send("U:Ox", p.clone()))),
        )
        .await;
        assert!(outs.iter().all(|o| o.is_ok()));
    }
    let (count, queued, per_thread) = h
        .kernel
        .read(move |s| {
            (
                s.packets().count(),
                s.packets().filter(|p| p.packet.is_queued()).count(),
                s.thread(&thread).map(|t| t.packets.len()),
            )
        })
        .await
        .expect("read");
    assert_eq!((count, queued, per_thread), (10_000, 10_000, Some(10_000)));
}

// REQ-004-US-008-001 REQ-004-US-008-016
#[tokio::test]
async fn more_than_a_hundred_threads() {
    let h = harness(KernelConfig {
        inbox_capacity: 1_000,
        ..config()
    })
    .await;
    let asks: Vec<Packet> = (0..150)
        .map(|i| cmd::packet("U:Cx", "U:Ox", &format!("topic {i}"), serde_json::json!({})))
        .collect();
    let outs = join_all(
        asks.iter()
            .map(|p| h.kernel.execute(cmd::send("U:Cx", p.clone()))),
    )
    .await;
    assert!(outs.iter().all(|o| o
        .as_ref()
        .is_ok_and(|o| o.event_types() == ["thread_opened", "packet_sent"])));
    let replies: Vec<Packet> = asks
        .iter()
        .map(|a| cmd::reply(a, "answer", serde_json::json!({})))
        .collect();
    let outs = join_all(
        replies
            .iter()
            .map(|p| h.kernel.execute(cmd::send("U:Ox", p.clone()))),
    )
    .await;
    assert!(outs.iter().all(|o| o.is_ok()));
    let threads = h.kernel.read(|s| s.thread_count()).await.expect("read");
    assert_eq!(threads, 150);
    for (a, r) in asks.iter().zip(&replies).step_by(37) {
        let (a, r) = (
            h.kernel.packet(a.message_id).await.expect("ask"),
            h.kernel.packet(r.message_id).await.expect("reply"),
        );
        assert_eq!(a.thread_id(), r.thread_id());
    }
}
