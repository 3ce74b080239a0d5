//! `orchestrata audit`: decisions recorded by a real engine on a real sled log, then
//! listed, verified and diffed by the binary on a copy of the data (no server).

mod governance_support;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use governance_support::*;
use orchestrata::governance::Request;

fn audit(data: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .arg("audit")
        .arg("--data-dir")
        .arg(data)
        .args(args)
        .output()
        .expect("run orchestrata audit")
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Replaces `from` by `to` (same length) everywhere inside the first matching record of a stream
/// of a sled log copy: what a tamperer with disk access would do.
fn tamper(data: &Path, stream: &str, from: &[u8], to: &[u8]) {
    assert_eq!(from.len(), to.len());
    let db = sled::open(data).unwrap();
    let tree = db.open_tree(stream).unwrap();
    for item in tree.iter() {
        let (k, v) = item.unwrap();
        if v.windows(from.len()).any(|w| w == from) {
            let mut changed = v.to_vec();
            let mut pos = 0;
            while let Some(at) = changed[pos..].windows(from.len()).position(|w| w == from) {
                changed[pos + at..pos + at + to.len()].copy_from_slice(to);
                pos += at + to.len();
            }
            tree.insert(k, changed).unwrap();
            db.flush().unwrap();
            return;
        }
    }
    panic!("nothing to tamper with in {stream}");
}

/// Records decisions under the default policy (policy A) and returns a copy of the log.
async fn record_decisions() -> (tempfile::TempDir, PathBuf) {
    let env = sled_env().await;
    for v in ["U:Ox", "U:Vz", "U:Qa"] {
        register(&env.log, v, None).await;
    }
    register(&env.log, "U:Ar", Some("U:Ox")).await;
    let g = governance(&env).await;
    for _ in 0..3 {
        send(&env.log, packet("U:Ox", "U:Vz", "t1", "task", "s1")).await;
        g.decide(Request::volk("U:Ox", "cxp.send", "U:Vz").with("session", "s1"))
            .await
            .unwrap();
    }
    g.decide(Request::volk("U:Ar", "cxp.send", "U:Vz"))
        .await
        .unwrap(); // escalate
    g.decide(Request::volk("U:Qa", "cxp.send", "U:Vz").with("subject", "fix_issues"))
        .await
        .unwrap();
    g.decide(Request::client("dashboard", "gateway.execute", "cxp.send"))
        .await
        .unwrap();
    g.decide(Request::client("dashboard", "gateway.execute", "cxp.send"))
        .await
        .unwrap(); // cached
    g.decide(Request::client(
        "operator",
        "gateway.execute",
        "session.open",
    ))
    .await
    .unwrap();
    g.evaluate(Request::client(
        "operator",
        "gateway.execute",
        "volk.register",
    ))
    .await
    .unwrap();
    env.log.flush().await.unwrap();
    let copy = env.dir.path().join("copy");
    copy_dir(&env.dir.path().join("data"), &copy);
    (env.dir, copy)
}

// REQ-014-036
// REQ-014-037
// REQ-014-038
#[tokio::test]
async fn audit_decisions_lists_and_filters_as_json_lines() {
    let (_keep, copy) = record_decisions().await;
    let out = audit(&copy, &["decisions"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 9);
    assert!(lines
        .iter()
        .all(|l| l["policy_hash"].as_str().unwrap().len() == 64));
    let out = audit(
        &copy,
        &["decisions", "--subject", "dashboard", "--result", "deny"],
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout).lines().count(), 2);
    let out = audit(&copy, &["decisions", "--result", "escalate"]);
    let only: serde_json::Value =
        serde_json::from_str(String::from_utf8_lossy(&out.stdout).trim()).unwrap();
    assert_eq!(only["subject"], "U:Ar");
    assert_eq!(
        only["rule_trace"],
        serde_json::json!(["cxp_send", "cross_hierarchy"])
    );
    let out = audit(&copy, &["decisions", "--since", "2999-01-01T00:00:00Z"]);
    assert!(out.status.success() && out.stdout.is_empty());
    let out = audit(&copy, &["decisions", "--result", "maybe"]);
    assert!(!out.status.success());
}

// REQ-014-030
#[tokio::test]
async fn audit_verify_passes_on_an_untouched_log() {
    let (_keep, copy) = record_decisions().await;
    let out = audit(&copy, &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("verified 9 decisions (0 fail-closed skipped): 0 mismatch(es)"),
        "{stdout}"
    );
}

// REQ-014-030
#[tokio::test]
async fn audit_verify_reports_an_altered_decision() {
    let (_keep, copy) = record_decisions().await;
    // U:Ar's escalated send now claims to come from U:Qa (same length)
    tamper(&copy, "governance.decisions", b"U:Ar", b"U:Qa");
    let out = audit(&copy, &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert_eq!(stdout.matches("MISMATCH").count(), 1, "{stdout}");
    assert!(
        stdout.contains("result escalate recorded, allow re-evaluated"),
        "{stdout}"
    );
}

// REQ-014-030
#[tokio::test]
async fn audit_verify_reports_an_altered_policy_text() {
    let (_keep, copy) = record_decisions().await;
    tamper(
        &copy,
        "governance.decisions",
        b"send_budget(100)",
        b"send_budget(999)",
    );
    let out = audit(&copy, &["verify"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{stdout}");
    assert!(stdout.contains("it was altered"), "{stdout}");
    assert_eq!(stdout.matches("MISMATCH").count(), 9, "{stdout}");
}

// REQ-014-030
#[tokio::test]
async fn audit_diff_reports_exactly_the_decisions_a_new_policy_changes() {
    let (keep, copy) = record_decisions().await;
    // policy B: the same, except session.open now needs admin
    let dir = keep.path().join("policy-b");
    std::fs::create_dir_all(&dir).unwrap();
    for file in orchestrata::governance::Policy::default_policy().files() {
        let text = file.text.replace(
            "method_scope('session.open', read_write).",
            "method_scope('session.open', admin).",
        );
        std::fs::write(dir.join(&file.name), text).unwrap();
    }
    // The decisions were taken under the default policy plus the test principals.
    std::fs::write(dir.join("clients.pl"), governance_support::CLIENTS_PL).unwrap();
    let out = audit(&copy, &["diff", "--policy", dir.to_str().unwrap()]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let changed: Vec<_> = stdout
        .lines()
        .filter(|l| l.starts_with("CHANGED"))
        .collect();
    assert_eq!(changed.len(), 1, "{stdout}");
    assert!(
        changed[0].contains("operator gateway.execute session.open: allow -> deny"),
        "{stdout}"
    );
    assert!(stdout.contains("by action  gateway.execute: 1"), "{stdout}");
    assert!(stdout.contains("by subject operator: 1"), "{stdout}");
    // the dry run is not compared: 8 real decisions
    assert!(stdout.contains("1 of 8 decisions would change"), "{stdout}");
    // the unchanged policy changes nothing
    let same = keep.path().join("policy-a");
    std::fs::create_dir_all(&same).unwrap();
    for file in orchestrata::governance::Policy::default_policy().files() {
        std::fs::write(same.join(&file.name), &file.text).unwrap();
    }
    std::fs::write(same.join("clients.pl"), governance_support::CLIENTS_PL).unwrap();
    let out = audit(&copy, &["diff", "--policy", same.to_str().unwrap()]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("0 of 8 decisions would change"));
}
