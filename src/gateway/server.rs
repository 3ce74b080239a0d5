//! Starting and stopping the gateway: the axum router (WebSocket on `/`, `/health`,
//! `/ready`, `/metrics`), the topic hubs, and graceful shutdown. The WebSocket upgrade
//! passes the [`origin`](super::origin) check first; with `tls` configured the same
//! routes are served over [`tls`](super::tls).

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::connect_info::Connected;
use axum::extract::ws::WebSocketUpgrade;
use axum::extract::{ConnectInfo, State};
use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::serve::{IncomingStream, Listener, ListenerExt};
use axum::{Extension, Json, Router};
use chrono::Utc;
use orchestrata_schemas::events::Stream;
use serde_json::json;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tracing::Instrument;

use super::config::GatewayConfig;
use super::connection;
use super::methods::METHODS;
use super::metrics::{Metrics, MetricsError};
use super::origin::OriginPolicy;
use super::readiness::LogProbe;
use super::schema::{ParamsSchemas, SchemaError};
use super::state::{Services, Shared};
use super::tls::{TlsError, TlsListener};
use super::topic::event::TopicEvent;
use super::topic::hub::Hub;
use super::topic::views::GatewayViews;
use super::topic::TOPICS;
use crate::log::LogError;

/// Why the gateway could not start or stop cleanly.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The listen address could not be bound.
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        /// The address.
        addr: SocketAddr,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The log failed.
    #[error("event log: {0}")]
    Log(#[from] LogError),
    /// A params schema does not compile.
    #[error(transparent)]
    Schema(#[from] SchemaError),
    /// Metrics could not be registered.
    #[error(transparent)]
    Metrics(#[from] MetricsError),
    /// The server task failed.
    #[error("server: {0}")]
    Serve(String),
    /// The TLS certificate or key cannot be used.
    #[error(transparent)]
    Tls(#[from] TlsError),
    /// The views the gateway reads (packet index, workflows) could not start or stop.
    #[error("gateway views: {0}")]
    Views(#[from] crate::projection::ProjectionError),
}

/// A gateway accepting connections. Stop it with [`RunningGateway::shutdown`].
pub struct RunningGateway {
    addr: SocketAddr,
    shared: Arc<Shared>,
    server: JoinHandle<Result<(), std::io::Error>>,
    tailers: Vec<JoinHandle<()>>,
    views: GatewayViews,
}

/// Starts the gateway on `config.listen` over `services`.
///
/// Each topic's hub starts tailing its stream at the log's current end; events
/// appended from now on are pushed live, older ones are served by replay and resume.
pub async fn start(
    config: GatewayConfig,
    services: Services,
) -> Result<RunningGateway, GatewayError> {
    if let Some(warning) = config.hmac.as_ref().and_then(|h| h.shared_secret_warning()) {
        tracing::warn!("{warning}");
    }
    let metrics = Arc::new(Metrics::new()?);
    let origins = Arc::new(OriginPolicy::new(
        config.allowed_origins.clone(),
        config.listen.ip().is_loopback(),
        metrics.registry(),
    )?);
    let tls = config.tls.as_ref().map(super::tls::acceptor).transpose()?;
    for (stream, _) in TOPICS {
        // Export every topic's series from the start, at zero.
        metrics.events_dropped.with_label_values(&[stream.as_str()]);
        metrics.subscriptions.with_label_values(&[stream.as_str()]);
    }
    if let Some(w) = &services.workflows {
        // The registry is this gateway's own, so a failure is a bug: refuse to start.
        w.agents()
            .metrics()
            .register(metrics.registry())
            .map_err(MetricsError::from)?;
    }
    let schemas = ParamsSchemas::compile(METHODS.iter().map(|m| (m.name, m.params_schema)))?;
    let log = services.log.clone();
    let views = GatewayViews::start(&services, log.clone()).await?;
    let mut hubs = BTreeMap::new();
    for (stream, _) in TOPICS {
        let epoch = log.epoch(stream).await?;
        let next = log.bounds(stream).await?.next();
        hubs.insert(
            stream,
            Arc::new(Hub::new(
                stream,
                epoch,
                next,
                config.event_buffer_per_client,
                metrics.clone(),
            )),
        );
    }
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(|source| GatewayError::Bind {
            addr: config.listen,
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| GatewayError::Bind {
        addr: config.listen,
        source,
    })?;
    let (shutdown, _) = watch::channel(false);
    let shared = Arc::new(Shared {
        config,
        services,
        metrics,
        hubs,
        index: views.index.clone(),
        workflows: views.workflows.clone(),
        clients: Mutex::new(Default::default()),
        started: Instant::now(),
        started_at: Utc::now(),
        shutdown,
        schemas,
        slots: Default::default(),
    });
    let tailers = shared
        .hubs
        .values()
        .map(|hub| tokio::spawn(hub.clone().run(log.clone(), shared.index.clone())))
        .collect();
    let probe = Arc::new(LogProbe::new(shared.config.health_cache));
    let app = Router::new()
        .route("/", get(upgrade))
        .route("/health", get(health))
        .route("/ready", get(ready))
        .route("/metrics", get(metrics_text))
        .merge(super::console::routes())
        .layer(Extension(origins))
        .layer(Extension(probe))
        .with_state(shared.clone());
    let stop = shared.shutdown.subscribe();
    let server = match tls {
        None => tokio::spawn(serve(listener, app, stop)),
        // `tap_io` is a no-op that lets axum hand the peer address to `ConnectInfo`.
        Some(tls) => tokio::spawn(serve(
            TlsListener::new(listener, addr, tls).tap_io(|_| {}),
            app,
            stop,
        )),
    };
    tracing::info!(%addr, tls = shared.config.tls.is_some(), "gateway listening");
    Ok(RunningGateway {
        addr,
        shared,
        server,
        tailers,
        views,
    })
}

/// Serves `app` on `listener` until `stop` turns true.
async fn serve<L>(
    listener: L,
    app: Router,
    mut stop: watch::Receiver<bool>,
) -> Result<(), std::io::Error>
where
    L: Listener<Addr = SocketAddr>,
    for<'a> SocketAddr: Connected<IncomingStream<'a, L>>,
{
    axum::serve(
        listener,
        app.into_make_service_with_connect_info::<SocketAddr>(),
    )
    .with_graceful_shutdown(async move {
        let _ = stop.wait_for(|s| *s).await;
    })
    .await
}

impl RunningGateway {
    /// The bound address (useful with port 0).
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// Whether the gateway serves `wss://`/`https://` (TLS configured) or plain `ws://`.
    pub fn uses_tls(&self) -> bool {
        self.shared.config.tls.is_some()
    }

    /// The shared state (for in-process inspection, e.g. by benchmarks).
    pub fn shared(&self) -> &Arc<Shared> {
        &self.shared
    }

    /// Stops accepting connections, closes every client with 1001 `server_shutdown`
    /// (each gets its `disconnected` presence event), stops the tails and flushes the
    /// log. Waits at most 5 s for clients to go.
    pub async fn shutdown(self) -> Result<(), GatewayError> {
        let _ = self.shared.shutdown.send(true);
        let deadline = Instant::now() + Duration::from_secs(5);
        while !self.shared.clients().is_empty() && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        for tailer in &self.tailers {
            tailer.abort();
        }
        match tokio::time::timeout(Duration::from_secs(5), self.server).await {
            Ok(Ok(Ok(()))) | Err(_) => {}
            Ok(Ok(Err(e))) => return Err(GatewayError::Serve(e.to_string())),
            Ok(Err(e)) => return Err(GatewayError::Serve(e.to_string())),
        }
        self.views.stop().await?;
        self.shared.services.log.flush().await?;
        Ok(())
    }
}

async fn upgrade(
    State(gw): State<Arc<Shared>>,
    ConnectInfo(remote): ConnectInfo<SocketAddr>,
    Extension(origins): Extension<Arc<OriginPolicy>>,
    headers: HeaderMap,
    ws: WebSocketUpgrade,
) -> Response {
    // Refused before upgrading: a page from a foreign origin never gets a socket.
    if let Err(refused) = origins.check(&headers) {
        return refused.into_response();
    }
    // Frames up to twice the limit are read and refused by the connection with 1009;
    // larger ones are cut off by the WebSocket layer itself.
    let hard = gw
        .config
        .max_message_size_bytes
        .saturating_mul(2)
        .max(64 * 1024);
    ws.max_message_size(hard)
        .max_frame_size(hard)
        .on_upgrade(move |socket| {
            // Every line logged while serving this connection carries its client id.
            let span = tracing::info_span!(
                "client",
                client_id = tracing::field::Empty,
                remote = %remote
            );
            connection::serve(gw, socket, Some(remote)).instrument(span)
        })
}

async fn health(State(gw): State<Arc<Shared>>) -> Response {
    let uptime = gw.started.elapsed().as_secs_f64();
    if gw.shutting_down() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(json!({"status": "shutting_down", "uptime_seconds": uptime})),
        )
            .into_response();
    }
    let stalled: Vec<&str> = gw
        .hubs
        .values()
        .filter(|h| !h.healthy())
        .map(|h| h.stream.as_str())
        .collect();
    if !stalled.is_empty() {
        return (
            StatusCode::SERVICE_UNAVAILABLE,
            Json(
                json!({"status": "degraded", "stalled_topics": stalled, "uptime_seconds": uptime}),
            ),
        )
            .into_response();
    }
    (
        StatusCode::OK,
        Json(json!({"status": "ok", "uptime_seconds": uptime})),
    )
        .into_response()
}

/// `/ready`: from the shared [`LogProbe`] snapshot (no log connection per request).
async fn ready(
    State(gw): State<Arc<Shared>>,
    Extension(probe): Extension<Arc<LogProbe>>,
) -> Response {
    let snapshot = probe.snapshot(gw.services.log.as_ref()).await;
    let log_status = match snapshot.bounds.get(&Stream::KernelEvents) {
        Some(Ok(_)) => json!({"healthy": true, "location": gw.services.log.location(),
                             "latency_ms": snapshot.latency_ms,
                             "checked_ms_ago": snapshot.taken.elapsed().as_millis() as u64}),
        Some(Err(e)) => json!({"healthy": false, "error": e}),
        None => json!({"healthy": false, "error": "not probed"}),
    };
    let tails_ok = gw.hubs.values().all(|h| h.healthy());
    let projections =
        super::readiness::projections(gw.services.views.as_ref(), &snapshot, &gw.metrics);
    let components = json!({
        "log": log_status,
        "topics": {"healthy": tails_ok},
        "projections": projections,
        "governance": super::readiness::governance(gw.services.governance.as_ref()),
        "kernel": {"healthy": true, "mode": gw.services.kernel.as_ref().map_or("none", |k| k.mode())},
        "gateway": {"healthy": !gw.shutting_down()},
    });
    let all = ["log", "topics", "projections", "governance", "gateway"]
        .iter()
        .all(|k| components[k]["healthy"].as_bool() == Some(true));
    let status = if all {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    (
        status,
        Json(json!({"ready": all, "components": components})),
    )
        .into_response()
}

/// `/metrics`: gauges of log and view lag from the shared [`LogProbe`] snapshot.
async fn metrics_text(
    State(gw): State<Arc<Shared>>,
    Extension(probe): Extension<Arc<LogProbe>>,
) -> Response {
    let snapshot = probe.snapshot(gw.services.log.as_ref()).await;
    super::readiness::refresh_lag(gw.services.views.as_ref(), &snapshot, &gw.metrics);
    for (stream, hub) in &gw.hubs {
        if let Some(Ok(bounds)) = snapshot.bounds.get(stream) {
            let next = bounds.next();
            let lag = next.saturating_sub(hub.next());
            gw.metrics
                .log_lag
                .with_label_values(&[stream.as_str()])
                .set(i64::try_from(lag).unwrap_or(i64::MAX));
            gw.metrics
                .log_last_sequence
                .with_label_values(&[stream.as_str()])
                .set(
                    bounds
                        .last
                        .map_or(-1, |l| i64::try_from(l).unwrap_or(i64::MAX)),
                );
        }
    }
    let gauge = |v: u64| i64::try_from(v).unwrap_or(i64::MAX);
    if let Some(views) = &gw.services.views {
        let (indexed, in_memory) = {
            let decisions = views.decisions.read();
            (decisions.len(), decisions.in_memory())
        };
        gw.metrics.decisions_indexed.set(gauge(indexed as u64));
        gw.metrics
            .decision_bodies_in_memory
            .set(gauge(in_memory as u64));
        let packets = views.packets.read().in_memory();
        gw.metrics.packets_in_memory.set(gauge(packets as u64));
        let threads = {
            let t = views.threads.read();
            [
                ("packets", "all", t.packet_count()),
                ("packets", "memory", t.packets_in_memory()),
                ("threads", "all", t.thread_count()),
                ("threads", "memory", t.threads_in_memory()),
            ]
        };
        for (kind, held, n) in threads {
            gw.metrics
                .thread_entries
                .with_label_values(&[kind, held])
                .set(gauge(n as u64));
        }
    }
    if let Some(super::kernel_port::KernelPort::Local(kernel)) = &gw.services.kernel {
        if let Ok((counts, scratch)) = kernel.read(|s| (s.entry_counts(), s.scratch_bytes())).await
        {
            for (kind, held, n) in counts {
                gw.metrics
                    .kernel_entries
                    .with_label_values(&[kind, held])
                    .set(gauge(n as u64));
            }
            for (kind, bytes) in scratch {
                gw.metrics
                    .kernel_scratch_bytes
                    .with_label_values(&[kind])
                    .set(gauge(bytes));
            }
        }
    }
    if let Some(governance) = &gw.services.governance {
        gw.metrics
            .governance_renewals
            .set(gauge(governance.engine_renewals()));
        gw.metrics
            .governance_engine_bytes
            .set(gauge(governance.engine_spent()));
        gw.metrics
            .governance_waiting_packets
            .set(gauge(governance.waiting_packets() as u64));
        gw.metrics
            .governance_decisions_reused
            .set(gauge(governance.decisions_reused()));
    }
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/plain; version=0.0.4")],
        gw.metrics.render(),
    )
        .into_response()
}

/// Renders one event as the gateway would push it (for benchmarks and tools).
pub fn render_event(
    envelope: orchestrata_schemas::events::Envelope,
) -> Result<TopicEvent, serde_json::Error> {
    // No packet index: a transition is rendered with the facts it carries itself.
    let facts =
        super::topic::facts::facts_of(&envelope, &orchestrata_projections::PacketIndex::default());
    TopicEvent::new(envelope, facts)
}
