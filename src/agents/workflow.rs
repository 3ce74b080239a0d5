//! Workflows (REQ-014-076..080): the built-in pipeline of 005,
//! `U:Cx -> [U:Ar] -> U:Vz -> U:Qa -> HUMAN`, run as kernel commands and CXP traffic.
//!
//! `start` appends `workflow.started` (command `start_workflow`) and runs the steps in
//! a task; every step is `step_started` / `step_completed` on `workflow.events`, so
//! the run's state is a projection of the log ([`super::workflow_view`]). Between
//! steps the runner honours `pause` (waits), `resume` and `cancel` (stops), which are
//! commands too, so any client (the gateway) controls a run it did not start.
//!
//! The steps:
//! 1. `U:Cx` takes the task in and hands it to U:Ox, who hands it to U:Vz (packets
//!    follow the tree: parent <-> child only);
//! 2. `U:Ar` (when `params.architect` is true) gets a `design` packet from U:Ox;
//! 3. `U:Vz` delegates the task to a CLI junior that writes the code file;
//! 4. `U:Qa` runs the review-fix loop on the file (fixes by new juniors);
//! 5. `HUMAN`: a passed review is delivered to U:Ox; an escalated one goes to the human
//!    queue.

use std::path::PathBuf;
use std::time::Duration;

use async_trait::async_trait;
use orchestrata_schemas::cxp::review::{FixIssues, ReviewOutcome};
use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{Command, CommandKind};
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::delegation::{delegate, send};
use super::driver::Task;
use super::drivers::cli::{CliConfig, CliDriver};
use super::error::AgentError;
use super::review::{run_review, Fixer, ReviewConfig};
use super::service::Agents;
use crate::kernel::state::WorkflowStatus;

/// The name of the built-in pipeline.
pub const PIPELINE: &str = "pipeline";

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
}

/// Starts and controls workflow runs. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Workflows {
    agents: Agents,
    config: std::sync::Arc<PipelineConfig>,
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

    async fn command(&self, issuer: &str, action: CommandKind) -> Result<(), AgentError> {
        self.agents
            .kernel()
            .execute(Command {
                id: Uuid::new_v4(),
                principal: None,
                issuer: issuer.to_owned(),
                action,
            })
            .await?;
        Ok(())
    }

    /// Starts `name` (only [`PIPELINE`] is built in) with `params` (`task`: what to
    /// build; `architect`: include U:Ar). Returns the run id and its task.
    pub async fn start(
        &self,
        issuer: &str,
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
        let id = format!("wf-{}", Uuid::new_v4());
        self.command(
            issuer,
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
        let run_id = id.clone();
        let handle = tokio::spawn(async move {
            let result = me.run(&run_id, &task, architect).await;
            if let Err(e) = &result {
                if !matches!(
                    e,
                    AgentError::Invalid {
                        field: "workflow",
                        ..
                    }
                ) {
                    let _ = me
                        .command(
                            "U:Ox",
                            CommandKind::CancelWorkflow {
                                workflow_id: run_id.clone(),
                                reason: Some(format!("failed: {e}")),
                            },
                        )
                        .await;
                }
            }
            result
        });
        Ok((id, handle))
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

    /// Cancels a run (the runner stops before its next step).
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
    async fn gate(&self, id: &str) -> Result<(), AgentError> {
        loop {
            let key = id.to_owned();
            let status = self.agents.kernel().read(move |s| s.workflow(&key)).await?;
            match status {
                Some(WorkflowStatus::Running) => return Ok(()),
                Some(WorkflowStatus::Paused) => tokio::time::sleep(Duration::from_millis(20)).await,
                _ => {
                    return Err(AgentError::invalid(
                        "workflow",
                        format!("`{id}` was cancelled"),
                    ))
                }
            }
        }
    }

    async fn step(
        &self,
        id: &str,
        step: &str,
        phase: &str,
        output: serde_json::Value,
    ) -> Result<(), AgentError> {
        loop {
            self.gate(id).await?;
            let recorded = self
                .command(
                    step_issuer(step),
                    CommandKind::RecordWorkflowStep {
                        workflow_id: id.into(),
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

    async fn run(
        &self,
        id: &str,
        task: &str,
        architect: bool,
    ) -> Result<serde_json::Value, AgentError> {
        let a = &self.agents;
        let body = serde_json::json!({ "workflow_id": id, "task": task });
        self.gate(id).await?;
        self.step(id, "U:Cx", "started", serde_json::Value::Null)
            .await?;
        packet(a, "U:Cx", "U:Ox", "task", body.clone()).await?;
        packet(a, "U:Ox", "U:Vz", "task", body.clone()).await?;
        self.step(id, "U:Cx", "succeeded", body.clone()).await?;
        if architect {
            self.gate(id).await?;
            self.step(id, "U:Ar", "started", serde_json::Value::Null)
                .await?;
            packet(a, "U:Ox", "U:Ar", "design", body.clone()).await?;
            self.step(id, "U:Ar", "succeeded", serde_json::Value::Null)
                .await?;
        }
        self.gate(id).await?;
        self.step(id, "U:Vz", "started", serde_json::Value::Null)
            .await?;
        let file = self.config.workdir.join(format!("{id}.out"));
        let mut coder = Coder {
            agents: a.clone(),
            config: self.config.clone(),
            file: file.clone(),
            round: 0,
        };
        let run = coder.code(task).await?;
        if let Err(e) = &run.result {
            self.step(
                id,
                "U:Vz",
                "failed",
                serde_json::json!({ "error": e.to_string() }),
            )
            .await?;
            return Err(AgentError::invalid(
                "U:Vz",
                format!("the coding junior failed: {e}"),
            ));
        }
        self.step(
            id,
            "U:Vz",
            "succeeded",
            serde_json::json!({ "junior": run.alias, "file": file }),
        )
        .await?;
        self.gate(id).await?;
        self.step(id, "U:Qa", "started", serde_json::Value::Null)
            .await?;
        let report = run_review(a, &self.config.review, "U:Vz", &file, &mut coder).await?;
        let complete = serde_json::to_value(&report.complete)
            .map_err(|e| AgentError::invalid("review_complete", e.to_string()))?;
        let phase = if report.complete.status == ReviewOutcome::Passed {
            "succeeded"
        } else {
            "failed"
        };
        self.step(id, "U:Qa", phase, complete.clone()).await?;
        self.gate(id).await?;
        self.step(id, "HUMAN", "started", serde_json::Value::Null)
            .await?;
        if report.complete.status != ReviewOutcome::Passed {
            let context = serde_json::json!({ "workflow_id": id, "review": complete, "remaining": report.remaining });
            a.escalate(
                "U:Ox",
                "review loop ended with issues",
                Some(&report.thread_id),
                context,
                &["U:Qa".into()],
            )
            .await?;
        }
        let result = serde_json::json!({ "file": file, "review": complete });
        self.step(id, "HUMAN", "succeeded", result.clone()).await?;
        self.step(id, "HUMAN", "completed", result.clone()).await?;
        Ok(result)
    }
}

fn step_issuer(step: &str) -> &str {
    if step == "HUMAN" {
        "U:Ox"
    } else {
        step
    }
}

/// A packet `from` -> `to` through the kernel.
async fn packet(
    agents: &Agents,
    from: &str,
    to: &str,
    subject: &str,
    body: serde_json::Value,
) -> Result<(), AgentError> {
    let alias = |x: &str, f: &'static str| {
        VolkAlias::parse_field(x, f).map_err(|e| AgentError::invalid(f, e.to_string()))
    };
    let p = CxpPacket::new(alias(from, "from")?, alias(to, "to")?, subject, body)
        .map_err(|e| AgentError::invalid("packet", e.to_string()))?;
    send(agents, from, &p).await
}

/// U:Vz's coding juniors: each round (first code, then each fix) is a fresh CLI junior.
struct Coder {
    agents: Agents,
    config: std::sync::Arc<PipelineConfig>,
    file: PathBuf,
    round: u32,
}

impl Coder {
    async fn code(&mut self, prompt: &str) -> Result<super::delegation::JuniorRun, AgentError> {
        self.round += 1;
        let mut cli = self.config.coder.clone();
        cli.env
            .push(("ORCHESTRATA_FILE".into(), self.file.display().to_string()));
        cli.env
            .push(("ORCHESTRATA_ROUND".into(), self.round.to_string()));
        let mut driver = CliDriver::new(cli);
        let task = Task {
            id: format!("code-{}", Uuid::new_v4()),
            prompt: prompt.to_owned(),
            timeout: self.config.task_timeout,
        };
        delegate(&self.agents, "U:Vz", "cli", &mut driver, &task).await
    }
}

#[async_trait]
impl Fixer for Coder {
    async fn fix(&mut self, fix: &FixIssues) -> Result<(), AgentError> {
        let prompt = serde_json::to_string(fix)
            .map_err(|e| AgentError::invalid("fix_issues", e.to_string()))?;
        let run = self.code(&prompt).await?;
        run.result
            .map(|_| ())
            .map_err(|e| AgentError::invalid("fix", format!("the fixing junior failed: {e}")))
    }
}
