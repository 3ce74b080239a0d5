//! Single juniors from the outside (issue 16 item 1; spec 005 US-007, US-008, FR9): a
//! client acting as U:Vz spawns, tasks and terminates juniors of a real `orchestrata
//! up` with `agents.spawn`, `agents.assign` and `agents.terminate`, each on a program
//! the configuration names. Every step is on the log: `spawned`/`terminated` on
//! `volk.lifecycle`, the answers as `junior_result` packets to the parent.

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::up::Up;
use support::ws::Ws;
use support::{checked_ok, process_alive, replay};

const TOKEN: &str = "juniors-operator";
const VZ_TOKEN: &str = "juniors-vz";
const CONFIG: &str = "agents:\n  drivers:\n    upper: { cli: [tr, a-z, A-Z], timeout_s: 30 }\n    slow: { cli: [sh, -c, 'sleep 1; tr a-z A-Z'] }\n";

async fn results(ws: &mut Ws, want: usize) -> Vec<Value> {
    support::junior_results(ws, want, 400).await
}

async fn terminated(ws: &mut Ws, alias: &str) -> Option<String> {
    for _ in 0..400 {
        let lifecycle = replay(ws, "volk.lifecycle").await;
        let end = lifecycle
            .iter()
            .find(|e| e["event_type"] == "terminated" && e["payload"]["alias"] == alias);
        if let Some(e) = end {
            return e["payload"]["reason"].as_str().map(str::to_owned);
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    None
}

// REQ-005-US-007-001 REQ-005-FR9-001 ISSUE-16: a junior spawned with a task answers its
// parent and is terminated `task_completed`; a junior with a deadline waits idle, takes
// two tasks one after the other through agents.assign (a second while the first runs is
// refused), and is terminated when its deadline passes; a junior still alive when `up`
// stops is terminated `interrupted` by the next start.
#[tokio::test]
async fn juniors_are_spawned_tasked_and_end_with_their_lifespan() {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = support::free_port();
    let grant =
        format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]");
    let env = [("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str())];
    let mut up = Up::with_config(dir.path(), CONFIG, port, TOKEN, &env);
    let mut vz = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    vz.auth(VZ_TOKEN).await;

    let one = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "upper", "task": "shout this" }),
    )
    .await;
    assert_eq!(
        (&one["kind"], &one["lifespan"], &one["status"]),
        (&json!("cli"), &json!("task"), &json!("running"))
    );
    let alias = one["alias"].as_str().expect("alias").to_owned();
    let answers = results(&mut vz, 1).await;
    assert_eq!(answers.len(), 1, "{answers:?}");
    assert_eq!(
        (&answers[0]["from_agent"], &answers[0]["to_agent"]),
        (&json!(alias), &json!("U:Vz"))
    );
    assert!(answers[0].to_string().contains("SHOUT THIS"), "{answers:?}");
    assert_eq!(
        terminated(&mut vz, &alias).await.as_deref(),
        Some("task_completed")
    );

    let idle = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "slow", "lifespan": {"deadline_ms": 6000} }),
    )
    .await;
    assert_eq!(
        (&idle["status"], &idle["task_id"]),
        (&json!("idle"), &Value::Null)
    );
    let junior = idle["alias"].as_str().expect("alias").to_owned();
    let first = checked_ok(
        &mut vz,
        "agents.assign",
        json!({ "junior": junior, "task": "first" }),
    )
    .await;
    assert_eq!(first["status"], "running");
    let busy = vz
        .err(
            "agents.assign",
            json!({ "junior": junior, "task": "too soon" }),
        )
        .await;
    assert_eq!(busy["code"], -32602, "{busy}");
    assert!(
        busy["data"]["detail"]
            .as_str()
            .unwrap_or("")
            .contains("busy"),
        "{busy}"
    );
    assert_eq!(results(&mut vz, 2).await.len(), 2);
    checked_ok(
        &mut vz,
        "agents.assign",
        json!({ "junior": junior, "task": "second" }),
    )
    .await;
    let answers = results(&mut vz, 3).await;
    let text = answers.iter().map(Value::to_string).collect::<String>();
    assert!(text.contains("FIRST") && text.contains("SECOND"), "{text}");
    assert_eq!(
        terminated(&mut vz, &junior).await.as_deref(),
        Some("deadline"),
        "the junior lives until its deadline"
    );

    // A junior alive when the server stops has lost its driver: the next start ends it.
    let kept = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "slow", "lifespan": {"deadline_ms": 600000} }),
    )
    .await;
    let kept = kept["alias"].as_str().expect("alias").to_owned();
    drop(vz);
    assert!(up.stop(), "up stops cleanly");
    let up = Up::with_config(dir.path(), CONFIG, port, TOKEN, &env);
    assert!(
        up.started
            .iter()
            .any(|l| l.contains("juniors: terminated 1 interrupted") && l.contains(&kept)),
        "{:?}",
        up.started
    );
    let mut vz = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    vz.auth(VZ_TOKEN).await;
    assert_eq!(
        terminated(&mut vz, &kept).await.as_deref(),
        Some("interrupted")
    );
}

// REQ-005-FR9-001 ISSUE-16: agents.terminate stops a junior's task in flight — its
// process group is gone — and records the reason; a spawn's `timeout_s` limits its
// task below the profile's; refusals are typed: an unknown
// profile, a junior bound to a task without one, a caller who may not act as the
// parent, an agent that does not live.
#[tokio::test]
async fn a_terminated_junior_stops_its_work_and_refusals_are_typed() {
    let dir = tempfile::tempdir().expect("temp dir");
    let pid_file = dir.path().join("junior.pid");
    let port = support::free_port();
    let grant =
        format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]");
    let yaml = format!(
        "agents:\n  drivers:\n    sleeper: {{ cli: [sh, -c, 'echo $$ > {}; sleep 120'] }}\n",
        pid_file.display()
    );
    let _up = Up::with_config(
        dir.path(),
        &yaml,
        port,
        TOKEN,
        &[("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str())],
    );
    let url = format!("ws://127.0.0.1:{port}/");
    let mut vz = Ws::connect(&url).await;
    vz.auth(VZ_TOKEN).await;

    let spawned = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "sleeper", "task": "wait" }),
    )
    .await;
    let alias = spawned["alias"].as_str().expect("alias").to_owned();
    let mut pid = None;
    for _ in 0..400 {
        pid = std::fs::read_to_string(&pid_file)
            .ok()
            .and_then(|s| s.trim().parse::<i32>().ok());
        if pid.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let pid = pid.expect("the junior's program started");
    assert!(process_alive(pid));
    let done = checked_ok(
        &mut vz,
        "agents.terminate",
        json!({ "alias": alias, "reason": "no longer needed" }),
    )
    .await;
    assert_eq!(done["status"], "terminated");
    let mut alive = true;
    for _ in 0..200 {
        alive = process_alive(pid);
        if !alive {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(!alive, "the junior's program was stopped");
    assert_eq!(
        terminated(&mut vz, &alias).await.as_deref(),
        Some("no longer needed")
    );

    // A shorter limit than the profile's: the task times out and the program ends.
    let limited = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "sleeper", "task": "wait", "timeout_s": 1 }),
    )
    .await;
    let limited = limited["task_id"].as_str().expect("task id").to_owned();
    let mut answer = None;
    for _ in 0..400 {
        answer = replay(&mut vz, "cxp.traffic")
            .await
            .into_iter()
            .find(|e| e["event_type"] == "packet_sent" && e.to_string().contains(&limited));
        if answer.is_some() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let answer = answer.expect("the limited junior answered").to_string();
    assert!(
        answer.contains("timeout: no answer within 1000 ms"),
        "{answer}"
    );
    let too_long = vz
        .err(
            "agents.spawn",
            json!({ "parent": "U:Vz", "driver": "sleeper", "task": "x", "timeout_s": 100000 }),
        )
        .await;
    // The params schema bounds it (maximum: one day) before the handler runs.
    assert_eq!(too_long["data"]["field"], "params.timeout_s", "{too_long}");
    assert_eq!(too_long["data"]["reason"], "invalid_params", "{too_long}");

    let unknown = vz
        .err(
            "agents.spawn",
            json!({ "parent": "U:Vz", "driver": "rm-rf", "task": "x" }),
        )
        .await;
    assert_eq!(
        (unknown["code"].clone(), unknown["data"]["field"].clone()),
        (json!(-32602), json!("driver")),
        "{unknown}"
    );
    let taskless = vz
        .err(
            "agents.spawn",
            json!({ "parent": "U:Vz", "driver": "sleeper" }),
        )
        .await;
    assert_eq!(taskless["data"]["field"], "lifespan", "{taskless}");
    let gone = vz.err("agents.terminate", json!({ "alias": alias })).await;
    assert_eq!(gone["code"], -32602, "{gone}");
    let mut operator = Ws::connect(&url).await;
    operator.auth(TOKEN).await;
    let err = operator
        .err(
            "agents.spawn",
            json!({ "parent": "U:Vz", "driver": "sleeper", "task": "x" }),
        )
        .await;
    assert_eq!(err["data"]["reason"], "not_acting_as", "{err}");
}
