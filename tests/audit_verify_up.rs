//! `orchestrata audit verify` on the log of a real `up` fed through the gateway: every
//! decision it recorded — the gateway's scope checks included — re-evaluates to what
//! was recorded.

mod support;

use std::process::Command;

use support::checked_ok;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "audit-verify-test-token";
const READ_ONLY: &str = "audit-verify-read-only-token";

// The gateway's authorization decisions recorded their query as bare goal text, so
// verify asked the policy about the method with no scope in the context and found
// every one of them "allow recorded, deny re-evaluated" (half the decisions of a log
// fed by clients). They now record what verify must ask again.
#[tokio::test]
async fn every_decision_of_a_gateway_fed_log_verifies() {
    let data = tempfile::tempdir().expect("temp dir");
    let config = data.path().join("orchestrata.yaml");
    std::fs::write(
        &config,
        format!(
            "gateway:\n  tokens:\n    - {{ token: {READ_ONLY}, scope: read_only, name: reader }}\n"
        ),
    )
    .expect("config written");
    let config = config.to_str().expect("utf-8 path").to_owned();
    let port = support::free_port();
    let mut up = Up::start(
        data.path(),
        port,
        TOKEN,
        &[],
        &[("ORCHESTRATA_CONFIG", config.as_str())],
    );
    let url = format!("ws://127.0.0.1:{port}/");
    let mut ws = Ws::connect(&url).await;
    ws.auth(TOKEN).await;
    const SENDS: usize = 20;
    for _ in 0..SENDS {
        checked_ok(&mut ws, "cxp.send", support::spec_send()).await;
    }
    // A call the scope does not cover: a recorded denial.
    let mut reader = Ws::connect(&url).await;
    reader.auth(READ_ONLY).await;
    let denied = reader.err("cxp.send", support::spec_send()).await;
    assert_eq!(denied["code"], -32001, "{denied}");
    drop(reader);
    drop(ws);
    assert!(up.stop(), "up stops cleanly");

    let out = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["audit", "--data-dir"])
        .arg(data.path())
        .arg("verify")
        .output()
        .expect("run orchestrata audit verify");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let checked: usize = stdout
        .split("verified ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no count in {stdout}"));
    // Each send: the gateway's scope check and the policy's decision.
    assert!(checked > 2 * SENDS, "{stdout}");
    assert!(stdout.contains(": 0 mismatch(es)"), "{stdout}");
}
