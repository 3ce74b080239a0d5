//! Workflows (REQ-014-076..080): the built-in pipeline of 005,
//! `U:Cx -> [U:Ar] -> U:Vz -> U:Qa -> HUMAN`, run as kernel commands and CXP traffic.
//!
//! `start` appends `workflow.started` (command `start_workflow`) and runs the steps in
//! a task (`pipeline`); every step is `step_started` / `step_completed` on
//! `workflow.events`, so the run's state is a projection of the log
//! ([`super::workflow_view`]). Between steps the runner honours `pause` (waits) and
//! `resume`; these are commands, so any client (the gateway) controls a run it did not
//! start.
//!
//! How a run ends:
//! - **completed**: the `HUMAN` step delivered the result (an escalated review is in
//!   the human queue by then).
//! - **cancelled** (`workflow.cancel`): the runner notices within [`CANCEL_POLL`] even
//!   in the middle of a junior's task. It drops the step in progress, which ends the
//!   junior's process group, and terminates the run's live juniors with reason
//!   `cancelled`; the view shows the step that was running as `cancelled`.
//! - **failed**: a junior still failed after `junior_retries` more attempts, or the
//!   kernel refused something the run needed. The run is closed `failed` (command
//!   `fail_workflow`, naming the step) and the step's Volk escalates hop by hop to the
//!   human queue (005 T17.4).
//! - **interrupted**: runs still running or paused when the server stopped are closed
//!   `failed` at the next start by [`Workflows::recover`], and their juniors are
//!   terminated with reason `interrupted`. A run is not resumed: its junior's work in
//!   progress died with the server, and starting it again is the client's choice.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{Command, CommandKind};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::drivers::cli::CliConfig;
use super::error::AgentError;
use super::review::ReviewConfig;
use super::service::Agents;
use crate::kernel::state::WorkflowStatus;

/// The name of the built-in pipeline.
pub const PIPELINE: &str = "pipeline";

/// How often a run in progress checks whether it was cancelled.
pub const CANCEL_POLL: Duration = Duration::from_millis(25);

/// The error of a run closed at start because the server stopped during it.
pub const INTERRUPTED: &str =
    "interrupted: the server stopped while this run was in progress; start it again";

/// How the built-in pipeline runs.
#[derive(Debug, Clone)]
pub struct PipelineConfig {
    /// The coding junior: gets the task (or the `fix_issues` JSON) on stdin and the
    /// target file in the environment variable `ORCHESTRATA_FILE`.
    pub coder: CliConfig,
    /// The review loop's settings and checkers.
    pub review: ReviewConfig,
    /// Where code files are written (one per run: `<workflow_id>.out`).
    pub workdir: PathBuf,
    /// Time limit of a junior's task.
    pub task_timeout: Duration,
    /// How many more fresh juniors a failed coding task gets before the run fails.
    pub junior_retries: u32,
}

/// One run in progress: its id and the step it is at (what a failure names).
pub(super) struct Run {
    pub(super) id: String,
    at: Mutex<&'static str>,
}

impl Run {
    fn new(id: &str) -> Self {
        Run {
            id: id.to_owned(),
            at: Mutex::new("U:Cx"),
        }
    }

    /// The step last started.
    fn at(&self) -> &'static str {
        self.at.lock().map(|s| *s).unwrap_or("U:Cx")
    }

    fn enter(&self, step: &'static str) {
        if let Ok(mut at) = self.at.lock() {
            *at = step;
        }
    }
}

/// Starts and controls workflow runs. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Workflows {
    pub(super) agents: Agents,
    pub(super) config: std::sync::Arc<PipelineConfig>,
}

/// Whether `e` says the run was stopped by someone (cancelled) rather than failed.
fn is_stop(e: &AgentError) -> bool {
    matches!(
        e,
        AgentError::Invalid {
            field: "workflow",
            ..
        }
    )
}

fn stopped(id: &str) -> AgentError {
    AgentError::invalid("workflow", format!("`{id}` was cancelled"))
}

impl Workflows {
    /// Runs over `agents` with `config`.
    pub fn new(agents: Agents, config: PipelineConfig) -> Self {
        Workflows {
            agents,
            config: std::sync::Arc::new(config),
        }
    }

    /// The coordination API the runs use.
    pub fn agents(&self) -> &Agents {
        &self.agents
    }

    pub(super) async fn command(
        &self,
        issuer: &str,
        action: CommandKind,
    ) -> Result<(), AgentError> {
        self.command_by(issuer, None, action).await
    }

    /// [`Self::command`] attributed to `principal` (recorded on its events).
    async fn command_by(
        &self,
        issuer: &str,
        principal: Option<String>,
        action: CommandKind,
    ) -> Result<(), AgentError> {
        self.agents
            .kernel()
            .execute(Command {
                id: Uuid::new_v4(),
                principal,
                issuer: issuer.to_owned(),
                action,
            })
            .await?;
        Ok(())
    }

    /// Starts `name` (only [`PIPELINE`] is built in) with `params` (`task`: what to
    /// build; `architect`: include U:Ar). Returns the run id and its task, which ends
    /// with the run's result, or its error when it failed or was cancelled. `principal`
    /// (who asked) is recorded on the `started` event: the run's owner.
    pub async fn start(
        &self,
        issuer: &str,
        principal: Option<String>,
        name: &str,
        params: serde_json::Value,
        session_id: Option<String>,
    ) -> Result<(String, JoinHandle<Result<serde_json::Value, AgentError>>), AgentError> {
        if name != PIPELINE {
            return Err(AgentError::invalid(
                "name",
                format!("no workflow `{name}` (built in: {PIPELINE})"),
            ));
        }
        let task = params
            .get("task")
            .and_then(|t| t.as_str())
            .filter(|t| !t.trim().is_empty())
            .ok_or_else(|| AgentError::invalid("params.task", "a non-empty string is required"))?
            .to_owned();
        // The coding juniors write their files here: a missing directory is made now,
        // one that cannot be made refuses the start instead of failing every junior.
        tokio::fs::create_dir_all(&self.config.workdir)
            .await
            .map_err(|e| AgentError::Config {
                field: "agents.pipeline.workdir",
                reason: format!("cannot create {}: {e}", self.config.workdir.display()),
            })?;
        let id = format!("wf-{}", Uuid::new_v4());
        self.command_by(
            issuer,
            principal,
            CommandKind::StartWorkflow {
                workflow_id: id.clone(),
                name: name.into(),
                params: Json(params.clone()),
                session_id,
            },
        )
        .await?;
        let architect = params
            .get("architect")
            .and_then(|a| a.as_bool())
            .unwrap_or(false);
        let me = self.clone();
        let run = Run::new(&id);
        let handle = tokio::spawn(async move { me.supervise(&run, &task, architect).await });
        Ok((id, handle))
    }

    /// Runs the pipeline until it ends by itself or is cancelled, then closes it (see
    /// the module docs).
    async fn supervise(
        &self,
        run: &Run,
        task: &str,
        architect: bool,
    ) -> Result<serde_json::Value, AgentError> {
        let outcome = tokio::select! {
            biased;
            result = self.run(run, task, architect) => Some(result),
            () = self.finished(&run.id) => None,
        };
        match outcome {
            Some(Ok(result)) => Ok(result),
            Some(Err(e)) if is_stop(&e) => {
                self.end_juniors(&run.id, "cancelled").await;
                Err(e)
            }
            None => {
                self.end_juniors(&run.id, "cancelled").await;
                Err(stopped(&run.id))
            }
            Some(Err(e)) => {
                self.fail(run, &e).await;
                Err(e)
            }
        }
    }

    /// Returns once run `id` is no longer running or paused (or the kernel is gone).
    async fn finished(&self, id: &str) {
        loop {
            tokio::time::sleep(CANCEL_POLL).await;
            let key = id.to_owned();
            match self.agents.kernel().read(move |s| s.workflow(&key)).await {
                Ok(Some(WorkflowStatus::Running | WorkflowStatus::Paused)) => {}
                _ => return,
            }
        }
    }

    /// Terminates the live juniors of run `id` (its tasks are `<id>/...`).
    async fn end_juniors(&self, id: &str, reason: &str) {
        if let Err(e) = self.agents.terminate_tasks(&format!("{id}/"), reason).await {
            tracing::warn!(workflow_id = id, error = %e, "cannot terminate the run's juniors");
        }
    }

    /// Closes `run` as failed at its current step and escalates to the human queue.
    async fn fail(&self, run: &Run, error: &AgentError) {
        let step = run.at();
        let message = error.to_string();
        let closed = self
            .command(
                "U:Ox",
                CommandKind::FailWorkflow {
                    workflow_id: run.id.clone(),
                    error: message.clone(),
                    step: Some(step.to_owned()),
                },
            )
            .await;
        if let Err(e) = closed {
            tracing::error!(workflow_id = %run.id, error = %e, "cannot record the run's failure");
        }
        self.end_juniors(&run.id, "failed").await;
        let context = serde_json::json!({ "workflow_id": run.id, "step": step, "error": message });
        let senior = if step == "HUMAN" { "U:Ox" } else { step };
        let escalated = self
            .agents
            .escalate_to_human(senior, "workflow failed", None, context)
            .await;
        if let Err(e) = escalated {
            tracing::error!(workflow_id = %run.id, error = %e, "cannot escalate the failed run");
        }
    }

    /// Closes every run left running or paused (by a stop or a crash) as `failed` with
    /// [`INTERRUPTED`] and terminates its juniors (reason `interrupted`). Called once at
    /// start, before any run starts; returns the runs it closed.
    pub async fn recover(&self) -> Result<Vec<String>, AgentError> {
        let open = self.agents.kernel().read(|s| s.open_workflows()).await?;
        for id in &open {
            self.end_juniors(id, "interrupted").await;
            self.command(
                "U:Ox",
                CommandKind::FailWorkflow {
                    workflow_id: id.clone(),
                    error: INTERRUPTED.into(),
                    step: None,
                },
            )
            .await?;
        }
        Ok(open)
    }

    /// Pauses a running run (takes effect between steps).
    pub async fn pause(
        &self,
        issuer: &str,
        id: &str,
        reason: Option<String>,
    ) -> Result<(), AgentError> {
        self.command(
            issuer,
            CommandKind::PauseWorkflow {
                workflow_id: id.into(),
                reason,
            },
        )
        .await
    }

    /// Resumes a paused run.
    pub async fn resume(&self, issuer: &str, id: &str) -> Result<(), AgentError> {
        self.command(
            issuer,
            CommandKind::ResumeWorkflow {
                workflow_id: id.into(),
            },
        )
        .await
    }

    /// Cancels a run: its runner stops within [`CANCEL_POLL`], whatever step it is in.
    pub async fn cancel(
        &self,
        issuer: &str,
        id: &str,
        reason: Option<String>,
    ) -> Result<(), AgentError> {
        self.command(
            issuer,
            CommandKind::CancelWorkflow {
                workflow_id: id.into(),
                reason,
            },
        )
        .await
    }

    /// Waits while paused; `Err` once cancelled or finished.
    pub(super) async fn gate(&self, id: &str) -> Result<(), AgentError> {
        loop {
            let key = id.to_owned();
            let status = self.agents.kernel().read(move |s| s.workflow(&key)).await?;
            match status {
                Some(WorkflowStatus::Running) => return Ok(()),
                Some(WorkflowStatus::Paused) => tokio::time::sleep(Duration::from_millis(20)).await,
                _ => return Err(stopped(id)),
            }
        }
    }

    /// Records `phase` of `step` once the run may go on (see [`Workflows::gate`]).
    pub(super) async fn step(
        &self,
        run: &Run,
        step: &'static str,
        phase: &str,
        output: serde_json::Value,
    ) -> Result<(), AgentError> {
        if phase == "started" {
            run.enter(step);
        }
        loop {
            self.gate(&run.id).await?;
            let recorded = self
                .command(
                    if step == "HUMAN" { "U:Ox" } else { step },
                    CommandKind::RecordWorkflowStep {
                        workflow_id: run.id.clone(),
                        step: step.into(),
                        phase: phase.into(),
                        assigned_to: (step != "HUMAN").then(|| step.to_owned()),
                        output: Json(output.clone()),
                    },
                )
                .await;
            match recorded {
                // Paused between the gate and the command: record it once resumed.
                Err(AgentError::Kernel(crate::kernel::KernelError::InvalidTransition {
                    ..
                })) => continue,
                other => return other,
            }
        }
    }
}
