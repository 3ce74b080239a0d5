//! The compose topology without containers: one kernel, two gateways and one projector
//! as separate `orchestrata up --role ...` processes on loopback, sharing a real
//! Kafka-protocol broker (issue 9, split roles). Redis is not used by any role yet, so
//! this test does not start one.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

use chrono::Utc;
use orchestrata::config::LogConfig;
use orchestrata::kernel::cmd;
use orchestrata::log::{self, EventLog};
use orchestrata_schemas::events::{Command as KernelCommand, EventRecord};
use serde_json::{json, Value};
use support::ws::Ws;

const TOKEN: &str = "split-roles-test-token";
const START: Duration = Duration::from_secs(90);

/// One `orchestrata up --role R` process; its stdout lines arrive on `lines`. Killed on drop.
struct Role {
    child: Child,
    lines: Receiver<String>,
    name: String,
}

impl Role {
    fn spawn(role: &str, kafka: &str, prefix: &str, dir: &Path, listen: Option<u16>) -> Role {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
        for (k, _) in std::env::vars() {
            if k.starts_with("ORCHESTRATA_") {
                cmd.env_remove(k);
            }
        }
        cmd.args(["up", "--role", role, "--kafka", kafka])
            .env("ORCHESTRATA_LOG__TOPIC_PREFIX", prefix)
            .env(
                "ORCHESTRATA_PROJECTIONS__VIEWS_DIR",
                dir.join("views").display().to_string(),
            )
            .env("GATEWAY_TOKEN", TOKEN)
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(port) = listen {
            cmd.args(["--listen", &format!("127.0.0.1:{port}")]);
        }
        let mut child = cmd.spawn().expect("start orchestrata up");
        let stdout = child.stdout.take().expect("stdout");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Role {
            child,
            lines,
            name: role.into(),
        }
    }

    /// The first line containing `needle`, within `within`.
    fn wait_line(&self, needle: &str, within: Duration) -> String {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) if line.contains(needle) => return line,
                Ok(_) => {}
                Err(e) => panic!("{}: no line with `{needle}` ({e})", self.name),
            }
        }
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        self.kill();
    }
}

async fn client(port: u16) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(TOKEN).await;
    ws
}

/// Waits for a notification mentioning `needle`.
async fn seen_live(ws: &mut Ws, needle: &str) -> Value {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        assert!(Instant::now() < deadline, "`{needle}` not seen live");
        let n = ws.notification().await;
        if n.to_string().contains(needle) {
            return n;
        }
    }
}

/// The cxp.traffic history one gateway serves.
async fn history(port: u16) -> Vec<Value> {
    let mut ws = client(port).await;
    let r = ws
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "sequence_from": 0}),
        )
        .await;
    ws.close().await;
    r["events"]
        .as_array()
        .cloned()
        .expect("replay answers events")
}

/// Both histories agree on every event both hold (the Postman may append between the
/// two reads) and both hold `ids`.
fn same_history(a: &[Value], b: &[Value], ids: &[uuid::Uuid]) {
    let n = a.len().min(b.len());
    assert_eq!(a[..n], b[..n], "the gateways disagree on the history");
    for history in [a, b] {
        let text = serde_json::to_string(history).expect("json");
        for id in ids {
            assert!(text.contains(&id.to_string()), "{id} missing: {text}");
        }
    }
}

/// Appends `command` to the `commands` stream, as a gateway does for a write.
async fn submit(log: &std::sync::Arc<dyn EventLog>, command: &KernelCommand) {
    let record = EventRecord::new(
        "gateway",
        command.id.to_string(),
        command.clone(),
        Utc::now(),
    )
    .caused_by(command.id);
    log.append(&record).await.expect("append command");
}

// Issue 9: one kernel, two gateways, one projector against Kafka; a packet is seen live
// on the other gateway, both gateways answer the same history, killing one loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_two_gateways_and_projector_share_one_kafka_log() {
    let brokers = support::kafka_brokers();
    let prefix = support::unique_prefix();
    let dirs: Vec<_> = (0..4)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let kernel = Role::spawn("kernel", &brokers.address, &prefix, dirs[0].path(), None);
    kernel.wait_line("executing commands from the `commands` stream", START);
    let (port_a, port_b) = (support::free_port(), support::free_port());
    let mut gateway_a = Role::spawn(
        "gateway",
        &brokers.address,
        &prefix,
        dirs[1].path(),
        Some(port_a),
    );
    let gateway_b = Role::spawn(
        "gateway",
        &brokers.address,
        &prefix,
        dirs[2].path(),
        Some(port_b),
    );
    gateway_a.wait_line("gateway listening on", START);
    gateway_b.wait_line("gateway listening on", START);
    let projector = Role::spawn("projector", &brokers.address, &prefix, dirs[3].path(), None);
    projector.wait_line("projector: folding views into", START);

    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = prefix.clone();
    let log = log::open(&config).await.expect("connect kafka");

    let mut watcher = client(port_b).await;
    watcher.ok("cxp.subscribe", json!({})).await;
    let first = cmd::packet("U:Ox", "U:Vz", "plan", json!({"step": 1}));
    submit(&log, &cmd::send("gateway", first.clone())).await;
    seen_live(&mut watcher, &first.message_id.to_string()).await;

    let on_a = history(port_a).await;
    let on_b = history(port_b).await;
    same_history(&on_a, &on_b, &[first.message_id]);

    gateway_a.kill();
    let second = cmd::packet("U:Vz", "U:Ox", "report", json!({"step": 2}));
    submit(&log, &cmd::send("gateway", second.clone())).await;
    seen_live(&mut watcher, &second.message_id.to_string()).await;

    let port_c = support::free_port();
    let gateway_c = Role::spawn(
        "gateway",
        &brokers.address,
        &prefix,
        dirs[1].path(),
        Some(port_c),
    );
    gateway_c.wait_line("gateway listening on", START);
    let on_b = history(port_b).await;
    let on_c = history(port_c).await;
    same_history(&on_b, &on_c, &[first.message_id, second.message_id]);
    let last = on_c
        .last()
        .and_then(|e| e["sequence"].as_u64())
        .expect("last event carries its sequence");
    // The projector folded everything the gateways serve.
    let deadline = Instant::now() + START;
    loop {
        let line = projector.wait_line("projector: cxp.traffic #", START);
        let folded: u64 = line
            .rsplit('#')
            .next()
            .and_then(|n| n.trim().parse().ok())
            .expect("progress line ends with a sequence");
        if folded >= last {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "projector stuck at #{folded} < #{last}"
        );
    }
    drop(watcher);
}
