//! Readers from other languages (ISSUE-17 item 5): after real traffic through a gateway
//! and kernel on the Kafka backend, Debian's `kcat` reads every topic, and Python's
//! `fastavro` decodes every event record with nothing but `schemas/avro/*.avsc`
//! (tests/python/decode_kcat.py). tests/run.sh installs kcat and fastavro and starts the
//! Apache Kafka broker (`ORCHESTRATA_TEST_KAFKA`).

mod support;

use std::process::{Command, Stdio};
use std::sync::Arc;

use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, backends::Views, Services};
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use orchestrata::log::{self, KafkaLog};
use orchestrata::projection::{Projections, RunnerConfig, ViewStore};
use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};
use support::ws::{self, Ws, ADMIN_TOKEN, TOKEN};

/// `kcat` output for `topic`, then decoded by the Python reader: one JSON value per
/// record; `None` when the topic does not exist (a stream this process never opened).
fn read_with_kcat(brokers: &str, topic: &str) -> Option<Vec<Value>> {
    let kcat = Command::new("kcat")
        .args([
            "-b",
            brokers,
            "-C",
            "-t",
            topic,
            "-p",
            "0",
            "-o",
            "beginning",
            "-e",
            "-q",
        ])
        .args(["-f", "%o %S %h\n%s"])
        .output()
        .unwrap_or_else(|e| {
            panic!("cannot run kcat ({e}); tests/run.sh installs it (apt-get install kcat)")
        });
    let errors = String::from_utf8_lossy(&kcat.stderr);
    if errors.contains("Unknown topic or partition") {
        return None;
    }
    assert!(kcat.status.success(), "kcat on {topic}: {errors}");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/python/decode_kcat.py");
    let mut python = Command::new(std::env::var("PYTHON").unwrap_or_else(|_| "python3".into()))
        .arg(script)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run python3 (tests/run.sh installs fastavro)");
    {
        use std::io::Write;
        let mut stdin = python.stdin.take().expect("stdin");
        stdin.write_all(&kcat.stdout).expect("feed python");
    }
    let out = python.wait_with_output().expect("python output");
    assert!(
        out.status.success(),
        "{topic}: a record fastavro cannot decode with schemas/avro: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("JSON line"))
            .collect(),
    )
}

// ISSUE-17: every record of every topic written by real traffic decodes in another
// language with the published schemas, the epoch marker at offset 0 included (a
// `kernel.events` / `epoch_marked` event naming its stream and epoch).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kcat_reads_every_topic_and_fastavro_decodes_every_event() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let log = log::open(&config).await.expect("open kafka log");
    let (kernel, _) = Kernel::start(
        log.clone(),
        KernelConfig::default(),
        Arc::new(TokioClock::new()),
    )
    .await
    .expect("kernel starts");
    let dir = tempfile::tempdir().expect("temp dir");
    let store = ViewStore::open(dir.path().join("views")).expect("view store");
    let projections = Projections::start(log.clone(), store, RunnerConfig::default())
        .await
        .expect("projections start");
    let services = Services::new(log.clone()).with_kernel(kernel, Views::of(&projections));
    let running = gateway::start(ws::test_config(), services)
        .await
        .expect("gateway starts");
    let url = format!("ws://{}/", running.local_addr());
    let mut admin = Ws::connect(&url).await;
    admin.auth(ADMIN_TOKEN).await;
    admin
        .ok(
            "volk.register",
            json!({"alias": "U:Kc", "capabilities": ["read"], "parent": "U:Ox"}),
        )
        .await;
    let mut rw = Ws::connect(&url).await;
    rw.auth(TOKEN).await;
    let sent = rw
        .ok(
            "cxp.send",
            json!({"from": "U:Cx", "target": "U:Ox", "subject": "read me from Python", "payload": {"k": [1, 2]}}),
        )
        .await;
    rw.ok(
        "session.open",
        json!({"session_id": "s-kcat", "portfolio": "p"}),
    )
    .await;
    log.flush().await.expect("flush");

    let kafka = KafkaLog::connect(&brokers.address, &config).expect("connect");
    let mut events = 0;
    for stream in Stream::ALL {
        let topic = kafka.topic(stream);
        let Some(records) = read_with_kcat(&brokers.address, &topic) else {
            // Only the commands stream (split deployments) is never opened here.
            assert_eq!(stream, Stream::Commands, "{topic} missing");
            continue;
        };
        for (i, r) in records.iter().enumerate() {
            assert_eq!(r["offset"], i, "{topic}: offsets from 0 without gaps: {r}");
            if i == 0 {
                assert_eq!(
                    r["schema"], "kernel.events.EpochMarked.avsc",
                    "{topic}: {r}"
                );
                assert_eq!(r["record"]["stream"], stream.as_str(), "{topic}: {r}");
                assert!(r["record"]["epoch"].is_string(), "{topic}: {r}");
            } else {
                assert!(r["schema"].is_string(), "{topic}: {r}");
                events += 1;
            }
        }
        if stream == Stream::CxpTraffic {
            let packet = records
                .iter()
                .find(|r| r["schema"] == "cxp.traffic.PacketSent.avsc")
                .unwrap_or_else(|| panic!("PacketSent in {records:?}"));
            let text = packet["record"].to_string();
            assert!(
                text.contains("read me from Python")
                    && text.contains(sent["message_id"].as_str().expect("id")),
                "{packet}"
            );
        }
    }
    assert!(events >= 5, "traffic reached several topics: {events}");
}

// ISSUE-17: a topic whose epoch marker was written before the marker became an event
// (the bare UUID text) still opens with that epoch, and its events read and append.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_topic_with_the_old_bare_uuid_marker_keeps_its_epoch() {
    let brokers = support::kafka_brokers();
    let mut config = LogConfig::kafka(brokers.address.clone());
    config.topic_prefix = support::unique_prefix();
    let topic = KafkaLog::connect(&brokers.address, &config)
        .expect("connect")
        .topic(Stream::KernelEvents);
    support::create_topic(&brokers.address, &topic, &[("retention.ms", "-1")]).await;
    let old_epoch = uuid::Uuid::new_v4().to_string();
    // The old layout, produced by a foreign producer: key and header name the marker,
    // the value is the epoch's text.
    let mut kcat = Command::new("kcat")
        .args(["-b", &brokers.address, "-P", "-t", &topic, "-p", "0"])
        .args(["-k", "orchestrata-epoch-marker"])
        .args(["-H", &format!("orchestrata-epoch-marker={old_epoch}")])
        .stdin(Stdio::piped())
        .spawn()
        .expect("run kcat");
    {
        use std::io::Write;
        let mut stdin = kcat.stdin.take().expect("stdin");
        stdin.write_all(old_epoch.as_bytes()).expect("write");
    }
    assert!(kcat.wait().expect("kcat").success());
    let log = log::open(&config).await.expect("open kafka log");
    assert_eq!(
        log.epoch(Stream::KernelEvents).await.expect("epoch"),
        old_epoch
    );
    let started = orchestrata_schemas::events::EventRecord::new(
        "kernel",
        "node-a",
        orchestrata_schemas::events::kernel::KernelStarted {
            node: "node-a".into(),
            version: "9".into(),
            backend: "kafka".into(),
        },
        chrono::Utc::now(),
    );
    assert_eq!(log.append(&started).await.expect("append"), 0);
    let read = log
        .read(Stream::KernelEvents, 0, None, 10)
        .await
        .expect("read");
    assert_eq!(read.len(), 1, "the marker is not an event of the stream");
}
