//! Avro codec speed: encode / decode of a small and a packet-sized event.
//! The log's targets (append >= 100k/s, replay >= 500k/s decoded on 2 cores) need
//! both well under 2 µs.

use chrono::{TimeZone, Utc};
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::{PacketDelivered, PacketSent};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{decode, encode, encode_into, EventRecord};
use std::hint::black_box;
use uuid::Uuid;

fn small() -> EventRecord {
    let at = Utc.timestamp_micros(1_768_473_000_000_000).unwrap();
    let event = PacketDelivered {
        message_id: Uuid::new_v4(),
        thread_id: "thread-001".into(),
        to_agent: "U:Vz".into(),
    };
    EventRecord::new("kernel", "thread-001", event, at).caused_by(Uuid::new_v4())
}

fn packet() -> EventRecord {
    let at = Utc.timestamp_micros(1_768_473_000_000_000).unwrap();
    let packet = Packet {
        message_id: Uuid::new_v4(),
        from_agent: "U:Ox".into(),
        to_agent: "U:Vz".into(),
        thread_id: "thread-001".into(),
        subject: "Generate UserService Implementation".into(),
        payload: PacketPayload::Json(
            serde_json::json!({
                "task": "generate_code", "spec": "UserService with CRUD operations", "language": "Python"
            })
            .into(),
        ),
        created_at: at,
        priority: 8,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json(serde_json::json!({})),
    };
    EventRecord::new("kernel", "thread-001", PacketSent { packet }, at)
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("events_codec");
    group.throughput(Throughput::Elements(1));
    for (name, record) in [("small", small()), ("packet_sent", packet())] {
        let bytes = encode(&record).expect("sample encodes");
        let mut buf = Vec::with_capacity(512);
        group.bench_function(format!("encode_{name}"), |b| {
            b.iter(|| {
                buf.clear();
                encode_into(black_box(&record), &mut buf).expect("encodes");
                black_box(buf.len())
            })
        });
        group.bench_function(format!("decode_{name}"), |b| {
            b.iter(|| decode(black_box(&bytes)).expect("decodes"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
