//! The workflow view: one fold per event serves every run.

use orchestrata_schemas::events::types::TaskOutcome;
use orchestrata_schemas::events::workflow::{
    WorkflowCancelled, WorkflowCompleted, WorkflowFailed, WorkflowPaused, WorkflowResumed,
    WorkflowStarted, WorkflowStepCompleted, WorkflowStepStarted,
};
use orchestrata_schemas::events::Envelope;
use serde_json::json;

use super::{RunView, WorkflowView};
use crate::testkit::{env, json as text};
use crate::View;

fn started(seq: u64, id: &str) -> Envelope {
    env(
        seq,
        seq as i64,
        WorkflowStarted {
            workflow_id: id.into(),
            name: "pipeline".into(),
            params: json!({}).into(),
            started_by: "U:GW".into(),
            session_id: None,
        },
    )
}

fn history() -> Vec<Envelope> {
    vec![
        started(0, "w1"),
        started(1, "w2"),
        env(
            2,
            2,
            WorkflowStepStarted {
                workflow_id: "w1".into(),
                step: "U:Cx".into(),
                assigned_to: Some("U:Cx".into()),
            },
        ),
        env(
            3,
            3,
            WorkflowPaused {
                workflow_id: "w2".into(),
                paused_by: "U:GW".into(),
                reason: None,
            },
        ),
        env(
            4,
            4,
            WorkflowStepCompleted {
                workflow_id: "w1".into(),
                step: "U:Cx".into(),
                outcome: TaskOutcome::Succeeded,
                output: json!({"ok": true}).into(),
            },
        ),
        env(
            5,
            5,
            WorkflowResumed {
                workflow_id: "w2".into(),
                resumed_by: "U:GW".into(),
            },
        ),
        env(
            6,
            6,
            WorkflowCompleted {
                workflow_id: "w1".into(),
                result: json!({"done": 1}).into(),
            },
        ),
        env(
            7,
            7,
            WorkflowCancelled {
                workflow_id: "w2".into(),
                cancelled_by: "U:GW".into(),
                reason: Some("enough".into()),
            },
        ),
        env(
            8,
            8,
            WorkflowPaused {
                workflow_id: "never".into(),
                paused_by: "U:GW".into(),
                reason: None,
            },
        ),
    ]
}

// REQ-014-080 ISSUE-15: workflow.get answers from a view folded once per event
#[test]
fn every_run_is_folded_once_and_equals_the_per_run_fold() {
    let log = history();
    let view: WorkflowView = crate::fold(&log);
    assert_eq!(view.len(), 2, "a run never started is not invented");
    assert!(view.run("never").is_none());
    let w1 = view.run("w1").unwrap();
    assert_eq!(w1.status, "completed");
    assert_eq!(w1.steps.len(), 1);
    assert_eq!(w1.steps[0].status, "succeeded");
    assert_eq!(w1.result.0, json!({"done": 1}));
    let w2 = view.run("w2").unwrap();
    assert_eq!(w2.status, "cancelled");
    assert_eq!(w2.result.0, json!({"reason": "enough"}));
    assert_eq!(w2.updated_at, crate::testkit::t(7));
    for id in ["w1", "w2"] {
        let one = RunView::fold(id, log.iter().map(|e| &e.record));
        assert_eq!(one.as_ref(), view.run(id), "{id}");
    }
    // The answer's JSON shape: results and outputs as JSON values, times as RFC 3339.
    let answer = serde_json::to_value(w1).unwrap();
    assert_eq!(answer["steps"][0]["output"], json!({"ok": true}));
    assert_eq!(answer["updated_at"], json!("2026-01-01T00:00:06Z"));
}

// ISSUE-15: workflow.get answers from a view folded once per event
#[test]
fn repeats_change_nothing_and_a_restart_starts_over() {
    let log = history();
    let mut view: WorkflowView = crate::fold(&log);
    let before = text(&view);
    assert!(!view.apply(&log[3]), "a repeat is refused");
    assert_eq!(text(&view), before);
    assert!(view.apply(&started(9, "w1")));
    let w1 = view.run("w1").unwrap();
    assert_eq!((w1.status.as_str(), w1.steps.len()), ("running", 0));
    let back: WorkflowView = serde_json::from_str(&text(&view)).unwrap();
    assert_eq!(back, view);
}

fn step_started(seq: u64, id: &str, step: &str) -> Envelope {
    env(
        seq,
        seq as i64,
        WorkflowStepStarted {
            workflow_id: id.into(),
            step: step.into(),
            assigned_to: Some(step.into()),
        },
    )
}

// REQ-014-079 ISSUE-16: a cancelled run shows no step running; a failed run shows its
// failed step `failed` and any other step still running `cancelled`
#[test]
fn a_run_that_ends_leaves_no_step_running() {
    let log = vec![
        started(0, "cancelled"),
        step_started(1, "cancelled", "U:Vz"),
        env(
            2,
            2,
            WorkflowCancelled {
                workflow_id: "cancelled".into(),
                cancelled_by: "U:GW".into(),
                reason: None,
            },
        ),
        started(3, "failed"),
        step_started(4, "failed", "U:Cx"),
        step_started(5, "failed", "U:Vz"),
        env(
            6,
            6,
            WorkflowFailed {
                workflow_id: "failed".into(),
                error: "the coding junior failed".into(),
                step: Some("U:Vz".into()),
            },
        ),
        started(7, "interrupted"),
        step_started(8, "interrupted", "U:Qa"),
        env(
            9,
            9,
            WorkflowFailed {
                workflow_id: "interrupted".into(),
                error: "interrupted".into(),
                step: None,
            },
        ),
    ];
    let view: WorkflowView = crate::fold(&log);
    let steps = |id: &str| -> Vec<(String, String)> {
        let run = view.run(id).unwrap();
        run.steps
            .iter()
            .map(|s| (s.step.clone(), s.status.clone()))
            .collect()
    };
    let pair = |a: &str, b: &str| (a.to_owned(), b.to_owned());
    assert_eq!(view.run("cancelled").unwrap().status, "cancelled");
    assert_eq!(steps("cancelled"), [pair("U:Vz", "cancelled")]);
    assert_eq!(view.run("failed").unwrap().status, "failed");
    assert_eq!(
        steps("failed"),
        [pair("U:Cx", "cancelled"), pair("U:Vz", "failed")]
    );
    assert_eq!(steps("interrupted"), [pair("U:Qa", "cancelled")]);
    assert_eq!(
        view.run("failed").unwrap().result.0,
        json!({"error": "the coding junior failed", "step": "U:Vz"})
    );
}
