//! Commands per second through the kernel on the embedded sled log, end to end:
//! validate, fold, Avro-encode, group append with fsync on every append (the default
//! durability), answer. Target: >= 20,000 sends/s with callers pipelining commands.

use std::sync::Arc;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use futures::future::join_all;
use orchestrata::config::LogConfig;
use orchestrata::kernel::{cmd, Kernel, KernelConfig, TokioClock};
use orchestrata::log;

const PIPELINE: usize = 1000;

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let (kernel, thread) = rt.block_on(async {
        let log = log::open(&LogConfig::sled(dir.path())).await.expect("sled");
        let config = KernelConfig {
            inbox_capacity: usize::MAX,
            ..KernelConfig::default()
        };
        let (kernel, _) = Kernel::start(log, config, Arc::new(TokioClock::new()))
            .await
            .expect("kernel");
        let first = cmd::packet("U:Ox", "U:Vz", "bench", serde_json::json!({}));
        kernel
            .execute(cmd::send("U:Ox", first.clone()))
            .await
            .expect("first");
        let thread = kernel
            .packet(first.message_id)
            .await
            .expect("known")
            .thread_id()
            .to_owned();
        (kernel, thread)
    });
    let recipients = ["U:Vz", "U:Qa", "U:Ar", "U:Ux", "U:PM", "U:Cx"];
    let make = |i: usize| {
        let mut p = cmd::packet(
            "U:Ox",
            recipients[i % recipients.len()],
            "Generate UserService Implementation",
            serde_json::json!({"task": "generate_code", "spec": "UserService with CRUD", "i": i}),
        );
        p.thread_id = thread.clone();
        p.priority = (i % 11) as i32;
        cmd::send("U:Ox", p)
    };

    let mut group = c.benchmark_group("kernel");
    group.measurement_time(Duration::from_secs(8));
    group.sample_size(20);
    group.throughput(Throughput::Elements(PIPELINE as u64));
    group.bench_function("send_pipelined_1000", |b| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let commands: Vec<_> = (0..PIPELINE).map(make).collect();
                let start = Instant::now();
                let outs = rt.block_on(join_all(commands.into_iter().map(|c| kernel.execute(c))));
                total += start.elapsed();
                assert!(outs.iter().all(|o| o.is_ok()));
            }
            total
        })
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("send_one_at_a_time", |b| {
        b.iter_custom(|iters| {
            let start = Instant::now();
            rt.block_on(async {
                for i in 0..iters {
                    kernel.execute(make(i as usize)).await.expect("sent");
                }
            });
            start.elapsed()
        })
    });
    group.finish();
    rt.block_on(kernel.stop());
}

criterion_group!(benches, bench);
criterion_main!(benches);
