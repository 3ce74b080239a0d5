//! [`spawn_neo4j_sink`]: keeps Neo4j in step with a live graph view.

use std::time::Duration;

use orchestrata_projections::GraphView;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use super::dialect::{self, Dialect};
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
        let mut dialect = None;
        let mut indexed = false;
        let mut planned = None;
        let mut ticker = tokio::time::interval(sink.interval);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tokio::select! {
                _ = &mut stopped => break,
                _ = ticker.tick() => {}
            }
            let d = match dialect {
                Some(d) => d,
                None => match dialect::detect(&config).await {
                    Ok(d) => *dialect.insert(d),
                    Err(e) => {
                        tracing::warn!(error = %e, "neo4j sink: writes deferred (server not reached)");
                        continue;
                    }
                },
            };
            if !indexed {
                match apply_schema(&config, d).await {
                    Ok(()) => indexed = true,
                    Err(e) => {
                        tracing::warn!(error = %e, "neo4j sink: schema and writes deferred");
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
            match write(&config, statements).await {
                Ok(refused) => {
                    written = snapshot;
                    planned = Some(checkpoint);
                    tracing::debug!(
                        statements = count,
                        refused,
                        "neo4j sink: wrote graph changes"
                    );
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

/// Applies `dialect`'s schema statements, each on its own. A statement the server
/// refuses is logged and skipped (an index that already exists is not an error):
/// a refusal is the same on every retry, so retrying it would stall the sink forever.
/// `Err` only when the server could not be reached (retried next round).
async fn apply_schema(config: &Neo4jConfig, dialect: Dialect) -> Result<(), Neo4jError> {
    for s in dialect.schema() {
        match run_alone(config, &s).await {
            Ok(()) => {}
            Err(Neo4jError::Refused { message, .. }) if dialect.already_applied(&message) => {}
            Err(Neo4jError::Refused { code, message }) => tracing::error!(
                ?dialect, statement = %s.cypher, %code, %message,
                "neo4j sink: the server refused a schema statement; writing without it"
            ),
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

/// Writes a round's statements in one transaction. When the server refuses one of
/// them (a statement error, not an outage), the round is written statement by
/// statement instead, and each refused statement is logged and skipped: it would be
/// refused on every retry, and must not hold back the rest. Answers how many were
/// refused; `Err` when the server could not be reached (nothing counts as written).
async fn write(config: &Neo4jConfig, statements: Vec<Statement>) -> Result<usize, Neo4jError> {
    match run(config, statements.clone()).await {
        Ok(()) => return Ok(0),
        Err(Neo4jError::Refused { code, message }) => tracing::warn!(
            %code, %message,
            "neo4j sink: the server refused a statement of the round; writing one by one"
        ),
        Err(e) => return Err(e),
    }
    let mut refused = 0;
    for s in statements {
        match run(config, vec![s.clone()]).await {
            Ok(()) => {}
            Err(Neo4jError::Refused { code, message }) => {
                refused += 1;
                tracing::error!(
                    statement = %s.cypher, %code, %message,
                    "neo4j sink: the server refused a statement; its rows are skipped"
                );
            }
            Err(e) => return Err(e),
        }
    }
    Ok(refused)
}

/// Runs one statement in an auto-commit transaction, the way schema statements are
/// meant to run (Neo4j refuses schema and data changes in one transaction). FalkorDB
/// 4.16.3 also crashed, now and then, creating an index inside an explicit
/// transaction on a graph that did not exist yet (`BEGIN`, `RUN CREATE INDEX …`
/// answered, then the server aborted with "stack smashing").
async fn run_alone(config: &Neo4jConfig, s: &Statement) -> Result<(), Neo4jError> {
    let graph = super::graph(config).await?;
    graph
        .run(query(s)?)
        .await
        .map_err(|e| Neo4jError::from_driver(&config.uri, e))
}

/// The driver's query for `s`, its parameters bound.
fn query(s: &Statement) -> Result<neo4rs::Query, Neo4jError> {
    let mut q = neo4rs::query(&s.cypher);
    if let serde_json::Value::Object(params) = &s.params {
        for (k, v) in params {
            q = q.param(k, super::bolt(v.clone())?);
        }
    }
    Ok(q)
}

/// Runs `statements` in one transaction.
async fn run(config: &Neo4jConfig, statements: Vec<Statement>) -> Result<(), Neo4jError> {
    let fail = |e| Neo4jError::from_driver(&config.uri, e);
    let graph = super::graph(config).await?;
    let mut txn = graph.start_txn().await.map_err(fail)?;
    for s in &statements {
        txn.run(query(s)?).await.map_err(fail)?;
    }
    txn.commit().await.map_err(fail)
}
