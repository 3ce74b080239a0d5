//! Synthesis that compares (issue 16 item 4; spec 005 US-009, FR12, T18.x): a fan-out of
//! real junior processes on a governed kernel over a sled log; each answer is scored by
//! a real checker process (a shell script printing a JSON issue list), the scores are
//! `junior_score` packets on `cxp.traffic`, and `best` / `merge` decide the answer.
//! Nothing is mocked.

mod agents_support;

use std::path::Path;
use std::time::Duration;

use agents_support::{env, events, script};
use orchestrata::agents::delegation::{fan_out, FanOutOutcome, JuniorRun, Synthesis};
use orchestrata::agents::drivers::cli::{CliConfig, CliDriver};
use orchestrata::agents::synthesis::{synthesize, Scorer, Strategy};
use orchestrata::agents::{Driver, EscalationPaths, Task};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::types::PacketPayload;
use orchestrata_schemas::events::{Event, Stream};
use serde_json::{json, Value};

/// One `error` per `TODO`, one `warning` per `XXX`; exits 7 on `BOOM`; hangs on `SLOW`.
const CHECKER: &str = r#"f="$1"
if grep -q BOOM "$f"; then echo 'checker exploded' >&2; exit 7; fi
if grep -q SLOW "$f"; then sleep 30; fi
out=""; sep=""
for t in $(grep -o 'TODO\|XXX' "$f"); do
  if [ "$t" = TODO ]; then s=error; else s=warning; fi
  out="$out$sep{\"type\":\"lint\",\"rule\":\"no-$t\",\"line\":1,\"message\":\"$t left\",\"severity\":\"$s\"}"
  sep=","
done
printf '[%s]' "$out""#;

fn task(id: &str) -> Task {
    Task {
        id: id.into(),
        prompt: "write the release note".into(),
        timeout: Duration::from_secs(20),
    }
}

/// A CLI junior that reads its task and prints `answer` (or fails, for `None`).
fn junior(dir: &Path, name: &str, answer: Option<&str>) -> (String, Box<dyn Driver>) {
    let body = match answer {
        Some(a) => format!("cat > /dev/null\nprintf '%s\\n' '{a}'"),
        None => "cat > /dev/null\necho 'no model' >&2\nexit 1".to_owned(),
    };
    let driver = CliDriver::new(CliConfig::new(script(dir, name, &body)));
    ("cli".to_owned(), Box::new(driver))
}

fn juniors(dir: &Path, answers: &[&str]) -> Vec<(String, Box<dyn Driver>)> {
    answers
        .iter()
        .enumerate()
        .map(|(i, a)| junior(dir, &format!("j{i}.sh"), Some(a)))
        .collect()
}

fn synthesis(strategy: Strategy, dir: &Path, timeout: Duration) -> Synthesis {
    let checker = script(dir, "checker.sh", CHECKER);
    Synthesis {
        strategy,
        scorer: Scorer::new(vec![vec![checker.display().to_string()]], timeout),
    }
}

/// (subject, from, to, payload) of every packet on cxp.traffic, in log order.
async fn traffic(log: &std::sync::Arc<dyn EventLog>) -> Vec<(String, String, String, Value)> {
    events(log, Stream::CxpTraffic)
        .await
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PacketSent(p) => {
                let payload = match &p.packet.payload {
                    PacketPayload::Json(j) => j.to_value().unwrap_or(Value::Null),
                    PacketPayload::Binary(_) => Value::Null,
                };
                Some((
                    p.packet.subject.clone(),
                    p.packet.from_agent.clone(),
                    p.packet.to_agent.clone(),
                    payload,
                ))
            }
            _ => None,
        })
        .collect()
}

fn aliases(runs: &[JuniorRun]) -> Vec<String> {
    runs.iter().map(|r| r.alias.clone()).collect()
}

// REQ-005-US-009-001 REQ-005-FR12-001 REQ-005-AC9-001: three juniors give three
// different answers; the checker finds 2 errors, nothing, 1 warning; the senior scores
// them 80 / 100 / 97 in one `junior_score` packet each (U:Vz -> U:Ox, on the log before
// the synthesis) and `best` answers with the clean one, naming its junior.
#[tokio::test]
async fn best_answers_with_the_cleanest_output_after_score_packets() {
    let e = env(true, EscalationPaths::default()).await;
    let d = e.dir.path();
    let drivers = juniors(d, &["TODO TODO draft", "clean draft", "XXX draft"]);
    let s = synthesis(Strategy::Best, d, Duration::from_secs(10));
    let (runs, outcome) = fan_out(&e.agents, "U:Vz", drivers, &task("t-best"), &s)
        .await
        .unwrap();
    let a = aliases(&runs);
    let FanOutOutcome::Synthesized {
        output,
        chosen,
        scores,
        ..
    } = outcome
    else {
        panic!("expected a synthesis: {outcome:?}");
    };
    assert_eq!(output.trim_end(), "clean draft");
    assert_eq!(chosen.as_deref(), Some(a[1].as_str()));
    let points: Vec<_> = scores.iter().map(|s| s.score).collect();
    assert_eq!(points, vec![Some(80), Some(100), Some(97)]);

    let t = traffic(&e.log).await;
    let score_at: Vec<usize> = (0..t.len()).filter(|&i| t[i].0 == "junior_score").collect();
    let synthesis_at = t
        .iter()
        .position(|p| p.0 == "synthesis")
        .expect("synthesis");
    assert_eq!(score_at.len(), 3, "{t:?}");
    assert!(score_at.iter().all(|&i| i < synthesis_at), "{t:?}");
    for (k, &i) in score_at.iter().enumerate() {
        let (_, from, to, body) = &t[i];
        assert_eq!((from.as_str(), to.as_str()), ("U:Vz", "U:Ox"));
        assert_eq!(body["task_id"], "t-best");
        assert_eq!(body["junior"], a[k]);
        assert_eq!(body["score"], json!(points[k]));
        assert!(body.get("checker_errors").is_none(), "{body}");
    }
    assert_eq!(t[score_at[0]].3["issues"].as_array().map(Vec::len), Some(2));
    assert_eq!(t[score_at[0]].3["issues"][0]["rule"], "no-TODO");
    let body = &t[synthesis_at].3;
    assert_eq!(body["strategy"], "best");
    assert_eq!(body["chosen"], a[1]);
    assert_eq!(body["scores"][&a[0]], 80);
    assert_eq!(body["scores"][&a[2]], 97);
    assert_eq!(
        body["output"].as_str().map(str::trim_end),
        Some("clean draft")
    );
}

// REQ-005-US-009-001 REQ-005-FR12-001: `merge` keeps every answer but in score order
// (best first), not junior order, and says so in the synthesis packet.
#[tokio::test]
async fn merge_joins_every_output_in_score_order() {
    let e = env(true, EscalationPaths::default()).await;
    let d = e.dir.path();
    let drivers = juniors(d, &["TODO TODO draft", "clean draft", "XXX draft"]);
    let s = synthesis(Strategy::Merge, d, Duration::from_secs(10));
    let (runs, outcome) = fan_out(&e.agents, "U:Vz", drivers, &task("t-merge"), &s)
        .await
        .unwrap();
    let a = aliases(&runs);
    let FanOutOutcome::Synthesized { output, chosen, .. } = outcome else {
        panic!("expected a synthesis: {outcome:?}");
    };
    assert_eq!(output, "clean draft\n---\nXXX draft\n---\nTODO TODO draft");
    assert_eq!(chosen, None);
    let t = traffic(&e.log).await;
    let body = &t.iter().find(|p| p.0 == "synthesis").expect("synthesis").3;
    assert_eq!(body["strategy"], "merge");
    assert_eq!(body["chosen"], Value::Null);
    assert_eq!(body["order"], json!([a[1], a[2], a[0]]));
}

// REQ-005-FR12-001: with no checkers configured every answer scores 100, so the
// earliest junior wins even when a later answer would have been cleaner.
#[tokio::test]
async fn without_checkers_every_output_ties_and_the_earliest_wins() {
    let e = env(true, EscalationPaths::default()).await;
    let d = e.dir.path();
    let drivers = juniors(d, &["TODO first", "second", "third"]);
    let (runs, outcome) = fan_out(
        &e.agents,
        "U:Vz",
        drivers,
        &task("t-plain"),
        &Synthesis::default(),
    )
    .await
    .unwrap();
    let FanOutOutcome::Synthesized {
        output,
        chosen,
        scores,
        ..
    } = outcome
    else {
        panic!("expected a synthesis: {outcome:?}");
    };
    assert_eq!(output.trim_end(), "TODO first");
    assert_eq!(chosen.as_deref(), Some(runs[0].alias.as_str()));
    assert!(scores
        .iter()
        .all(|s| s.score == Some(100) && s.issues.is_empty()));
    let t = traffic(&e.log).await;
    let sent: Vec<_> = t.iter().filter(|p| p.0 == "junior_score").collect();
    assert_eq!(sent.len(), 3);
    assert!(sent.iter().all(|p| p.3["score"] == 100), "{sent:?}");
}

// REQ-005-FR12-001 REQ-005-US-009-001: a checker that crashes on one answer and hangs
// past its time limit on another leaves those two unscored (score null, the reason in
// `checker_errors`) and ranked after the scored one, which wins although it has an
// error and came last; when no answer can be scored the fan-out still answers with the
// earliest.
#[tokio::test]
async fn a_checker_that_crashes_or_hangs_leaves_the_output_unscored() {
    let e = env(true, EscalationPaths::default()).await;
    let d = e.dir.path();
    let drivers = juniors(d, &["BOOM draft", "SLOW draft", "TODO draft"]);
    let s = synthesis(Strategy::Best, d, Duration::from_secs(1));
    let (runs, outcome) = fan_out(&e.agents, "U:Vz", drivers, &task("t-crash"), &s)
        .await
        .unwrap();
    let a = aliases(&runs);
    let FanOutOutcome::Synthesized { output, chosen, .. } = outcome else {
        panic!("expected a synthesis: {outcome:?}");
    };
    assert_eq!(output.trim_end(), "TODO draft");
    assert_eq!(chosen.as_deref(), Some(a[2].as_str()));
    let t = traffic(&e.log).await;
    let score = |alias: &str| {
        t.iter()
            .find(|p| p.0 == "junior_score" && p.3["junior"] == alias)
            .map(|p| p.3.clone())
            .expect("a junior_score packet")
    };
    let boom = score(&a[0]);
    assert_eq!(boom["score"], Value::Null, "{boom}");
    assert!(boom["checker_errors"][0]
        .as_str()
        .is_some_and(|m| m.contains("checker exploded")));
    let slow = score(&a[1]);
    assert_eq!(slow["score"], Value::Null, "{slow}");
    assert!(slow["checker_errors"][0]
        .as_str()
        .is_some_and(|m| m.contains("timeout")));
    assert_eq!(score(&a[2])["score"], 90);

    let drivers = juniors(d, &["BOOM one", "BOOM two"]);
    let (runs, outcome) = fan_out(&e.agents, "U:Vz", drivers, &task("t-crash-2"), &s)
        .await
        .unwrap();
    let FanOutOutcome::Synthesized { output, chosen, .. } = outcome else {
        panic!("expected a synthesis: {outcome:?}");
    };
    assert_eq!(output.trim_end(), "BOOM one");
    assert_eq!(chosen.as_deref(), Some(runs[0].alias.as_str()));
}

// REQ-005-US-009-001 REQ-005-US-006-001 REQ-005-FR7-001 (T18.4): every junior of U:Vz
// fails; U:Vz escalates to its parent U:Ox (told by an `escalation` packet), and on to
// the human queue, with every junior's error in the context; nothing is scored or
// synthesized.
#[tokio::test]
async fn all_juniors_failing_escalates_to_the_human_queue() {
    let e = env(true, EscalationPaths::default()).await;
    let d = e.dir.path();
    let drivers: Vec<_> = (0..3)
        .map(|i| junior(d, &format!("f{i}.sh"), None))
        .collect();
    let s = synthesis(Strategy::Best, d, Duration::from_secs(10));
    let (runs, outcome) = fan_out(&e.agents, "U:Vz", drivers, &task("t-fail"), &s)
        .await
        .unwrap();
    assert!(runs.iter().all(|r| r.result.is_err()));
    let FanOutOutcome::Escalated(resolution) = outcome else {
        panic!("expected an escalation: {outcome:?}");
    };
    assert!(resolution.is_human(), "{resolution:?}");
    assert_eq!(resolution.path, vec!["U:Vz", "U:Ox", "human"]);
    let queue = e.agents.human_queue().await.unwrap();
    let entry = queue
        .iter()
        .find(|q| q.context["task_id"] == "t-fail")
        .expect("on the human queue");
    assert_eq!(entry.reason, "every junior failed");
    assert_eq!(entry.context["errors"].as_array().map(Vec::len), Some(3));
    let hops: Vec<_> = events(&e.log, Stream::VolkLifecycle)
        .await
        .iter()
        .filter_map(|env| match &env.record.event {
            Event::VolkEscalated(x) => Some((x.alias.clone(), x.escalated_to.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(
        hops,
        vec![
            ("U:Vz".to_owned(), "U:Ox".to_owned()),
            ("U:Ox".to_owned(), "human".to_owned())
        ]
    );
    let t = traffic(&e.log).await;
    assert!(
        t.iter().any(|p| p.0 == "escalation" && p.2 == "U:Ox"),
        "{t:?}"
    );
    assert!(!t
        .iter()
        .any(|p| p.0 == "junior_score" || p.0 == "synthesis"));
}

// REQ-005-FR12-001: five answers checked by a real checker process are ranked by
// score, ties in junior order, and the clean one is chosen. (How long this takes is
// measured by `cargo bench --bench agents -- synthesis`, not asserted here.)
#[tokio::test]
async fn five_outputs_are_ranked_by_score_then_junior_order() {
    let dir = tempfile::tempdir().unwrap();
    let s = synthesis(Strategy::Best, dir.path(), Duration::from_secs(10));
    let outputs = [
        ("U:Aa", "TODO a"),
        ("U:Ab", "XXX b"),
        ("U:Ac", "c"),
        ("U:Ad", "TODO XXX d"),
        ("U:Ae", "e"),
    ];
    let scores = s.scorer.score_all(&outputs).await;
    let chosen = synthesize(s.strategy, &outputs, &scores);
    assert_eq!(chosen.chosen.as_deref(), Some("U:Ac"));
    assert_eq!(chosen.order, vec!["U:Ac", "U:Ae", "U:Ab", "U:Aa", "U:Ad"]);
}
