//! The compose topology without containers: one kernel, two gateways and one projector
//! as separate `orchestrata up --role ...` processes on loopback, sharing a real
//! Kafka-protocol broker (issue 9, split roles). Writes go through the gateways: each
//! appends a command to the `commands` stream and reads the kernel's answer back from
//! the log.

mod support;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::ws::Ws;

/// The operator's token (acts as U:GW only).
const OPERATOR_TOKEN: &str = "split-roles-operator-token";
/// A read_write principal `agents` acting as U:Ox and U:Vz.
const TOKEN: &str = "split-roles-test-token";
const START: Duration = Duration::from_secs(90);

/// One `orchestrata up --role R` process; its stdout lines arrive on `lines`, its log
/// (stderr) is kept in `log`. Killed on drop.
struct Role {
    child: Child,
    lines: Receiver<String>,
    log: Arc<Mutex<Vec<String>>>,
    name: String,
}

impl Role {
    fn spawn(role: &str, kafka: &str, prefix: &str, dir: &Path, listen: bool) -> Role {
        Self::spawn_with(role, kafka, prefix, dir, listen, &[])
    }

    /// [`Role::spawn`] with more environment (`ORCHESTRATA_*` settings).
    fn spawn_with(
        role: &str,
        kafka: &str,
        prefix: &str,
        dir: &Path,
        listen: bool,
        env: &[(&str, &str)],
    ) -> Role {
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
            .env("GATEWAY_TOKEN", OPERATOR_TOKEN)
            // The test speaks for roster Volks (U:Ox, U:Vz): a principal granted them.
            .env(
                "ORCHESTRATA_GATEWAY__TOKENS",
                format!(
                    "[{{token: {TOKEN}, scope: read_write, name: agents, acts_as: [U:Ox, U:Vz]}}]"
                ),
            )
            .envs(env.iter().copied())
            .current_dir(dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if listen {
            // Port 0: the role binds a free port itself and names it (see `port`), so no
            // other process can take it between choosing and binding.
            cmd.args(["--listen", "127.0.0.1:0"]);
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
        let stderr = child.stderr.take().expect("stderr");
        let log = Arc::new(Mutex::new(Vec::new()));
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                kept.lock().unwrap_or_else(|p| p.into_inner()).push(line);
            }
        });
        Role {
            child,
            lines,
            log,
            name: role.into(),
        }
    }

    /// The ERROR lines the process logged so far.
    fn errors(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .iter()
            .filter(|line| line.contains("\"level\":\"ERROR\"") || line.contains(" ERROR "))
            .cloned()
            .collect()
    }

    /// Asserts the process logged no ERROR line (normal operation).
    fn assert_no_errors(&self) {
        let errors = self.errors();
        assert!(
            errors.is_empty(),
            "{} logged {} ERROR lines, first: {:?}",
            self.name,
            errors.len(),
            errors.first()
        );
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

    /// Waits until the role says where its gateway listens; that port.
    fn port(&self) -> u16 {
        let line = self.wait_line("gateway listening on", START);
        line.split("ws://127.0.0.1:")
            .nth(1)
            .and_then(|rest| rest.split('/').next())
            .and_then(|port| port.parse().ok())
            .unwrap_or_else(|| panic!("{}: no port in {line:?}", self.name))
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

/// An authenticated client of the role listening on `port`. The role is a separate
/// debug-build process; with every role of a test starting at once on two cores its
/// first handshake has been seen to take over 10 s, so it gets the start-up bound.
async fn client(port: u16) -> Ws {
    let mut ws = Ws::connect_within(&format!("ws://127.0.0.1:{port}/"), START).await;
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

/// Sends a packet through the gateway on `port` (which appends a command to the
/// `commands` stream and waits for the kernel's answer from the log).
async fn send(port: u16, from: &str, target: &str, subject: &str) -> Value {
    let mut ws = client(port).await;
    let sent = ws
        .ok(
            "cxp.send",
            json!({"from": from, "target": target, "subject": subject, "payload": {"n": 1}}),
        )
        .await;
    ws.close().await;
    sent
}

/// `cxp.status` of `thread_id` as the gateway on `port` answers it.
async fn status(port: u16, thread_id: &str) -> Value {
    let mut ws = client(port).await;
    let s = ws.ok("cxp.status", json!({ "thread_id": thread_id })).await;
    ws.close().await;
    s
}

/// The packets of a `cxp.status` answer reduced to what every gateway must agree on.
fn packets(status: &Value) -> Vec<(Value, Value)> {
    status["packets"]
        .as_array()
        .map(|ps| {
            ps.iter()
                .map(|p| {
                    (
                        p["packet"]["message_id"].clone(),
                        p["delivery_status"].clone(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

// Issue 9: one kernel, two gateways, one projector against Kafka; a packet sent through
// one gateway (commands stream -> kernel -> answer read back) is seen live on the other,
// `cxp.status` answers the same on both, killing one gateway loses nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kernel_two_gateways_and_projector_share_one_kafka_log() {
    let brokers = support::spawn_private_kafka();
    let prefix = support::unique_prefix();
    let dirs: Vec<_> = (0..4)
        .map(|_| tempfile::tempdir().expect("tempdir"))
        .collect();
    let kernel = Role::spawn("kernel", &brokers.address, &prefix, dirs[0].path(), false);
    kernel.wait_line("executing commands from the `commands` stream", START);
    let mut gateway_a = Role::spawn("gateway", &brokers.address, &prefix, dirs[1].path(), true);
    let gateway_b = Role::spawn("gateway", &brokers.address, &prefix, dirs[2].path(), true);
    let (port_a, port_b) = (gateway_a.port(), gateway_b.port());
    let projector = Role::spawn(
        "projector",
        &brokers.address,
        &prefix,
        dirs[3].path(),
        false,
    );
    projector.wait_line("projector: folding views into", START);

    let mut watcher = client(port_b).await;
    watcher.ok("cxp.subscribe", json!({})).await;
    let first = send(port_a, "U:Ox", "U:Vz", "plan").await;
    assert_eq!(first["routed_via"], "U:PS", "{first}");
    let first_id: uuid::Uuid = serde_json::from_value(first["message_id"].clone()).expect("id");
    let thread = first["thread_id"].as_str().expect("thread id").to_owned();
    seen_live(&mut watcher, &first_id.to_string()).await;
    // Both gateways fold the same log: the status of the thread agrees.
    let (on_a, on_b) = (status(port_a, &thread).await, status(port_b, &thread).await);
    assert_eq!(packets(&on_a), packets(&on_b), "{on_a} / {on_b}");
    assert!(packets(&on_a).iter().any(|(id, _)| id == &json!(first_id)));

    let on_a = history(port_a).await;
    let on_b = history(port_b).await;
    same_history(&on_a, &on_b, &[first_id]);

    gateway_a.kill();
    let second = send(port_b, "U:Vz", "U:Ox", "report").await;
    let second_id: uuid::Uuid = serde_json::from_value(second["message_id"].clone()).expect("id");
    seen_live(&mut watcher, &second_id.to_string()).await;

    let gateway_c = Role::spawn("gateway", &brokers.address, &prefix, dirs[1].path(), true);
    let port_c = gateway_c.port();
    let on_b = history(port_b).await;
    let on_c = history(port_c).await;
    same_history(&on_b, &on_c, &[first_id, second_id]);
    // The restarted gateway rebuilt its views from the log and answers the same status.
    let (status_b, status_c) = (status(port_b, &thread).await, status(port_c, &thread).await);
    assert_eq!(
        packets(&status_b),
        packets(&status_c),
        "{status_b} / {status_c}"
    );
    // A command the kernel refuses comes back as the kernel's error, not a timeout.
    let mut ws = client(port_c).await;
    let refused = ws
        .err(
            "cxp.send",
            json!({"from": "U:Ox", "target": "U:Zz", "subject": "nobody", "payload": {}}),
        )
        .await;
    ws.close().await;
    assert_ne!(refused["code"], -32603, "{refused}");
    assert!(
        ["unknown_target_volk", "governance_denied"]
            .contains(&refused["data"]["reason"].as_str().unwrap_or_default()),
        "{refused}"
    );
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
    // ISSUE-15: no ERROR lines in normal operation (an end of partition is not an error).
    for role in [&kernel, &gateway_b, &gateway_c, &projector] {
        role.assert_no_errors();
    }
}

// ISSUE-15: `up --kafka` with every role in one process answers `cxp.send`, a subscriber
// on a second connection receives every packet, and the process logs no ERROR line in
// normal operation (PartitionEOF, an ordinary end of partition, is not an error); with 2
// decision bodies kept in memory, `governance.query` reads the others from the Kafka log
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn all_roles_on_kafka_answer_sends_and_log_no_errors() {
    let brokers = support::spawn_private_kafka();
    let prefix = support::unique_prefix();
    let dir = tempfile::tempdir().expect("tempdir");
    let hot = [("ORCHESTRATA_PROJECTIONS__HOT_ENTRIES", "2")];
    let all = Role::spawn_with("all", &brokers.address, &prefix, dir.path(), true, &hot);
    let port = all.port();
    let mut watcher = client(port).await;
    watcher.ok("cxp.subscribe", json!({})).await;
    let mut ws = client(port).await;
    let mut ids = Vec::new();
    for n in 0..30 {
        let sent = ws
            .ok(
                "cxp.send",
                json!({"from": "U:Ox", "target": "U:Vz", "subject": format!("n{n}"), "payload": {"n": n}}),
            )
            .await;
        ids.push(sent["message_id"].as_str().expect("message id").to_owned());
    }
    for id in &ids {
        seen_live(&mut watcher, id).await;
    }
    // Idle for a while: followers sit at the end of their partitions.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let ping = ws.ok("gateway.ping", json!({})).await;
    assert!(ping.is_object(), "{ping}");
    // The policy's decision of every send, its body read back from the log but for the
    // newest two (the commits of the idle seconds let the others go).
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    let (_, metrics) = support::ws::http_get(addr, "/metrics").await;
    let held = metrics
        .lines()
        .find_map(|l| l.strip_prefix("orchestrata_projection_decision_bodies_in_memory "))
        .and_then(|v| v.trim().parse::<u64>().ok());
    assert_eq!(held, Some(2), "{metrics}");
    let decisions = ws
        .ok(
            "governance.query",
            json!({"action": "cxp.send", "volk_id": "U:Ox", "limit": 100}),
        )
        .await;
    let decisions = decisions["decisions"]
        .as_array()
        .expect("decisions")
        .clone();
    assert_eq!(decisions.len(), ids.len(), "{decisions:?}");
    for d in &decisions {
        assert_eq!(
            (&d["resource"], &d["result"]),
            (&json!("U:Vz"), &json!("allow")),
            "{d}"
        );
        assert!(
            d["decision_id"].is_string() && d["prolog_query"].is_string(),
            "{d}"
        );
    }
    ws.close().await;
    drop(watcher);
    all.assert_no_errors();
}
