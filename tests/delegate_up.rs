//! Parallel delegation from the outside (issue 16 item 1; spec 005 US-009, FR11, FR12):
//! a client acting as `U:Vz` hands one task to three juniors of a real `orchestrata
//! up`, each running a program the configuration names (`agents.drivers`); the juniors
//! answer U:Vz, one fails, and U:Vz's synthesis of the other two reaches its parent
//! U:Ox — all as CXP packets on `cxp.traffic`. Refusals: too many juniors, an unknown
//! program, a caller who may not act as the senior.

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
// terminated.
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
        json!({ "senior": "U:Vz", "task": "summarize the log", "juniors": ["upper", "upper", "broken"] }),
    )
    .await;
    assert_eq!(started["status"], "running", "{started}");

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
