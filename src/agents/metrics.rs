//! [`AgentMetrics`]: spawn time, queries, escalations and live agents, as Prometheus
//! series `orchestrata_agents_*`. Register them into the gateway's registry
//! ([`AgentMetrics::register`]) to have them on `/metrics`.

use std::time::Duration;

use prometheus::{Histogram, HistogramOpts, IntCounter, IntCounterVec, IntGauge, Opts, Registry};

/// See the module docs. Cheap to clone (the series are shared).
#[derive(Clone)]
pub struct AgentMetrics {
    /// Time to spawn a junior (command to applied event), seconds.
    pub spawn_seconds: Histogram,
    /// Reads of the agent tree.
    pub queries: IntCounter,
    /// Escalations by target kind (`volk` or `human`).
    pub escalations: IntCounterVec,
    /// Terminations.
    pub terminations: IntCounter,
    /// Agents live now (seniors and juniors).
    pub live: IntGauge,
}

impl AgentMetrics {
    /// Fresh, unregistered series.
    pub fn new() -> Result<Self, prometheus::Error> {
        let buckets = vec![1e-5, 5e-5, 1e-4, 5e-4, 1e-3, 5e-3, 1e-2, 5e-2, 0.1];
        Ok(AgentMetrics {
            spawn_seconds: Histogram::with_opts(
                HistogramOpts::new(
                    "orchestrata_agents_spawn_seconds",
                    "Time to spawn a junior Volk",
                )
                .buckets(buckets),
            )?,
            queries: IntCounter::new(
                "orchestrata_agents_queries_total",
                "Reads of the agent hierarchy",
            )?,
            escalations: IntCounterVec::new(
                Opts::new(
                    "orchestrata_agents_escalations_total",
                    "Escalations by target",
                ),
                &["target"],
            )?,
            terminations: IntCounter::new(
                "orchestrata_agents_terminations_total",
                "Agents terminated (with their subtrees counted once)",
            )?,
            live: IntGauge::new("orchestrata_agents_live", "Agents live now")?,
        })
    }

    /// Registers every series into `registry`.
    pub fn register(&self, registry: &Registry) -> Result<(), prometheus::Error> {
        registry.register(Box::new(self.spawn_seconds.clone()))?;
        registry.register(Box::new(self.queries.clone()))?;
        registry.register(Box::new(self.escalations.clone()))?;
        registry.register(Box::new(self.terminations.clone()))?;
        registry.register(Box::new(self.live.clone()))?;
        Ok(())
    }

    pub(crate) fn spawned(&self, took: Duration) {
        self.spawn_seconds.observe(took.as_secs_f64());
    }

    pub(crate) fn queried(&self) {
        self.queries.inc();
    }

    pub(crate) fn escalated(&self, human: bool) {
        let target = if human { "human" } else { "volk" };
        self.escalations.with_label_values(&[target]).inc();
    }

    pub(crate) fn terminated(&self) {
        self.terminations.inc();
    }

    pub(crate) fn set_live(&self, n: usize) {
        self.live.set(i64::try_from(n).unwrap_or(i64::MAX));
    }
}
