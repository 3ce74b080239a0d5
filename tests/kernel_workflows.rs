//! Workflow runs through the kernel (spec 005, REQ-014-076..080): happy path and
//! refusals (typed code, nothing appended). Real sled log.

mod kernel_common;

use kernel_common::{config, harness, positions, Harness};
use orchestrata::kernel::cmd;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{Command, CommandKind};

async fn refused(h: &Harness, command: Command, code: &str) {
    let before = positions(&h.log).await;
    let err = h.kernel.execute(command).await.expect_err("refused");
    assert_eq!(err.code(), code, "{err}");
    assert_eq!(positions(&h.log).await, before);
}

// REQ-005-US-005-001
#[tokio::test]
async fn workflow_runs_move_through_their_lifecycle() {
    let h = harness(config()).await;
    let c = |k: CommandKind| cmd::command("U:Ox", k);
    let start = c(CommandKind::StartWorkflow {
        workflow_id: "w-1".into(),
        name: "review".into(),
        params: Json(serde_json::json!({})),
        session_id: None,
    });
    h.kernel.execute(start.clone()).await.expect("started");
    refused(
        &h,
        cmd::command("U:Ox", start.action.clone()),
        "invalid_field",
    )
    .await;
    let step = |phase: &str| {
        c(CommandKind::RecordWorkflowStep {
            workflow_id: "w-1".into(),
            step: "lint".into(),
            phase: phase.into(),
            assigned_to: Some("U:Qa".into()),
            output: Json(serde_json::json!({})),
        })
    };
    h.kernel
        .execute(step("started"))
        .await
        .expect("step started");
    refused(&h, step("exploded"), "invalid_field").await;
    h.kernel
        .execute(c(CommandKind::PauseWorkflow {
            workflow_id: "w-1".into(),
            reason: None,
        }))
        .await
        .expect("paused");
    refused(&h, step("succeeded"), "invalid_transition").await;
    h.kernel
        .execute(c(CommandKind::ResumeWorkflow {
            workflow_id: "w-1".into(),
        }))
        .await
        .expect("resumed");
    h.kernel
        .execute(step("succeeded"))
        .await
        .expect("step done");
    let out = h
        .kernel
        .execute(step("completed"))
        .await
        .expect("completed");
    assert_eq!(out.event_types(), ["completed"]);
    refused(
        &h,
        c(CommandKind::CancelWorkflow {
            workflow_id: "w-1".into(),
            reason: None,
        }),
        "invalid_transition",
    )
    .await;
    refused(
        &h,
        c(CommandKind::ResumeWorkflow {
            workflow_id: "w-9".into(),
        }),
        "invalid_field",
    )
    .await;
}

// REQ-005-US-005-001
// `fail_workflow` closes a running or a paused run as `failed` (with the error and the
// step); a finished run, an empty error and an unknown run are refused, nothing appended.
#[tokio::test]
async fn a_running_or_paused_run_fails_once_and_stays_failed() {
    let h = harness(config()).await;
    let c = |k: CommandKind| cmd::command("U:Ox", k);
    let start = |id: &str| {
        c(CommandKind::StartWorkflow {
            workflow_id: id.into(),
            name: "pipeline".into(),
            params: Json(serde_json::json!({})),
            session_id: None,
        })
    };
    let fail = |id: &str, error: &str| {
        c(CommandKind::FailWorkflow {
            workflow_id: id.into(),
            error: error.into(),
            step: Some("U:Vz".into()),
        })
    };
    h.kernel.execute(start("w-run")).await.expect("started");
    refused(&h, fail("w-run", " "), "invalid_field").await;
    let out = h.kernel.execute(fail("w-run", "junior failed")).await;
    assert_eq!(out.expect("failed").event_types(), ["failed"]);
    refused(&h, fail("w-run", "again"), "invalid_transition").await;

    h.kernel.execute(start("w-paused")).await.expect("started");
    h.kernel
        .execute(c(CommandKind::PauseWorkflow {
            workflow_id: "w-paused".into(),
            reason: None,
        }))
        .await
        .expect("paused");
    let out = h.kernel.execute(fail("w-paused", "interrupted")).await;
    assert_eq!(out.expect("failed").event_types(), ["failed"]);
    refused(
        &h,
        c(CommandKind::ResumeWorkflow {
            workflow_id: "w-paused".into(),
        }),
        "invalid_transition",
    )
    .await;
    refused(&h, fail("w-none", "x"), "invalid_field").await;
}

// REQ-014-022 ISSUE-16: `set_volk_health` records a change of a registered Volk's
// health as `health_changed` (old, new, details), nothing when unchanged; an unknown
// Volk is refused with nothing appended.
#[tokio::test]
async fn volk_health_changes_are_recorded_once_each() {
    use orchestrata_schemas::events::types::Health;
    let h = harness(config()).await;
    let health = |alias: &str, health: Health| {
        cmd::command(
            "U:GW",
            CommandKind::SetVolkHealth {
                alias: alias.into(),
                health,
                details: Some("observed".into()),
            },
        )
    };
    let out = h.kernel.execute(health("U:Vz", Health::Unknown)).await;
    assert_eq!(out.expect("changed").event_types(), ["health_changed"]);
    let out = h.kernel.execute(health("U:Vz", Health::Unknown)).await;
    assert!(out.expect("unchanged").event_types().is_empty());
    let out = h.kernel.execute(health("U:Vz", Health::Healthy)).await;
    assert_eq!(out.expect("changed back").event_types(), ["health_changed"]);
    refused(&h, health("U:Zz", Health::Unhealthy), "unknown_volk").await;
}
