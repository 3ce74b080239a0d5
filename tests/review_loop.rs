//! The review-fix loop (004 US-011, 005 US-011): real packets through a governed kernel,
//! a real checker process emitting linter-like JSON, real file fixes.

mod agents_support;

use agents_support::{env, events, script};
use async_trait::async_trait;
use orchestrata::agents::review::{check, run_review, Fixer, ReviewConfig};
use orchestrata::agents::{AgentError, EscalationPaths};
use orchestrata_schemas::cxp::review::{FixIssues, ReviewOutcome};
use orchestrata_schemas::events::{Event, Stream};

const CHECKER: &str = r#"n=$(grep -c BAD "$1")
if [ "$n" -gt 0 ]; then
  printf '[{"type":"lint","rule":"no-bad","line":1,"message":"BAD found %s times","severity":"error"}]' "$n"
else
  printf '[]'
fi"#;

/// Removes one `BAD` per fix (or none when `lazy`).
struct FileFixer {
    lazy: bool,
    seen: Vec<FixIssues>,
}

#[async_trait]
impl Fixer for FileFixer {
    async fn fix(&mut self, fix: &FixIssues) -> Result<(), AgentError> {
        self.seen.push(fix.clone());
        if !self.lazy {
            let text = std::fs::read_to_string(&fix.file_path).unwrap();
            std::fs::write(&fix.file_path, text.replacen("BAD", "ok", 1)).unwrap();
        }
        Ok(())
    }
}

/// (subject, review_cycle, from, to) of every packet on cxp.traffic, in order.
async fn traffic(
    log: &std::sync::Arc<dyn orchestrata::log::EventLog>,
) -> Vec<(String, u64, String, String)> {
    events(log, Stream::CxpTraffic)
        .await
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::PacketSent(p) => Some((
                p.packet.subject.clone(),
                p.packet
                    .metadata
                    .0
                    .get("review_cycle")
                    .and_then(|v| v.as_u64())
                    .unwrap_or(0),
                p.packet.from_agent.clone(),
                p.packet.to_agent.clone(),
            )),
            _ => None,
        })
        .collect()
}

// 004 US-011: review_code -> fix_issues -> review_code -> review_complete(passed); the cycle travels
// in metadata; a single issue is marked auto-fixable.
#[tokio::test]
async fn issues_are_fixed_then_the_review_completes() {
    let e = env(true, EscalationPaths::default()).await;
    let checker = script(e.dir.path(), "checker.sh", CHECKER);
    let file = e.dir.path().join("main.rs");
    std::fs::write(&file, "fn main() { BAD }\n").unwrap();
    let config = ReviewConfig::with_checkers(vec![vec![checker.display().to_string()]]);
    let mut fixer = FileFixer {
        lazy: false,
        seen: vec![],
    };
    let report = run_review(&e.agents, &config, "U:Vz", &file, &mut fixer)
        .await
        .unwrap();
    assert_eq!(report.complete.status, ReviewOutcome::Passed);
    assert_eq!(report.complete.cycles, 2);
    assert!(report.remaining.is_empty());
    assert_eq!(fixer.seen.len(), 1);
    assert!(fixer.seen[0].auto_fixable);
    let t = traffic(&e.log).await;
    let expect = [
        ("review_code", 1, "U:Vz", "U:Qa"),
        ("fix_issues", 1, "U:Qa", "U:Vz"),
        ("review_code", 2, "U:Vz", "U:Qa"),
        ("review_complete", 2, "U:Qa", "U:Ox"),
    ];
    let got: Vec<_> = t
        .iter()
        .map(|(s, c, f, to)| (s.as_str(), *c, f.as_str(), to.as_str()))
        .collect();
    assert_eq!(got, expect);
}

// REQ-005-US-006-001 REQ-005-FR7-001 REQ-005-AC4-001
// 004 US-011: At MAX_REVIEW_CYCLES with issues left the loop escalates to U:Ox (escalation event and
// packet); with ESCALATE_ON_MAX_CYCLES false it fails without escalating.
#[tokio::test]
async fn max_cycles_escalate_to_the_orchestrator() {
    let e = env(true, EscalationPaths::default()).await;
    let checker = script(e.dir.path(), "checker.sh", CHECKER);
    let file = e.dir.path().join("lib.rs");
    std::fs::write(&file, "BAD BAD\n").unwrap();
    let config = ReviewConfig::with_checkers(vec![vec![checker.display().to_string()]]);
    let mut fixer = FileFixer {
        lazy: true,
        seen: vec![],
    };
    let report = run_review(&e.agents, &config, "U:Vz", &file, &mut fixer)
        .await
        .unwrap();
    assert_eq!(report.complete.status, ReviewOutcome::Escalated);
    assert_eq!(report.complete.cycles, 3);
    assert_eq!(fixer.seen.len(), 2);
    assert_eq!(report.remaining.len(), 1);
    let escalated: Vec<_> = events(&e.log, Stream::VolkLifecycle)
        .await
        .iter()
        .filter_map(|env| match &env.record.event {
            Event::VolkEscalated(x) => Some((x.alias.clone(), x.escalated_to.clone())),
            _ => None,
        })
        .collect();
    assert_eq!(escalated, vec![("U:Qa".to_string(), "U:Ox".to_string())]);
    let t = traffic(&e.log).await;
    assert_eq!(t.iter().filter(|p| p.0 == "review_code").count(), 3);
    assert!(t.iter().any(|p| p.0 == "escalation" && p.3 == "U:Ox"));

    let yaml = format!(
        "MAX_REVIEW_CYCLES: 2\nESCALATE_ON_MAX_CYCLES: false\nAUTO_FIX_ON_SINGLE_ISSUE: false\nREVIEW_TIMEOUT_SECONDS: 5\ncheckers: [[\"{}\"]]\n",
        checker.display()
    );
    let config = ReviewConfig::from_yaml(&yaml).unwrap();
    let mut fixer = FileFixer {
        lazy: true,
        seen: vec![],
    };
    let report = run_review(&e.agents, &config, "U:Vz", &file, &mut fixer)
        .await
        .unwrap();
    assert_eq!(
        (report.complete.status, report.complete.cycles),
        (ReviewOutcome::Failed, 2)
    );
    assert!(!fixer.seen[0].auto_fixable);
}

// REQ-005-US-005-001
// 004 US-011: Bad configuration and bad checker output are typed errors naming the field.
#[tokio::test]
async fn bad_config_and_checker_output_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    for (yaml, field) in [
        ("MAX_REVIEW_CYCLES: 0", "MAX_REVIEW_CYCLES"),
        ("checkers: [[]]", "checkers"),
        ("MAX_CYCLES: 3", "review"),
    ] {
        match ReviewConfig::from_yaml(yaml) {
            Err(AgentError::Config { field: f, .. }) => assert_eq!(f, field, "{yaml}"),
            other => panic!("{yaml}: {other:?}"),
        }
    }
    let noise = script(dir.path(), "noise.sh", "echo 'not json'");
    let config = ReviewConfig::with_checkers(vec![vec![noise.display().to_string()]]);
    let err = check(&config, &dir.path().join("x.rs")).await.unwrap_err();
    assert!(
        matches!(err, AgentError::Invalid { field: "checkers", ref reason } if reason.contains("JSON")),
        "{err}"
    );
    let slow = script(dir.path(), "slow.sh", "sleep 30");
    let mut config = ReviewConfig::with_checkers(vec![vec![slow.display().to_string()]]);
    config.timeout_seconds = 1;
    let err = check(&config, &dir.path().join("x.rs")).await.unwrap_err();
    assert!(err.to_string().contains("timeout"), "{err}");
}
