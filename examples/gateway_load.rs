//! Load harness for the gateway: RPC latency with N concurrent clients, and fan-out of
//! `cxp.traffic` to many subscribers.
//!
//! ```text
//! cargo run --release --example gateway_load -- [clients=10] [pings=2000] [subscribers=100] [events=20000] [rate=10000] [stuck=0] [buffer=1000]
//! ```
//!
//! Everything is real: a gateway bound to 127.0.0.1:0 over a sled log in a temp dir,
//! tokio-tungstenite clients over loopback. RPC latency is measured per call at the
//! client (send to response); `pings=0` skips that phase. Delivery latency is the time
//! from the event's timestamp (taken just before it is appended, fsync included) to its
//! arrival at a subscriber.
//!
//! Back-pressure mode: `stuck=1` makes one of the `subscribers` subscribe and then never
//! read. The others' delivery p50/p99 and the appender's rate show whether it holds
//! anyone up; the stuck client's evictions are read back from
//! `orchestrata_gateway_events_dropped_total`. `buffer` is `event_buffer_per_client`
//! (the contract's 1,000 by default); a reading subscriber that falls that far behind
//! gets `gateway.gap` notices, counted as `gaps` in the report.

use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::Utc;
use futures::{SinkExt, StreamExt};
use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, GatewayConfig, Services};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::EventRecord;
use serde_json::{json, Value};
use tokio_tungstenite::tungstenite::Message;

const TOKEN: &str = "load-token";

fn arg(n: usize, default: u64) -> u64 {
    std::env::args()
        .nth(n)
        .and_then(|a| a.parse().ok())
        .unwrap_or(default)
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn client(url: &str) -> anyhow::Result<Ws> {
    let (mut ws, _) = tokio_tungstenite::connect_async(url).await?;
    let auth = json!({"jsonrpc":"2.0","id":0,"method":"auth.authenticate",
        "params":{"strategy":"static_token","token":TOKEN}});
    ws.send(Message::Text(auth.to_string().into())).await?;
    next_json(&mut ws).await?;
    Ok(ws)
}

async fn next_json(ws: &mut Ws) -> anyhow::Result<Value> {
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => return Ok(serde_json::from_str(&t)?),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
            None => anyhow::bail!("closed"),
        }
    }
}

fn packet(i: u64) -> EventRecord {
    let p = Packet {
        message_id: uuid::Uuid::new_v4(),
        from_agent: "U:Ox".into(),
        to_agent: "U:Vz".into(),
        thread_id: format!("t-{}", i % 100),
        subject: "load".into(),
        payload: PacketPayload::Json(json!({"i": i}).into()),
        created_at: Utc::now(),
        priority: 5,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json(json!({})),
    };
    EventRecord::new("load", "t", PacketSent { packet: p }, Utc::now())
}

async fn rpc_latency(
    url: &str,
    clients: u64,
    pings: u64,
    method: &'static str,
) -> anyhow::Result<Vec<f64>> {
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let url = url.to_owned();
        tasks.push(tokio::spawn(async move {
            let mut ws = client(&url).await?;
            let mut out = Vec::with_capacity(pings as usize);
            for i in 0..pings {
                let params = if method == "gateway.replay" {
                    json!({"topic": "cxp.traffic", "count": 1})
                } else {
                    json!({})
                };
                let req = json!({"jsonrpc":"2.0","id":i+1,"method":method,"params":params});
                let t = Instant::now();
                ws.send(Message::Text(req.to_string().into())).await?;
                let r = next_json(&mut ws).await?;
                out.push(t.elapsed().as_secs_f64() * 1e3);
                anyhow::ensure!(r.get("result").is_some(), "{method} failed: {r}");
            }
            anyhow::Ok(out)
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await??);
    }
    all.sort_by(f64::total_cmp);
    Ok(all)
}

/// The `"timestamp":"…"` of a notification frame, found without parsing the whole
/// frame (the clients share the machine with the gateway: keep them cheap).
fn timestamp_of(frame: &str) -> Option<&str> {
    const KEY: &str = "\"timestamp\":\"";
    let start = frame.find(KEY)? + KEY.len();
    let len = frame[start..].find('"')?;
    Some(&frame[start..start + len])
}

/// The `"dropped":N` of a `gateway.gap` notice.
fn dropped_of(frame: &str) -> u64 {
    let v: Value = serde_json::from_str(frame).unwrap_or(Value::Null);
    v["params"]["dropped"].as_u64().unwrap_or(0)
}

/// Reads notifications until `events` were received or reported lost; returns each
/// delivery latency (ms), the seconds from first to last, and how many were lost.
async fn receive(mut ws: Ws, events: u64) -> anyhow::Result<(Vec<f64>, f64, u64)> {
    let mut lat = Vec::with_capacity(events as usize);
    let mut first: Option<Instant> = None;
    let mut dropped = 0u64;
    while (lat.len() as u64) + dropped < events {
        let text = match ws.next().await {
            Some(Ok(Message::Text(t))) => t,
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
            None => anyhow::bail!("closed"),
        };
        if text.as_str().contains("\"method\":\"gateway.gap\"") {
            dropped += dropped_of(text.as_str());
            continue;
        }
        let Some(ts) = timestamp_of(text.as_str()) else {
            continue;
        };
        first.get_or_insert_with(Instant::now);
        let sent = chrono::DateTime::parse_from_rfc3339(ts)?;
        let ms = (Utc::now() - sent.with_timezone(&Utc))
            .num_microseconds()
            .unwrap_or(0) as f64
            / 1e3;
        lat.push(ms);
    }
    let secs = first.map_or(0.0, |f| f.elapsed().as_secs_f64());
    Ok((lat, secs, dropped))
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let clients = arg(1, 10);
    let pings = arg(2, 2000);
    let subscribers = arg(3, 100);
    let events = arg(4, 20_000);
    let rate = arg(5, 10_000);
    let stuck = arg(6, 0).min(subscribers);
    let dir = tempfile::tempdir()?;
    let log = orchestrata::log::open(&LogConfig::sled(dir.path())).await?;
    let mut config = GatewayConfig::default().with_static_token(TOKEN);
    config.listen = "127.0.0.1:0".parse()?;
    config.max_clients = (clients + subscribers + 10) as usize;
    config.rate_limit_per_second = 1_000_000;
    config.event_buffer_per_client = arg(7, 1000) as usize;
    let running = gateway::start(config, Services::new(log.clone())).await?;
    let url = format!("ws://{}/", running.local_addr());
    for i in 0..100 {
        log.append(&packet(i)).await?;
    }

    for method in ["gateway.ping", "gateway.replay"]
        .into_iter()
        .filter(|_| pings > 0)
    {
        let lat = rpc_latency(&url, clients, pings, method).await?;
        println!(
            "{method}: {clients} clients x {pings} calls: p50 {:.3} ms, p95 {:.3} ms, p99 {:.3} ms, max {:.3} ms",
            percentile(&lat, 0.5), percentile(&lat, 0.95), percentile(&lat, 0.99), percentile(&lat, 1.0)
        );
    }

    // Fan-out: `subscribers` clients on cxp.traffic (`stuck` of them never read), one
    // writer at `rate` events/s.
    let mut subs = Vec::new();
    let mut stuck_clients = Vec::new();
    for n in 0..subscribers {
        let mut ws = client(&url).await?;
        let req = json!({"jsonrpc":"2.0","id":1,"method":"cxp.subscribe","params":{}});
        ws.send(Message::Text(req.to_string().into())).await?;
        next_json(&mut ws).await?;
        if n < stuck {
            stuck_clients.push(ws);
            continue;
        }
        subs.push(tokio::spawn(receive(ws, events)));
    }
    let batch = 100u64;
    let writer_log = log.clone();
    let started = Instant::now();
    let writer = tokio::spawn(async move {
        let mut tick = tokio::time::interval(Duration::from_secs_f64(batch as f64 / rate as f64));
        let mut i = 0;
        while i < events {
            tick.tick().await;
            let records: Vec<EventRecord> = (i..(i + batch).min(events)).map(packet).collect();
            writer_log.append_batch(&records).await?;
            i += batch;
        }
        anyhow::Ok(())
    });
    writer.await??;
    let write_secs = started.elapsed().as_secs_f64();
    let mut p99s = Vec::new();
    let mut all = Vec::new();
    let mut slowest_rate = f64::INFINITY;
    let mut gapped = 0u64;
    for s in subs {
        let (mut lat, secs, dropped) = s.await??;
        gapped += dropped;
        lat.sort_by(f64::total_cmp);
        p99s.push(percentile(&lat, 0.99));
        slowest_rate = slowest_rate.min(lat.len() as f64 / secs.max(1e-9));
        all.extend(lat);
    }
    all.sort_by(f64::total_cmp);
    p99s.sort_by(f64::total_cmp);
    let readers = subscribers - stuck;
    println!(
        "fan-out: {events} events at {:.0} ev/s appended ({:.2} s) to {subscribers} subscribers \
         ({stuck} never reading): each of the {readers} readers received >= {:.0} ev/s; \
         delivery p50 {:.2} ms, p95 {:.2} ms, p99 {:.2} ms (worst reader p99 {:.2} ms); \
         events the readers lost to gaps: {gapped}",
        events as f64 / write_secs,
        write_secs,
        slowest_rate,
        percentile(&all, 0.5),
        percentile(&all, 0.95),
        percentile(&all, 0.99),
        p99s.last().copied().unwrap_or(f64::NAN)
    );
    if stuck > 0 {
        let text = reqwest::get(format!("http://{}/metrics", running.local_addr()))
            .await?
            .text()
            .await?;
        let dropped = text
            .lines()
            .find(|l| {
                l.starts_with("orchestrata_gateway_events_dropped_total{topic=\"cxp.traffic\"}")
            })
            .and_then(|l| l.rsplit(' ').next())
            .unwrap_or("?");
        println!(
            "never-reading subscribers: {stuck}, events evicted from their buffers \
             (orchestrata_gateway_events_dropped_total, all clients): {dropped}"
        );
    }
    drop(stuck_clients);
    running.shutdown().await?;
    let _ = Arc::strong_count(&log);
    Ok(())
}
