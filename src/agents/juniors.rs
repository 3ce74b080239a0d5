//! [`Juniors`]: single juniors a client spawns under a senior, gives tasks to and
//! terminates (spec 005 US-007..010, FR9; the `agents.spawn`, `agents.assign` and
//! `agents.terminate` methods).
//!
//! A junior runs one driver profile ([`super::profiles::DriverSetup`]). Its life is
//! bounded as the request says: by its first task (the default: it answers and is
//! terminated `task_completed`), by a deadline, or by a session; a junior that outlives
//! its task keeps its driver between tasks — a browser junior keeps its page and
//! cookies — and takes the next one through [`Juniors::assign`], one task at a time.
//! Each answer is a `junior_result` packet to the parent, like a delegation's.
//!
//! A junior whose providers are all exhausted makes its senior escalate to the human
//! queue (005 NFR10).
//!
//! Terminating a junior stops its task in flight (its process group or browser ends
//! with the driver) and records `terminated` with the reason. A junior whose lifespan
//! the supervisor ended (deadline passed, session closed) loses its driver at the next
//! sweep (every 250 ms).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::task::AbortHandle;
use uuid::Uuid;

use super::delegation::{run_spawned, JuniorRun};
use super::driver::{Driver, DriverError, Task};
use super::error::AgentError;
use super::profiles::{DriverKind, DriverSetup};
use super::service::{Agents, LifespanSpec, SpawnSpec};

/// How often juniors whose lifespan ended elsewhere are swept.
const SWEEP: Duration = Duration::from_millis(250);

/// What to spawn.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JuniorRequest {
    /// The senior it reports to (the caller acts as it).
    pub parent: String,
    /// The driver profile (`agents.drivers`).
    pub profile: String,
    /// Its first task, if any.
    pub task: Option<String>,
    /// Its lifespan; `None`: bound to its first task.
    pub lifespan: Option<LifespanSpec>,
    /// What it is for (default: the task's first line, or the profile name).
    pub purpose: Option<String>,
    /// A shorter time limit per task than the profile's `timeout_s`, in seconds.
    pub timeout_s: Option<u64>,
}

/// A junior as spawned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spawned {
    /// Its alias.
    pub alias: String,
    /// What runs it.
    pub kind: DriverKind,
    /// The id of its first task, if it got one.
    pub task_id: Option<String>,
    /// Its lifespan.
    pub lifespan: LifespanSpec,
}

type SharedDriver = Arc<tokio::sync::Mutex<Box<dyn Driver>>>;

struct Slot {
    parent: String,
    driver: SharedDriver,
    timeout: Duration,
    task_bound: bool,
    running: Option<(String, AbortHandle)>,
}

/// See the module docs. Cheap to clone.
#[derive(Clone)]
pub struct Juniors {
    agents: Agents,
    setup: Arc<DriverSetup>,
    slots: Arc<Mutex<HashMap<String, Slot>>>,
}

impl std::fmt::Debug for Juniors {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Juniors")
            .field("live", &self.with(|s| s.len()))
            .finish()
    }
}

impl Juniors {
    /// Juniors over `agents` built from `setup`; starts the sweeper (needs a runtime).
    pub fn new(agents: Agents, setup: Arc<DriverSetup>) -> Self {
        let juniors = Juniors {
            agents,
            setup,
            slots: Arc::new(Mutex::new(HashMap::new())),
        };
        let weak = Arc::downgrade(&juniors.slots);
        let sweeper = Juniors {
            slots: Arc::new(Mutex::new(HashMap::new())),
            ..juniors.clone()
        };
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(SWEEP).await;
                let Some(slots) = weak.upgrade() else { break };
                let j = Juniors {
                    slots,
                    ..sweeper.clone()
                };
                j.sweep().await;
            }
        });
        juniors
    }

    fn with<R>(&self, f: impl FnOnce(&mut HashMap<String, Slot>) -> R) -> R {
        let mut guard = match self.slots.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        f(&mut guard)
    }

    /// Spawns a junior of `req.parent` on `req.profile` and starts its first task, if
    /// any; answers at once (the task runs on).
    pub async fn spawn(&self, req: JuniorRequest) -> Result<Spawned, AgentError> {
        let task = match &req.task {
            Some(t) if t.trim().is_empty() => {
                return Err(AgentError::invalid("task", "an empty task"))
            }
            Some(t) => Some(Task {
                id: format!("junior-{}", Uuid::new_v4()),
                prompt: t.clone(),
                timeout: Duration::ZERO,
            }),
            None => None,
        };
        let lifespan = match (req.lifespan, &task) {
            (Some(LifespanSpec::Task(_)) | None, Some(t)) => LifespanSpec::Task(t.id.clone()),
            (Some(LifespanSpec::Task(_)) | None, None) => {
                return Err(AgentError::invalid(
                    "lifespan",
                    "a junior bound to its task needs a task (or give a deadline or a session)",
                ))
            }
            (Some(other), _) => other,
        };
        let task_bound = matches!(lifespan, LifespanSpec::Task(_));
        let first_id = task.as_ref().map_or("idle", |t| t.id.as_str()).to_owned();
        let (kind, driver, limit) =
            self.setup
                .build(&self.agents, &req.profile, &req.parent, &first_id)?;
        let timeout = match req.timeout_s {
            None => limit,
            Some(0) => return Err(AgentError::invalid("timeout_s", "must be at least 1")),
            Some(s) if Duration::from_secs(s) > limit => {
                return Err(AgentError::invalid(
                    "timeout_s",
                    format!(
                        "{s} s is more than the profile `{}` allows ({} s)",
                        req.profile,
                        limit.as_secs()
                    ),
                ))
            }
            Some(s) => Duration::from_secs(s),
        };
        let purpose = req
            .purpose
            .filter(|p| !p.trim().is_empty())
            .or_else(|| task.as_ref().map(Task::prompt_title))
            .unwrap_or_else(|| format!("{} junior", req.profile));
        let spec = SpawnSpec {
            parent: req.parent.clone(),
            driver: kind.as_str().to_owned(),
            purpose,
            scope: Vec::new(),
            lifespan: lifespan.clone(),
            alias: None,
        };
        let alias = self.agents.spawn(spec).await?;
        self.with(|s| {
            s.insert(
                alias.clone(),
                Slot {
                    parent: req.parent.clone(),
                    driver: Arc::new(tokio::sync::Mutex::new(driver)),
                    timeout,
                    task_bound,
                    running: None,
                },
            )
        });
        let task_id = match task {
            Some(t) => Some(self.start(&alias, t)?),
            None => None,
        };
        Ok(Spawned {
            alias,
            kind,
            task_id,
            lifespan,
        })
    }

    /// Gives the live, idle junior `alias` (spawned by [`Juniors::spawn`], not bound to
    /// a finished task) its next task; returns the task id.
    pub fn assign(&self, alias: &str, prompt: &str) -> Result<String, AgentError> {
        if prompt.trim().is_empty() {
            return Err(AgentError::invalid("task", "an empty task"));
        }
        let task = Task {
            id: format!("junior-{}", Uuid::new_v4()),
            prompt: prompt.to_owned(),
            timeout: Duration::ZERO,
        };
        self.start(alias, task)
    }

    /// Who answers for the live agent `alias`: its parent, or itself for a root;
    /// `None` when no such agent lives.
    pub async fn answerable(&self, alias: &str) -> Result<Option<String>, AgentError> {
        Ok(self
            .agents
            .node(alias)
            .await?
            .filter(|n| n.live)
            .map(|n| n.parent.unwrap_or_else(|| alias.to_owned())))
    }

    /// The live agent `alias`, if there is one.
    pub async fn live(
        &self,
        alias: &str,
    ) -> Result<Option<orchestrata_projections::agents::AgentNode>, AgentError> {
        Ok(self.agents.node(alias).await?.filter(|n| n.live))
    }

    /// The task `alias` is running, if any.
    pub fn running(&self, alias: &str) -> Option<String> {
        self.with(|s| {
            s.get(alias)
                .and_then(|slot| slot.running.as_ref().map(|(id, _)| id.clone()))
        })
    }

    fn start(&self, alias: &str, mut task: Task) -> Result<String, AgentError> {
        let (parent, driver, timeout, keep) = self.with(|s| match s.get(alias) {
            None => Err(AgentError::UnknownAgent {
                field: "junior",
                alias: alias.to_owned(),
            }),
            Some(slot) if slot.running.is_some() => Err(AgentError::invalid(
                "junior",
                format!(
                    "{alias} is busy with task {}; one task at a time",
                    slot.running.as_ref().map_or("", |(id, _)| id.as_str())
                ),
            )),
            Some(slot) => Ok((
                slot.parent.clone(),
                slot.driver.clone(),
                slot.timeout,
                !slot.task_bound,
            )),
        })?;
        task.timeout = timeout;
        let id = task.id.clone();
        let (me, junior) = (self.clone(), alias.to_owned());
        // Holding the map's lock across the spawn keeps a fast task from finishing
        // before its handle is stored.
        self.with(|s| {
            let handle = tokio::spawn(async move {
                let run = {
                    let mut d = driver.lock().await;
                    run_spawned(&me.agents, &parent, &junior, d.as_mut(), &task, keep).await
                };
                match &run {
                    Ok(r) => me.exhausted(&parent, &junior, &task, r).await,
                    Err(e) => {
                        tracing::warn!(junior = %junior, task_id = %task.id, error = %e, "junior task failed")
                    }
                }
                me.finished(&junior, &task.id, keep).await;
            });
            if let Some(slot) = s.get_mut(alias) {
                slot.running = Some((id.clone(), handle.abort_handle()));
            }
        });
        Ok(id)
    }

    /// Every provider of the junior's profile is exhausted: its senior escalates hop
    /// by hop to the human queue (005 NFR10). (A fan-out instead escalates only when
    /// every junior failed.)
    async fn exhausted(&self, senior: &str, junior: &str, task: &Task, run: &JuniorRun) {
        let Err(e @ DriverError::QuotaExhausted { .. }) = &run.result else {
            return;
        };
        let context =
            serde_json::json!({ "task_id": task.id, "junior": junior, "error": e.to_string() });
        let escalated = self
            .agents
            .escalate_to_human(
                senior,
                "every provider's quota is used up",
                Some(run.packet.thread_id()),
                context,
            )
            .await;
        if let Err(e) = escalated {
            tracing::warn!(%junior, error = %e, "could not escalate exhausted quotas");
        }
    }

    async fn finished(&self, alias: &str, task_id: &str, keep: bool) {
        let ours = self.with(|s| match s.get_mut(alias) {
            Some(slot) if slot.running.as_ref().is_some_and(|(id, _)| id == task_id) => {
                slot.running = None;
                true
            }
            _ => false,
        });
        if ours && !keep {
            if let Err(e) = self.end(alias, "task_completed").await {
                tracing::warn!(junior = %alias, error = %e, "could not terminate a junior after its task");
            }
        }
    }

    /// Terminates `alias`: its task in flight stops (its processes or browser end with
    /// the driver), `terminated` is recorded with `reason`.
    pub async fn terminate(&self, alias: &str, reason: &str) -> Result<(), AgentError> {
        let known = self.with(|s| s.contains_key(alias));
        let live = self.agents.node(alias).await?.is_some_and(|n| n.live);
        if !known && !live {
            return Err(AgentError::UnknownAgent {
                field: "alias",
                alias: alias.to_owned(),
            });
        }
        self.end(alias, reason).await
    }

    async fn end(&self, alias: &str, reason: &str) -> Result<(), AgentError> {
        self.drop_driver(alias).await;
        if self.agents.node(alias).await?.is_some_and(|n| n.live) {
            self.agents.terminate(alias, reason).await?;
        }
        Ok(())
    }

    async fn drop_driver(&self, alias: &str) {
        let Some(slot) = self.with(|s| s.remove(alias)) else {
            return;
        };
        if let Some((_, handle)) = &slot.running {
            handle.abort();
        }
        // Waits for an aborted task to let go of the driver.
        let mut driver = slot.driver.lock().await;
        if let Err(e) = driver.cleanup().await {
            tracing::warn!(junior = %alias, error = %e, "junior driver cleanup failed");
        }
    }

    /// Drops the drivers of juniors the tree no longer has live (deadline passed,
    /// session closed, terminated by someone else).
    async fn sweep(&self) {
        let aliases: Vec<String> = self.with(|s| s.keys().cloned().collect());
        for alias in aliases {
            let gone = match self.agents.node(&alias).await {
                Ok(n) => !n.is_some_and(|n| n.live),
                Err(_) => false,
            };
            if gone {
                tracing::info!(junior = %alias, "junior's lifespan ended; stopping its driver");
                self.drop_driver(&alias).await;
            }
        }
    }
}
