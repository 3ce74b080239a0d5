//! The built-in pipeline's steps, run by [`Workflows`] (which starts, supervises and
//! closes runs):
//! 1. `U:Cx` takes the task in and hands it to U:Ox, who hands it to U:Vz (packets
//!    follow the tree: parent <-> child only);
//! 2. `U:Ar` (when `params.architect` is true) gets a `design` packet from U:Ox;
//! 3. `U:Vz` delegates the task to a CLI junior that writes the code file; a junior
//!    that fails is replaced by a fresh one up to `junior_retries` times;
//! 4. `U:Qa` runs the review-fix loop on the file (fixes by new juniors, retried alike);
//! 5. `HUMAN`: a passed review is delivered to U:Ox; an escalated one goes to the human
//!    queue.
//!
//! Every junior's task id is `<run id>/code-<round>.<attempt>`, so whoever closes the
//! run finds its juniors.

use std::path::PathBuf;

use async_trait::async_trait;
use orchestrata_schemas::cxp::review::{FixIssues, ReviewOutcome};
use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};

use super::delegation::{delegate, send, JuniorRun};
use super::driver::Task;
use super::drivers::cli::CliDriver;
use super::error::AgentError;
use super::review::{run_review, Fixer};
use super::service::Agents;
use super::workflow::{PipelineConfig, Run, Workflows};

impl Workflows {
    /// The steps of one run, in order; `Err` when a step failed or the run was
    /// stopped (see [`Workflows::gate`]).
    pub(super) async fn run(
        &self,
        run: &Run,
        task: &str,
        architect: bool,
    ) -> Result<serde_json::Value, AgentError> {
        let a = &self.agents;
        let id = run.id.as_str();
        let body = serde_json::json!({ "workflow_id": id, "task": task });
        self.step(run, "U:Cx", "started", serde_json::Value::Null)
            .await?;
        packet(a, "U:Cx", "U:Ox", "task", body.clone()).await?;
        packet(a, "U:Ox", "U:Vz", "task", body.clone()).await?;
        self.step(run, "U:Cx", "succeeded", body.clone()).await?;
        if architect {
            self.step(run, "U:Ar", "started", serde_json::Value::Null)
                .await?;
            packet(a, "U:Ox", "U:Ar", "design", body.clone()).await?;
            self.step(run, "U:Ar", "succeeded", serde_json::Value::Null)
                .await?;
        }
        self.step(run, "U:Vz", "started", serde_json::Value::Null)
            .await?;
        let file = self.config.workdir.join(format!("{id}.out"));
        let mut coder = Coder {
            agents: a.clone(),
            config: self.config.clone(),
            file: file.clone(),
            run_id: id.to_owned(),
            round: 0,
        };
        let (junior, attempts) = coder.code(task).await?;
        if let Err(e) = &junior.result {
            let error = format!("the coding junior failed {attempts} time(s); last: {e}");
            self.step(
                run,
                "U:Vz",
                "failed",
                serde_json::json!({ "error": error, "attempts": attempts }),
            )
            .await?;
            return Err(AgentError::invalid("U:Vz", error));
        }
        self.step(
            run,
            "U:Vz",
            "succeeded",
            serde_json::json!({ "junior": junior.alias, "file": file, "attempts": attempts }),
        )
        .await?;
        self.step(run, "U:Qa", "started", serde_json::Value::Null)
            .await?;
        let report = run_review(a, &self.config.review, "U:Vz", &file, &mut coder).await?;
        let complete = serde_json::to_value(&report.complete)
            .map_err(|e| AgentError::invalid("review_complete", e.to_string()))?;
        let phase = if report.complete.status == ReviewOutcome::Passed {
            "succeeded"
        } else {
            "failed"
        };
        self.step(run, "U:Qa", phase, complete.clone()).await?;
        self.step(run, "HUMAN", "started", serde_json::Value::Null)
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
        self.step(run, "HUMAN", "succeeded", result.clone()).await?;
        self.step(run, "HUMAN", "completed", result.clone()).await?;
        Ok(result)
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

/// U:Vz's coding juniors: each round (first code, then each fix) is a fresh CLI
/// junior, and each failed attempt of a round another fresh one.
struct Coder {
    agents: Agents,
    config: std::sync::Arc<PipelineConfig>,
    file: PathBuf,
    run_id: String,
    round: u32,
}

impl Coder {
    /// The next round: up to `1 + junior_retries` juniors until one succeeds. Returns
    /// the last junior's run and how many juniors it took.
    async fn code(&mut self, prompt: &str) -> Result<(JuniorRun, u32), AgentError> {
        self.round += 1;
        let mut attempt = 1;
        loop {
            let run = self.attempt(prompt, attempt).await?;
            if run.result.is_ok() || attempt > self.config.junior_retries {
                return Ok((run, attempt));
            }
            tracing::warn!(
                workflow_id = %self.run_id,
                junior = %run.alias,
                attempt,
                "a coding junior failed; a fresh one retries"
            );
            attempt += 1;
        }
    }

    async fn attempt(&self, prompt: &str, attempt: u32) -> Result<JuniorRun, AgentError> {
        let mut cli = self.config.coder.clone();
        cli.env
            .push(("ORCHESTRATA_FILE".into(), self.file.display().to_string()));
        cli.env
            .push(("ORCHESTRATA_ROUND".into(), self.round.to_string()));
        cli.env
            .push(("ORCHESTRATA_ATTEMPT".into(), attempt.to_string()));
        cli.env
            .push(("ORCHESTRATA_WORKFLOW_ID".into(), self.run_id.clone()));
        let mut driver = CliDriver::new(cli);
        let task = Task {
            id: format!("{}/code-{}.{attempt}", self.run_id, self.round),
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
        let (run, attempts) = self.code(&prompt).await?;
        run.result.map(|_| ()).map_err(|e| {
            AgentError::invalid(
                "fix",
                format!("the fixing junior failed {attempts} time(s); last: {e}"),
            )
        })
    }
}
