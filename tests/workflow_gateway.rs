//! Workflows through the gateway (REQ-014-076..080, spec 005 pipeline): a WebSocket
//! client starts the built-in pipeline; a CLI junior (a script) writes code; a checker
//! (a script printing linter-like JSON) finds issues; the review-fix loop runs to
//! `review_complete` or escalation; `gateway.replay` of `cxp.traffic` shows every step.
//! Real sled log, kernel, governance, gateway, processes.

mod support;

use serde_json::json;
use support::workflows::{client, wait_done, Stack, FIXING_CODER, STUBBORN_CODER};
use support::ws::{http_get, Ws, READ_ONLY_TOKEN, TOKEN};

async fn stack(fixes: bool) -> Stack {
    let body = if fixes { FIXING_CODER } else { STUBBORN_CODER };
    Stack::start(body, 0).await
}

async fn subjects(ws: &mut Ws) -> Vec<(String, String, String)> {
    let r = ws
        .ok(
            "gateway.replay",
            json!({ "topic": "cxp.traffic", "count": 10000 }),
        )
        .await;
    r["events"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["event_type"] == "packet_sent")
        .map(|e| {
            let p = &e["payload"]["packet"];
            (
                p["subject"].as_str().unwrap().to_owned(),
                p["from_agent"].as_str().unwrap().to_owned(),
                p["to_agent"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

// REQ-014-076 REQ-014-080 REQ-005-AC7-001 REQ-005-FR3-001 REQ-005-US-004-001 REQ-005-AC6-001
// T14.1: the pipeline runs to review_complete(passed); every step is on cxp.traffic and
// workflow.events; juniors are gone afterwards; the agent metrics are on the gateway's
// /metrics.
#[tokio::test]
async fn pipeline_runs_to_review_complete_through_the_gateway() {
    let s = stack(true).await;
    let mut ws = client(&s, TOKEN).await;
    let started = ws
        .ok(
            "workflow.start",
            json!({ "name": "pipeline", "params": { "task": "write main.rs" } }),
        )
        .await;
    let id = started["workflow_id"].as_str().unwrap().to_owned();
    let done = wait_done(&mut ws, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    let steps: Vec<(&str, &str)> = done["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["step"].as_str().unwrap(), s["status"].as_str().unwrap()))
        .collect();
    assert_eq!(
        steps,
        [
            ("U:Cx", "succeeded"),
            ("U:Vz", "succeeded"),
            ("U:Qa", "succeeded"),
            ("HUMAN", "succeeded")
        ]
    );
    assert_eq!(done["result"]["review"]["status"], "passed");
    assert_eq!(done["result"]["review"]["cycles"], 3);
    let traffic = subjects(&mut ws).await;
    let names: Vec<&str> = traffic.iter().map(|t| t.0.as_str()).collect();
    assert_eq!(names.iter().filter(|s| **s == "review_code").count(), 3);
    assert_eq!(names.iter().filter(|s| **s == "fix_issues").count(), 2);
    assert_eq!(
        names.iter().filter(|s| **s == "junior_result").count(),
        3,
        "{names:?}"
    );
    assert_eq!(names.last(), Some(&"review_complete"));
    assert!(traffic
        .iter()
        .any(|t| t.0 == "task" && t.1 == "U:Cx" && t.2 == "U:Ox"));
    let lifecycle = ws
        .ok(
            "gateway.replay",
            json!({ "topic": "volk.lifecycle", "count": 10000 }),
        )
        .await;
    let types: Vec<&str> = lifecycle["events"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["event_type"].as_str().unwrap())
        .collect();
    assert_eq!(types.iter().filter(|t| **t == "spawned").count(), 3);
    assert_eq!(types.iter().filter(|t| **t == "terminated").count(), 3);
    let (status, metrics) = http_get(s.gateway.local_addr(), "/metrics").await;
    assert_eq!(status, 200);
    assert!(
        metrics.contains("orchestrata_agents_spawn_seconds_count 3"),
        "{metrics}"
    );
}

// REQ-014-077 REQ-014-078 REQ-014-079 REQ-005-US-006-001 REQ-005-FR7-001
// A stubborn junior never fixes: after 3 cycles the loop escalates to U:Ox and on to the
// human queue (agents.escalations); pause/resume/cancel work and are validated.
#[tokio::test]
async fn escalation_reaches_the_human_queue_and_runs_are_controllable() {
    let s = stack(false).await;
    let mut ws = client(&s, TOKEN).await;
    let id = ws
        .ok(
            "workflow.start",
            json!({ "name": "pipeline", "params": { "task": "x" } }),
        )
        .await["workflow_id"]
        .as_str()
        .unwrap()
        .to_owned();
    let done = wait_done(&mut ws, &id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"]["review"]["status"], "escalated");
    let queue = ws.ok("agents.escalations", json!({})).await;
    assert_eq!(queue["total"], 1, "{queue}");
    let entry = &queue["escalations"][0];
    assert_eq!(entry["path"], json!(["U:Qa", "U:Ox", "human"]));
    assert_eq!(entry["context"]["workflow_id"], id);

    let err = ws.err("workflow.pause", json!({ "workflow_id": id })).await;
    assert_eq!(err["code"], -32602, "{err}");
    let err = ws
        .err(
            "workflow.start",
            json!({ "name": "nope", "params": { "task": "x" } }),
        )
        .await;
    assert_eq!(err["data"]["field"], "name", "{err}");
    let err = ws
        .err(
            "workflow.start",
            json!({ "name": "pipeline", "params": {} }),
        )
        .await;
    assert_eq!(err["data"]["field"], "params.task", "{err}");
    let err = ws
        .err("workflow.get", json!({ "workflow_id": "wf-none" }))
        .await;
    assert_eq!(err["code"], -32602);

    let id2 = ws
        .ok(
            "workflow.start",
            json!({ "name": "pipeline", "params": { "task": "y" } }),
        )
        .await["workflow_id"]
        .as_str()
        .unwrap()
        .to_owned();
    ws.ok(
        "workflow.pause",
        json!({ "workflow_id": id2, "reason": "hold" }),
    )
    .await;
    assert_eq!(
        ws.ok("workflow.get", json!({ "workflow_id": id2 })).await["status"],
        "paused"
    );
    ws.ok("workflow.resume", json!({ "workflow_id": id2 }))
        .await;
    ws.ok(
        "workflow.cancel",
        json!({ "workflow_id": id2, "reason": "enough" }),
    )
    .await;
    let v = wait_done(&mut ws, &id2).await;
    assert_eq!(v["status"], "cancelled");

    let mut viewer = client(&s, READ_ONLY_TOKEN).await;
    let err = viewer
        .err(
            "workflow.start",
            json!({ "name": "pipeline", "params": { "task": "x" } }),
        )
        .await;
    assert_eq!(err["code"], -32001, "read_only cannot start: {err}");
}
