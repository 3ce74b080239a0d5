//! Parallel delegation from the outside (issue 16 item 1; spec 005 US-009, FR11, FR12):
//! a client acting as `U:Vz` hands one task to three juniors of a real `orchestrata
//! up`, each running a program the configuration names (`agents.drivers`); the juniors
//! answer U:Vz, one fails, and U:Vz's synthesis of the other two reaches its parent
//! U:Ox — all as CXP packets on `cxp.traffic`. Refusals: too many juniors, an unknown
//! program, a caller who may not act as the senior, an unknown synthesis strategy.
//! With `agents.review.checkers` configured the answers are scored (`junior_score`
//! packets) and the best one is the answer (issue 16 item 4); all juniors failing
//! reaches the human queue (T18.4).

mod support;

use std::time::Duration;

use serde_json::{json, Value};
use support::checked_ok;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "delegate-test-token";
const VZ_TOKEN: &str = "delegate-vz-token";

fn packets<'a>(events: &'a [Value], subject: &str) -> Vec<&'a Value> {
    events
        .iter()
        .filter(|e| e["event_type"] == "packet_sent")
        .map(|e| &e["payload"]["packet"])
        .filter(|p| p["subject"] == subject)
        .collect()
}

// REQ-005-US-009-001 REQ-005-FR11-001 REQ-005-FR12-001 ISSUE-16: agents.delegate runs
// the task on three configured juniors in parallel; each answers the senior with a
// `junior_result`, the failed one is tolerated (and recorded unhealthy), and the
// `synthesis` of the two answers goes from U:Vz to U:Ox; every junior is spawned and
// terminated. (`synthesis: merge`, no checkers: both answers, in junior order.)
#[tokio::test]
async fn a_senior_fans_a_task_out_to_configured_juniors_and_synthesizes() {
    let dir = tempfile::tempdir().expect("temp dir");
    let grant =
        format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]");
    let port = support::free_port();
    let _up = Up::with_config(
        dir.path(),
        "agents:\n  drivers:\n    upper: { cli: [tr, a-z, A-Z], timeout_s: 30 }\n    broken: { cli: [sh, -c, 'cat > /dev/null; echo no >&2; exit 2'] }\n",
        port,
        TOKEN,
        &[("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str())],
    );
    let url = format!("ws://127.0.0.1:{port}/");
    let mut vz = Ws::connect(&url).await;
    vz.auth(VZ_TOKEN).await;
    let started = checked_ok(
        &mut vz,
        "agents.delegate",
        json!({
            "senior": "U:Vz", "task": "summarize the log",
            "juniors": ["upper", "upper", "broken"], "synthesis": "merge",
        }),
    )
    .await;
    assert_eq!(started["status"], "running", "{started}");
    assert_eq!(started["synthesis"], "merge", "{started}");

    let mut traffic = Vec::new();
    for _ in 0..400 {
        traffic = support::replay(&mut vz, "cxp.traffic").await;
        if !packets(&traffic, "synthesis").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let synthesis = packets(&traffic, "synthesis");
    assert_eq!(synthesis.len(), 1, "{traffic:?}");
    let s = synthesis[0];
    assert_eq!(
        (&s["from_agent"], &s["to_agent"]),
        (&json!("U:Vz"), &json!("U:Ox"))
    );
    let body = s.to_string();
    assert!(
        body.contains("SUMMARIZE THE LOG\\n---\\nSUMMARIZE THE LOG"),
        "{body}"
    );
    assert!(
        body.contains("\"succeeded\":2") && body.contains("\"failed\":1"),
        "{body}"
    );
    let results = packets(&traffic, "junior_result");
    assert_eq!(results.len(), 3, "{traffic:?}");
    assert!(results.iter().all(|p| p["to_agent"] == "U:Vz"));

    let lifecycle = support::replay(&mut vz, "volk.lifecycle").await;
    let count = |t: &str| lifecycle.iter().filter(|e| e["event_type"] == t).count();
    assert_eq!(count("spawned"), 3, "{lifecycle:?}");
    assert_eq!(count("terminated"), 3, "{lifecycle:?}");
    assert_eq!(
        count("health_changed"),
        1,
        "the broken junior: {lifecycle:?}"
    );

    let six = json!({ "senior": "U:Vz", "task": "x", "juniors": vec!["upper"; 6] });
    assert_eq!(vz.err("agents.delegate", six).await["code"], -32602);
    let unknown = vz
        .err(
            "agents.delegate",
            json!({ "senior": "U:Vz", "task": "x", "juniors": ["rm-rf"] }),
        )
        .await;
    assert_eq!(unknown["code"], -32602, "{unknown}");
    assert_eq!(unknown["data"]["field"], "juniors", "{unknown}");
    let mut operator = Ws::connect(&url).await;
    operator.auth(TOKEN).await;
    let err = operator
        .err(
            "agents.delegate",
            json!({ "senior": "U:Vz", "task": "x", "juniors": ["upper"] }),
        )
        .await;
    assert_eq!(err["code"], -32001, "{err}");
    assert_eq!(err["data"]["reason"], "not_acting_as", "{err}");
}

/// One `error` issue per `TODO` in the file.
const CHECKER: &str = r#"#!/bin/sh
out=""; sep=""
for t in $(grep -o TODO "$1"); do
  out="$out$sep{\"type\":\"lint\",\"rule\":\"no-todo\",\"line\":1,\"message\":\"TODO left\",\"severity\":\"error\"}"
  sep=","
done
printf '[%s]' "$out"
"#;

// REQ-005-US-009-001 REQ-005-FR12-001 ISSUE-16: with `agents.review.checkers`
// configured, `agents.delegate` (default strategy `best`) scores the two answers with
// the checker — a `junior_score` packet each on cxp.traffic, none for the failed
// junior — and the clean answer is the synthesis, naming its junior; an unknown
// strategy is refused with -32602; a fan-out whose juniors all fail ends on the human
// queue, escalated from U:Vz through U:Ox (T18.4).
#[tokio::test]
async fn checkers_score_the_answers_and_the_best_one_is_the_synthesis() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().expect("temp dir");
    let checker = dir.path().join("checker.sh");
    std::fs::write(&checker, CHECKER).expect("checker");
    std::fs::set_permissions(&checker, std::fs::Permissions::from_mode(0o755)).expect("chmod");
    let yaml = format!(
        "agents:\n  drivers:\n    sloppy: {{ cli: [sh, -c, 'cat > /dev/null; echo TODO TODO draft'] }}\n    tidy: {{ cli: [sh, -c, 'cat > /dev/null; echo tidy draft'] }}\n    broken: {{ cli: [sh, -c, 'cat > /dev/null; exit 2'] }}\n  review:\n    REVIEW_TIMEOUT_SECONDS: 10\n    checkers: [[{}]]\n",
        checker.display()
    );
    let grant =
        format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]");
    let port = support::free_port();
    let _up = Up::with_config(
        dir.path(),
        &yaml,
        port,
        TOKEN,
        &[("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str())],
    );
    let mut vz = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    vz.auth(VZ_TOKEN).await;

    let bad = vz
        .err(
            "agents.delegate",
            json!({ "senior": "U:Vz", "task": "x", "juniors": ["tidy"], "synthesis": "vote" }),
        )
        .await;
    assert_eq!(bad["code"], -32602, "{bad}");
    assert!(bad.to_string().contains("synthesis"), "{bad}");

    let started = checked_ok(
        &mut vz,
        "agents.delegate",
        json!({ "senior": "U:Vz", "task": "draft it", "juniors": ["sloppy", "tidy", "broken"] }),
    )
    .await;
    assert_eq!(started["synthesis"], "best", "{started}");
    let mut traffic = Vec::new();
    for _ in 0..400 {
        traffic = support::replay(&mut vz, "cxp.traffic").await;
        if !packets(&traffic, "synthesis").is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let synthesis = packets(&traffic, "synthesis");
    assert_eq!(synthesis.len(), 1, "{traffic:?}");
    let body = &synthesis[0]["payload"]["json"];
    let scores = packets(&traffic, "junior_score");
    assert_eq!(scores.len(), 2, "{traffic:?}");
    let mut by_score: Vec<(i64, String)> = scores
        .iter()
        .map(|p| {
            let s = &p["payload"]["json"];
            (
                s["score"].as_i64().unwrap_or(-1),
                s["junior"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    by_score.sort();
    assert_eq!(
        by_score.iter().map(|(s, _)| *s).collect::<Vec<_>>(),
        vec![80, 100],
        "{scores:?}"
    );
    assert!(
        scores
            .iter()
            .all(|p| p["from_agent"] == "U:Vz" && p["to_agent"] == "U:Ox"),
        "{scores:?}"
    );
    assert_eq!(body["strategy"], "best", "{body}");
    assert_eq!(body["chosen"], json!(by_score[1].1), "{body}");
    assert_eq!(body["output"], "tidy draft\n", "{body}");

    let failed = checked_ok(
        &mut vz,
        "agents.delegate",
        json!({ "senior": "U:Vz", "task": "cannot", "juniors": ["broken", "broken"] }),
    )
    .await;
    let mut queue = Value::Null;
    for _ in 0..400 {
        queue = checked_ok(&mut vz, "agents.escalations", json!({})).await;
        if queue["total"] == 1 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert_eq!(queue["total"], 1, "{queue}");
    let entry = &queue["escalations"][0];
    assert_eq!(entry["path"], json!(["U:Vz", "U:Ox", "human"]), "{entry}");
    assert_eq!(entry["reason"], "every junior failed", "{entry}");
    assert!(
        entry
            .to_string()
            .contains(failed["task_id"].as_str().unwrap_or("?")),
        "{entry}"
    );
}
