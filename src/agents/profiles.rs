//! Delegation from the outside: the `agents.drivers` section names the junior programs a
//! client may start, and [`Delegator`] runs a fan-out of one task over up to five of
//! them (005 US-009, FR11, FR12) for a senior the client acts as.
//!
//! A request names drivers by profile, never by command line: what can run on this
//! machine is decided by whoever wrote the configuration, not by whoever holds a token.
//!
//! ```yaml
//! agents:
//!   drivers:
//!     summarizer: { cli: [python3, summarize.py], timeout_s: 120 }
//!     linter: { cli: [ruff, check, --output-format, json, -] }
//! ```

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::delegation::{fan_out, FanOutOutcome, JuniorRun, Synthesis};
use super::driver::{Driver, Task};
use super::drivers::cli::{CliConfig, CliDriver};
use super::error::AgentError;
use super::limits::MAX_JUNIORS;
use super::service::Agents;
use super::synthesis::{Scorer, Strategy};

/// One entry of `agents.drivers`: a CLI junior (its task on stdin, its answer on
/// stdout) and its time limit.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverProfile {
    /// `[program, args...]` (not empty).
    pub cli: Vec<String>,
    /// The task's time limit in seconds (default 300).
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
}

fn default_timeout() -> u64 {
    300
}

/// What a delegation ends with: every junior's run and the fan-out's outcome.
pub type Delegated = Result<(Vec<JuniorRun>, FanOutOutcome), AgentError>;

/// Runs fan-outs over configured profiles. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Delegator {
    agents: Agents,
    profiles: Arc<BTreeMap<String, DriverProfile>>,
    scorer: Scorer,
}

/// Joins the juniors' answers, in junior order, separated by a line `---`.
pub fn concatenate(answers: &[&str]) -> String {
    answers
        .iter()
        .map(|a| a.trim_end())
        .collect::<Vec<_>>()
        .join("\n---\n")
}

impl Delegator {
    /// Over `agents` with the profiles of `agents.drivers`.
    pub fn new(agents: Agents, profiles: BTreeMap<String, DriverProfile>) -> Self {
        Delegator {
            agents,
            profiles: Arc::new(profiles),
            scorer: Scorer::default(),
        }
    }

    /// Scores the juniors' answers with `scorer` (default: no checkers, all tie).
    pub fn with_scorer(mut self, scorer: Scorer) -> Self {
        self.scorer = scorer;
        self
    }

    /// The configured profile names.
    pub fn profiles(&self) -> Vec<String> {
        self.profiles.keys().cloned().collect()
    }

    /// Starts `prompt` on one junior of `senior` per entry of `juniors` (profile
    /// names, 1 to 5); the juniors answer `senior` with `junior_result` packets and the
    /// answers, scored, are combined by `strategy` into a `synthesis` packet to
    /// `senior`'s parent (all failed: the senior escalates to the human queue). Returns
    /// the task id at once and the run's handle.
    pub async fn start(
        &self,
        senior: &str,
        prompt: &str,
        juniors: &[String],
        strategy: Strategy,
    ) -> Result<(String, JoinHandle<Delegated>), AgentError> {
        if juniors.is_empty() || juniors.len() > MAX_JUNIORS {
            return Err(AgentError::invalid(
                "juniors",
                format!("1 to {MAX_JUNIORS} juniors, not {}", juniors.len()),
            ));
        }
        if prompt.trim().is_empty() {
            return Err(AgentError::invalid("task", "a non-empty task is required"));
        }
        let mut chosen = Vec::with_capacity(juniors.len());
        for name in juniors {
            let profile = self.profiles.get(name).ok_or_else(|| {
                AgentError::invalid(
                    "juniors",
                    format!(
                        "no driver profile `{name}` (configured: {:?})",
                        self.profiles()
                    ),
                )
            })?;
            chosen.push(profile.clone());
        }
        let live = self.agents.node(senior).await?.is_some_and(|n| n.live);
        if !live {
            return Err(AgentError::UnknownAgent {
                field: "senior",
                alias: senior.to_owned(),
            });
        }
        let task = Task {
            id: format!("delegate-{}", Uuid::new_v4()),
            prompt: prompt.to_owned(),
            timeout: Duration::from_secs(chosen.iter().map(|p| p.timeout_s).max().unwrap_or(300)),
        };
        let drivers: Vec<(String, Box<dyn Driver>)> = chosen
            .into_iter()
            .map(|p| {
                let (program, args) = p
                    .cli
                    .split_first()
                    .map_or(("", &[][..]), |(a, b)| (a.as_str(), b));
                let mut config = CliConfig::new(program).args(args.iter().cloned());
                config
                    .env
                    .push(("ORCHESTRATA_TASK_ID".into(), task.id.clone()));
                (
                    "cli".to_owned(),
                    Box::new(CliDriver::new(config)) as Box<dyn Driver>,
                )
            })
            .collect();
        let (agents, senior, id) = (self.agents.clone(), senior.to_owned(), task.id.clone());
        let synthesis = Synthesis {
            strategy,
            scorer: self.scorer.clone(),
        };
        let handle = tokio::spawn(async move {
            let outcome = fan_out(&agents, &senior, drivers, &task, &synthesis).await;
            if let Err(e) = &outcome {
                tracing::warn!(task_id = %task.id, %senior, error = %e, "delegation failed");
            }
            outcome
        });
        Ok((id, handle))
    }
}
