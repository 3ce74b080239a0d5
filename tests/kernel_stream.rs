//! Commands through the log's `commands` stream (the split deployment), on sled and on
//! a real Kafka-protocol broker; and a kernel restart that rebuilds its state from the
//! log and carries on.

mod kernel_common;
mod support;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use kernel_common::{config, events, open_sled};
use orchestrata::config::LogConfig;
use orchestrata::kernel::{cmd, Kernel, TokioClock};
use orchestrata::log::{self, EventLog};
use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::{Command, Event, EventRecord, Stream};

async fn submit(log: &Arc<dyn EventLog>, command: &Command) {
    let record = EventRecord::new(
        "gateway",
        command.id.to_string(),
        command.clone(),
        Utc::now(),
    )
    .caused_by(command.id);
    log.append(&record).await.expect("append command");
}

/// (applied with their event counts, rejected) outcome events so far.
async fn outcomes(log: &Arc<dyn EventLog>) -> (Vec<(uuid::Uuid, i32)>, Vec<(uuid::Uuid, String)>) {
    let mut applied = Vec::new();
    let mut rejected = Vec::new();
    for e in events(log, Stream::KernelEvents).await {
        match &e.record.event {
            Event::CommandApplied(a) => {
                applied.extend(e.record.command_id.map(|id| (id, a.event_count)))
            }
            Event::CommandRejected(r) => {
                rejected.extend(e.record.command_id.map(|id| (id, r.code.clone())))
            }
            _ => {}
        }
    }
    (applied, rejected)
}

async fn wait_outcomes(
    log: &Arc<dyn EventLog>,
    total: usize,
) -> (Vec<(uuid::Uuid, i32)>, Vec<(uuid::Uuid, String)>) {
    for _ in 0..300 {
        let (a, r) = outcomes(log).await;
        if a.len() + r.len() >= total {
            return (a, r);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the kernel did not record {total} command outcomes within 30 s");
}

async fn start(log: &Arc<dyn EventLog>) -> Kernel {
    Kernel::start(log.clone(), config(), Arc::new(TokioClock::new()))
        .await
        .expect("kernel starts")
        .0
}

/// The whole check, for any backend.
async fn commands_from_the_stream_run_once(log: Arc<dyn EventLog>) {
    let kernel = start(&log).await;
    let consumer = kernel.consume_commands();
    let register = cmd::register("gateway", "U:Jr", Some("U:Vz"));
    let packet = cmd::packet("U:Ox", "U:Jr", "delegate", serde_json::json!({"task": 1}));
    let send = cmd::send("gateway", packet.clone());
    let bad = cmd::send(
        "gateway",
        cmd::packet("U:Ox", "U:Zz", "lost", serde_json::json!({})),
    );
    for c in [&register, &send, &bad, &send] {
        submit(&log, c).await;
    }
    let (applied, rejected) = wait_outcomes(&log, 4).await;
    let ids: Vec<_> = applied.iter().map(|(id, _)| *id).collect();
    // The redelivered command id is answered (its issuer may be waiting) with no event.
    assert_eq!(ids, [register.id, send.id, send.id]);
    assert!(applied[1].1 > 0, "{applied:?}");
    assert_eq!(applied[2].1, 0, "the repeat applies nothing: {applied:?}");
    assert_eq!(rejected, [(bad.id, "unknown_target_volk".to_owned())]);
    let sent: Vec<_> = events(&log, Stream::CxpTraffic)
        .await
        .into_iter()
        .filter(|e| matches!(e.record.event, Event::PacketSent(_)))
        .collect();
    assert_eq!(sent.len(), 1, "the duplicate command id ran once");
    assert_eq!(sent[0].record.command_id, Some(send.id));
    // Restart: the consumer resumes after what it executed and runs only new commands.
    // An executed command id found on the stream at resume (redelivered while no kernel
    // consumed) is skipped there, not answered again.
    consumer.abort();
    kernel.stop().await;
    let kernel = start(&log).await;
    assert_eq!(kernel.commands_checkpoint().await.expect("checkpoint"), 4);
    let start_work = cmd::work("U:Jr", packet.message_id, WorkStatus::InProgress);
    submit(&log, &send).await; // redelivered again: still a no-op
    submit(&log, &start_work).await;
    assert_eq!(
        kernel.commands_checkpoint().await.expect("checkpoint"),
        5,
        "the executed redelivery is skipped"
    );
    let consumer = kernel.consume_commands();
    let (applied, rejected) = wait_outcomes(&log, 5).await;
    let ids: Vec<_> = applied.iter().map(|(id, _)| *id).collect();
    assert_eq!(ids, [register.id, send.id, send.id, start_work.id]);
    assert_eq!(rejected.len(), 1);
    let packet = kernel.packet(packet.message_id).await.expect("known");
    assert!(packet.is_in_progress());
    consumer.abort();
    kernel.stop().await;
}

// REQ-004-INTG-010 REQ-004-INTG-016
#[tokio::test]
async fn commands_stream_on_sled_executes_each_command_id_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    commands_from_the_stream_run_once(open_sled(dir.path()).await).await;
}

// REQ-004-INTG-010 REQ-004-INTG-016
#[tokio::test]
async fn commands_stream_on_kafka_executes_each_command_id_once() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let log = log::open(&config).await.expect("connect kafka");
    commands_from_the_stream_run_once(log).await;
}

fn snapshot(state: &orchestrata::kernel::KernelState) -> Vec<String> {
    let mut packets: Vec<String> = state
        .packets()
        .map(|p| {
            format!(
                "{} session={:?} {}",
                p.packet.message_id(),
                p.session,
                serde_json::to_string(&p.packet).unwrap_or_default()
            )
        })
        .collect();
    packets.sort();
    let mut threads: Vec<String> = Vec::new();
    for p in state.packets() {
        if let Some(t) = state.thread(p.packet.thread_id()) {
            threads.push(format!(
                "{} {:?} {:?}",
                p.packet.thread_id(),
                t.status,
                t.session
            ));
        }
    }
    threads.sort();
    threads.dedup();
    packets.extend(threads);
    packets.extend(state.volk_aliases().into_iter().map(|a| {
        let v = state.volk(&a).map(|v| v.registered);
        format!("{a} {v:?}")
    }));
    packets
}

// REQ-004-INTG-007 REQ-004-US-004-013 REQ-004-US-005-013
#[tokio::test]
async fn a_restarted_kernel_rebuilds_the_same_state_from_the_log_and_continues() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = open_sled(dir.path()).await;
    let kernel = start(&log).await;
    kernel
        .execute(cmd::open_session("U:Cx", "s-1", "p-1"))
        .await
        .expect("open");
    let ask = cmd::in_session(
        cmd::packet("U:Cx", "U:Ox", "ask", serde_json::json!({})),
        "s-1",
    );
    kernel
        .execute(cmd::send("U:Cx", ask.clone()))
        .await
        .expect("ask");
    kernel.inbox("U:Ox", 5).await.expect("delivered");
    kernel
        .execute(cmd::work("U:Ox", ask.message_id, WorkStatus::InProgress))
        .await
        .expect("work");
    let other = cmd::packet("U:Ox", "U:Vz", "other", serde_json::json!({}));
    kernel
        .execute(cmd::send("U:Ox", other.clone()))
        .await
        .expect("other");
    kernel
        .execute(cmd::fail("U:PS", other.message_id, "timeout"))
        .await
        .expect("failed");
    kernel
        .execute(cmd::deregister("U:Ox", "U:Ux", "off"))
        .await
        .expect("dereg");
    let before = kernel.read(snapshot).await.expect("snapshot");
    kernel.stop().await;
    drop(kernel);
    drop(log);
    let log = open_sled(dir.path()).await;
    let (kernel, report) = Kernel::start(log.clone(), config(), Arc::new(TokioClock::new()))
        .await
        .expect("restart");
    assert!(!report.roster_registered);
    assert!(report.events_folded > 8);
    assert_eq!(kernel.read(snapshot).await.expect("snapshot"), before);
    // It continues where it stopped: ack the delivered packet, retry the failed one.
    kernel
        .execute(cmd::acknowledge("U:Ox", ask.message_id))
        .await
        .expect("ack");
    kernel
        .execute(cmd::retry("U:Ox", other.message_id))
        .await
        .expect("retry");
    let dup = cmd::send("U:Cx", ask);
    assert_eq!(
        kernel.execute(dup).await.expect_err("same message").code(),
        "duplicate_packet"
    );
    kernel.stop().await;
}
