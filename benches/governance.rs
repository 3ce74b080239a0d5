//! Governance benchmarks: an uncached decision (the Prolog machine alone, and through
//! the engine thread), the same decision with 100,000 packet facts loaded, a cached
//! decision, recorded decisions per second on a sled log, and `audit verify` of
//! 100,000 recorded decisions, and writing one decision's goal text.
//!
//! Run: `cargo bench --bench governance`. Before the criterion groups it prints p50 and
//! p99 of 5,000 uncached and cached decisions (criterion reports means and medians).
//! The 100,000-packet row prints the engine's resident-memory growth for those facts.
//! `ORCHESTRATA_BENCH_POLICY_DIR=<dir>` runs every row under the policy files of
//! `<dir>` instead of the default policy (to compare two policies in one binary).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use orchestrata::config::{FsyncPolicy, LogConfig};
use orchestrata::governance::audit::{self, AuditLog, RecordedDecision};
use orchestrata::governance::{
    Evaluator, Fact, FactChange, FactsView, Governance, GovernanceConfig, Policy, RecordedQuery,
    Request, DEFAULT_INFERENCE_LIMIT,
};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::types::{DecisionResult, Packet, PacketPayload, SubjectKind};
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::{Envelope, EventRecord, Stream};

fn uncached() -> Request {
    // A send in a session reads its send count (a traffic fact), so it is never
    // reused: every call runs the policy, down the whole allow path (identity, budget
    // count, hierarchy, ownership).
    Request::volk("U:Ox", "cxp.send", "U:Ar").with("session", "s1")
}

/// A send outside a session: reads roster facts only, so after the first call it is
/// answered from the roster cache (`cacheable_with/2`).
fn reused() -> Request {
    Request::volk("U:Ox", "cxp.send", "U:Ar").with("subject", "task")
}

/// The default policy, or the one in `ORCHESTRATA_BENCH_POLICY_DIR`.
fn bench_policy() -> Policy {
    match std::env::var_os("ORCHESTRATA_BENCH_POLICY_DIR") {
        Some(dir) => Policy::from_dir(std::path::Path::new(&dir)).expect("bench policy dir"),
        None => Policy::default_policy(),
    }
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
        let policy_dir = std::env::var_os("ORCHESTRATA_BENCH_POLICY_DIR").map(Into::into);
        let gov = GovernanceConfig {
            sync_before_decide: false,
            policy_dir,
            ..GovernanceConfig::default()
        };
        Governance::start(log, gov).await.expect("start governance")
    })
}

fn latency(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let g = start(&rt, dir.path());
    let mut ev = Evaluator::load(&bench_policy(), DEFAULT_INFERENCE_LIMIT).expect("load");
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
    let mut roster_hit = Vec::new();
    rt.block_on(async {
        g.judge(&cached()).await;
        g.judge(&reused()).await;
        for _ in 0..samples {
            let t = Instant::now();
            let _ = ev.decide(&uncached());
            machine.push(t.elapsed());
            let j = g.judge(&uncached()).await;
            engine.push(j.latency);
            let j = g.judge(&cached()).await;
            assert!(j.cached);
            hit.push(j.latency);
            let j = g.judge(&reused()).await;
            assert!(j.cached);
            roster_hit.push(j.latency);
        }
    });
    for (name, samples) in [
        ("machine uncached", machine),
        ("engine uncached", engine),
        ("cached", hit),
        ("reused while the roster holds", roster_hit),
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
    group.bench_function("judge_reused_roster", |b| {
        b.iter(|| rt.block_on(g.judge(&reused())))
    });
    group.throughput(Throughput::Elements(1));
    // REQ-005-NFR3-001: a governed spawn is one such decision.
    group.bench_function("decide_recorded_sled", |b| {
        b.iter(|| rt.block_on(g.decide(uncached())))
    });
    group.finish();
}

/// Resident set size of this process, in KiB (Linux `/proc/self/status`).
fn rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// 100,000 `packet sent` events folded by the facts view, as the engine would see
/// them: 50 from `U:Ox` in session `s1` (so the benchmark's send stays under its
/// budget of 100 and takes the whole allow path), the rest from 997 other Volks over
/// ten sessions.
fn traffic_100k() -> FactsView {
    traffic(100_000)
}

/// `n` packets as [`traffic_100k`] builds them.
fn traffic(n: u64) -> FactsView {
    let mut view = FactsView::new();
    let now = chrono::Utc::now();
    for i in 0..n {
        let (from, session) = if i % 2_000 == 0 {
            ("U:Ox".to_owned(), "s1".to_owned())
        } else {
            (format!("U:B{}", i % 997), format!("s{}", i % 10))
        };
        let packet = Packet {
            message_id: uuid::Uuid::new_v4(),
            from_agent: from,
            to_agent: "U:Ar".into(),
            thread_id: format!("t{}", i % 5_000),
            subject: "task".into(),
            payload: PacketPayload::Json(serde_json::json!({"task": "x"}).into()),
            created_at: now,
            priority: 5,
            delivery_status: DeliveryStatus::Queued,
            work_status: WorkStatus::Pending,
            protocol_version: "1.0.0".into(),
            in_reply_to: None,
            metadata: Json(serde_json::json!({ "session_id": session })),
        };
        let record = EventRecord::new("bench", i.to_string(), PacketSent { packet }, now);
        view.apply(&Envelope {
            stream: Stream::CxpTraffic,
            sequence: i,
            epoch: "bench".into(),
            record,
        });
    }
    view
}

fn latency_100k_packets(c: &mut Criterion) {
    let mut group = c.benchmark_group("governance");
    // Built inside the closure (loading 100,000 packets costs seconds, paid only when
    // this row is selected), on its first call: criterion calls it once per sample.
    let mut loaded: Option<Evaluator> = None;
    group.bench_function("decide_uncached_machine_100k_packets", |b| {
        let ev = loaded.get_or_insert_with(|| {
            let mut facts = traffic_100k().facts();
            facts.extend([
                Fact::Volk("U:Ox".into(), "none".into(), "senior".into(), "s1".into()),
                Fact::VolkStatus("U:Ox".into(), "active".into()),
                Fact::Volk("U:Ar".into(), "U:Ox".into(), "senior".into(), "s1".into()),
                Fact::VolkStatus("U:Ar".into(), "active".into()),
            ]);
            // Resident memory growth of the machine loading them (an upper bound: it
            // includes the goal texts' allocations the allocator keeps after freeing).
            let rss_before = rss_kib();
            let mut ev = Evaluator::load(&bench_policy(), DEFAULT_INFERENCE_LIMIT).expect("load");
            ev.load_facts(&facts).expect("facts");
            if let (Some(before), Some(after)) = (rss_before, rss_kib()) {
                eprintln!(
                    "governance engine with {} facts (100,000 packets): RSS +{} KiB",
                    facts.len(),
                    after.saturating_sub(before)
                );
            }
            drop(facts);
            let d = ev.decide(&uncached()).expect("decide");
            assert_eq!(d.result, DecisionResult::Allow);
            assert_eq!(d.trace, vec!["cxp_send", "send_allowed"]);
            ev
        });
        b.iter(|| ev.decide(&uncached()))
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
            fact_window: None,
            error_kind: None,
            asked_action: None,
            asked_resource: None,
        };
        audit_log.decisions.push(RecordedDecision {
            sequence: i + 1,
            timestamp: chrono::Utc::now(),
            principal: None,
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

/// What one packet status change costs the engine (retract the old status fact,
/// assert the new) as the number of packets it holds grows: the per-event cost of
/// keeping governance's facts current.
fn status_change(c: &mut Criterion) {
    let mut group = c.benchmark_group("governance_status_change");
    group.sample_size(20);
    for n in [1_000u64, 10_000, 100_000] {
        let mut loaded: Option<(Evaluator, Fact)> = None;
        group.bench_function(format!("packets_{n}"), |b| {
            let (ev, fact) = loaded.get_or_insert_with(|| {
                let facts = traffic(n).facts();
                let status = facts
                    .iter()
                    .find(|f| matches!(f, Fact::DeliveryStatus(..)))
                    .cloned()
                    .expect("a delivery status fact");
                let mut ev =
                    Evaluator::load(&bench_policy(), DEFAULT_INFERENCE_LIMIT).expect("load");
                ev.load_facts(&facts).expect("facts");
                (ev, status)
            });
            let id = match &*fact {
                Fact::DeliveryStatus(id, ..) => id.clone(),
                other => panic!("chosen as a delivery status: {other:?}"),
            };
            let mut at = 0i64;
            b.iter(|| {
                // A real change: the status moves (delivered, acknowledged, ...).
                let old = Fact::DeliveryStatus(id.clone(), "delivered".into(), at);
                at += 1;
                let new = Fact::DeliveryStatus(id.clone(), "delivered".into(), at);
                ev.apply(&[FactChange::Retract(old), FactChange::Assert(new)])
                    .expect("apply")
            })
        });
        // The other half alone: asserting one more status fact (a fact store that
        // appends statuses instead of replacing them would pay only this).
        let mut appended: Option<(Evaluator, String)> = None;
        let mut at = 0i64;
        group.bench_function(format!("assert_only_packets_{n}"), |b| {
            let (ev, id) = appended.get_or_insert_with(|| {
                let facts = traffic(n).facts();
                let id = facts
                    .iter()
                    .find_map(|f| match f {
                        Fact::DeliveryStatus(id, ..) => Some(id.clone()),
                        _ => None,
                    })
                    .expect("a packet");
                let mut ev =
                    Evaluator::load(&bench_policy(), DEFAULT_INFERENCE_LIMIT).expect("load");
                ev.load_facts(&facts).expect("facts");
                (ev, id)
            });
            b.iter(|| {
                at += 1;
                let fact = Fact::DeliveryStatus(id.clone(), "delivered".into(), at);
                ev.apply(&[FactChange::Assert(fact)]).expect("apply")
            })
        });
    }
    group.finish();
}

/// A decision's goal text: written straight (`Request::goal_text`, what the engine and
/// the record use) against the terms it was built from before (`PlTerm` then
/// `Display`), for a `cxp.send` as the gateway asks it.
fn goal_text(c: &mut Criterion) {
    let request = Request::volk("U:GW", "cxp.send", "U:Vz")
        .with("priority", 7)
        .with("subject", "generate_component")
        .with("thread", "");
    let mut group = c.benchmark_group("goal");
    group.bench_function("written", |b| b.iter(|| request.goal_text()));
    group.bench_function("built_from_terms", |b| {
        b.iter(|| request.goal_term().to_string())
    });
    group.finish();
}

criterion_group!(
    benches,
    goal_text,
    latency,
    latency_100k_packets,
    verify_100k,
    status_change
);
criterion_main!(benches);
