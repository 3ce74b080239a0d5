//! Event log benchmarks: sled append (256 concurrent appenders under each fsync policy,
//! fsync per sequential append, one batch of 1000), sled replay (decoded, and raw bytes
//! only), append-to-tail latency, and appends / replay against a private Apache Kafka
//! broker (tests/kafka/kafka.sh).
//!
//! Run: `cargo bench --bench log`.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use futures::StreamExt;
use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::log::{self, EventLog, TypedLog};
use orchestrata_schemas::events::kernel::KernelStarted;
use orchestrata_schemas::events::{EventRecord, Stream};

fn record(n: u64) -> EventRecord {
    EventRecord::new(
        "bench",
        format!("node-{}", n % 64),
        KernelStarted {
            node: format!("node-{n}"),
            version: "0.1.0".into(),
            backend: "sled".into(),
        },
        chrono::Utc::now(),
    )
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

async fn open_sled(dir: &std::path::Path, fsync: FsyncPolicy) -> Arc<dyn EventLog> {
    let mut config = LogConfig::sled(dir);
    config.fsync = fsync;
    log::open(&config).await.expect("open sled")
}

/// `writers` tasks each append `per_writer` events one at a time.
async fn concurrent_appends(log: &Arc<dyn EventLog>, writers: u64, per_writer: u64) {
    let mut tasks = Vec::new();
    for w in 0..writers {
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                log.append(&record(w * per_writer + i))
                    .await
                    .expect("append");
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
}

/// A pair like a governed command's: a `kernel.events` record and a `cxp.traffic` one.
fn pair(n: u64) -> [EventRecord; 2] {
    let partner = EventRecord::new(
        "bench",
        format!("thread-{n}"),
        orchestrata_schemas::events::cxp_traffic::ThreadArchived {
            thread_id: format!("thread-{n}"),
            archived_by: "bench".into(),
            reason: None,
        },
        chrono::Utc::now(),
    );
    [record(n), partner]
}

/// `writers` tasks each write `per_writer` pairs: across two streams as one unit
/// (`atomic`), or stream by stream (two appends, what a log without atomic
/// multi-stream writes does).
async fn concurrent_pairs(log: &Arc<dyn EventLog>, writers: u64, per_writer: u64, atomic: bool) {
    let mut tasks = Vec::new();
    for w in 0..writers {
        let log = log.clone();
        tasks.push(tokio::spawn(async move {
            for i in 0..per_writer {
                let [a, b] = pair(w * per_writer + i);
                if atomic {
                    log.append_streams(&[a, b]).await.expect("append pair");
                } else {
                    log.append(&a).await.expect("append");
                    log.append(&b).await.expect("append");
                }
            }
        }));
    }
    for t in tasks {
        t.await.expect("writer");
    }
}

/// Pairs across two streams, 256 writers, fsync on every group: one transaction across
/// both trees versus two single-stream appends.
fn sled_pairs(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("log/sled");
    group.sample_size(10);
    let (writers, per) = (256u64, 20u64);
    for (name, atomic) in [
        ("pairs_across_streams_one_transaction_256_writers", true),
        ("pairs_across_streams_two_appends_256_writers", false),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = rt.block_on(open_sled(dir.path(), FsyncPolicy::EveryAppend));
        group.throughput(Throughput::Elements(writers * per));
        group.bench_function(name, |b| {
            b.iter(|| rt.block_on(concurrent_pairs(&log, writers, per, atomic)))
        });
    }
    group.finish();
}

fn sled_appends(c: &mut Criterion) {
    let rt = runtime();
    let mut group = c.benchmark_group("log/sled");
    group.sample_size(10);
    let (writers, per) = (256u64, 40u64);
    // One database per policy, so each benchmark measures its own durability.
    for (name, fsync) in [
        ("append_group_commit_256_writers", FsyncPolicy::EveryAppend),
        ("append_256_writers_every_n_1000", FsyncPolicy::EveryN(1000)),
        ("append_256_writers_every_ms_5", FsyncPolicy::EveryMs(5)),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = rt.block_on(open_sled(dir.path(), fsync));
        group.throughput(Throughput::Elements(writers * per));
        group.bench_function(name, |b| {
            b.iter(|| rt.block_on(concurrent_appends(&log, writers, per)))
        });
        if fsync == FsyncPolicy::EveryAppend {
            group.throughput(Throughput::Elements(100));
            group.bench_function("append_fsync_each_sequential", |b| {
                b.iter(|| rt.block_on(concurrent_appends(&log, 1, 100)))
            });
            group.throughput(Throughput::Elements(1000));
            group.bench_function("append_batch_1000_fsync_each", |b| {
                b.iter_batched(
                    || (0..1000).map(record).collect::<Vec<_>>(),
                    |batch| rt.block_on(log.append_batch(&batch)).expect("batch"),
                    BatchSize::SmallInput,
                )
            });
        }
    }
    group.finish();
}

fn sled_replay(c: &mut Criterion) {
    let rt = runtime();
    let dir = tempfile::tempdir().expect("temp dir");
    let mut config = LogConfig::sled(dir.path());
    config.fsync = FsyncPolicy::EveryMs(50);
    let raw = rt.block_on(log::open_raw(&config)).expect("open sled");
    let log: Arc<dyn EventLog> = Arc::new(TypedLog::new(raw.clone()));
    let n = 100_000u64;
    rt.block_on(async {
        let batch: Vec<EventRecord> = (0..1000).map(record).collect();
        for _ in 0..n / 1000 {
            log.append_batch(&batch).await.expect("batch");
        }
        log.flush().await.expect("flush");
    });
    let mut group = c.benchmark_group("log/sled");
    group.sample_size(10);
    group.throughput(Throughput::Elements(n));
    group.bench_function("replay_decoded_100k", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut from = 0;
                let mut total = 0;
                loop {
                    let page = log
                        .read(Stream::KernelEvents, from, None, 10_000)
                        .await
                        .expect("read");
                    let Some(last) = page.last() else { break };
                    from = last.sequence + 1;
                    total += page.len();
                }
                assert_eq!(total as u64, n);
            })
        })
    });
    // The same scan without decoding: what sled iteration and copies cost on their own.
    group.bench_function("replay_raw_100k", |b| {
        b.iter(|| {
            rt.block_on(async {
                let mut from = 0;
                let mut total = 0;
                loop {
                    let page = raw
                        .read_raw(Stream::KernelEvents, from, None, 10_000)
                        .await
                        .expect("read");
                    let Some(last) = page.last() else { break };
                    from = last.sequence + 1;
                    total += page.len();
                }
                assert_eq!(total as u64, n);
            })
        })
    });
    group.finish();
}

fn sled_tail(c: &mut Criterion) {
    let rt = runtime();
    for (name, fsync) in [
        ("sled/append_to_tail_every_ms_5", FsyncPolicy::EveryMs(5)),
        ("sled/append_to_tail_fsync_each", FsyncPolicy::EveryAppend),
    ] {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = rt.block_on(open_sled(dir.path(), fsync));
        tail_latency_kernel(c, name, log, &rt);
    }
}

/// Time from `append` returning to the tail delivering that event, per event; prints p50/p99.
fn tail_latency_kernel(
    c: &mut Criterion,
    name: &str,
    log: Arc<dyn EventLog>,
    rt: &tokio::runtime::Runtime,
) {
    let mut group = c.benchmark_group("log");
    group.sample_size(20);
    let stream = Stream::KernelEvents;
    let start = rt.block_on(async { log.bounds(stream).await.expect("bounds").next() });
    let mut tail = rt.block_on(log.tail(stream, start)).expect("tail");
    let mut latencies = Vec::new();
    group.bench_function(name, |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let r = record(i);
                    let t0 = Instant::now();
                    let seq = log.append(&r).await.expect("append");
                    let got = tail.next().await.expect("tail open").expect("tail item");
                    assert_eq!(got.sequence, seq);
                    let d = t0.elapsed();
                    latencies.push(d);
                    total += d;
                }
                total
            })
        })
    });
    group.finish();
    latencies.sort();
    if !latencies.is_empty() {
        let p = |q: f64| latencies[((latencies.len() as f64 - 1.0) * q) as usize];
        println!(
            "{name}: append->tail p50 {:?} p99 {:?} ({} samples)",
            p(0.5),
            p(0.99),
            latencies.len()
        );
    }
}

/// A private Apache Kafka broker started by tests/kafka/kafka.sh in a temp dir: its
/// bootstrap address; stopped on drop.
struct Kafka(tempfile::TempDir, String);

impl Drop for Kafka {
    fn drop(&mut self) {
        let _ = Command::new("bash")
            .arg(kafka_sh())
            .arg("stop")
            .arg(self.0.path())
            .status();
    }
}

fn kafka_sh() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/kafka/kafka.sh")
}

fn spawn_kafka() -> Kafka {
    let dir = tempfile::tempdir().expect("temp dir");
    let out = Command::new("bash")
        .arg(kafka_sh())
        .arg("start")
        .arg(dir.path())
        .env("KAFKA_OWNER_PID", std::process::id().to_string())
        .output()
        .expect("run tests/kafka/kafka.sh");
    assert!(
        out.status.success(),
        "Apache Kafka did not start (assemble it with `tests/kafka/kafka.sh libs`): {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let address = String::from_utf8_lossy(&out.stdout).trim().to_string();
    Kafka(dir, address)
}

fn kafka(c: &mut Criterion) {
    let rt = runtime();
    let kafka = spawn_kafka();
    let mut config = LogConfig::kafka(kafka.1.clone());
    config.topic_prefix = format!("bench-{}", uuid::Uuid::new_v4().simple());
    let log = rt.block_on(log::open(&config)).expect("open kafka");
    let mut group = c.benchmark_group("log/kafka");
    group.sample_size(10);
    let (writers, per) = (64u64, 20u64);
    group.throughput(Throughput::Elements(writers * per));
    group.bench_function("append_64_writers", |b| {
        b.iter(|| rt.block_on(concurrent_appends(&log, writers, per)))
    });
    group.throughput(Throughput::Elements(1000));
    group.bench_function("append_batch_1000", |b| {
        b.iter_batched(
            || (0..1000).map(record).collect::<Vec<_>>(),
            |batch| rt.block_on(log.append_batch(&batch)).expect("batch"),
            BatchSize::SmallInput,
        )
    });
    let n = rt
        .block_on(log.bounds(Stream::KernelEvents))
        .expect("bounds")
        .count();
    group.throughput(Throughput::Elements(n.min(20_000)));
    group.bench_function("replay_decoded_20k", |b| {
        b.iter(|| {
            rt.block_on(log.read(Stream::KernelEvents, 0, Some(19_999), 20_000))
                .expect("read")
        })
    });
    group.finish();
    tail_latency_kernel(c, "kafka/append_to_tail", log, &rt);
}

criterion_group!(
    benches,
    sled_appends,
    sled_pairs,
    sled_replay,
    sled_tail,
    kafka
);
criterion_main!(benches);
