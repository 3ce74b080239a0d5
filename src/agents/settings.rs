//! The `agents:` section of the configuration, read and checked in one place, so that
//! `orchestrata config check` refuses exactly what `orchestrata up` would refuse.
//!
//! ```yaml
//! agents:
//!   drivers:                    # junior programs agents.delegate may start, by name
//!     summarizer: { cli: [python3, summarize.py], timeout_s: 120 }
//!   escalation:                 # where each Volk escalates, in order (spec 005)
//!     paths:
//!       U:Qa: [U:Ox]
//!   pipeline:                   # the built-in pipeline workflow (workflow.* methods)
//!     coder: [python3, coder.py]  # the coding junior: program and arguments
//!     workdir: ./data/workflows   # where code files are written (default <data dir>/workflows)
//!     task_timeout_s: 300         # a junior task's time limit
//!     junior_retries: 2           # fresh juniors after a failed one, then the run fails
//!   review:                     # the review-fix loop (spec 005); its checkers also
//!                               # score the answers of agents.delegate
//!     MAX_REVIEW_CYCLES: 3
//!     REVIEW_TIMEOUT_SECONDS: 300
//!     ESCALATE_ON_MAX_CYCLES: true
//!     AUTO_FIX_ON_SINGLE_ISSUE: true
//!     checkers: [[ruff, check]]
//! ```

use std::path::PathBuf;

use anyhow::Context;
use serde_yaml_ng::Value;

use super::escalation::EscalationPaths;
use super::review::ReviewConfig;
use crate::config::SystemConfig;

/// The subsections `agents:` may have.
pub const SECTIONS: [&str; 4] = ["drivers", "escalation", "pipeline", "review"];

/// `agents.pipeline`: the built-in pipeline's coding junior and where it works.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PipelineSection {
    /// `[program, args...]` of the coding junior (not empty).
    pub coder: Vec<String>,
    /// Where code files are written (default `<data-dir>/workflows`).
    pub workdir: Option<PathBuf>,
    /// A junior task's time limit in seconds (default 300).
    #[serde(default = "default_task_timeout")]
    pub task_timeout_s: u64,
    /// How many fresh juniors retry a failed coding task before the run fails and is
    /// escalated to the human queue (default 2).
    #[serde(default = "default_junior_retries")]
    pub junior_retries: u32,
}

fn default_junior_retries() -> u32 {
    2
}

fn default_task_timeout() -> u64 {
    300
}

/// The `agents:` section, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentSettings {
    /// `agents.escalation` (none configured: no paths).
    pub escalation: EscalationPaths,
    /// `agents.pipeline`; `None` leaves workflows unavailable.
    pub pipeline: Option<PipelineSection>,
    /// `agents.review` (defaults of spec 005 when absent).
    pub review: ReviewConfig,
    /// `agents.drivers`: the junior programs `agents.delegate` may start, by name.
    pub drivers: std::collections::BTreeMap<String, super::profiles::DriverProfile>,
}

impl AgentSettings {
    /// Reads `system.agents`. Errors name the key (`agents.pipeline`, ...) and why: an
    /// unknown subsection or field, a wrong type, an empty `coder`, zero review cycles.
    pub fn from_config(system: &SystemConfig) -> anyhow::Result<Self> {
        let section = |name: &str| system.agents.get(name);
        if let Value::Mapping(map) = &system.agents {
            for key in map.keys() {
                let known = key.as_str().is_some_and(|k| SECTIONS.contains(&k));
                if !known {
                    anyhow::bail!(
                        "agents.{}: unknown section (known: {})",
                        serde_yaml_ng::to_string(key).unwrap_or_default().trim_end(),
                        SECTIONS.join(", ")
                    );
                }
            }
        }
        let escalation = match section("escalation") {
            Some(s) => EscalationPaths::from_yaml(&serde_yaml_ng::to_string(s)?)
                .context("agents.escalation")?,
            None => EscalationPaths::default(),
        };
        let pipeline = match section("pipeline") {
            Some(s) => {
                let p: PipelineSection =
                    serde_yaml_ng::from_value(s.clone()).context("agents.pipeline")?;
                if p.coder.is_empty() {
                    anyhow::bail!("agents.pipeline.coder is empty: give [program, args...]");
                }
                Some(p)
            }
            None => None,
        };
        let review = match section("review") {
            Some(s) => ReviewConfig::from_yaml(&serde_yaml_ng::to_string(s)?),
            None => ReviewConfig::from_yaml("{}"),
        }
        .context("agents.review")?;
        let drivers: std::collections::BTreeMap<String, super::profiles::DriverProfile> =
            match section("drivers") {
                Some(s) => serde_yaml_ng::from_value(s.clone()).context("agents.drivers")?,
                None => Default::default(),
            };
        if let Some((name, _)) = drivers.iter().find(|(_, p)| p.cli.is_empty()) {
            anyhow::bail!("agents.drivers.{name}.cli is empty: give [program, args...]");
        }
        Ok(AgentSettings {
            escalation,
            pipeline,
            review,
            drivers,
        })
    }
}
