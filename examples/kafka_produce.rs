//! kafka_produce: the raw producer beside `orchestrata up --kafka`. One process sends the
//! Avro bytes of a `packet_sent` event carrying the spec's example CXP packet (spec 000)
//! to a fresh single-partition topic on the same broker, through the same client library
//! and producer settings as the Kafka backend's appends (`acks=all`,
//! `enable.idempotence=true`, `linger.ms=1`), keeping `--window` records in flight.
//!
//! ```text
//! cargo run --release --example kafka_produce -- 127.0.0.1:9092 --window 256 --secs 5
//! ```
//!
//! Output, `key=value` lines: `record_bytes`, `window`, `acked` (records acknowledged in
//! the measured seconds), `acked_per_s`, `ack_p50_ms`/`ack_p99_ms` (enqueue to delivery
//! report), `errors`. `--window 1` is the round-trip shape of `wsload rtt`, 256 the one
//! connection of `wsload pipe`. The exit status is 1 when any record was refused.

use std::time::{Duration, Instant};

use anyhow::Context;
use chrono::{TimeZone, Utc};
use clap::Parser;
use futures::stream::{FuturesUnordered, StreamExt};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{encode, EventRecord};
use rdkafka::admin::{AdminClient, AdminOptions, NewTopic, TopicReplication};
use rdkafka::client::DefaultClientContext;
use rdkafka::config::ClientConfig;
use rdkafka::producer::{FutureProducer, FutureRecord, Producer};
use rdkafka::util::Timeout;

#[derive(Debug, Parser)]
#[command(about = "Raw idempotent producer of packet_sent events, for comparison")]
struct Args {
    /// The broker list (`bootstrap.servers`).
    brokers: String,
    /// Records in flight.
    #[arg(long, default_value_t = 256)]
    window: usize,
    /// Seconds measured.
    #[arg(long, default_value_t = 5)]
    secs: u64,
    /// Seconds of load before measuring.
    #[arg(long, default_value_t = 1)]
    warmup: u64,
    /// The topic (default: a new `kafka-produce.<uuid>`).
    #[arg(long)]
    topic: Option<String>,
}

/// The spec's example CXP packet (spec 000, "Example CXP Packet") as a `packet_sent`
/// event, Avro-encoded as the Kafka backend stores it.
fn example_event() -> anyhow::Result<Vec<u8>> {
    let at = Utc
        .with_ymd_and_hms(2026, 1, 15, 10, 30, 0)
        .single()
        .context("the example's timestamp")?;
    let packet = Packet {
        message_id: uuid::uuid!("550e8400-e29b-41d4-a716-446655440000"),
        from_agent: "U:Ox".into(),
        to_agent: "U:Vz".into(),
        thread_id: "thread-001".into(),
        subject: "Generate UserService Implementation".into(),
        payload: PacketPayload::Json(
            serde_json::json!({"task": "generate_code",
                "spec": "UserService with CRUD operations", "language": "Python"})
            .into(),
        ),
        created_at: at,
        priority: 8,
        delivery_status: DeliveryStatus::Delivered,
        work_status: WorkStatus::InProgress,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json(serde_json::json!({})),
    };
    let record = EventRecord::new("kernel", "thread-001", PacketSent { packet }, at);
    Ok(encode(&record)?)
}

/// The backend's producer settings (src/log/kafka/mod.rs).
fn producer(brokers: &str) -> anyhow::Result<FutureProducer> {
    Ok(ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .set("enable.idempotence", "true")
        .set("acks", "all")
        .set("linger.ms", "1")
        .set("log_level", "3")
        .create()?)
}

/// A one-partition topic, replicated as the cluster's default.
async fn create_topic(brokers: &str, topic: &str) -> anyhow::Result<()> {
    let admin: AdminClient<DefaultClientContext> = ClientConfig::new()
        .set("bootstrap.servers", brokers)
        .create()?;
    let new = NewTopic::new(topic, 1, TopicReplication::Fixed(-1));
    for result in admin.create_topics([&new], &AdminOptions::new()).await? {
        result.map_err(|(t, e)| anyhow::anyhow!("creating {t}: {e}"))?;
    }
    Ok(())
}

fn percentile_ms(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * q).round() as usize;
    sorted[i.min(sorted.len() - 1)].as_secs_f64() * 1e3
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let window = args.window.max(1);
    let bytes = example_event()?;
    let topic = args
        .topic
        .unwrap_or_else(|| format!("kafka-produce.{}", uuid::Uuid::new_v4()));
    create_topic(&args.brokers, &topic).await?;
    let producer = producer(&args.brokers)?;
    let start = Instant::now();
    let (measure_from, end) = (
        start + Duration::from_secs(args.warmup),
        start + Duration::from_secs(args.warmup + args.secs),
    );
    let mut in_flight = FuturesUnordered::new();
    let (mut acked, mut errors, mut latencies) = (0u64, 0u64, Vec::new());
    loop {
        let now = Instant::now();
        if now < end {
            while in_flight.len() < window {
                let record = FutureRecord::<(), _>::to(&topic).payload(&bytes);
                let sent = Instant::now();
                let delivery = producer
                    .send_result(record)
                    .map_err(|(e, _)| anyhow::anyhow!("enqueue: {e}"))?;
                in_flight.push(async move { (sent, delivery.await) });
            }
        } else if in_flight.is_empty() {
            break;
        }
        let Some((sent, outcome)) = in_flight.next().await else {
            break;
        };
        let done = Instant::now();
        match outcome {
            Ok(Ok(_)) if (measure_from..=end).contains(&done) => {
                acked += 1;
                latencies.push(done - sent);
            }
            Ok(Ok(_)) => {}
            Ok(Err((e, _))) => {
                errors += 1;
                eprintln!("refused: {e}");
            }
            Err(_) => errors += 1,
        }
    }
    producer
        .flush(Timeout::After(Duration::from_secs(10)))
        .context("flushing the producer")?;
    latencies.sort_unstable();
    println!("record_bytes={}", bytes.len());
    println!("window={window}");
    println!("acked={acked}");
    println!("acked_per_s={:.0}", acked as f64 / args.secs.max(1) as f64);
    println!("ack_p50_ms={:.3}", percentile_ms(&latencies, 0.50));
    println!("ack_p99_ms={:.3}", percentile_ms(&latencies, 0.99));
    println!("errors={errors}");
    if errors > 0 {
        std::process::exit(1);
    }
    Ok(())
}
