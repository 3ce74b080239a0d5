//! The harness of the `orchestrata mcp` tests: a gateway with kernel and views on
//! loopback, and the MCP server binary spawned with `GATEWAY_*` in its environment,
//! spoken to over its stdin / stdout.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::Arc;

use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, backends::Views, GatewayConfig, RunningGateway, Services};
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use orchestrata::projection::{Projections, RunnerConfig, ViewStore};
use serde_json::{json, Value};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use crate::support::ws::{self, WAIT};

/// A gateway with kernel and projections over one sled log.
pub struct Stack {
    /// The gateway.
    pub running: RunningGateway,
    /// The kernel behind it.
    pub kernel: Kernel,
    _projections: Projections,
    /// Log, views and ledger live here.
    pub dir: tempfile::TempDir,
}

impl Stack {
    pub async fn start() -> Stack {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = orchestrata::log::open(&LogConfig::sled(dir.path().join("log")))
            .await
            .expect("open sled log");
        let (kernel, _) = Kernel::start(
            log.clone(),
            KernelConfig::default(),
            Arc::new(TokioClock::new()),
        )
        .await
        .expect("kernel starts");
        let store = ViewStore::open(dir.path().join("views")).expect("view store");
        let projections = Projections::start(log.clone(), store, RunnerConfig::default())
            .await
            .expect("projections start");
        let services = Services::new(log).with_kernel(kernel.clone(), Views::of(&projections));
        let running = gateway::start(ws::test_config(), services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            kernel,
            _projections: projections,
            dir,
        }
    }

    pub fn port(&self) -> u16 {
        self.running.local_addr().port()
    }

    pub fn ledger(&self) -> PathBuf {
        self.dir.path().join("mcp").join("ledger.jsonl")
    }

    pub async fn inbox_len(&self, alias: &str) -> usize {
        self.kernel
            .inbox(alias, 100)
            .await
            .expect("inbox")
            .packets
            .len()
    }
}

/// A spawned `orchestrata mcp` speaking MCP on its stdin / stdout.
pub struct Mcp {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
    next_id: u64,
}

/// The `orchestrata mcp` command against `127.0.0.1:port`, with `token` as
/// `GATEWAY_TOKEN` (unset when `None`) and its ledger at `ledger`.
pub fn mcp_command(port: u16, token: Option<&str>, ledger: &Path) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
    cmd.arg("mcp")
        .env("GATEWAY_HOST", "127.0.0.1")
        .env("GATEWAY_PORT", port.to_string())
        .env("ORCHESTRATA_MCP_LEDGER", ledger)
        .env("RUST_LOG", "warn")
        .env_remove("GATEWAY_TOKEN")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(token) = token {
        cmd.env("GATEWAY_TOKEN", token);
    }
    cmd
}

impl Mcp {
    pub fn spawn(port: u16, token: &str, ledger: &Path) -> Mcp {
        // stderr goes where the test's goes: shown when a test fails, never a full pipe.
        let mut child = mcp_command(port, Some(token), ledger)
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn orchestrata mcp");
        let stdin = child.stdin.take().expect("stdin");
        let stdout = BufReader::new(child.stdout.take().expect("stdout")).lines();
        Mcp {
            child,
            stdin,
            stdout,
            next_id: 1,
        }
    }

    /// Spawns and completes the MCP handshake.
    pub async fn ready(port: u16, token: &str, ledger: &Path) -> Mcp {
        let mut mcp = Mcp::spawn(port, token, ledger);
        let init = mcp
            .request(
                "initialize",
                json!({"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "mcp-tests", "version": "1"}}),
            )
            .await;
        assert!(init.get("result").is_some(), "{init}");
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        mcp
    }

    pub async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    pub async fn send_line(&mut self, line: &str) {
        self.stdin
            .write_all(format!("{line}\n").as_bytes())
            .await
            .expect("write to mcp stdin");
        self.stdin.flush().await.expect("flush mcp stdin");
    }

    /// The next line on stdout, as JSON.
    pub async fn next(&mut self) -> Value {
        let line = tokio::time::timeout(WAIT, self.stdout.next_line())
            .await
            .expect("an MCP line in time")
            .expect("read mcp stdout")
            .expect("mcp stdout open");
        serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line}"))
    }

    /// Sends a request; returns its whole response.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await;
        let response = self.next().await;
        assert_eq!(response["id"], id, "responses in order here: {response}");
        response
    }

    /// `tools/call`; returns the `result` (a CallToolResult).
    pub async fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let r = self
            .request("tools/call", json!({"name": tool, "arguments": arguments}))
            .await;
        assert!(r.get("error").is_none(), "tools/call {tool} failed: {r}");
        r["result"].clone()
    }

    /// The JSON in the text content of a successful call.
    pub async fn ok(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments).await;
        assert_eq!(result["isError"], false, "{tool}: {result}");
        text_json(&result)
    }

    /// The JSON in the text content of a call answered with `isError: true`.
    pub async fn err(&mut self, tool: &str, arguments: Value) -> Value {
        let result = self.call(tool, arguments).await;
        assert_eq!(result["isError"], true, "{tool} should fail: {result}");
        text_json(&result)
    }

    /// Issues an approval for `tool` with `arguments`; returns the token.
    pub async fn approve(&mut self, tool: &str, arguments: Value) -> String {
        let r = self
            .ok("approve", json!({"tool": tool, "arguments": arguments}))
            .await;
        assert_eq!(r["tool"], tool);
        assert_eq!(r["expires_in_seconds"], 300);
        assert_eq!(r["single_use"], true);
        r["approval_token"].as_str().expect("token").to_owned()
    }

    /// Closes stdin and waits for a clean exit.
    pub async fn finish(mut self) {
        drop(self.stdin);
        let status = tokio::time::timeout(WAIT, self.child.wait())
            .await
            .expect("exit in time")
            .expect("wait");
        assert!(status.success(), "mcp exited with {status}");
    }
}

/// The JSON inside the text content of a `CallToolResult`.
pub fn text_json(result: &Value) -> Value {
    assert_eq!(result["content"][0]["type"], "text", "{result}");
    let text = result["content"][0]["text"].as_str().expect("text content");
    serde_json::from_str(text).unwrap_or_else(|e| panic!("text is not JSON ({e}): {text}"))
}

/// Every row of the ledger file, parsed.
pub fn ledger_rows(path: &Path) -> Vec<Value> {
    std::fs::read_to_string(path)
        .expect("ledger file")
        .lines()
        .map(|l| serde_json::from_str(l).expect("ledger row is JSON"))
        .collect()
}

/// The ledger row numbered `n`.
pub fn row(rows: &[Value], n: &Value) -> Value {
    rows.iter()
        .find(|r| &r["row"] == n)
        .unwrap_or_else(|| panic!("no ledger row {n}"))
        .clone()
}

/// `cxp.send` arguments to `U:Ox` with `subject`, sent as the operator token's own
/// Volk (`U:GW`: no `from`).
pub fn send_args(subject: &str) -> Value {
    json!({"target": "U:Ox", "subject": subject, "payload": {"feature": "login"}})
}

/// `args` plus `approval_token`.
pub fn with_token(mut args: Value, token: &str) -> Value {
    args["approval_token"] = json!(token);
    args
}

/// Runs `orchestrata mcp` to its exit; returns (success, stderr).
pub async fn exit_of(mut cmd: Command) -> (bool, String) {
    let mut child = cmd.spawn().expect("spawn orchestrata mcp");
    let mut stderr = String::new();
    let mut pipe = child.stderr.take().expect("stderr");
    let status = tokio::time::timeout(WAIT, async {
        pipe.read_to_string(&mut stderr).await.expect("read stderr");
        child.wait().await.expect("wait")
    })
    .await
    .expect("exit in time");
    (status.success(), stderr)
}

/// Gateway settings of the test gateways, listening on `port`.
pub fn config_on(port: u16) -> GatewayConfig {
    let mut c = ws::test_config();
    c.listen = format!("127.0.0.1:{port}").parse().expect("address");
    c
}
