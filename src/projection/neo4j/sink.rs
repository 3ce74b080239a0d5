//! [`spawn_neo4j_sink`]: keeps Neo4j in step with a live graph view.

use std::time::Duration;

use orchestrata_projections::GraphView;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::plan::{self, Statement, Written, BATCH_ROWS};
use super::{Neo4jConfig, Neo4jError};
use crate::projection::ViewHandle;

/// How the sink runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SinkConfig {
    /// Look for changes this often.
    pub interval: Duration,
    /// Rows per statement.
    pub batch_rows: usize,
}

impl Default for SinkConfig {
    /// Every 2 s, 500 rows per statement. A round diffs the whole view (about 1.6 s
    /// for a full 200,000-event graph, see `benches/knowledge.rs`), and is skipped when
    /// the view has not moved since the last write.
    fn default() -> Self {
        SinkConfig {
            interval: Duration::from_secs(2),
            batch_rows: BATCH_ROWS,
        }
    }
}

/// A running sink.
pub struct Neo4jSink {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<()>,
}

impl Neo4jSink {
    /// Stops after the current round.
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        let _ = self.task.await;
    }
}

/// Writes the graph view behind `handle` to the Neo4j of `config`, and keeps doing so
/// as the view changes: every `interval` (when the view's checkpoint moved) it diffs the view against what it wrote
/// ([`plan::diff`]) and runs the batched `MERGE` / `DETACH DELETE` statements
/// ([`plan::statements`]) in one transaction. A failed round (Neo4j down, ERR-010)
/// marks nothing written and is retried on the next tick, so writes are deferred, not
/// lost. `orchestrata up` starts it only when `gateway.neo4j` is configured.
pub fn spawn_neo4j_sink(
    handle: ViewHandle<GraphView>,
    config: Neo4jConfig,
    sink: SinkConfig,
) -> Neo4jSink {
    let (stop, mut stopped) = oneshot::channel();
    let task = tokio::spawn(async move {
        let mut written = Written::default();
        let mut constrained = false;
        let mut planned = None;
        let mut ticker = tokio::time::interval(sink.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                _ = ticker.tick() => {}
            }
            if !constrained {
                match run(&config, plan::constraints()).await {
                    Ok(()) => constrained = true,
                    Err(e) => {
                        tracing::warn!(error = %e, "neo4j sink: constraints deferred");
                        continue;
                    }
                }
            }
            // Nothing folded since the last successful write: nothing to diff.
            let checkpoint = handle.checkpoint();
            if planned.as_ref() == Some(&checkpoint) {
                continue;
            }
            // Plan under the read lock, write without it.
            let (statements, snapshot) = {
                let view = handle.read();
                let changes = plan::diff(&view, &written);
                if changes.is_empty() {
                    planned = Some(checkpoint);
                    continue;
                }
                let mut after = written.clone();
                after.commit(&changes);
                (plan::statements(&changes, sink.batch_rows), after)
            };
            let count = statements.len();
            match run(&config, statements).await {
                Ok(()) => {
                    written = snapshot;
                    planned = Some(checkpoint);
                    tracing::debug!(statements = count, "neo4j sink: wrote graph changes");
                }
                Err(e) => tracing::warn!(error = %e, "neo4j sink: writes deferred"),
            }
        }
    });
    Neo4jSink {
        stop: Some(stop),
        task,
    }
}

/// Runs `statements` in one transaction.
async fn run(config: &Neo4jConfig, statements: Vec<Statement>) -> Result<(), Neo4jError> {
    let fail = |e| Neo4jError::from_driver(&config.uri, e);
    let graph = super::graph(config).await?;
    let mut txn = graph.start_txn().await.map_err(fail)?;
    for s in statements {
        let mut q = neo4rs::query(&s.cypher);
        if let serde_json::Value::Object(params) = s.params {
            for (k, v) in params {
                q = q.param(&k, super::bolt(v)?);
            }
        }
        txn.run(q).await.map_err(fail)?;
    }
    txn.commit().await.map_err(fail)
}
