//! The human escalation queue from the outside (issue 16: "human-queue entries cannot
//! be resolved"): a pipeline run whose junior keeps failing reaches the human queue of a
//! real `orchestrata up`; a client resolves the entry with a decision, it leaves the
//! open queue, stays readable as resolved, and the decision is an event on
//! `volk.lifecycle`. Every answer is checked against its result schema.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::checked_ok;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "escalation-queue-test-token";

// REQ-005-US-006-001 REQ-014-034 ISSUE-16: an escalation is an event with its full path
// (first party to `human`) and the Volk escalating, on volk.lifecycle and in the queue
// entry alike. An entry of the human queue is resolved by a client's decision: `agents.resolve_escalation` answers it resolved (who, what, when), the
// open queue no longer lists it, `status: resolved` does, `human_escalation_resolved`
// is on volk.lifecycle; a second resolution, an unknown entry and a missing decision
// are refused with -32602.
#[tokio::test]
async fn a_client_resolves_an_entry_of_the_human_queue() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let coder = dir.path().join("coder.sh");
    std::fs::write(
        &coder,
        "#!/bin/sh\ncat > /dev/null\necho broken >&2\nexit 1\n",
    )
    .expect("coder");
    std::fs::set_permissions(&coder, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let yaml = format!(
        "agents:\n  pipeline:\n    coder: [{}]\n    junior_retries: 0\n",
        coder.display()
    );
    let port = support::free_port();
    let _up = Up::with_config(dir.path(), &yaml, port, TOKEN, &[]);
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    ws.ok(
        "workflow.start",
        json!({ "name": "pipeline", "params": { "task": "cannot be done" } }),
    )
    .await;
    let mut queue = Value::Null;
    for _ in 0..400 {
        queue = checked_ok(&mut ws, "agents.escalations", json!({})).await;
        if queue["total"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(queue["total"], 1, "{queue}");
    assert_eq!(queue["escalations"][0]["status"], "open", "{queue}");
    let id = queue["escalations"][0]["escalation_id"]
        .as_str()
        .expect("escalation id")
        .to_owned();

    let resolved = checked_ok(
        &mut ws,
        "agents.resolve_escalation",
        json!({ "escalation_id": id, "decision": "drop the task", "notes": "not worth it" }),
    )
    .await;
    assert_eq!(resolved["status"], "resolved", "{resolved}");
    assert_eq!(resolved["resolution"]["decision"], "drop the task");
    assert_eq!(resolved["resolution"]["notes"], "not worth it");
    assert!(
        resolved["resolution"]["resolved_by"].is_string(),
        "{resolved}"
    );

    let open = checked_ok(&mut ws, "agents.escalations", json!({})).await;
    assert_eq!(open["total"], 0, "{open}");
    let done = checked_ok(
        &mut ws,
        "agents.escalations",
        json!({ "status": "resolved" }),
    )
    .await;
    assert_eq!(done["total"], 1, "{done}");
    let all = checked_ok(&mut ws, "agents.escalations", json!({ "status": "all" })).await;
    assert_eq!(all["total"], 1, "{all}");

    let lifecycle = support::replay(&mut ws, "volk.lifecycle").await;
    let entry = &queue["escalations"][0];
    let path: Vec<&str> = entry["path"]
        .as_array()
        .expect("a path")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(path.len() >= 2 && path.last() == Some(&"human"), "{entry}");
    assert!(
        path.contains(&entry["alias"].as_str().expect("alias")),
        "{entry}"
    );
    let queued: Vec<&Value> = lifecycle
        .iter()
        .filter(|e| e["event_type"] == "human_escalation_queued")
        .collect();
    assert_eq!(queued.len(), 1, "{lifecycle:?}");
    assert_eq!(queued[0]["payload"]["escalation_id"], id.as_str());
    assert_eq!(queued[0]["payload"]["path"], entry["path"]);
    assert_eq!(queued[0]["payload"]["alias"], entry["alias"]);
    let decisions: Vec<&Value> = lifecycle
        .iter()
        .filter(|e| e["event_type"] == "human_escalation_resolved")
        .collect();
    assert_eq!(decisions.len(), 1, "{lifecycle:?}");
    assert_eq!(decisions[0]["payload"]["escalation_id"], id.as_str());

    for bad in [
        json!({ "escalation_id": id, "decision": "again" }),
        json!({ "escalation_id": "no-such-entry", "decision": "x" }),
        json!({ "escalation_id": id }),
        json!({ "escalation_id": id, "decision": "" }),
    ] {
        let err = ws.err("agents.resolve_escalation", bad.clone()).await;
        assert_eq!(err["code"], -32602, "{bad}: {err}");
    }
}
