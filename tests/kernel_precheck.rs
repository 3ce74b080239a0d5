//! ERR-006 in the kernel: a send to an unknown target is refused as
//! `unknown_target_volk` before governance is asked — in-process (`Kernel::execute`) and
//! for commands read from the `commands` stream — so no governance decision is recorded
//! about it. A real sled log, a real kernel (standard roster) and a real governance
//! engine with the default policy.

mod kernel_common;

use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use kernel_common::{config, events, open_sled};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{cmd, Kernel, KernelError, TokioClock};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Event, EventRecord, Stream};

/// Resources of the recorded `cxp.send` decisions.
async fn send_decisions(log: &Arc<dyn EventLog>) -> Vec<String> {
    events(log, Stream::GovernanceDecisions)
        .await
        .into_iter()
        .filter_map(|e| match e.record.event {
            Event::DecisionRecorded(d) if d.action == "cxp.send" => Some(d.resource),
            _ => None,
        })
        .collect()
}

async fn governed(log: &Arc<dyn EventLog>) -> Kernel {
    let governance = Governance::start(log.clone(), GovernanceConfig::default())
        .await
        .expect("governance starts");
    Kernel::start(log.clone(), config(), Arc::new(TokioClock::new()))
        .await
        .expect("kernel starts")
        .0
        .with_governance(governance)
}

// REQ-014-ERR-006 (in-process): refused as itself, governance never asked.
#[tokio::test]
async fn an_unknown_target_is_refused_before_governance_in_process() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = open_sled(dir.path()).await;
    let kernel = governed(&log).await;
    let lost = cmd::packet("U:Ox", "U:Zz", "lost", serde_json::json!({}));
    let e = kernel
        .execute(cmd::send("U:Ox", lost))
        .await
        .expect_err("unknown target");
    assert!(
        matches!(&e, KernelError::UnknownTargetVolk { alias } if alias == "U:Zz"),
        "{e}"
    );
    assert_eq!(e.code(), "unknown_target_volk");
    // A known target is governed: its decision is recorded; U:Zz never was.
    let known = cmd::packet("U:Ox", "U:Cx", "known", serde_json::json!({}));
    let _ = kernel.execute(cmd::send("U:Ox", known)).await;
    let resources = send_decisions(&log).await;
    assert!(resources.iter().any(|r| r == "U:Cx"), "{resources:?}");
    assert!(!resources.iter().any(|r| r == "U:Zz"), "{resources:?}");
}

// REQ-014-ERR-006 (commands stream): rejected as `unknown_target_volk`, no decision.
#[tokio::test]
async fn an_unknown_target_is_refused_before_governance_from_the_stream() {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = open_sled(dir.path()).await;
    let kernel = governed(&log).await;
    let consumer = kernel.consume_commands();
    let bad = cmd::send(
        "U:Ox",
        cmd::packet("U:Ox", "U:Zz", "lost", serde_json::json!({})),
    );
    let record =
        EventRecord::new("gateway", bad.id.to_string(), bad.clone(), Utc::now()).caused_by(bad.id);
    log.append(&record).await.expect("append command");
    let mut rejected = None;
    for _ in 0..300 {
        rejected = events(&log, Stream::KernelEvents)
            .await
            .into_iter()
            .find_map(|e| match e.record.event {
                Event::CommandRejected(r) if e.record.command_id == Some(bad.id) => Some(r.code),
                _ => None,
            });
        if rejected.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(rejected.as_deref(), Some("unknown_target_volk"));
    assert!(
        send_decisions(&log).await.is_empty(),
        "governance was asked"
    );
    consumer.abort();
}
