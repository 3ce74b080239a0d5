//! Agents (spec 005): spawn (without and with the constitution deciding it), escalation
//! resolution, delegation fan-out, and memory per agent. Real sled log and kernel for
//! spawn and fan-out; the resolution is the pure function the kernel's escalation path
//! runs. Thresholds beside the figures: docs/performance.md, "Spec requirements".
//!
//! `cargo bench --bench agents`. Memory per agent is measured with a counting global
//! allocator while folding 1,000 spawned juniors into an [`AgentTree`], and printed.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use criterion::{criterion_group, criterion_main, Criterion};
use orchestrata::agents::delegation::{fan_out, Synthesis};
use orchestrata::agents::drivers::api::ProviderConfig;
use orchestrata::agents::drivers::cli::{CliConfig, CliDriver};
use orchestrata::agents::drivers::quota::{CallOutcome, CallRecord, ProviderLedger};
use orchestrata::agents::providers::{self, KernelLedger};
use orchestrata::agents::synthesis::{synthesize, Scorer, Strategy};
use orchestrata::agents::{
    AgentMetrics, AgentTree, Agents, Driver, EscalationPaths, LifespanSpec, SpawnSpec, Task,
};
use orchestrata::config::LogConfig;
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::volk_lifecycle::{VolkRegistered, VolkSpawned};
use orchestrata_schemas::events::EventRecord;

struct Counting;

static ALLOCATED: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCATED.fetch_add(layout.size(), Ordering::Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        ALLOCATED.fetch_sub(layout.size(), Ordering::Relaxed);
        System.dealloc(ptr, layout)
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

fn alias(i: usize) -> String {
    let hi = (b'A' + (i / 26 % 26) as u8) as char;
    let lo = (b'a' + (i % 26) as u8) as char;
    format!("U:{hi}{lo}")
}

fn spawn_records(tree: &mut AgentTree, parent: &str, child: &str, i: usize) {
    let at = Utc::now();
    let reg = VolkRegistered {
        alias: child.into(),
        capabilities: vec!["generate_code".into()],
        parent: Some(parent.into()),
        protocols: vec!["cxp/1.0".into()],
        session_id: None,
        metadata: Json(serde_json::json!({
            "kind": "junior", "driver": "cli", "purpose": "write code", "task_id": format!("task-{i}"),
        })),
    };
    tree.apply(&EventRecord::new("kernel", child, reg, at));
    let sp = VolkSpawned {
        alias: child.into(),
        parent: parent.into(),
        driver: "cli".into(),
        purpose: "write code".into(),
        lifespan_ms: None,
    };
    tree.apply(&EventRecord::new("kernel", child, sp, at));
}

/// A chain U:Ra -> U:Rb -> ... of `depth` Volks plus a junior at the bottom.
fn deep_tree(depth: usize) -> (AgentTree, String) {
    let mut tree = AgentTree::new();
    let names: Vec<String> = (0..depth)
        .map(|i| format!("U:R{}", (b'a' + i as u8) as char))
        .collect();
    for (i, n) in names.iter().enumerate() {
        let reg = VolkRegistered {
            alias: n.clone(),
            capabilities: vec!["generate_code".into()],
            parent: (i > 0).then(|| names[i - 1].clone()),
            protocols: vec![],
            session_id: None,
            metadata: Json(serde_json::json!({})),
        };
        tree.apply(&EventRecord::new("kernel", n, reg, Utc::now()));
    }
    let leaf = "U:Jz".to_string();
    spawn_records(&mut tree, names.last().unwrap(), &leaf, 0);
    (tree, leaf)
}

// REQ-005-NFR2-001
fn memory_per_agent() {
    let mut tree = AgentTree::new();
    let before = ALLOCATED.load(Ordering::Relaxed);
    for i in 0..1000 {
        spawn_records(&mut tree, "U:Vz", &alias(i), i);
    }
    let after = ALLOCATED.load(Ordering::Relaxed);
    println!(
        "agents/memory_per_agent: {} bytes per junior in the tree (1000 juniors, {} live)",
        (after - before) / 1000,
        tree.live_count()
    );
}

/// Time spent in `iters` spawns of a junior under `U:Vz`, each terminated afterwards.
async fn spawn_and_terminate(agents: &Agents, iters: u64) -> Duration {
    let mut total = Duration::ZERO;
    for i in 0..iters {
        let spec = SpawnSpec {
            parent: "U:Vz".into(),
            driver: "cli".into(),
            purpose: "bench".into(),
            scope: vec![],
            lifespan: LifespanSpec::Task(format!("t{i}")),
            alias: None,
        };
        let t = Instant::now();
        let a = agents.spawn(spec).await.unwrap();
        total += t.elapsed();
        agents.terminate(&a, "bench").await.unwrap();
    }
    total
}

fn bench(c: &mut Criterion) {
    memory_per_agent();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let agents = rt.block_on(async {
        let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
            .await
            .unwrap();
        let (kernel, _) = Kernel::start(log, KernelConfig::default(), Arc::new(TokioClock::new()))
            .await
            .unwrap();
        Agents::new(
            kernel,
            EscalationPaths::default(),
            AgentMetrics::new().unwrap(),
        )
    });

    // The same coordination API on a kernel governed by the default policy: each spawn
    // is also decided by the constitution (and the decision recorded).
    let governed_dir = tempfile::tempdir().unwrap();
    let governed = rt.block_on(async {
        let log = orchestrata::log::open(&LogConfig::sled(governed_dir.path()))
            .await
            .unwrap();
        let governance = Governance::start(log.clone(), GovernanceConfig::default())
            .await
            .unwrap();
        let (kernel, _) = Kernel::start(log, KernelConfig::default(), Arc::new(TokioClock::new()))
            .await
            .unwrap();
        Agents::new(
            kernel.with_governance(governance),
            EscalationPaths::default(),
            AgentMetrics::new().unwrap(),
        )
    });

    let mut g = c.benchmark_group("agents");
    // REQ-005-FR1-001 REQ-005-AC1-001
    g.bench_function("spawn", |b| {
        b.iter_custom(|iters| rt.block_on(spawn_and_terminate(&agents, iters)))
    });
    // REQ-005-NFR3-001: what the constitution adds is this minus `spawn`.
    g.bench_function("spawn_governed", |b| {
        b.iter_custom(|iters| rt.block_on(spawn_and_terminate(&governed, iters)))
    });

    for depth in [3, 5] {
        let (tree, leaf) = deep_tree(depth);
        let paths = EscalationPaths::default();
        let prior: Vec<String> = Vec::new();
        // REQ-005-FR2-001 REQ-005-AC2-001
        g.bench_function(format!("escalation_resolution/depth{depth}"), |b| {
            b.iter(|| paths.resolve(&tree, &leaf, &prior).unwrap())
        });
    }

    // The quota fall-back decision an API junior makes before each call: ask the
    // kernel's fold of provider.events whether each provider, in order, is exhausted
    // (the first is, the second is not).
    let ledger = rt.block_on(async {
        let providers = [
            ProviderConfig::new("first", "http://127.0.0.1:9/v1", "m"),
            ProviderConfig::new("second", "http://127.0.0.1:9/v1", "m"),
        ];
        providers::register(agents.kernel(), "bench", &providers)
            .await
            .unwrap();
        let ledger = KernelLedger::new(agents.kernel().clone(), "U:Vz");
        ledger
            .record(CallRecord {
                provider: "first".into(),
                quota_tokens: None,
                request_id: "r-1".into(),
                model: "m".into(),
                latency_ms: 1,
                outcome: CallOutcome::Failed {
                    error: "insufficient_quota".into(),
                    retryable: false,
                    retry_after_ms: None,
                    quota_exhausted: true,
                },
            })
            .await
            .unwrap();
        ledger
    });
    g.bench_function("quota_fallback_decision", |b| {
        b.iter(|| {
            rt.block_on(async {
                let first = ledger.exhausted("first").await.unwrap();
                let second = ledger.exhausted("second").await.unwrap();
                assert!(first.is_some() && second.is_none());
            })
        })
    });

    // Synthesis (T18.5, NFR8): five answers scored by a real checker process each (a
    // shell script flagging TODO as an error), ranked, the best chosen.
    let checker = dir.path().join("checker.sh");
    std::fs::write(
        &checker,
        "#!/bin/sh\nif grep -q TODO \"$1\"; then echo '[{\"type\":\"lint\",\"rule\":\"todo\",\"line\":1,\"message\":\"TODO\",\"severity\":\"error\"}]'; else echo '[]'; fi\n",
    )
    .unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&checker, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let scorer = Scorer::new(
        vec![vec![checker.display().to_string()]],
        Duration::from_secs(10),
    );
    let outputs = [
        ("U:Aa", "TODO a"),
        ("U:Ab", "b"),
        ("U:Ac", "TODO c"),
        ("U:Ad", "d"),
        ("U:Ae", "e"),
    ];
    // REQ-005-NFR8-001
    g.bench_function("synthesis/score_and_choose_5_with_a_checker", |b| {
        b.iter(|| {
            rt.block_on(async {
                let scores = scorer.score_all(&outputs).await;
                let chosen = synthesize(Strategy::Best, &outputs, &scores);
                assert_eq!(chosen.chosen.as_deref(), Some("U:Ab"));
            })
        })
    });

    let script = dir.path().join("echo.sh");
    std::fs::write(&script, "#!/bin/sh\ncat\n").unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    g.sample_size(10);
    g.bench_function("delegation_fan_out/5_cli_juniors", |b| {
        b.iter_custom(|iters| {
            rt.block_on(async {
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let drivers: Vec<(String, Box<dyn Driver>)> = (0..5)
                        .map(|_| {
                            (
                                "cli".to_string(),
                                Box::new(CliDriver::new(CliConfig::new(&script)))
                                    as Box<dyn Driver>,
                            )
                        })
                        .collect();
                    let task = Task {
                        id: format!("fan{i}"),
                        prompt: "x".into(),
                        timeout: Duration::from_secs(10),
                    };
                    // No checkers: scoring is free, merge joins all five answers.
                    let merge = Synthesis {
                        strategy: Strategy::Merge,
                        ..Synthesis::default()
                    };
                    let t = Instant::now();
                    fan_out(&agents, "U:Vz", drivers, &task, &merge)
                        .await
                        .unwrap();
                    total += t.elapsed();
                }
                total
            })
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
