//! The operator console (issue 10): its assets are served from the binary at `/console`,
//! and the page works end to end in headless Chromium (Debian's `chromium`, driven by
//! `playwright-core` from `tests/console/`; tests/run.sh installs both) against a real
//! `orchestrata up`: sign in, live traffic from another client, filters, thread view,
//! governance dry run, history scrubbing, resume after a server restart without
//! duplicate rows, and a read_only token without controls whose calls the server
//! refuses anyway. Screenshots land in a temp dir; with
//! `ORCHESTRATA_UPDATE_SCREENSHOTS=1` they replace the ones in `docs/console/`, so a
//! plain test run leaves the working tree untouched.

mod support;

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::json;
use support::ws::{TestGateway, Ws};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, Command};

const RW_TOKEN: &str = "console-e2e-operator-token";
const RO_TOKEN: &str = "console-e2e-wall-screen-token";
/// A read_write principal `agents` that acts as the roster Volks the test sends for.
const AGENT_TOKEN: &str = "console-e2e-agents-token";

async fn get(addr: &str, path: &str) -> reqwest::Response {
    reqwest::get(format!("http://{addr}{path}"))
        .await
        .unwrap_or_else(|e| panic!("GET {path}: {e}"))
}

fn header(r: &reqwest::Response, name: &str) -> String {
    r.headers()
        .get(name)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

// REQ-014-US-001
#[tokio::test]
async fn console_assets_are_served_from_the_binary_with_types_and_no_cache() {
    let gw = TestGateway::sled(support::ws::test_config()).await;
    let addr = gw.addr().to_string();
    for path in ["/console", "/console/", "/console/index.html"] {
        let r = get(&addr, path).await;
        assert_eq!(r.status(), 200, "{path}");
        assert_eq!(header(&r, "content-type"), "text/html; charset=utf-8");
        assert_eq!(header(&r, "cache-control"), "no-cache");
        let body = r.text().await.expect("body");
        assert!(body.contains(r#"<script type="module" src="/console/app.js">"#));
    }
    let js = get(&addr, "/console/rpc.js").await;
    assert_eq!(
        header(&js, "content-type"),
        "text/javascript; charset=utf-8"
    );
    assert!(js
        .text()
        .await
        .expect("body")
        .contains("export class Gateway"));
    let css = get(&addr, "/console/style.css").await;
    assert_eq!(header(&css, "content-type"), "text/css; charset=utf-8");
    for path in [
        "/console/nope.js",
        "/console/..%2FCargo.toml",
        "/console/app.js/x",
    ] {
        let r = get(&addr, path).await;
        assert_eq!(r.status(), 404, "{path}");
        assert_eq!(header(&r, "cache-control"), "no-cache", "{path}");
    }
    // Every module a served script imports is itself served (a missing row in the asset
    // table would break the page only in a browser).
    for name in orchestrata::gateway::console::asset_names() {
        let (_, body) = orchestrata::gateway::console::asset(name).expect("listed asset");
        for import in body.split("from './").skip(1) {
            let module = import.split('\'').next().unwrap_or_default();
            assert!(
                orchestrata::gateway::console::asset(module).is_some(),
                "{name} imports ./{module}, which /console does not serve"
            );
        }
    }
}

fn require_tools(dir: &Path) -> PathBuf {
    let node = Path::new("/usr/bin/node");
    let chromium = Path::new("/usr/bin/chromium");
    assert!(
        node.exists(),
        "node is missing (/usr/bin/node): the console e2e test needs Node.js to drive \
         Chromium. Run the suite with tests/run.sh, which installs it."
    );
    assert!(
        chromium.exists(),
        "chromium is missing (/usr/bin/chromium): apt-get install chromium, or run the \
         suite with tests/run.sh, which installs it."
    );
    assert!(
        dir.join("node_modules/playwright-core/package.json")
            .exists(),
        "playwright-core is not installed in {}: run `npm ci --prefix tests/console` \
         (tests/run.sh does).",
        dir.display()
    );
    node.to_path_buf()
}

struct Up {
    child: Child,
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

async fn start_up(config: &Path, data: &Path, port: u16) -> Up {
    let child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["up", "--listen", &format!("127.0.0.1:{port}")])
        .arg("--config")
        .arg(config)
        .arg("--data-dir")
        .arg(data)
        .env("GATEWAY_TOKEN", RW_TOKEN)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("start orchestrata up");
    let up = Up { child };
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Ok(r) = reqwest::get(format!("http://127.0.0.1:{port}/ready")).await {
            if r.status() == 200 {
                return up;
            }
        }
        assert!(
            Instant::now() < deadline,
            "orchestrata up did not become ready"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

async fn stop_up(mut up: Up) {
    let pid = i32::try_from(up.child.id().expect("running")).expect("pid");
    // SAFETY: kill(2) on our own child; no memory is touched.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    let status = tokio::time::timeout(Duration::from_secs(20), up.child.wait())
        .await
        .expect("up stops on SIGTERM")
        .expect("wait");
    assert!(status.success(), "up exits 0 on SIGTERM: {status}");
}

async fn rw_client(port: u16) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(RW_TOKEN).await;
    ws
}

// REQ-014-US-001 REQ-014-US-002 REQ-014-US-003 REQ-014-US-004 REQ-014-US-005
// REQ-014-US-006 REQ-014-US-008
// REQ-014-001 REQ-014-002 REQ-014-011 REQ-014-013 REQ-014-016 REQ-014-021
// REQ-014-031 REQ-014-041 REQ-014-043 REQ-014-051 REQ-014-077 REQ-014-078
// REQ-014-086 REQ-014-102 REQ-014-111 REQ-014-128 REQ-014-133 REQ-014-134
// REQ-014-141
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn operator_console_end_to_end_in_headless_chromium() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let scripts = root.join("tests/console");
    let node = require_tools(&scripts);
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let config = dir.path().join("orchestrata.yaml");
    std::fs::write(
        &config,
        format!(
            "gateway:\n  static_token: \"{RW_TOKEN}\"\n  tokens:\n    - {{ token: \"{RO_TOKEN}\", scope: read_only, name: wall-screen }}\n\
             \x20   - {{ token: \"{AGENT_TOKEN}\", scope: read_write, name: agents, acts_as: [U:Cx, U:Vz, U:Ox] }}\n\
             # The coding junior of the pipeline workflow takes a minute, so the run the\n\
             # page starts stays open while it is paused, resumed and looked at.\n\
             agents:\n  pipeline:\n    coder: [sh, -c, \"sleep 60\"]\n    task_timeout_s: 120\n"
        ),
    )
    .expect("write config");
    let port = support::free_port();
    let mut up = Some(start_up(&config, &data, port).await);

    let shots = if std::env::var_os("ORCHESTRATA_UPDATE_SCREENSHOTS").is_some() {
        root.join("docs/console")
    } else {
        let shots = dir.path().join("shots");
        std::fs::create_dir_all(&shots).expect("screenshot dir");
        shots
    };
    let mut driver = Command::new(node)
        .arg(scripts.join("e2e.mjs"))
        .current_dir(&scripts)
        .env("CONSOLE_URL", format!("http://127.0.0.1:{port}"))
        .env("CONSOLE_TOKEN", RW_TOKEN)
        .env("CONSOLE_RO_TOKEN", RO_TOKEN)
        .env("CONSOLE_AGENT_TOKEN", AGENT_TOKEN)
        .env("CONSOLE_SHOTS", &shots)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start node tests/console/e2e.mjs");
    let mut stdin = driver.stdin.take().expect("stdin");
    let mut lines = BufReader::new(driver.stdout.take().expect("stdout")).lines();
    let mut steps = Vec::new();
    let mut done = None;
    let run = async {
        while let Some(line) = lines.next_line().await.expect("read driver output") {
            println!("{line}");
            if line == "@@restart" {
                // Kill and restart the server under the open page; right after the
                // restart another client sends a packet the page must show exactly once.
                stop_up(up.take().expect("server running")).await;
                up = Some(start_up(&config, &data, port).await);
                let mut ws = rw_client(port).await;
                let sent = ws
                    .ok(
                        "cxp.send",
                        json!({"target": "U:Ox", "subject": "while_reconnecting",
                               "payload": {"n": 2}, "priority": 4}),
                    )
                    .await;
                let id = sent["message_id"].as_str().expect("message id").to_owned();
                stdin
                    .write_all(format!("{id}\n").as_bytes())
                    .await
                    .expect("answer the driver");
                stdin.flush().await.expect("flush");
            } else if let Some(step) = line.strip_prefix("@@step ") {
                steps.push(step.to_owned());
            } else if let Some(result) = line.strip_prefix("@@done ") {
                done = Some(result.to_owned());
            }
        }
        driver.wait().await.expect("driver exit")
    };
    let status = tokio::time::timeout(Duration::from_secs(300), run)
        .await
        .expect("the browser run finishes within 5 min");
    assert!(
        status.success(),
        "console e2e failed during step {:?} (steps done: {steps:?})",
        steps.last()
    );
    let done: serde_json::Value =
        serde_json::from_str(&done.expect("driver reported @@done")).expect("@@done JSON");

    // The server refuses control methods to a read_only token whatever the page shows.
    let mut ro = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    let auth = ro.auth(RO_TOKEN).await;
    assert_eq!(auth["scope"], "read_only", "{auth}");
    for method in ["workflow.cancel", "workflow.pause", "workflow.resume"] {
        let e = ro
            .err(method, json!({"workflow_id": done["workflow"].clone()}))
            .await;
        assert_eq!(e["code"], -32001, "{method}: {e}");
        assert_eq!(e["data"]["reason"], "insufficient_scope", "{method}: {e}");
    }
    for shot in [
        "signin",
        "traffic",
        "governance",
        "volks",
        "sessions",
        "history",
        "gateway",
        "resumed",
        "readonly",
        "gap",
    ] {
        let file = shots.join(format!("{shot}.png"));
        let len = std::fs::metadata(&file)
            .unwrap_or_else(|e| panic!("screenshot {}: {e}", file.display()))
            .len();
        assert!(len > 1000, "screenshot {} is empty", file.display());
    }
    stop_up(up.take().expect("server running")).await;
}
