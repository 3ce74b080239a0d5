//! Neo4j for the knowledge-graph tests: a real Neo4j 5 community server with its Bolt
//! connector, started by `tests/neo4j/server.sh` (its jars come from Maven Central and
//! are cached outside the clone). `tests/run.sh` starts one for the suite and exports
//! `ORCHESTRATA_TEST_NEO4J` (and `ORCHESTRATA_TEST_NEO4J_PASSWORD`); a test that stops
//! or restarts Neo4j starts a private one ([`Neo4j::spawn`]).

use std::fs::File;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use orchestrata::projection::neo4j::Neo4jConfig;

/// The user the tests' Neo4j servers know.
pub const USER: &str = "neo4j";
/// The password of [`USER`] on a Neo4j these helpers start (tests/run.sh's as well).
pub const PASSWORD: &str = "orchestrata-test";

/// How long a start may take: the first one fetches the jars; a cold JVM on a busy
/// two-core machine needs tens of seconds.
const START_WITHIN: Duration = Duration::from_secs(300);

/// `tests/neo4j/server.sh` of this checkout.
pub fn server_script() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/neo4j/server.sh")
}

/// A Neo4j server this test process started on a free loopback port, its data in a
/// temp dir that outlives stops and restarts. Stopped (SIGTERM, then SIGKILL) on drop.
pub struct Neo4j {
    child: Option<Child>,
    home: tempfile::TempDir,
    port: u16,
    started: usize,
}

impl Neo4j {
    /// Starts a private Neo4j on a free port and waits until it serves Bolt.
    pub fn spawn() -> Neo4j {
        let mut db = Neo4j {
            child: None,
            home: tempfile::tempdir().expect("temp dir"),
            port: super::free_port(),
            started: 0,
        };
        db.start();
        db
    }

    /// `bolt://127.0.0.1:PORT`.
    pub fn uri(&self) -> String {
        format!("bolt://127.0.0.1:{}", self.port)
    }

    /// `gateway.neo4j` for this server.
    pub fn config(&self) -> Neo4jConfig {
        Neo4jConfig {
            uri: self.uri(),
            user: USER.into(),
            password: PASSWORD.into(),
        }
    }

    fn log_path(&self, run: usize) -> PathBuf {
        self.home.path().join(format!("server-{run}.log"))
    }

    /// What the server printed in its latest run (for failure messages).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.log_path(self.started)).unwrap_or_default()
    }

    /// Starts the server (again) on its data dir and port; returns once it printed
    /// `neo4j ready` (the password set, Bolt accepting queries).
    pub fn start(&mut self) {
        assert!(self.child.is_none(), "neo4j is already running");
        self.started += 1;
        let log = File::create(self.log_path(self.started)).expect("neo4j log file");
        let child = Command::new("bash")
            .arg(server_script())
            .arg("run")
            .arg(self.home.path().join("server"))
            .arg(self.port.to_string())
            .arg(PASSWORD)
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("log file"))
            .stderr(log)
            .spawn()
            .expect("start tests/neo4j/server.sh");
        self.child = Some(child);
        let deadline = Instant::now() + START_WITHIN;
        while !self.log().contains("neo4j ready") {
            let exited = self
                .child
                .as_mut()
                .and_then(|c| c.try_wait().ok().flatten());
            assert!(
                exited.is_none(),
                "neo4j exited ({exited:?}):\n{}",
                self.log()
            );
            assert!(
                Instant::now() < deadline,
                "neo4j did not start within {START_WITHIN:?}:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Stops the server cleanly (SIGTERM, as an operator would) and waits until it
    /// exited; nothing listens on its port afterwards.
    pub fn stop(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        // SAFETY: kill(2) on our own child's pid; server.sh execs java, so this is the JVM.
        unsafe {
            libc::kill(i32::try_from(child.id()).expect("pid fits"), libc::SIGTERM);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().ok().flatten().is_none() {
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server and starts it again on the same data dir and port.
    pub fn restart(&mut self) {
        self.stop();
        self.start();
    }
}

impl Drop for Neo4j {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A Neo4j to write to and query: the suite's (`ORCHESTRATA_TEST_NEO4J`), else a
/// private one shared by the tests of this binary that run at the same time. Tests
/// on it must only look at nodes they made (other tests write there too).
pub struct Shared {
    /// `gateway.neo4j` for it.
    pub config: Neo4jConfig,
    _private: Option<Arc<Neo4j>>,
}

/// The suite's Neo4j, or a private one (see [`Shared`]).
pub fn shared() -> Shared {
    if let Ok(uri) = std::env::var("ORCHESTRATA_TEST_NEO4J") {
        let password =
            std::env::var("ORCHESTRATA_TEST_NEO4J_PASSWORD").unwrap_or_else(|_| PASSWORD.into());
        return Shared {
            config: Neo4jConfig {
                uri,
                user: USER.into(),
                password,
            },
            _private: None,
        };
    }
    static SHARED: Mutex<Weak<Neo4j>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let db = shared.upgrade().unwrap_or_else(|| {
        let db = Arc::new(Neo4j::spawn());
        *shared = Arc::downgrade(&db);
        db
    });
    Shared {
        config: db.config(),
        _private: Some(db),
    }
}

/// What the official Python driver (PyPI `neo4j`) reads from the server of `config`:
/// `tests/neo4j/graph.py`'s JSON answer (nodes and relationships whose ids are given).
pub fn python_reads(config: &Neo4jConfig, ids: &[String]) -> serde_json::Value {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/neo4j/graph.py");
    let out = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .arg(script)
        .args([&config.uri, &config.user, &config.password])
        .args(ids)
        .output()
        .expect("run python3 tests/neo4j/graph.py");
    assert!(
        out.status.success(),
        "tests/neo4j/graph.py failed (is the python package `neo4j` installed? tests/run.sh \
         installs it): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("graph.py prints JSON")
}
