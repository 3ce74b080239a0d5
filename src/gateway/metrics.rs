//! The gateway's Prometheus metrics: the nine `orchestrata_gateway_*` series of the
//! contract, plus log lag gauges filled at scrape time.

use prometheus::{
    Encoder, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge, IntGaugeVec, Opts,
    Registry, TextEncoder,
};

/// All gateway metrics, registered in their own registry.
pub struct Metrics {
    registry: Registry,
    /// Clients connected now.
    pub connected_clients: IntGauge,
    /// Connections accepted since start.
    pub total_connections: IntCounter,
    /// Frames received from clients.
    pub messages_received: IntCounter,
    /// Frames sent to clients (responses and notifications).
    pub messages_sent: IntCounter,
    /// RPC handling time by method.
    pub rpc_latency: HistogramVec,
    /// Live subscriptions by topic.
    pub subscriptions: IntGaugeVec,
    /// Successful authentications.
    pub auth_success: IntCounter,
    /// Failed authentications.
    pub auth_failure: IntCounter,
    /// Events not delivered (a slow client was dropped) by topic.
    pub events_dropped: IntCounterVec,
    /// Log events a topic's tailer has not delivered yet.
    pub log_lag: IntGaugeVec,
    /// Last sequence of each stream in the log.
    pub log_last_sequence: IntGaugeVec,
    /// Log events each view (`view`, `stream`) has not applied yet.
    pub projection_lag: IntGaugeVec,
    /// Requests running now, over every connection (`gateway::inflight`).
    pub rpc_in_flight: IntGauge,
    /// Requests cancelled before they finished because their connection closed
    /// (ERR-012).
    pub rpc_cancelled: IntCounter,
    /// Fresh Prolog machines that replaced the serving one (`governance.engine_renew_mb`).
    pub governance_renewals: IntGauge,
    /// What the serving Prolog machine is estimated to have taken on since it was built.
    pub governance_engine_bytes: IntGauge,
    /// Packets whose fact changes wait to be compiled into the serving machine
    /// (`governance/pending.rs`): what the next read of packet facts will compile.
    pub governance_waiting_packets: IntGauge,
    /// Decisions answered without the engine since start: `cacheable_with/2` actions
    /// reused while the roster held (`governance/roster_cache.rs`).
    pub governance_decisions_reused: IntGauge,
    /// Decisions the decision index holds, and how many of them with their body in
    /// memory (the others are read from the view store when asked for).
    pub decisions_indexed: IntGauge,
    /// See [`Metrics::decisions_indexed`].
    pub decision_bodies_in_memory: IntGauge,
    /// Packets the packet index keeps in memory (the rest are read from the view
    /// store when a filter needs them).
    pub packets_in_memory: IntGauge,
    /// The thread view's packets and threads (`kind`), all of them and those in
    /// memory (`held`: `all`, `memory`); the rest are read from the view store.
    pub thread_entries: IntGaugeVec,
    /// The kernel's aggregate: packets and threads, all and held in memory.
    pub kernel_entries: IntGaugeVec,
    /// Size on disk of the kernel's scratch files of cold packets and threads (kind).
    pub kernel_scratch_bytes: IntGaugeVec,
}

/// A metric failed to register (a programming error caught by the first test).
#[derive(Debug, thiserror::Error)]
#[error("metric registration failed: {0}")]
pub struct MetricsError(#[from] prometheus::Error);

impl Metrics {
    /// Creates and registers every metric.
    pub fn new() -> Result<Self, MetricsError> {
        let registry = Registry::new();
        let connected_clients = IntGauge::new(
            "orchestrata_gateway_connected_clients",
            "WebSocket clients connected now",
        )?;
        let total_connections = IntCounter::new(
            "orchestrata_gateway_total_connections",
            "WebSocket connections accepted since start",
        )?;
        let messages_received = IntCounter::new(
            "orchestrata_gateway_messages_received_total",
            "Frames received from clients",
        )?;
        let messages_sent = IntCounter::new(
            "orchestrata_gateway_messages_sent_total",
            "Frames sent to clients",
        )?;
        let rpc_latency = HistogramVec::new(
            HistogramOpts::new(
                "orchestrata_gateway_rpc_latency_seconds",
                "Time to handle one RPC, by method",
            )
            .buckets(vec![
                0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 1.0,
            ]),
            &["method"],
        )?;
        let subscriptions = IntGaugeVec::new(
            Opts::new(
                "orchestrata_gateway_subscription_count",
                "Live subscriptions by topic",
            ),
            &["topic"],
        )?;
        let auth_success = IntCounter::new(
            "orchestrata_gateway_auth_success_total",
            "Successful authentications",
        )?;
        let auth_failure = IntCounter::new(
            "orchestrata_gateway_auth_failure_total",
            "Failed authentications",
        )?;
        let events_dropped = IntCounterVec::new(
            Opts::new(
                "orchestrata_gateway_events_dropped_total",
                "Events not delivered because a client's queue was full, by topic",
            ),
            &["topic"],
        )?;
        let log_lag = IntGaugeVec::new(
            Opts::new(
                "orchestrata_gateway_log_lag_events",
                "Events in the log a topic's tailer has not pushed yet",
            ),
            &["topic"],
        )?;
        let log_last_sequence = IntGaugeVec::new(
            Opts::new(
                "orchestrata_log_last_sequence",
                "Newest sequence of each log stream (-1: empty)",
            ),
            &["stream"],
        )?;
        registry.register(Box::new(connected_clients.clone()))?;
        registry.register(Box::new(total_connections.clone()))?;
        registry.register(Box::new(messages_received.clone()))?;
        registry.register(Box::new(messages_sent.clone()))?;
        registry.register(Box::new(rpc_latency.clone()))?;
        registry.register(Box::new(subscriptions.clone()))?;
        registry.register(Box::new(auth_success.clone()))?;
        registry.register(Box::new(auth_failure.clone()))?;
        registry.register(Box::new(events_dropped.clone()))?;
        registry.register(Box::new(log_lag.clone()))?;
        registry.register(Box::new(log_last_sequence.clone()))?;
        let projection_lag = IntGaugeVec::new(
            Opts::new(
                "orchestrata_projection_lag_events",
                "Events of a stream in the log that a view has not applied yet",
            ),
            &["view", "stream"],
        )?;
        registry.register(Box::new(projection_lag.clone()))?;
        let rpc_in_flight = IntGauge::new(
            "orchestrata_gateway_rpc_in_flight",
            "Requests running now, over every connection",
        )?;
        let rpc_cancelled = IntCounter::new(
            "orchestrata_gateway_rpc_cancelled_total",
            "Requests cancelled unfinished because their connection closed",
        )?;
        registry.register(Box::new(rpc_in_flight.clone()))?;
        registry.register(Box::new(rpc_cancelled.clone()))?;
        let governance_renewals = IntGauge::new(
            "orchestrata_governance_engine_renewals",
            "Fresh Prolog machines that replaced the serving one after a budget of work",
        )?;
        let governance_engine_bytes = IntGauge::new(
            "orchestrata_governance_engine_estimated_bytes",
            "Memory the serving Prolog machine is estimated to have taken on since it was built",
        )?;
        registry.register(Box::new(governance_renewals.clone()))?;
        let governance_waiting_packets = IntGauge::new(
            "orchestrata_governance_engine_waiting_packets",
            "Packets whose fact changes wait to be compiled until a goal reads packet facts",
        )?;
        registry.register(Box::new(governance_engine_bytes.clone()))?;
        registry.register(Box::new(governance_waiting_packets.clone()))?;
        let governance_decisions_reused = IntGauge::new(
            "orchestrata_governance_decisions_reused",
            "Decisions answered without the engine since start, reused while the roster held",
        )?;
        registry.register(Box::new(governance_decisions_reused.clone()))?;
        let decisions_indexed = IntGauge::new(
            "orchestrata_projection_decisions",
            "Decisions the decision index holds",
        )?;
        let decision_bodies_in_memory = IntGauge::new(
            "orchestrata_projection_decision_bodies_in_memory",
            "Decisions whose body the decision index keeps in memory (the rest are read from the view store)",
        )?;
        registry.register(Box::new(decisions_indexed.clone()))?;
        registry.register(Box::new(decision_bodies_in_memory.clone()))?;
        let packets_in_memory = IntGauge::new(
            "orchestrata_projection_packet_index_in_memory",
            "Packets the packet index keeps in memory (the rest are read from the view store)",
        )?;
        registry.register(Box::new(packets_in_memory.clone()))?;
        let thread_entries = IntGaugeVec::new(
            Opts::new(
                "orchestrata_projection_thread_entries",
                "Packets and threads of the thread view (kind), all and those kept in memory (held)",
            ),
            &["kind", "held"],
        )?;
        registry.register(Box::new(thread_entries.clone()))?;
        let kernel_entries = IntGaugeVec::new(
            Opts::new(
                "orchestrata_kernel_entries",
                "Packets and threads of the kernel's aggregate (kind), all and those kept in memory (held; the rest are spilled)",
            ),
            &["kind", "held"],
        )?;
        registry.register(Box::new(kernel_entries.clone()))?;
        let kernel_scratch_bytes = IntGaugeVec::new(
            Opts::new(
                "orchestrata_kernel_scratch_bytes",
                "Size on disk of the kernel's scratch files (unlinked) holding its cold packets and threads (kind)",
            ),
            &["kind"],
        )?;
        registry.register(Box::new(kernel_scratch_bytes.clone()))?;
        Ok(Metrics {
            registry,
            connected_clients,
            total_connections,
            messages_received,
            messages_sent,
            rpc_latency,
            subscriptions,
            auth_success,
            auth_failure,
            events_dropped,
            log_lag,
            log_last_sequence,
            projection_lag,
            rpc_in_flight,
            rpc_cancelled,
            governance_renewals,
            governance_engine_bytes,
            governance_waiting_packets,
            governance_decisions_reused,
            decisions_indexed,
            decision_bodies_in_memory,
            packets_in_memory,
            thread_entries,
            kernel_entries,
            kernel_scratch_bytes,
        })
    }

    /// The registry, for other components' series (e.g. the agents' metrics).
    pub fn registry(&self) -> &Registry {
        &self.registry
    }

    /// The Prometheus text exposition of every metric.
    pub fn render(&self) -> String {
        let mut out = Vec::new();
        if let Err(e) = TextEncoder::new().encode(&self.registry.gather(), &mut out) {
            return format!("# encoding metrics failed: {e}\n");
        }
        String::from_utf8_lossy(&out).into_owned()
    }
}
