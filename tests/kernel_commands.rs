//! Every kernel command: its happy path (the events it appends) and its refusals
//! (a typed error with a stable code, and nothing appended). Real sled log.

mod kernel_common;

use kernel_common::{config, events, harness, positions, types, Harness};
use orchestrata::kernel::{cmd, KernelConfig};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::{Command, Event, Stream};

/// Executes `command`, expects refusal with `code`, and checks nothing was appended.
async fn refused(h: &Harness, command: Command, code: &str) {
    let before = positions(&h.log).await;
    let err = h
        .kernel
        .execute(command)
        .await
        .expect_err("command must be refused");
    assert_eq!(err.code(), code, "unexpected error: {err}");
    assert_eq!(
        positions(&h.log).await,
        before,
        "a refused command appended events"
    );
}

// REQ-004-INTG-014 REQ-004-INTG-015
#[tokio::test]
async fn standard_roster_is_registered_once_at_first_start() {
    let h = harness(config()).await;
    let registered: Vec<String> = events(&h.log, Stream::VolkLifecycle)
        .await
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::VolkRegistered(v) => Some(v.alias.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(
        registered,
        ["U:Ox", "U:PS", "U:Vz", "U:Qa", "U:Ar", "U:Ux", "U:PM", "U:Cx", "U:GW"]
    );
    h.kernel.stop().await;
    let (again, report) = orchestrata::kernel::Kernel::start(
        h.log.clone(),
        config(),
        std::sync::Arc::new(orchestrata::kernel::TokioClock::new()),
    )
    .await
    .expect("restart");
    assert!(!report.roster_registered);
    assert_eq!(report.volks, 9);
    assert_eq!(events(&h.log, Stream::VolkLifecycle).await.len(), 9);
    again.stop().await;
}

// REQ-004-INTG-010 REQ-004-US-008-001 REQ-004-US-008-016 REQ-004-US-004-002
#[tokio::test]
async fn send_queues_the_packet_in_a_new_uuid_thread() {
    let h = harness(config()).await;
    let p = cmd::packet(
        "U:Cx",
        "U:Ox",
        "build_feature",
        serde_json::json!({"f": "login"}),
    );
    let out = h
        .kernel
        .execute(cmd::send("U:Cx", p.clone()))
        .await
        .expect("sent");
    assert_eq!(out.event_types(), ["thread_opened", "packet_sent"]);
    assert!(out.events.iter().all(|a| a.stream == Stream::CxpTraffic));
    let stored = h.kernel.packet(p.message_id).await.expect("known");
    assert!(
        uuid::Uuid::parse_str(stored.thread_id()).is_ok(),
        "thread id is a UUID"
    );
    assert_eq!(stored.delivery_status(), DeliveryStatus::Queued);
    let logged = events(&h.log, Stream::CxpTraffic).await;
    assert_eq!(
        logged.last().map(|e| e.sequence),
        out.last_sequence(Stream::CxpTraffic)
    );
    assert_eq!(
        logged.last().and_then(|e| e.record.command_id),
        Some(out.command_id)
    );
}

// REQ-004-US-008-004 REQ-004-US-008-017
#[tokio::test]
async fn a_reply_inherits_the_thread_and_a_mismatch_is_refused() {
    let h = harness(config()).await;
    let ask = h.send_new("U:Cx", "U:Ox", "question").await;
    let answer = cmd::reply(&ask, "answer", serde_json::json!({"ok": true}));
    let out = h
        .kernel
        .execute(cmd::send("U:Ox", answer.clone()))
        .await
        .expect("reply");
    assert_eq!(
        out.event_types(),
        ["packet_sent"],
        "no new thread for a reply"
    );
    let (a, b) = (
        h.kernel.packet(ask.message_id).await.expect("ask"),
        h.kernel.packet(answer.message_id).await.expect("answer"),
    );
    assert_eq!(a.thread_id(), b.thread_id());
    let thread = h
        .kernel
        .thread_packets(a.thread_id(), None)
        .await
        .expect("thread");
    assert_eq!(thread.len(), 2);

    let mut stray = cmd::reply(&ask, "answer", serde_json::json!({}));
    stray.thread_id = "another-thread".into();
    refused(&h, cmd::send("U:Ox", stray), "thread_mismatch").await;
    let mut orphan = cmd::packet("U:Ox", "U:Cx", "answer", serde_json::json!({}));
    orphan.in_reply_to = Some(uuid::Uuid::new_v4());
    refused(&h, cmd::send("U:Ox", orphan), "unknown_packet").await;
}

// REQ-004-INTG-010 REQ-004-INTG-016
#[tokio::test]
async fn send_refuses_unknown_volks_invalid_and_duplicate_packets() {
    let h = harness(config()).await;
    let to_nobody = cmd::packet("U:Ox", "U:Zz", "hello", serde_json::json!({}));
    refused(&h, cmd::send("U:Ox", to_nobody), "unknown_target_volk").await;
    let from_nobody = cmd::packet("U:Zz", "U:Ox", "hello", serde_json::json!({}));
    refused(&h, cmd::send("U:Zz", from_nobody), "unknown_sender_volk").await;
    let to_self = cmd::packet("U:Ox", "U:Ox", "hello", serde_json::json!({}));
    refused(&h, cmd::send("U:Ox", to_self), "invalid_packet").await;
    let bad_alias = cmd::packet("Ox", "U:Vz", "hello", serde_json::json!({}));
    refused(&h, cmd::send("U:Ox", bad_alias), "invalid_packet").await;
    let long_subject = cmd::packet("U:Ox", "U:Vz", &"x".repeat(201), serde_json::json!({}));
    refused(&h, cmd::send("U:Ox", long_subject), "invalid_packet").await;
    let mut delivered = cmd::packet("U:Ox", "U:Vz", "hello", serde_json::json!({}));
    delivered.delivery_status = DeliveryStatus::Delivered;
    refused(&h, cmd::send("U:Ox", delivered), "invalid_field").await;
    let p = h.send_new("U:Ox", "U:Vz", "hello").await;
    refused(&h, cmd::send("U:Ox", p), "duplicate_packet").await;
}

// REQ-004-INTG-011 REQ-004-INTG-017 REQ-004-US-004-007 REQ-004-US-004-008 REQ-004-US-004-012 REQ-004-US-004-018
#[tokio::test]
async fn deliver_then_acknowledge_records_each_transition_with_its_time() {
    let h = harness(config()).await;
    let p = h.send_new("U:Ox", "U:Vz", "task").await;
    let out = h
        .kernel
        .execute(cmd::mark_delivered("U:PS", p.message_id))
        .await
        .expect("delivered");
    assert_eq!(out.event_types(), ["packet_delivered"]);
    refused(&h, cmd::acknowledge("U:Qa", p.message_id), "not_recipient").await;
    let out = h
        .kernel
        .execute(cmd::acknowledge("U:Vz", p.message_id))
        .await
        .expect("acked");
    assert_eq!(out.event_types(), ["packet_acknowledged"]);
    let packet = h.kernel.packet(p.message_id).await.expect("known");
    let history: Vec<DeliveryStatus> = packet.delivery_history().iter().map(|c| c.status).collect();
    assert_eq!(
        history,
        [DeliveryStatus::Delivered, DeliveryStatus::Acknowledged]
    );
    let times: Vec<_> = packet.delivery_history().iter().map(|c| c.at).collect();
    assert!(
        times.windows(2).all(|w| w[0] <= w[1]),
        "history times are ordered"
    );
    let logged = events(&h.log, Stream::CxpTraffic).await;
    let acked = logged.last().expect("acknowledged event");
    assert_eq!(Some(acked.record.timestamp), times.last().copied());
}

// REQ-004-US-004-006 REQ-004-US-004-011
#[tokio::test]
async fn delivery_transitions_outside_the_state_machine_are_refused() {
    let h = harness(config()).await;
    let p = h.send_new("U:Ox", "U:Vz", "task").await;
    refused(
        &h,
        cmd::acknowledge("U:Vz", p.message_id),
        "invalid_transition",
    )
    .await;
    refused(&h, cmd::retry("U:Ox", p.message_id), "invalid_transition").await;
    h.kernel
        .execute(cmd::mark_delivered("U:PS", p.message_id))
        .await
        .expect("delivered");
    h.kernel
        .execute(cmd::acknowledge("U:Vz", p.message_id))
        .await
        .expect("acked");
    refused(
        &h,
        cmd::mark_delivered("U:PS", p.message_id),
        "invalid_transition",
    )
    .await;
    refused(
        &h,
        cmd::fail("U:PS", p.message_id, "late"),
        "invalid_transition",
    )
    .await;
    refused(
        &h,
        cmd::mark_delivered("U:PS", uuid::Uuid::new_v4()),
        "unknown_packet",
    )
    .await;
}

// REQ-004-US-004-009 REQ-004-US-004-010 REQ-004-US-004-020 REQ-004-US-004-021 REQ-004-US-004-022
#[tokio::test]
async fn fail_and_retry_count_against_the_retry_budget() {
    let h = harness(KernelConfig {
        max_retries: 1,
        ..config()
    })
    .await;
    let p = h.send_new("U:Ox", "U:Vz", "task").await;
    refused(&h, cmd::fail("U:PS", p.message_id, "  "), "invalid_field").await;
    let out = h
        .kernel
        .execute(cmd::fail("U:PS", p.message_id, "socket closed"))
        .await
        .expect("failed");
    assert_eq!(out.event_types(), ["packet_failed"]);
    let failed = h.kernel.packet(p.message_id).await.expect("known");
    assert_eq!(failed.failure_reason(), Some("socket closed"));
    let out = h
        .kernel
        .execute(cmd::retry("U:Ox", p.message_id))
        .await
        .expect("retried");
    assert_eq!(out.event_types(), ["packet_retried"]);
    assert_eq!(
        h.kernel
            .packet(p.message_id)
            .await
            .expect("known")
            .retry_count(),
        1
    );
    h.kernel
        .execute(cmd::mark_delivered("U:PS", p.message_id))
        .await
        .expect("delivered");
    h.kernel
        .execute(cmd::fail("U:PS", p.message_id, "crashed"))
        .await
        .expect("failed again");
    refused(&h, cmd::retry("U:Ox", p.message_id), "retry_limit_reached").await;
    let failed: Vec<(i32, bool)> = events(&h.log, Stream::CxpTraffic)
        .await
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PacketFailed(f) => Some((f.retry_count, f.will_retry)),
            _ => None,
        })
        .collect();
    assert_eq!(failed, [(0, true), (1, false)]);
}

// REQ-004-US-005-006 REQ-004-US-005-007 REQ-004-US-005-008 REQ-004-US-005-009 REQ-004-US-005-010 REQ-004-US-005-011 REQ-004-US-005-012 REQ-004-US-005-020 REQ-004-US-005-021 REQ-004-US-005-022 REQ-004-US-005-024
#[tokio::test]
async fn work_status_follows_its_state_machine_with_assignee_resolution_and_notes() {
    let h = harness(config()).await;
    let p = h.send_new("U:Ox", "U:Vz", "task").await;
    refused(
        &h,
        cmd::work("U:Vz", p.message_id, WorkStatus::Resolved),
        "invalid_transition",
    )
    .await;
    let mut start = cmd::work("U:Vz", p.message_id, WorkStatus::InProgress);
    if let orchestrata_schemas::events::CommandKind::SetWorkStatus {
        assigned_to, notes, ..
    } = &mut start.action
    {
        *assigned_to = Some("U:Zz".into());
        *notes = Some("starting".into());
    }
    refused(&h, start.clone(), "unknown_volk").await;
    if let orchestrata_schemas::events::CommandKind::SetWorkStatus { assigned_to, .. } =
        &mut start.action
    {
        *assigned_to = Some("U:Qa".into());
    }
    h.kernel.execute(start).await.expect("in progress");
    h.kernel
        .execute(cmd::work("U:Vz", p.message_id, WorkStatus::Pending))
        .await
        .expect("requeued");
    h.kernel
        .execute(cmd::work("U:Vz", p.message_id, WorkStatus::InProgress))
        .await
        .expect("again");
    h.kernel
        .execute(cmd::resolve(
            "U:Vz",
            p.message_id,
            serde_json::json!({"pr": 42}),
        ))
        .await
        .expect("resolved");
    h.kernel
        .execute(cmd::work("U:Ox", p.message_id, WorkStatus::Archived))
        .await
        .expect("archived");
    refused(
        &h,
        cmd::work("U:Ox", p.message_id, WorkStatus::Pending),
        "invalid_transition",
    )
    .await;
    let packet = h.kernel.packet(p.message_id).await.expect("known");
    let history: Vec<WorkStatus> = packet.work_history().iter().map(|c| c.status).collect();
    assert_eq!(
        history,
        [
            WorkStatus::InProgress,
            WorkStatus::Pending,
            WorkStatus::InProgress,
            WorkStatus::Resolved,
            WorkStatus::Archived
        ]
    );
    assert_eq!(
        packet.assigned_to().map(|a| a.to_string()),
        Some("U:Vz".into())
    );
    let resolution = packet.resolution().expect("resolution recorded");
    assert_eq!(resolution.result, serde_json::json!({"pr": 42}));
    assert_eq!(packet.notes().len(), 1);
    let changes = types(&h.log, Stream::CxpTraffic).await;
    assert_eq!(
        changes
            .iter()
            .filter(|t| *t == "work_status_changed")
            .count(),
        5
    );
}

// REQ-004-US-009-005 REQ-004-US-009-008 REQ-004-US-009-012
#[tokio::test]
async fn set_priority_changes_it_within_range() {
    let h = harness(config()).await;
    let p = h.send_new("U:Ox", "U:Vz", "task").await;
    let out = h
        .kernel
        .execute(cmd::priority("U:Ox", p.message_id, 9))
        .await
        .expect("raised");
    assert_eq!(out.event_types(), ["priority_changed"]);
    assert_eq!(
        h.kernel
            .packet(p.message_id)
            .await
            .expect("known")
            .priority()
            .value(),
        9
    );
    refused(
        &h,
        cmd::priority("U:Ox", p.message_id, 11),
        "invalid_packet",
    )
    .await;
    refused(
        &h,
        cmd::priority("U:Ox", p.message_id, -1),
        "invalid_packet",
    )
    .await;
}

// REQ-004-US-008-016 REQ-004-US-008-017
#[tokio::test]
async fn threads_close_reopen_and_archive_along_their_lifecycle() {
    let h = harness(config()).await;
    let p = h.send_new("U:Ox", "U:Vz", "task").await;
    let thread = h
        .kernel
        .packet(p.message_id)
        .await
        .expect("known")
        .thread_id()
        .to_owned();
    refused(
        &h,
        cmd::thread("U:Ox", cmd::reopen_thread, &thread),
        "invalid_transition",
    )
    .await;
    refused(
        &h,
        cmd::thread("U:Ox", cmd::close_thread, "no-such-thread"),
        "unknown_thread",
    )
    .await;
    h.kernel
        .execute(cmd::thread("U:Ox", cmd::close_thread, &thread))
        .await
        .expect("closed");
    let mut late = cmd::packet("U:Vz", "U:Ox", "late", serde_json::json!({}));
    late.thread_id = thread.clone();
    refused(&h, cmd::send("U:Vz", late.clone()), "thread_not_active").await;
    h.kernel
        .execute(cmd::thread("U:Ox", cmd::reopen_thread, &thread))
        .await
        .expect("reopened");
    h.kernel
        .execute(cmd::send("U:Vz", late))
        .await
        .expect("joins the reopened thread");
    h.kernel
        .execute(cmd::thread("U:Ox", cmd::archive_thread, &thread))
        .await
        .expect("archived");
    refused(
        &h,
        cmd::thread("U:Ox", cmd::archive_thread, &thread),
        "invalid_transition",
    )
    .await;
    refused(
        &h,
        cmd::thread("U:Ox", cmd::reopen_thread, &thread),
        "invalid_transition",
    )
    .await;
    let kinds = types(&h.log, Stream::CxpTraffic).await;
    assert_eq!(
        kinds
            .iter()
            .filter(|t| t.starts_with("thread_"))
            .cloned()
            .collect::<Vec<_>>(),
        [
            "thread_opened",
            "thread_closed",
            "thread_reopened",
            "thread_archived"
        ]
    );
}

// REQ-004-INTG-014 REQ-004-INTG-015
#[tokio::test]
async fn volks_register_and_deregister_with_checks() {
    let h = harness(config()).await;
    let out = h
        .kernel
        .execute(cmd::register("U:Ox", "U:Jr", Some("U:Vz")))
        .await
        .expect("registered");
    assert_eq!(out.event_types(), ["registered"]);
    assert_eq!(out.events[0].stream, Stream::VolkLifecycle);
    refused(&h, cmd::register("U:Ox", "U:Jr", None), "volk_exists").await;
    refused(
        &h,
        cmd::register("U:Ox", "U:Kk", Some("U:Zz")),
        "unknown_volk",
    )
    .await;
    refused(&h, cmd::register("U:Ox", "junior", None), "invalid_field").await;
    h.kernel
        .execute(cmd::deregister("U:Ox", "U:Jr", "task done"))
        .await
        .expect("deregistered");
    refused(&h, cmd::deregister("U:Ox", "U:Jr", "again"), "unknown_volk").await;
    refused(&h, cmd::deregister("U:Ox", "U:Nn", "never"), "unknown_volk").await;
    refused(&h, cmd::deregister("U:Ox", "U:Vz", ""), "invalid_field").await;
    h.kernel
        .execute(cmd::register("U:Ox", "U:Jr", None))
        .await
        .expect("registers again");
}

// REQ-004-INTG-010
#[tokio::test]
async fn the_same_command_id_executes_once() {
    let h = harness(config()).await;
    let p = cmd::packet("U:Ox", "U:Vz", "task", serde_json::json!({}));
    let send = cmd::send("U:Ox", p);
    let first = h.kernel.execute(send.clone()).await.expect("sent");
    assert!(!first.duplicate);
    let before = positions(&h.log).await;
    let second = h.kernel.execute(send).await.expect("duplicate is fine");
    assert!(second.duplicate);
    assert!(second.events.is_empty());
    assert_eq!(positions(&h.log).await, before);
}
