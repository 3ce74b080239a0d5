//! CXP packet speed (issue 2): a packet with a 1 KB JSON payload through every codec and
//! validator, plus a 10 MB payload encode. Targets: each 1 KB op median < 5 µs, the 10 MB
//! encode < 50 ms. Results: docs/performance.md, section "CXP packet".

use std::hint::black_box;

use chrono::{TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion};
use orchestrata_schemas::cxp::{validate_document, CxpPacket, JsonPayload, VolkAlias};
use serde_json::{json, Value};

fn alias(s: &str) -> VolkAlias {
    VolkAlias::parse(s).expect("valid alias")
}

/// A packet whose compact JSON payload is about `bytes` long (a realistic task object with
/// a list of file entries).
fn packet(bytes: usize) -> CxpPacket {
    let mut files = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < bytes {
        let entry =
            json!({"path": format!("src/module_{i}/file.rs"), "lines": 120 + i, "ok": i % 2 == 0});
        size += entry.to_string().len() + 1;
        files.push(entry);
        i += 1;
    }
    let payload = json!({"task": "review", "language": "Rust", "files": files});
    let at = Utc
        .timestamp_opt(1_768_473_000, 0)
        .single()
        .expect("valid time");
    CxpPacket::new_at(
        alias("U:Ox"),
        alias("U:Vz"),
        "Review the module",
        payload,
        at,
    )
    .expect("valid packet")
    .with_thread_id("thread-001")
    .expect("valid thread")
}

fn one_kb(c: &mut Criterion) {
    let p = packet(1024);
    let json_text = p.to_json().expect("encodes");
    let bytes = p.to_bytes().expect("encodes");
    let doc: Value = serde_json::from_str(&json_text).expect("parses");
    let payload_text = p
        .payload()
        .as_json()
        .expect("a JSON payload")
        .as_str()
        .to_owned();
    eprintln!(
        "1 KB packet: payload {} B, JSON {} B, MessagePack {} B, memory without payload {} B",
        payload_text.len(),
        json_text.len(),
        bytes.len(),
        p.memory_without_payload()
    );
    let mut g = c.benchmark_group("cxp_1kb");
    // REQ-004-PERF-001 REQ-004-US-006-007
    g.bench_function("json_encode", |b| b.iter(|| black_box(&p).to_json()));
    // REQ-004-PERF-002 REQ-004-US-006-015
    g.bench_function("json_decode", |b| {
        b.iter(|| CxpPacket::from_json(black_box(&json_text)))
    });
    // REQ-004-PERF-003 REQ-004-US-006-019
    g.bench_function("msgpack_encode", |b| b.iter(|| black_box(&p).to_bytes()));
    // REQ-004-PERF-004 REQ-004-US-006-023
    g.bench_function("msgpack_decode", |b| {
        b.iter(|| CxpPacket::from_bytes(black_box(&bytes)))
    });
    // REQ-004-PERF-006 REQ-004-PERF-008
    g.bench_function("field_validation", |b| b.iter(|| black_box(&p).validate()));
    // REQ-004-PERF-007 REQ-004-US-007-011
    g.bench_function("schema_validation", |b| {
        b.iter(|| validate_document(black_box(&doc)))
    });
    // REQ-004-US-002-012
    g.bench_function("header_extraction", |b| {
        b.iter(|| black_box(&p).get_headers())
    });
    // Floor of both decodes: the payload is kept as text, so decoding checks its syntax
    // and copies it (`JsonPayload::parse`); no `Value` tree is built.
    g.bench_function("payload_text_check_floor", |b| {
        b.iter(|| JsonPayload::parse(black_box(&payload_text)))
    });
    // What a reader that looks inside pays, on demand: the payload's `Value` tree (the
    // cost every decode paid before the payload was kept as text).
    g.bench_function("payload_to_value_on_demand", |b| {
        b.iter(|| black_box(&p).payload_json())
    });
    g.finish();
}

fn ten_mb(c: &mut Criterion) {
    let p = packet(10 * 1024 * 1024 - 64 * 1024);
    let mut g = c.benchmark_group("cxp_10mb");
    g.sample_size(10);
    // REQ-004-PERF-005
    g.bench_function("json_encode", |b| b.iter(|| black_box(&p).to_json()));
    g.bench_function("msgpack_encode", |b| b.iter(|| black_box(&p).to_bytes()));
    g.finish();
}

criterion_group!(benches, one_kb, ten_mb);
criterion_main!(benches);
