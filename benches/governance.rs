//! Governance benchmarks: an uncached decision (the Prolog machine alone, and through
//! the engine thread), a cached decision, recorded decisions per second on a sled log,
//! and `audit verify` of 100,000 recorded decisions.
//!
//! Run: `cargo bench --bench governance`. Before the criterion groups it prints p50 and
//! p99 of 5,000 uncached and cached decisions (criterion reports means and medians).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::governance::audit::{self, AuditLog, RecordedDecision};
use orchestrata::governance::{
    Evaluator, Governance, GovernanceConfig, Policy, RecordedQuery, Request,
    DEFAULT_INFERENCE_LIMIT,
};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::EventRecord;

fn uncached() -> Request {
    // cxp.send is not cacheable (it reads traffic facts): every call runs the policy,
    // down the whole allow path (identity, budget count, hierarchy, ownership).
    Request::volk("U:Ox", "cxp.send", "U:Ar").with("session", "s1")
}

fn cached() -> Request {
    Request::client("operator", "gateway.execute", "cxp.send")
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    if samples.is_empty() {
        return (Duration::ZERO, Duration::ZERO);
    }
    samples.sort();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (at(0.50), at(0.99))
}

fn start(rt: &tokio::runtime::Runtime, dir: &std::path::Path) -> Governance {
    rt.block_on(async {
        let mut config = LogConfig::sled(dir);
        config.fsync = FsyncPolicy::EveryMs(5);
        let log = orchestrata::log::open(&config).await.expect("open log");
        for (alias, parent) in [("U:Ox", None), ("U:Ar", Some("U:Ox"))] {
            let e = VolkRegistered {
                alias: alias.into(),
                capabilities: vec![],
                parent: parent.map(str::to_owned),
                protocols: vec![],
                session_id: Some("s1".into()),
                metadata: Json(serde_json::json!({})),
            };
            log.append(&EventRecord::new("bench", alias, e, chrono::Utc::now()))
                .await
                .expect("append");
        }
        let gov = GovernanceConfig {
            sync_before_decide: false,
            ..GovernanceConfig::default()
        };
        Governance::start(log, gov).await.expect("start governance")
    })
}

fn latency(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let g = start(&rt, dir.path());
    let mut ev = Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).expect("load");
    let facts = [
        orchestrata::governance::Fact::Volk(
            "U:Ox".into(),
            "none".into(),
            "senior".into(),
            "s1".into(),
        ),
        orchestrata::governance::Fact::VolkStatus("U:Ox".into(), "active".into()),
        orchestrata::governance::Fact::Volk(
            "U:Ar".into(),
            "U:Ox".into(),
            "senior".into(),
            "s1".into(),
        ),
        orchestrata::governance::Fact::VolkStatus("U:Ar".into(), "active".into()),
    ];
    ev.load_facts(&facts).expect("facts");
    assert!(ev.decide(&uncached()).expect("decide").result == DecisionResult::Allow);

    // Percentiles, measured per call (ORCHESTRATA_BENCH_SAMPLES calls, 5,000 by
    // default; a profiler run may lower it).
    let samples: usize = std::env::var("ORCHESTRATA_BENCH_SAMPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000);
    let (mut machine, mut engine, mut hit) = (Vec::new(), Vec::new(), Vec::new());
    rt.block_on(async {
        g.judge(&cached()).await;
        for _ in 0..samples {
            let t = Instant::now();
            let _ = ev.decide(&uncached());
            machine.push(t.elapsed());
            let j = g.judge(&uncached()).await;
            engine.push(j.latency);
            let j = g.judge(&cached()).await;
            assert!(j.cached);
            hit.push(j.latency);
        }
    });
    for (name, samples) in [
        ("machine uncached", machine),
        ("engine uncached", engine),
        ("cached", hit),
    ] {
        let (p50, p99) = percentiles(samples);
        eprintln!("governance {name}: p50 {p50:?} p99 {p99:?}");
    }

    let mut group = c.benchmark_group("governance");
    group.bench_function("decide_uncached_machine", |b| {
        b.iter(|| ev.decide(&uncached()))
    });
    group.bench_function("judge_uncached_engine_thread", |b| {
        b.iter(|| rt.block_on(g.judge(&uncached())))
    });
    group.bench_function("judge_cached", |b| {
        b.iter(|| rt.block_on(g.judge(&cached())))
    });
    group.throughput(Throughput::Elements(1));
    group.bench_function("decide_recorded_sled", |b| {
        b.iter(|| rt.block_on(g.decide(uncached())))
    });
    group.finish();
}

/// 100,000 recorded decisions under the default policy, as `audit verify` reads them.
fn recorded_100k() -> AuditLog {
    let policy = Policy::default_policy();
    let mut audit_log = AuditLog::default();
    audit_log
        .policies
        .insert(policy.hash().to_owned(), policy.text().to_owned());
    let mut ev = Evaluator::load(&policy, DEFAULT_INFERENCE_LIMIT).expect("load");
    let clients = ["dashboard", "operator", "ops-admin", "stranger"];
    let methods = [
        "cxp.send",
        "cxp.status",
        "volk.register",
        "session.open",
        "governance.rules",
    ];
    for i in 0..100_000u64 {
        let request = Request::client(
            clients[i as usize % 4],
            "gateway.execute",
            methods[i as usize % 5],
        );
        let outcome = ev.decide(&request).expect("decide");
        let query = RecordedQuery {
            goal: request.goal_text(),
            subject_kind: SubjectKind::Client,
            context: BTreeMap::new(),
            facts_at: BTreeMap::new(),
            error_kind: None,
        };
        audit_log.decisions.push(RecordedDecision {
            sequence: i + 1,
            timestamp: chrono::Utc::now(),
            event: DecisionRecorded {
                decision_id: uuid::Uuid::new_v4(),
                subject_kind: SubjectKind::Client,
                subject: request.subject.clone(),
                action: request.action.clone(),
                resource: request.resource.clone(),
                result: outcome.result,
                rule_trace: outcome.trace,
                articles_applied: outcome.articles,
                policy_hash: policy.hash().to_owned(),
                latency_us: 10,
                query: serde_json::to_string(&query).ok(),
                dry_run: false,
                reason: None,
            },
        });
    }
    audit_log
}

fn verify_100k(c: &mut Criterion) {
    let mut group = c.benchmark_group("audit");
    group.sample_size(10);
    group.throughput(Throughput::Elements(100_000));
    // Built inside the closure so that a run filtered to other benchmarks (or a
    // profiler run) does not pay for 100,000 setup decisions.
    group.bench_function("verify_100k_decisions", |b| {
        let audit_log = recorded_100k();
        b.iter(|| {
            let report = audit::verify(&audit_log);
            assert!(report.mismatches.is_empty() && report.checked == 100_000);
        })
    });
    group.finish();
}

criterion_group!(benches, latency, verify_100k);
criterion_main!(benches);
