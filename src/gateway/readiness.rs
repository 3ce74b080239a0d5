//! What `/ready` and `/metrics` say about the components behind the gateway: how far
//! each view trails the log, and whether governance has a policy to decide with.
//!
//! A view is ready when its runner is alive and it trails the log by at most
//! [`MAX_READY_LAG`] events on every stream it folds — a gateway whose views are still
//! catching up after a rebuild answers reads from the past, so it should not get
//! traffic yet. Absent components (a gateway started without views or governance) are
//! reported as `configured: false` and do not hold readiness back.
//!
//! **No connection per request.** `/ready` and `/metrics` are unauthenticated, and on
//! the Kafka backend every look at a stream's bounds opens a consumer (new TCP
//! connections to the broker). So the log is probed through a [`LogProbe`]: one probe
//! reads the bounds of every stream once and is shared by every request for
//! `health_cache_ms` (default 1 s); concurrent requests wait for the same probe. However
//! often the endpoints are hit, the broker sees at most one probe per period.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use orchestrata_projections::View;
use orchestrata_schemas::events::Stream;
use serde_json::{json, Value};

use super::backends::Views;
use super::metrics::Metrics;
use crate::log::{Bounds, EventLog};
use crate::projection::ViewHandle;

/// How long a probe does at most per stream before it counts as failed.
const PROBE_TIMEOUT: Duration = Duration::from_secs(2);

/// The log as one probe saw it: each stream's bounds (or why they could not be read).
#[derive(Debug, Clone)]
pub struct LogSnapshot {
    /// Bounds per stream.
    pub bounds: BTreeMap<Stream, Result<Bounds, String>>,
    /// How long the first stream's bounds took (the log's latency).
    pub latency_ms: f64,
    /// When the probe ran.
    pub taken: Instant,
}

impl LogSnapshot {
    /// Reads the bounds of every stream once.
    pub async fn take(log: &dyn EventLog) -> Self {
        let started = Instant::now();
        let mut bounds = BTreeMap::new();
        let mut latency_ms = None;
        for stream in Stream::ALL {
            let b = match tokio::time::timeout(PROBE_TIMEOUT, log.bounds(stream)).await {
                Ok(Ok(b)) => Ok(b),
                Ok(Err(e)) => Err(e.to_string()),
                Err(_) => Err(format!("no answer within {} s", PROBE_TIMEOUT.as_secs())),
            };
            latency_ms.get_or_insert(started.elapsed().as_secs_f64() * 1000.0);
            bounds.insert(stream, b);
        }
        LogSnapshot {
            bounds,
            latency_ms: latency_ms.unwrap_or_default(),
            taken: Instant::now(),
        }
    }

    /// The last sequence of `stream` (`Ok(None)`: empty), or why it is unknown.
    pub fn last_sequence(&self, stream: Stream) -> Result<Option<u64>, String> {
        match self.bounds.get(&stream) {
            Some(Ok(b)) => Ok(b.last),
            Some(Err(e)) => Err(e.clone()),
            None => Err(format!("stream {stream} not probed")),
        }
    }
}

/// Probes the log at most once per period, whatever the request rate (single flight:
/// requests arriving during a probe wait for it).
pub struct LogProbe {
    period: Duration,
    last: tokio::sync::Mutex<Option<LogSnapshot>>,
    probes: std::sync::atomic::AtomicU64,
}

impl LogProbe {
    /// A probe whose snapshots are reused for `period`.
    pub fn new(period: Duration) -> Self {
        LogProbe {
            period,
            last: tokio::sync::Mutex::new(None),
            probes: Default::default(),
        }
    }

    /// The latest snapshot, probing `log` only if it is older than the period.
    pub async fn snapshot(&self, log: &dyn EventLog) -> LogSnapshot {
        let mut last = self.last.lock().await;
        if let Some(s) = last.as_ref() {
            if s.taken.elapsed() < self.period {
                return s.clone();
            }
        }
        self.probes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let fresh = LogSnapshot::take(log).await;
        *last = Some(fresh.clone());
        fresh
    }

    /// Probes run since start.
    pub fn probes(&self) -> u64 {
        self.probes.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// Events a view may trail the log by and still count as ready.
pub const MAX_READY_LAG: u64 = 1_000;

/// One view's lag per stream, also set on `orchestrata_projection_lag_events`.
fn view_status<V: View>(handle: &ViewHandle<V>, log: &LogSnapshot, metrics: &Metrics) -> Value {
    let running = handle.is_running();
    let checkpoint = handle.checkpoint();
    let mut streams = serde_json::Map::new();
    let mut healthy = running;
    for stream in V::STREAMS {
        let applied = checkpoint.last(*stream);
        let lag = match log.last_sequence(*stream) {
            Ok(last) => {
                let lag = match (last, applied) {
                    (None, _) => 0,
                    (Some(last), None) => last + 1,
                    (Some(last), Some(applied)) => last.saturating_sub(applied),
                };
                metrics
                    .projection_lag
                    .with_label_values(&[V::NAME.as_str(), stream.as_str()])
                    .set(i64::try_from(lag).unwrap_or(i64::MAX));
                Some(lag)
            }
            Err(_) => None,
        };
        healthy &= lag.is_some_and(|l| l <= MAX_READY_LAG);
        streams.insert(
            stream.as_str().to_owned(),
            json!({"applied": applied, "lag": lag}),
        );
    }
    json!({"healthy": healthy, "running": running, "streams": streams})
}

/// The `projections` component of `/ready` (and the lag gauges), against the log as
/// `log` saw it.
pub fn projections(views: Option<&Views>, log: &LogSnapshot, metrics: &Metrics) -> Value {
    let Some(v) = views else {
        return json!({"healthy": true, "configured": false});
    };
    let threads = view_status(&v.threads, log, metrics);
    let sessions = view_status(&v.sessions, log, metrics);
    let volks = view_status(&v.volks, log, metrics);
    let decisions = view_status(&v.decisions, log, metrics);
    let graph = view_status(&v.graph, log, metrics);
    let healthy = [&threads, &sessions, &volks, &decisions, &graph]
        .iter()
        .all(|s| s["healthy"] == true);
    json!({
        "healthy": healthy,
        "configured": true,
        "max_lag": MAX_READY_LAG,
        "views": {"threads": threads, "sessions": sessions, "volks": volks, "decisions": decisions, "graph": graph},
    })
}

/// The `governance` component of `/ready`: healthy once a policy is loaded.
pub fn governance(governance: Option<&crate::governance::Governance>) -> Value {
    match governance {
        None => json!({"healthy": true, "configured": false}),
        Some(g) => match g.policy_hash() {
            Some(hash) => json!({"healthy": true, "configured": true, "policy_hash": hash}),
            None => json!({"healthy": false, "configured": true, "error": "no policy loaded"}),
        },
    }
}

/// Sets the projection lag gauges (for `/metrics`).
pub fn refresh_lag(views: Option<&Views>, log: &LogSnapshot, metrics: &Metrics) {
    let _ = projections(views, log, metrics);
}
