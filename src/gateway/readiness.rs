//! What `/ready` and `/metrics` say about the components behind the gateway: how far
//! each view trails the log, and whether governance has a policy to decide with.
//!
//! A view is ready when its runner is alive and it trails the log by at most
//! [`MAX_READY_LAG`] events on every stream it folds — a gateway whose views are still
//! catching up after a rebuild answers reads from the past, so it should not get
//! traffic yet. Absent components (a gateway started without views or governance) are
//! reported as `configured: false` and do not hold readiness back.

use orchestrata_projections::View;
use serde_json::{json, Value};

use super::backends::Views;
use super::metrics::Metrics;
use crate::log::EventLog;
use crate::projection::ViewHandle;

/// Events a view may trail the log by and still count as ready.
pub const MAX_READY_LAG: u64 = 1_000;

/// One view's lag per stream, also set on `orchestrata_projection_lag_events`.
async fn view_status<V: View>(
    handle: &ViewHandle<V>,
    log: &dyn EventLog,
    metrics: &Metrics,
) -> Value {
    let running = handle.is_running();
    let checkpoint = handle.checkpoint();
    let mut streams = serde_json::Map::new();
    let mut healthy = running;
    for stream in V::STREAMS {
        let applied = checkpoint.last(*stream);
        let lag = match log.last_sequence(*stream).await {
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

/// The `projections` component of `/ready` (and the lag gauges).
pub async fn projections(views: Option<&Views>, log: &dyn EventLog, metrics: &Metrics) -> Value {
    let Some(v) = views else {
        return json!({"healthy": true, "configured": false});
    };
    let threads = view_status(&v.threads, log, metrics).await;
    let sessions = view_status(&v.sessions, log, metrics).await;
    let volks = view_status(&v.volks, log, metrics).await;
    let decisions = view_status(&v.decisions, log, metrics).await;
    let graph = view_status(&v.graph, log, metrics).await;
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
pub async fn refresh_lag(views: Option<&Views>, log: &dyn EventLog, metrics: &Metrics) {
    let _ = projections(views, log, metrics).await;
}
