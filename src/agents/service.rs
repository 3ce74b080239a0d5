//! [`Agents`]: the coordination API seniors, the gateway and tests use.
//!
//! Every method is a kernel command (so an event, governed when the kernel runs with
//! governance) or a read of the kernel's state; nothing here keeps state of its own.
//! Spawning picks a free alias, escalation resolves the next hop with
//! [`EscalationPaths`] before asking the kernel, and the metrics count what happened.

use std::sync::Arc;
use std::time::Instant;

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{Command, CommandKind};
use tokio::sync::Notify;
use uuid::Uuid;

use super::error::AgentError;
use super::escalation::{EscalationPaths, Resolution};
use super::metrics::AgentMetrics;
use crate::kernel::{Kernel, Outcome};
use orchestrata_projections::agents::{AgentNode, AgentTree, HumanEscalation, Lifespan};

/// How a junior's life is bounded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LifespanSpec {
    /// Dies after this many milliseconds.
    Deadline(u64),
    /// Dies when this task completes ([`Agents::complete_task`]).
    Task(String),
    /// Dies when this session closes ([`Agents::close_session`]).
    Session(String),
}

/// What to spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpawnSpec {
    /// The senior it reports to.
    pub parent: String,
    /// `cli`, `api` or `browser`.
    pub driver: String,
    /// What it is for.
    pub purpose: String,
    /// Capabilities it may use (within the parent's).
    pub scope: Vec<String>,
    /// How long it lives.
    pub lifespan: LifespanSpec,
    /// A specific alias; a free one is picked when `None`.
    pub alias: Option<String>,
}

impl SpawnSpec {
    /// A junior of `parent` on `driver`, bound to `task_id`, with an empty scope.
    pub fn for_task(parent: &str, driver: &str, purpose: &str, task_id: &str) -> Self {
        SpawnSpec {
            parent: parent.into(),
            driver: driver.into(),
            purpose: purpose.into(),
            scope: Vec::new(),
            lifespan: LifespanSpec::Task(task_id.into()),
            alias: None,
        }
    }
}

/// See the module docs. Cheap to clone.
#[derive(Clone)]
pub struct Agents {
    kernel: Kernel,
    paths: Arc<EscalationPaths>,
    metrics: AgentMetrics,
    changed: Arc<Notify>,
}

impl std::fmt::Debug for Agents {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agents")
            .field("paths", &self.paths)
            .finish()
    }
}

impl Agents {
    /// Coordination over `kernel`, escalating along `paths`, counting into `metrics`.
    pub fn new(kernel: Kernel, paths: EscalationPaths, metrics: AgentMetrics) -> Self {
        Agents {
            kernel,
            paths: Arc::new(paths),
            metrics,
            changed: Arc::new(Notify::new()),
        }
    }

    /// The kernel underneath.
    pub fn kernel(&self) -> &Kernel {
        &self.kernel
    }

    /// The metrics.
    pub fn metrics(&self) -> &AgentMetrics {
        &self.metrics
    }

    /// Signalled after every spawn/terminate (the lifespan supervisor waits on it).
    pub(crate) fn changed(&self) -> &Arc<Notify> {
        &self.changed
    }

    async fn run(&self, issuer: &str, action: CommandKind) -> Result<Outcome, AgentError> {
        let command = Command {
            id: Uuid::new_v4(),
            principal: None,
            issuer: issuer.to_owned(),
            action,
        };
        Ok(self.kernel.execute(command).await?)
    }

    /// Spawns a junior; returns its alias. The parent issues the command (governance
    /// decides `volk.register` for it with `kind = junior`).
    pub async fn spawn(&self, spec: SpawnSpec) -> Result<String, AgentError> {
        let started = Instant::now();
        let alias = match spec.alias {
            Some(a) => a,
            None => self.read(free_alias).await??,
        };
        let (lifespan_ms, task_id, session_id) = match spec.lifespan {
            LifespanSpec::Deadline(ms) => (
                Some(
                    i64::try_from(ms)
                        .map_err(|_| AgentError::invalid("lifespan_ms", "too large"))?,
                ),
                None,
                None,
            ),
            LifespanSpec::Task(t) => (None, Some(t), None),
            LifespanSpec::Session(s) => (None, None, Some(s)),
        };
        self.run(
            &spec.parent,
            CommandKind::SpawnVolk {
                alias: alias.clone(),
                parent: spec.parent.clone(),
                driver: spec.driver,
                purpose: spec.purpose,
                scope: spec.scope,
                lifespan_ms,
                task_id,
                session_id,
            },
        )
        .await?;
        self.metrics.spawned(started.elapsed());
        self.refresh_live().await;
        self.changed.notify_one();
        Ok(alias)
    }

    /// Terminates `alias` and its subtree; its parent is told by a packet. The parent
    /// issues the command (or the Volk itself when it is a root).
    pub async fn terminate(&self, alias: &str, reason: &str) -> Result<(), AgentError> {
        let issuer = self
            .read({
                let alias = alias.to_owned();
                move |t| t.live(&alias).and_then(|n| n.parent.clone())
            })
            .await?
            .unwrap_or_else(|| alias.to_owned());
        self.run(
            &issuer,
            CommandKind::TerminateVolk {
                alias: alias.into(),
                reason: reason.into(),
            },
        )
        .await?;
        self.metrics.terminated();
        self.refresh_live().await;
        self.changed.notify_one();
        Ok(())
    }

    /// Escalates from `alias` one hop up (context preserved, the target told by a
    /// packet; beyond the root, the human queue). `prior` is the path so far.
    pub async fn escalate(
        &self,
        alias: &str,
        reason: &str,
        thread_id: Option<&str>,
        context: serde_json::Value,
        prior: &[String],
    ) -> Result<Resolution, AgentError> {
        let resolution = {
            let paths = self.paths.clone();
            let (alias, prior) = (alias.to_owned(), prior.to_vec());
            self.read(move |t| paths.resolve(t, &alias, &prior))
                .await??
        };
        self.run(
            alias,
            CommandKind::EscalateVolk {
                alias: alias.into(),
                to: resolution.target.clone(),
                path: resolution.path.clone(),
                reason: reason.into(),
                thread_id: thread_id.map(str::to_owned),
                context: Json(context),
            },
        )
        .await?;
        self.metrics.escalated(resolution.is_human());
        Ok(resolution)
    }

    /// Records what `observer` saw of `alias`'s health (`health_changed` when it
    /// changed): a junior whose driver failed is `unhealthy`.
    pub async fn set_health(
        &self,
        observer: &str,
        alias: &str,
        health: orchestrata_schemas::events::types::Health,
        details: Option<String>,
    ) -> Result<(), AgentError> {
        self.run(
            observer,
            CommandKind::SetVolkHealth {
                alias: alias.into(),
                health,
                details,
            },
        )
        .await?;
        Ok(())
    }

    /// Escalates from `alias` hop by hop until the matter reaches the human queue
    /// (each hop governed and on the log, as [`Agents::escalate`]); returns the last
    /// hop. A senior that cannot go on (a junior failed after its retries) uses this.
    pub async fn escalate_to_human(
        &self,
        alias: &str,
        reason: &str,
        thread_id: Option<&str>,
        context: serde_json::Value,
    ) -> Result<Resolution, AgentError> {
        let mut from = alias.to_owned();
        let mut path = Vec::new();
        // A path visits each live ancestor at most once; the bound only guards a
        // declared path that loops.
        for _ in 0..=super::limits::MAX_DEPTH {
            let hop = self
                .escalate(&from, reason, thread_id, context.clone(), &path)
                .await?;
            if hop.is_human() {
                return Ok(hop);
            }
            from = hop.target.clone();
            path = hop.path;
        }
        Err(AgentError::invalid(
            "escalation",
            format!(
                "no way from {alias} to the human queue: {}",
                path.join(" -> ")
            ),
        ))
    }

    /// Terminates every live junior bound to a task whose id starts with `prefix` (a
    /// workflow run's tasks), with `reason`; returns their aliases.
    pub async fn terminate_tasks(
        &self,
        prefix: &str,
        reason: &str,
    ) -> Result<Vec<String>, AgentError> {
        let prefix = prefix.to_owned();
        let bound = self.read(move |t| t.bound_to_tasks(&prefix)).await?;
        self.terminate_each(bound, reason).await
    }

    /// Terminates every live junior with `reason`; returns their aliases. At start a
    /// process owns no junior's driver, so a junior the log still shows live was
    /// interrupted by the last stop.
    pub async fn terminate_live_juniors(&self, reason: &str) -> Result<Vec<String>, AgentError> {
        let live = self.read(|t| t.live_juniors()).await?;
        self.terminate_each(live, reason).await
    }

    /// The task is done: every live junior bound to it terminates (reason
    /// `task_completed`). Returns their aliases.
    pub async fn complete_task(&self, task_id: &str) -> Result<Vec<String>, AgentError> {
        self.terminate_bound(Lifespan::Task(task_id.into()), "task_completed")
            .await
    }

    /// Closes `session_id` (kernel `close_session`, issued by `issuer`) and terminates
    /// every junior bound to it (reason `session_closed`).
    pub async fn close_session(
        &self,
        issuer: &str,
        session_id: &str,
        summary: &str,
    ) -> Result<Vec<String>, AgentError> {
        self.run(
            issuer,
            CommandKind::CloseSession {
                session_id: session_id.into(),
                summary: summary.into(),
                carryover: Vec::new(),
            },
        )
        .await?;
        self.terminate_bound(Lifespan::Session(session_id.into()), "session_closed")
            .await
    }

    async fn terminate_bound(
        &self,
        binding: Lifespan,
        reason: &str,
    ) -> Result<Vec<String>, AgentError> {
        let bound = self.read(move |t| t.bound_to(&binding)).await?;
        self.terminate_each(bound, reason).await
    }

    async fn terminate_each(
        &self,
        bound: Vec<String>,
        reason: &str,
    ) -> Result<Vec<String>, AgentError> {
        let mut done = Vec::new();
        for alias in bound {
            // A parent terminated earlier in this loop took its children with it.
            let live = {
                let a = alias.clone();
                self.read(move |t| t.live(&a).is_some()).await?
            };
            if live {
                self.terminate(&alias, reason).await?;
                done.push(alias);
            }
        }
        Ok(done)
    }

    /// Terminates every live agent whose deadline passed at `now` (reason `deadline`).
    pub async fn expire(
        &self,
        now: chrono::DateTime<chrono::Utc>,
    ) -> Result<Vec<String>, AgentError> {
        let expired = self.read(move |t| t.expired(now)).await?;
        let mut done = Vec::new();
        for alias in expired {
            let live = {
                let a = alias.clone();
                self.read(move |t| t.live(&a).is_some()).await?
            };
            if live {
                self.terminate(&alias, "deadline").await?;
                done.push(alias);
            }
        }
        Ok(done)
    }

    /// Runs `f` on the current tree (counted as a query).
    pub async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&AgentTree) -> R + Send + 'static,
    ) -> Result<R, AgentError> {
        self.metrics.queried();
        Ok(self.kernel.read(move |s| f(s.agents())).await?)
    }

    /// One agent, live or not.
    pub async fn node(&self, alias: &str) -> Result<Option<AgentNode>, AgentError> {
        let alias = alias.to_owned();
        self.read(move |t| t.node(&alias).cloned()).await
    }

    /// The human escalation queue, oldest first.
    pub async fn human_queue(&self) -> Result<Vec<HumanEscalation>, AgentError> {
        self.read(|t| t.human_queue().to_vec()).await
    }

    async fn refresh_live(&self) {
        if let Ok(n) = self.kernel.read(|s| s.agents().live_count()).await {
            self.metrics.set_live(n);
        }
    }
}

/// The first alias `U:[A-Z][a-z]` never used, or else one whose agent is dead.
fn free_alias(tree: &AgentTree) -> Result<String, AgentError> {
    let mut dead = None;
    let mut buf = *b"U:Aa";
    for hi in b'A'..=b'Z' {
        for lo in b'a'..=b'z' {
            buf[2] = hi;
            buf[3] = lo;
            let alias = std::str::from_utf8(&buf).unwrap_or("U:Aa");
            match tree.node(alias) {
                None => return Ok(alias.to_owned()),
                Some(n) if !n.live && dead.is_none() => dead = Some(alias.to_owned()),
                Some(_) => {}
            }
        }
    }
    dead.ok_or(AgentError::AliasesExhausted)
}
