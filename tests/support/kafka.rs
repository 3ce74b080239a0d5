//! Apache Kafka for the tests: one broker, or a three-node KRaft cluster, started by
//! `tests/kafka/kafka.sh` (the script `tests/run.sh` starts the suite's broker with) in
//! a temp dir of this test process, on free loopback ports; killed on drop.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex, Weak};

/// The command that assembles the broker's jars (named in failure messages).
const ASSEMBLE: &str = "tests/kafka/kafka.sh libs";

/// Apache Kafka nodes (combined broker + controller) this test process started.
pub struct Kafka {
    dir: tempfile::TempDir,
    nodes: usize,
    /// The bootstrap list, `127.0.0.1:PORT[,127.0.0.1:PORT...]`.
    pub address: String,
}

fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kafka/kafka.sh")
}

/// Runs `kafka.sh ARGS` (with a watchdog on this process), panicking with its output
/// and the assembling command when it fails.
fn run_script(args: &[&str]) -> String {
    let out = Command::new("bash")
        .arg(script())
        .args(args)
        .env("KAFKA_OWNER_PID", std::process::id().to_string())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {}: {e}", script().display()));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "`kafka.sh {}` failed: {stderr}\nApache Kafka needs Java 17+ and its jars: \
         assemble them with `{ASSEMBLE}` (Maven, from Maven Central), or run the suite with \
         tests/run.sh, which assembles and starts a broker.",
        args.join(" ")
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

impl Kafka {
    fn start(nodes: usize) -> Kafka {
        let dir = tempfile::Builder::new()
            .prefix("orchestrata-test-kafka")
            .tempdir()
            .expect("temp dir");
        let path = dir.path().to_str().expect("utf-8 temp dir").to_string();
        let address = run_script(&["start", &path, &nodes.to_string()]);
        assert!(!address.is_empty(), "kafka.sh printed no bootstrap list");
        Kafka {
            dir,
            nodes,
            address,
        }
    }

    /// How many nodes this broker or cluster has.
    pub fn nodes(&self) -> usize {
        self.nodes
    }

    /// The `host:port` of node `n` (1-based).
    pub fn node_address(&self, n: usize) -> String {
        let port = std::fs::read_to_string(self.dir.path().join(format!("node-{n}/port")))
            .unwrap_or_else(|e| panic!("node {n}'s port: {e}"));
        format!("127.0.0.1:{}", port.trim())
    }

    /// The JVM process id of node `n` (1-based), if it runs.
    pub fn node_pid(&self, n: usize) -> Option<i32> {
        std::fs::read_to_string(self.dir.path().join(format!("node-{n}/pid")))
            .ok()
            .and_then(|p| p.trim().parse().ok())
            .filter(|pid| super::process_alive(*pid))
    }

    /// The JVM process id of the (first) broker, for SIGSTOP / SIGCONT.
    pub fn pid(&self) -> i32 {
        self.node_pid(1).expect("the broker runs")
    }

    /// Freezes the broker's JVM (SIGSTOP): it holds its connections and answers nothing.
    pub fn freeze(&self) {
        super::signal(self.pid(), libc::SIGSTOP);
    }

    /// Resumes a frozen broker (SIGCONT).
    pub fn resume(&self) {
        super::signal(self.pid(), libc::SIGCONT);
    }

    /// SIGKILLs node `n` (a crash: no controlled shutdown).
    pub fn kill_node(&self, n: usize) {
        if let Some(pid) = self.node_pid(n) {
            super::signal(pid, libc::SIGKILL);
            while super::process_alive(pid) {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
        }
    }

    /// Starts node `n` again (after [`Kafka::kill_node`]) on its ports and data, and waits
    /// until it has started.
    pub fn start_node(&self, n: usize) {
        let path = self.dir.path().to_str().expect("utf-8 temp dir");
        run_script(&["start-node", path, &n.to_string()]);
    }

    /// What node `n` logged so far (for failure messages).
    pub fn log(&self, n: usize) -> String {
        std::fs::read_to_string(self.dir.path().join(format!("node-{n}/broker.log")))
            .unwrap_or_default()
    }
}

impl Drop for Kafka {
    fn drop(&mut self) {
        // The data is thrown away with the temp dir: no controlled shutdown needed.
        for n in 1..=self.nodes {
            if let Some(pid) = self.node_pid(n) {
                // SAFETY: kill(2) on a JVM this process started; no memory is touched.
                unsafe {
                    libc::kill(pid, libc::SIGCONT);
                    libc::kill(pid, libc::SIGKILL);
                }
            }
        }
    }
}

/// Starts a private Apache Kafka broker on free loopback ports and waits until it has
/// started. Use it for tests that freeze or otherwise disturb the broker.
pub fn spawn_private_kafka() -> Kafka {
    Kafka::start(1)
}

/// Starts a private three-node Apache Kafka cluster (KRaft, each node broker and
/// controller; internal topics with replication factor 3 and `min.insync.replicas` 2)
/// and waits until every node has started.
pub fn spawn_kafka_cluster() -> Kafka {
    Kafka::start(3)
}

/// A broker address, keeping alive the private broker behind it (if any).
pub struct Brokers {
    /// `host:port` to bootstrap from.
    pub address: String,
    _kafka: Option<Arc<Kafka>>,
}

/// Brokers for tests that only use Kafka: `ORCHESTRATA_TEST_KAFKA` (set by tests/run.sh),
/// else a private Apache Kafka shared by the tests of this binary that run at the same
/// time and killed when the last of them drops its [`Brokers`].
pub fn kafka_brokers() -> Brokers {
    if let Ok(address) = std::env::var("ORCHESTRATA_TEST_KAFKA") {
        return Brokers {
            address,
            _kafka: None,
        };
    }
    static SHARED: Mutex<Weak<Kafka>> = Mutex::new(Weak::new());
    let mut shared = SHARED.lock().unwrap_or_else(|p| p.into_inner());
    let kafka = shared.upgrade().unwrap_or_else(|| {
        let kafka = Arc::new(spawn_private_kafka());
        *shared = Arc::downgrade(&kafka);
        kafka
    });
    Brokers {
        address: kafka.address.clone(),
        _kafka: Some(kafka),
    }
}

/// Creates `topic` (one partition, replication 1) with the broker's defaults plus
/// `config`, as a foreign producer's operator would before writing to it. Real Kafka
/// auto-creates a topic a producer names with the broker's default retention, which
/// the log refuses to open (`LogError::DeletesHistory`).
pub async fn create_topic(brokers: &str, topic: &str, config: &[(&str, &str)]) {
    use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
    use rdkafka::client::DefaultClientContext;
    use rdkafka::config::ClientConfig;

    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()
        .expect("admin client");
    let mut new_topic = NewTopic::new(topic, 1, TopicReplication::Fixed(1));
    for (key, value) in config {
        new_topic = new_topic.set(key, value);
    }
    let options = AdminOptions::new().operation_timeout(Some(std::time::Duration::from_secs(30)));
    let created = admin
        .create_topics([&new_topic], &options)
        .await
        .expect("create topics");
    for result in created {
        result.expect("topic created");
    }
}
