//! Knowledge-graph benchmarks: graph fold throughput (with eviction at the packet and
//! decision caps), the read-only Cypher check, a filtered `knowledge.nodes` page over a
//! full graph, and the Neo4j sink's diff + statement plan of a full graph.
//! Run: `cargo bench --bench knowledge`.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use orchestrata::gateway::cypher;
use orchestrata::projection::neo4j::plan;
use orchestrata_projections::graph::{NodeLabel, NodeQuery, Properties};
use orchestrata_projections::sample::Workload;
use orchestrata_projections::{fold, GraphView, View};
use orchestrata_schemas::events::Envelope;
use serde_json::json;

const EVENTS: usize = 200_000;

fn graph_events() -> Vec<Envelope> {
    Workload::new(42)
        .envelopes(EVENTS)
        .into_iter()
        .filter(|e| GraphView::STREAMS.contains(&e.stream))
        .collect()
}

fn folding(c: &mut Criterion) {
    let events = graph_events();
    let mut group = c.benchmark_group("knowledge");
    group.sample_size(10);
    group.throughput(Throughput::Elements(events.len() as u64));
    group.bench_function("fold_graph", |b| {
        b.iter_batched(
            || (),
            |()| black_box(fold::<GraphView>(black_box(&events))),
            BatchSize::PerIteration,
        )
    });
    group.finish();
}

fn queries(c: &mut Criterion) {
    let view: GraphView = fold(&graph_events());
    let mut group = c.benchmark_group("knowledge");
    let q = "MATCH (v:Volk)-[:SENT_TO]->(w:Volk) WHERE v.note = 'CREATE later' \
             RETURN v.alias, w.alias ORDER BY v.alias SKIP 0 LIMIT 50 // no SET here";
    group.bench_function("cypher_validate", |b| {
        b.iter(|| black_box(cypher::validate(black_box(q))))
    });
    let mut properties = Properties::new();
    properties.insert("delivery_status".into(), json!("acknowledged"));
    let query = NodeQuery {
        label: Some(NodeLabel::Packet),
        properties,
    };
    group.bench_function("nodes_page_filtered", |b| {
        b.iter(|| {
            let matching: Vec<_> = view.nodes(&query).collect();
            black_box((matching.len(), matching.iter().take(50).count()))
        })
    });
    group.sample_size(10);
    group.bench_function("sink_plan_full_graph", |b| {
        b.iter(|| {
            let changes = plan::diff(&view, &plan::Written::default());
            black_box(plan::statements(&changes, plan::BATCH_ROWS).len())
        })
    });
    group.finish();
}

criterion_group!(benches, folding, queries);
criterion_main!(benches);
