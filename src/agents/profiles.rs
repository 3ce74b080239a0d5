//! Driver profiles: the `agents.drivers` section names the juniors a client may start,
//! each of one kind — a local program (`cli`), OpenAI-compatible providers (`api`, from
//! `agents.providers`, in fall-back order) or a chat page in headless Chromium
//! (`browser`, a site profile file). A request names a profile, never a command line or
//! a URL: what can run on this machine is decided by whoever wrote the configuration,
//! not by whoever holds a token. [`DriverSetup::build`] turns a profile into a driver;
//! [`Delegator`] runs fan-outs (005 US-009, FR11, FR12) and single juniors
//! ([`super::juniors::Juniors`]) over the same setup.
//!
//! ```yaml
//! agents:
//!   drivers:
//!     summarizer: { cli: [python3, summarize.py], timeout_s: 120 }
//!     writer: { api: [local, hosted], timeout_s: 60 }   # providers, in fall-back order
//!     qwen: { browser: config/browser-profiles/qwen.yaml, timeout_s: 300 }
//! ```

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::delegation::{fan_out, FanOutOutcome, JuniorRun, Synthesis};
use super::driver::{Driver, Task};
use super::drivers::api::{ApiDriver, ProviderConfig};
use super::drivers::browser::{BrowserConfig, BrowserDriver, SiteProfile};
use super::drivers::cli::{CliConfig, CliDriver};
use super::error::AgentError;
use super::juniors::Juniors;
use super::limits::MAX_JUNIORS;
use super::providers::KernelLedger;
use super::service::Agents;
use super::synthesis::{Scorer, Strategy};

/// One entry of `agents.drivers`: exactly one of `cli`, `api`, `browser`, and the time
/// limit of a task.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DriverProfile {
    /// `[program, args...]`: the task on stdin, the answer on stdout.
    #[serde(default)]
    pub cli: Option<Vec<String>>,
    /// Names of `agents.providers` entries, tried in this order (empty: all of them, in
    /// their configured order).
    #[serde(default)]
    pub api: Option<Vec<String>>,
    /// A site profile (YAML, see `config/browser-profiles/`), relative to the working
    /// directory of `orchestrata up`.
    #[serde(default)]
    pub browser: Option<PathBuf>,
    /// The task's time limit in seconds (default 300).
    #[serde(default = "default_timeout")]
    pub timeout_s: u64,
    /// A CLI program's environment besides `PATH`, `HOME` and `LANG` (nothing else of
    /// the server's environment reaches it).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// The largest answer in bytes (a program's stdout, a provider's body); more
    /// fails the task `output_too_large` (default 1 MiB).
    #[serde(default = "default_max_output")]
    pub max_output_bytes: u64,
}

fn default_max_output() -> u64 {
    super::drivers::cli::MAX_OUTPUT_BYTES
}

fn default_timeout() -> u64 {
    300
}

/// What a profile runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DriverKind {
    /// A local program.
    Cli,
    /// OpenAI-compatible providers.
    Api,
    /// A chat page in headless Chromium.
    Browser,
}

impl DriverKind {
    /// `cli`, `api` or `browser` (the junior's `driver` in `volk.lifecycle`).
    pub fn as_str(self) -> &'static str {
        match self {
            DriverKind::Cli => "cli",
            DriverKind::Api => "api",
            DriverKind::Browser => "browser",
        }
    }
}

impl DriverProfile {
    /// A CLI profile running `command` with a `timeout_s` limit.
    pub fn cli<S: Into<String>>(command: impl IntoIterator<Item = S>, timeout_s: u64) -> Self {
        DriverProfile {
            cli: Some(command.into_iter().map(Into::into).collect()),
            api: None,
            browser: None,
            timeout_s,
            env: BTreeMap::new(),
            max_output_bytes: default_max_output(),
        }
    }

    /// Its kind, or why it has none, starting with the key at fault (`cli is empty`,
    /// `kind: give one of ...`).
    pub fn kind(&self) -> Result<DriverKind, String> {
        match (&self.cli, &self.api, &self.browser) {
            (Some(c), None, None) if c.is_empty() => {
                Err("cli is empty: give [program, args...]".into())
            }
            (Some(_), None, None) => Ok(DriverKind::Cli),
            (None, Some(_), None) => Ok(DriverKind::Api),
            (None, None, Some(_)) => Ok(DriverKind::Browser),
            (None, None, None) => Err("kind: give one of cli, api, browser".into()),
            _ => Err("kind: give only one of cli, api, browser".into()),
        }
    }
}

/// Everything a profile needs to become a driver: the profiles, the providers, the
/// browser and the site profiles (loaded when the configuration is read).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DriverSetup {
    /// `agents.drivers`.
    pub profiles: BTreeMap<String, DriverProfile>,
    /// `agents.providers`, in configured order.
    pub providers: Vec<ProviderConfig>,
    /// `agents.browser`.
    pub browser: BrowserConfig,
    /// The site profile of each `browser` profile, by profile name.
    pub sites: BTreeMap<String, SiteProfile>,
}

impl DriverSetup {
    /// Only CLI profiles (what a test or a small install needs).
    pub fn of(profiles: BTreeMap<String, DriverProfile>) -> Self {
        DriverSetup {
            profiles,
            ..Default::default()
        }
    }

    /// The profile named `name`.
    pub fn profile(&self, name: &str) -> Result<&DriverProfile, AgentError> {
        self.profiles.get(name).ok_or_else(|| {
            AgentError::invalid(
                "driver",
                format!(
                    "no driver profile `{name}` (configured: {:?})",
                    self.profiles.keys().collect::<Vec<_>>()
                ),
            )
        })
    }

    /// The providers of an `api` profile, in its order.
    pub fn providers_of(&self, names: &[String]) -> Result<Vec<ProviderConfig>, String> {
        if names.is_empty() {
            return Ok(self.providers.clone());
        }
        names
            .iter()
            .map(|n| {
                self.providers
                    .iter()
                    .find(|p| &p.name == n)
                    .cloned()
                    .ok_or_else(|| format!("no provider `{n}` in agents.providers"))
            })
            .collect()
    }

    /// A fresh driver for profile `name` whose provider calls (if any) are recorded by
    /// `agents`' kernel as issued by `senior`; with its kind and the task time limit.
    pub fn build(
        &self,
        agents: &Agents,
        name: &str,
        senior: &str,
        task_id: &str,
    ) -> Result<(DriverKind, Box<dyn Driver>, Duration), AgentError> {
        let profile = self.profile(name)?;
        let kind = profile
            .kind()
            .map_err(|reason| AgentError::invalid("driver", format!("{name}.{reason}")))?;
        let driver: Box<dyn Driver> = match kind {
            DriverKind::Cli => {
                let command = profile.cli.as_deref().unwrap_or_default();
                let (program, args) = command
                    .split_first()
                    .map_or(("", &[][..]), |(a, b)| (a.as_str(), b));
                let mut config = CliConfig::new(program).args(args.iter().cloned());
                config.env = profile
                    .env
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect();
                config
                    .env
                    .push(("ORCHESTRATA_TASK_ID".into(), task_id.to_owned()));
                config.max_output_bytes = profile.max_output_bytes;
                Box::new(CliDriver::new(config))
            }
            DriverKind::Api => {
                let names = profile.api.as_deref().unwrap_or_default();
                let providers = self
                    .providers_of(names)
                    .map_err(|r| AgentError::invalid("driver", format!("{name}: {r}")))?;
                let ledger = KernelLedger::new(agents.kernel().clone(), senior);
                Box::new(
                    ApiDriver::with_ledger(providers, Arc::new(ledger))
                        .max_body_bytes(profile.max_output_bytes),
                )
            }
            DriverKind::Browser => {
                let site = self.sites.get(name).cloned().ok_or_else(|| {
                    AgentError::invalid("driver", format!("{name}: its site profile is not loaded"))
                })?;
                Box::new(BrowserDriver::new(site, self.browser.clone()))
            }
        };
        Ok((kind, driver, Duration::from_secs(profile.timeout_s)))
    }
}

/// What a delegation ends with: every junior's run and the fan-out's outcome.
pub type Delegated = Result<(Vec<JuniorRun>, FanOutOutcome), AgentError>;

/// Runs fan-outs and single juniors over configured profiles. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Delegator {
    agents: Agents,
    setup: Arc<DriverSetup>,
    juniors: Juniors,
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
    /// Over `agents` with CLI profiles only.
    pub fn new(agents: Agents, profiles: BTreeMap<String, DriverProfile>) -> Self {
        Self::with_setup(agents, DriverSetup::of(profiles))
    }

    /// Over `agents` with every kind of profile `setup` configures.
    pub fn with_setup(agents: Agents, setup: DriverSetup) -> Self {
        let setup = Arc::new(setup);
        let juniors = Juniors::new(agents.clone(), setup.clone());
        Delegator {
            agents,
            setup,
            juniors,
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
        self.setup.profiles.keys().cloned().collect()
    }

    /// Single juniors: spawn, assign, terminate.
    pub fn juniors(&self) -> &Juniors {
        &self.juniors
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
        let live = self.agents.node(senior).await?.is_some_and(|n| n.live);
        if !live {
            return Err(AgentError::UnknownAgent {
                field: "senior",
                alias: senior.to_owned(),
            });
        }
        let id = format!("delegate-{}", Uuid::new_v4());
        let mut drivers = Vec::with_capacity(juniors.len());
        let mut timeout = Duration::ZERO;
        for name in juniors {
            let (kind, driver, limit) =
                self.setup
                    .build(&self.agents, name, senior, &id)
                    .map_err(|e| match e {
                        AgentError::Invalid { reason, .. } => {
                            AgentError::invalid("juniors", reason)
                        }
                        other => other,
                    })?;
            timeout = timeout.max(limit);
            drivers.push((kind.as_str().to_owned(), driver));
        }
        let task = Task {
            id: id.clone(),
            prompt: prompt.to_owned(),
            timeout,
        };
        let (agents, senior) = (self.agents.clone(), senior.to_owned());
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
