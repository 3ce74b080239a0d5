//! CLI driver (005 US-007, T16.1..T16.5): real processes from scripts the test writes.

mod agents_support;

use std::time::Duration;

use agents_support::{env, script};
use orchestrata::agents::delegation::{delegate, fan_out, FanOutOutcome, Synthesis};
use orchestrata::agents::driver::{run_junior, run_task, WORK_STATUS_KEY};
use orchestrata::agents::drivers::cli::{CliConfig, CliDriver};
use orchestrata::agents::synthesis::{Scorer, Strategy};
use orchestrata::agents::{Driver, DriverError, EscalationPaths, Task};

fn task(prompt: &str, secs: u64) -> Task {
    Task {
        id: "t-1".into(),
        prompt: prompt.into(),
        timeout: Duration::from_secs(secs),
    }
}

fn alive(pid: i32) -> bool {
    // SAFETY: signal 0 only checks for existence.
    unsafe { libc::kill(pid, 0) == 0 }
}

// REQ-005-US-007-001 REQ-005-FR15-001 REQ-005-FR16-001 REQ-005-AC7-001
// T15.1 T16.3: the task goes in on stdin, the answer comes back as a junior_result packet.
#[tokio::test]
async fn cli_junior_reads_stdin_and_answers_with_a_packet() {
    let dir = tempfile::tempdir().unwrap();
    let prog = script(dir.path(), "upper.sh", "tr a-z A-Z");
    let mut driver = CliDriver::new(CliConfig::new(prog));
    let (packet, result) = run_junior(&mut driver, "U:Ja", "U:Vz", &task("write hello", 10))
        .await
        .unwrap();
    assert_eq!(result.unwrap(), "WRITE HELLO");
    assert_eq!(packet.subject(), "junior_result");
    assert_eq!(packet.from_agent().as_str(), "U:Ja");
    assert_eq!(packet.to_agent().as_str(), "U:Vz");
    assert_eq!(packet.payload_json().unwrap()["output"], "WRITE HELLO");
    assert_eq!(packet.metadata().get(WORK_STATUS_KEY).unwrap(), "succeeded");
}

// REQ-005-US-007-001 REQ-005-FR16-001
// T16.4: a crash is a typed error with the exit status and stderr, and a `failed` packet.
#[tokio::test]
async fn a_crash_is_reported_with_stderr() {
    let dir = tempfile::tempdir().unwrap();
    let prog = script(
        dir.path(),
        "crash.sh",
        "echo 'segfault in parser' >&2; exit 3",
    );
    let mut driver = CliDriver::new(CliConfig::new(prog));
    let (packet, result) = run_junior(&mut driver, "U:Ja", "U:Vz", &task("x", 10))
        .await
        .unwrap();
    let err = result.unwrap_err();
    assert!(
        matches!(&err, DriverError::Crashed { reason } if reason.contains("segfault in parser") && reason.contains('3')),
        "{err}"
    );
    assert_eq!(packet.metadata().get(WORK_STATUS_KEY).unwrap(), "failed");
    let missing = CliConfig::new(dir.path().join("nope"));
    let err = run_task(&mut CliDriver::new(missing), &task("x", 1))
        .await
        .unwrap_err();
    assert!(
        matches!(
            err,
            DriverError::Start {
                field: "command",
                ..
            }
        ),
        "{err}"
    );
}

// REQ-005-US-007-001 REQ-005-FR3-001
// T16.5 T15.5: a timeout kills the whole process group, grandchildren included.
#[tokio::test]
async fn timeout_kills_the_process_tree() {
    let dir = tempfile::tempdir().unwrap();
    let pidfile = dir.path().join("grandchild.pid");
    let prog = script(
        dir.path(),
        "hang.sh",
        &format!("sleep 300 & echo $! > {}\nwait", pidfile.display()),
    );
    let mut driver = CliDriver::new(CliConfig::new(prog));
    driver.initialize().await.unwrap();
    driver.send_task(&task("x", 1)).await.unwrap();
    let err = driver.get_response().await.unwrap_err();
    assert_eq!(err, DriverError::Timeout { after_ms: 1000 });
    let grandchild: i32 = std::fs::read_to_string(&pidfile)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    for _ in 0..100 {
        if !alive(grandchild) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    // A zombie still answers kill(0) until reaped by init; check /proc state instead.
    let state = std::fs::read_to_string(format!("/proc/{grandchild}/stat")).unwrap_or_default();
    assert!(
        state.is_empty() || state.contains(") Z"),
        "grandchild survives: {state}"
    );
    driver.cleanup().await.unwrap();
    let err = driver.get_response().await.unwrap_err();
    assert!(matches!(err, DriverError::State { .. }), "{err}");
}

// REQ-005-US-008-001 REQ-005-AC11-001 REQ-005-FR3-001
// T15.4 T4.3: delegation spawns a junior, its answer reaches the senior's inbox as CXP,
// and the junior is terminated when the task is done.
#[tokio::test]
async fn delegation_goes_through_cxp_and_ends_the_junior() {
    let e = env(true, EscalationPaths::default()).await;
    let prog = script(e.dir.path(), "echo.sh", "cat");
    let mut driver = CliDriver::new(CliConfig::new(prog));
    let run = delegate(
        &e.agents,
        "U:Vz",
        "cli",
        &mut driver,
        &task("fn main() {}", 10),
    )
    .await
    .unwrap();
    assert_eq!(run.result.as_deref(), Ok("fn main() {}"));
    assert!(!e.agents.node(&run.alias).await.unwrap().unwrap().live);
    let inbox = e.kernel.inbox("U:Vz", 10).await.unwrap();
    let got = inbox
        .packets
        .iter()
        .find(|p| p.subject() == "junior_result")
        .expect("in U:Vz's inbox");
    assert_eq!(got.from_agent().as_str(), run.alias);
    assert_eq!(got.payload_json().unwrap()["output"], "fn main() {}");
}

// REQ-005-US-009-001 REQ-005-FR11-001 REQ-005-FR12-001 REQ-005-AC9-001 REQ-005-NFR10-001
// T15.7: fan-out to 3 juniors (one fails), synthesis packet to the senior's parent;
// 6 juniors refused; all failing escalates.
#[tokio::test]
async fn fan_out_synthesizes_or_escalates() {
    let e = env(false, EscalationPaths::default()).await;
    let d = e.dir.path();
    let drivers: Vec<(String, Box<dyn Driver>)> = vec![
        (
            "cli".into(),
            Box::new(CliDriver::new(CliConfig::new(script(
                d,
                "a.sh",
                "echo alpha",
            )))),
        ),
        (
            "cli".into(),
            Box::new(CliDriver::new(CliConfig::new(script(d, "b.sh", "exit 1")))),
        ),
        (
            "cli".into(),
            Box::new(CliDriver::new(CliConfig::new(script(
                d,
                "c.sh",
                "echo gamma",
            )))),
        ),
    ];
    // No checkers: every answer scores 100, so `merge` keeps junior order.
    let merge = Synthesis {
        strategy: Strategy::Merge,
        scorer: Scorer::default(),
    };
    let (runs, outcome) = fan_out(&e.agents, "U:Vz", drivers, &task("same task", 10), &merge)
        .await
        .unwrap();
    assert_eq!(runs.len(), 3);
    assert_eq!(runs.iter().filter(|r| r.result.is_err()).count(), 1);
    let FanOutOutcome::Synthesized { output, packet, .. } = outcome else {
        panic!("expected a synthesis");
    };
    assert_eq!(output, "alpha\n---\ngamma");
    assert_eq!(packet.to_agent().as_str(), "U:Ox");
    let inbox = e.kernel.inbox("U:Ox", 20).await.unwrap();
    assert!(inbox.packets.iter().any(|p| p.subject() == "synthesis"));
    for r in &runs {
        assert!(!e.agents.node(&r.alias).await.unwrap().unwrap().live);
    }

    let six: Vec<(String, Box<dyn Driver>)> = (0..6)
        .map(|i| {
            (
                "cli".to_string(),
                Box::new(CliDriver::new(CliConfig::new(script(
                    d,
                    &format!("s{i}.sh"),
                    "echo x",
                )))) as Box<dyn Driver>,
            )
        })
        .collect();
    let err = fan_out(&e.agents, "U:Vz", six, &task("t", 5), &merge)
        .await
        .unwrap_err();
    assert!(err.to_string().contains("1 to 5"), "{err}");

    let failing: Vec<(String, Box<dyn Driver>)> = (0..2)
        .map(|i| {
            (
                "cli".to_string(),
                Box::new(CliDriver::new(CliConfig::new(script(
                    d,
                    &format!("f{i}.sh"),
                    "exit 2",
                )))) as Box<dyn Driver>,
            )
        })
        .collect();
    let (_, outcome) = fan_out(&e.agents, "U:Ox", failing, &task("t2", 5), &merge)
        .await
        .unwrap();
    let FanOutOutcome::Escalated(resolution) = outcome else {
        panic!("expected an escalation");
    };
    assert_eq!(resolution.target, "human");
    let queue = e.agents.human_queue().await.unwrap();
    assert_eq!(
        queue.last().unwrap().context["errors"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
}
