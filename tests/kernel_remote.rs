//! The split deployment's write path on a real sled log: a [`RemoteKernel`] appends
//! commands to the `commands` stream, the kernel (with governance) executes them from
//! there, and the answer — events with their sequences, or the recorded refusal — is
//! read back from the log. Nothing is shared in memory between the two sides but the log.

mod kernel_common;

use std::time::Duration;

use kernel_common::{config, events, harness};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{cmd, KernelError, RemoteKernel};
use orchestrata_schemas::events::{Event, Stream};

async fn remote(h: &kernel_common::Harness, timeout: Duration) -> RemoteKernel {
    RemoteKernel::connect(h.log.clone(), "gateway@test", timeout)
        .await
        .expect("watch the log")
}

// Issue 9: a command through the `commands` stream answers what an in-process kernel
// answers: every caused event with its stream and sequence.
// REQ-004-INTG-014
#[tokio::test]
async fn a_streamed_command_answers_its_events_and_sequences() {
    let h = harness(config()).await;
    let _consumer = h.kernel.consume_commands();
    let client = remote(&h, Duration::from_secs(10)).await;
    let packet = cmd::packet("U:Ox", "U:Vz", "plan", serde_json::json!({"n": 1}));
    let outcome = client
        .execute(cmd::send("U:Ox", packet.clone()))
        .await
        .expect("the kernel applies the command");
    assert!(
        outcome.event_types().contains(&"packet_sent"),
        "{:?}",
        outcome.event_types()
    );
    let seq = outcome
        .last_sequence(Stream::CxpTraffic)
        .expect("a cxp.traffic sequence");
    let traffic = events(&h.log, Stream::CxpTraffic).await;
    let at = traffic
        .iter()
        .find(|e| e.sequence == seq)
        .expect("the sequence is on the log");
    assert_eq!(at.record.command_id, Some(outcome.command_id));
    match &at.record.event {
        Event::PacketSent(sent) => assert_eq!(sent.packet.message_id, packet.message_id),
        other => panic!("unexpected {}", other.event_type()),
    }
}

// ISSUE-17: a command id the kernel executed before (a client retrying with an
// idempotency key through the `commands` stream) is answered, not left to time out:
// applied with no event, `duplicate`, and nothing is sent twice.
#[tokio::test]
async fn a_repeated_streamed_command_is_answered_as_a_duplicate() {
    let h = harness(config()).await;
    let _consumer = h.kernel.consume_commands();
    let client = remote(&h, Duration::from_secs(10)).await;
    let packet = cmd::packet("U:Ox", "U:Vz", "plan", serde_json::json!({"n": 1}));
    let command = cmd::send("U:Ox", packet.clone());
    let first = client
        .execute(command.clone())
        .await
        .expect("the kernel applies the command");
    assert!(!first.duplicate);
    let again = client
        .execute(command)
        .await
        .expect("the repeat is answered");
    assert!(again.duplicate, "{again:?}");
    assert!(again.events.is_empty(), "{again:?}");
    assert_eq!(again.command_id, first.command_id);
    let sent = events(&h.log, Stream::CxpTraffic)
        .await
        .iter()
        .filter(|e| matches!(e.record.event, Event::PacketSent(_)))
        .count();
    assert_eq!(sent, 1, "one packet_sent");
}

// Issue 9: a refusal recorded as `command_rejected` comes back with the kernel's code.
#[tokio::test]
async fn a_refused_streamed_command_answers_the_kernels_code() {
    let h = harness(config()).await;
    let _consumer = h.kernel.consume_commands();
    let client = remote(&h, Duration::from_secs(10)).await;
    let packet = cmd::packet("U:Ox", "U:Zz", "plan", serde_json::json!({}));
    let err = client
        .execute(cmd::send("U:Ox", packet))
        .await
        .expect_err("unknown target");
    assert_eq!(err.code(), "unknown_target_volk", "{err}");
    assert!(matches!(err, KernelError::Rejected { .. }), "{err:?}");
}

// Issue 9 / issue 5: commands from the stream are governed like in-process ones; the
// denial is recorded as command_rejected `governance_denied` and nothing is sent.
// REQ-005-FR4-001
#[tokio::test]
async fn streamed_commands_are_governed() {
    let h = harness(config()).await;
    let governance = Governance::start(h.log.clone(), GovernanceConfig::default())
        .await
        .expect("governance starts");
    let kernel = h.kernel.clone().with_governance(governance);
    let _consumer = kernel.consume_commands();
    let client = remote(&h, Duration::from_secs(10)).await;
    let before = h
        .log
        .bounds(Stream::CxpTraffic)
        .await
        .expect("bounds")
        .count();
    // only U:Qa sends fix_issues (Article X)
    let packet = cmd::packet("U:Ox", "U:Vz", "fix_issues", serde_json::json!({}));
    let err = client
        .execute(cmd::send("U:Ox", packet))
        .await
        .expect_err("governance denies");
    assert_eq!(err.code(), "governance_denied", "{err}");
    let after = h
        .log
        .bounds(Stream::CxpTraffic)
        .await
        .expect("bounds")
        .count();
    assert_eq!(before, after, "a denied streamed send appended traffic");
    let allowed = cmd::packet("U:Qa", "U:Vz", "fix_issues", serde_json::json!({}));
    client
        .execute(cmd::send("U:Qa", allowed))
        .await
        .expect("governance allows U:Qa");
}

// Issue 5: streamed commands of one Volk are decided one after another (they take the
// subject's turn, and the executed-id read waits for the writer's previous batch), so
// sends racing through the `commands` stream for the last unit of the send budget (100
// per Volk per session) let exactly one through.
// REQ-004-INTG-001
// REQ-005-FR4-001
#[tokio::test]
async fn streamed_sends_cannot_overrun_the_send_budget() {
    let h = harness(config()).await;
    let governance = Governance::start(h.log.clone(), GovernanceConfig::default())
        .await
        .expect("governance starts");
    let kernel = h.kernel.clone().with_governance(governance);
    let client = remote(&h, Duration::from_secs(20)).await;
    let send = |n: usize| {
        let packet = cmd::packet("U:Ox", "U:Vz", "plan", serde_json::json!({ "n": n }));
        cmd::send("U:Ox", cmd::in_session(packet, "s1"))
    };
    kernel
        .execute(cmd::open_session("U:Ox", "s1", "p1"))
        .await
        .expect("session opens");
    for n in 0..99 {
        kernel.execute(send(n)).await.expect("within the budget");
    }
    // All six racing commands are on the stream before the kernel consumes it, so the
    // consumer reads them in one go and pipelines them.
    let racing: Vec<_> = (99..105)
        .map(|n| {
            let client = client.clone();
            let command = send(n);
            tokio::spawn(async move { client.execute(command).await })
        })
        .collect();
    let queued = async {
        while h
            .log
            .bounds(Stream::Commands)
            .await
            .expect("bounds")
            .count()
            < 6
        {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(10), queued)
        .await
        .expect("the six commands reach the stream");
    let _consumer = kernel.consume_commands();
    let mut allowed = 0;
    for task in racing {
        match task.await.expect("task") {
            Ok(_) => allowed += 1,
            Err(err) => assert_eq!(err.code(), "governance_denied", "{err}"),
        }
    }
    assert_eq!(
        allowed, 1,
        "the budget let {allowed} streamed sends through"
    );
}

// Issue 9: with no kernel consuming the stream the caller gets a bounded, typed error.
#[tokio::test]
async fn without_a_kernel_the_caller_gets_no_answer_in_bounded_time() {
    let h = harness(config()).await;
    let client = remote(&h, Duration::from_millis(300)).await;
    let packet = cmd::packet("U:Ox", "U:Vz", "plan", serde_json::json!({}));
    let err = client
        .execute(cmd::send("U:Ox", packet))
        .await
        .expect_err("nobody answers");
    assert_eq!(err.code(), "kernel_no_answer", "{err}");
    // The command stays on the stream: a consumer started later still executes it.
    assert_eq!(events(&h.log, Stream::Commands).await.len(), 1);
    let _consumer = h.kernel.consume_commands();
    let mut sent = false;
    for _ in 0..100 {
        sent = events(&h.log, Stream::CxpTraffic)
            .await
            .iter()
            .any(|e| matches!(e.record.event, Event::PacketSent(_)));
        if sent {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(
        sent,
        "the late consumer did not execute the waiting command"
    );
}
