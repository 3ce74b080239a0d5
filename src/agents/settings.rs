//! The `agents:` section of the configuration, read and checked in one place, so that
//! `orchestrata config check` refuses exactly what `orchestrata up` would refuse.
//!
//! ```yaml
//! agents:
//!   drivers:                    # the juniors clients may start, by name (one kind each)
//!     summarizer: { cli: [python3, summarize.py], timeout_s: 120 }
//!     writer: { api: [local], timeout_s: 60 }          # providers, in fall-back order
//!     qwen: { browser: config/browser-profiles/qwen.yaml }
//!   providers:                  # OpenAI-compatible chat-completions endpoints
//!     - { name: local, base_url: "http://127.0.0.1:8080/v1", model: llama3, api_key_env: LOCAL_LLM_KEY, quota_tokens: 1000000 }
//!   browser:                    # headless Chromium for browser juniors
//!     chromium: chromium
//!     extra_allowed: []           # domains allowed besides each site profile's
//!     session_cap_s: 1800
//!     start_timeout_s: 30
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

use super::drivers::api::ProviderConfig;
use super::drivers::browser::{BrowserConfig, SiteProfile};
use super::escalation::EscalationPaths;
use super::profiles::{DriverKind, DriverProfile, DriverSetup};
use super::review::ReviewConfig;

/// The subsections `agents:` may have.
pub const SECTIONS: [&str; 6] = [
    "browser",
    "drivers",
    "escalation",
    "pipeline",
    "providers",
    "review",
];

/// `agents.browser`: the Chromium browser juniors run in.
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BrowserSection {
    /// The Chromium binary (default `chromium`).
    #[serde(default = "default_chromium")]
    pub chromium: PathBuf,
    /// Domains allowed besides each site profile's own (default none).
    #[serde(default)]
    pub extra_allowed: Vec<String>,
    /// A browser session's lifetime cap in seconds (default 1800).
    #[serde(default = "default_session_cap")]
    pub session_cap_s: u64,
    /// Time to start the browser and load the page, in seconds (default 30).
    #[serde(default = "default_start_timeout")]
    pub start_timeout_s: u64,
}

fn default_chromium() -> PathBuf {
    PathBuf::from("chromium")
}

fn default_session_cap() -> u64 {
    1800
}

fn default_start_timeout() -> u64 {
    30
}

impl BrowserSection {
    fn config(&self) -> BrowserConfig {
        BrowserConfig {
            chromium: self.chromium.clone(),
            extra_allowed: self.extra_allowed.clone(),
            session_cap: std::time::Duration::from_secs(self.session_cap_s),
            start_timeout: std::time::Duration::from_secs(self.start_timeout_s),
        }
    }
}

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
    /// `agents.drivers`, `agents.providers`, `agents.browser` and the site profiles
    /// the browser profiles name, loaded.
    pub drivers: DriverSetup,
}

impl AgentSettings {
    /// Reads the configuration's `agents:` section (`SystemConfig::agents`, as YAML).
    /// Errors name the key (`agents.pipeline`, ...) and why: an unknown subsection or
    /// field, a wrong type, an empty `coder`, zero review cycles.
    pub fn from_section(agents: &Value) -> anyhow::Result<Self> {
        let section = |name: &str| agents.get(name);
        if let Value::Mapping(map) = agents {
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
        let drivers = drivers(&section)?;
        Ok(AgentSettings {
            escalation,
            pipeline,
            review,
            drivers,
        })
    }
}

/// `agents.drivers`, `agents.providers` and `agents.browser`, each profile checked
/// against the others: one kind per profile, known providers, readable site profiles.
fn drivers<'a>(section: &impl Fn(&str) -> Option<&'a Value>) -> anyhow::Result<DriverSetup> {
    let profiles: std::collections::BTreeMap<String, DriverProfile> = match section("drivers") {
        Some(s) => serde_yaml_ng::from_value(s.clone()).context("agents.drivers")?,
        None => Default::default(),
    };
    let providers: Vec<ProviderConfig> = match section("providers") {
        Some(s) => serde_yaml_ng::from_value(s.clone()).context("agents.providers")?,
        None => Vec::new(),
    };
    for (i, p) in providers.iter().enumerate() {
        p.validate()
            .map_err(|e| anyhow::anyhow!("agents.providers[{i}]: {e}"))?;
        if providers[..i].iter().any(|q| q.name == p.name) {
            anyhow::bail!("agents.providers[{i}]: the name `{}` is used twice", p.name);
        }
    }
    let browser = match section("browser") {
        Some(s) => serde_yaml_ng::from_value::<BrowserSection>(s.clone())
            .context("agents.browser")?
            .config(),
        None => BrowserConfig::default(),
    };
    let mut setup = DriverSetup {
        profiles,
        providers,
        browser,
        sites: Default::default(),
    };
    let mut sites = std::collections::BTreeMap::new();
    for (name, profile) in &setup.profiles {
        let at = |what: &str| format!("agents.drivers.{name}.{what}");
        let kind = profile
            .kind()
            .map_err(|reason| anyhow::anyhow!("agents.drivers.{name}.{reason}"))?;
        match kind {
            DriverKind::Cli => {}
            DriverKind::Api => {
                if setup.providers.is_empty() {
                    anyhow::bail!("{}: no agents.providers are configured", at("api"));
                }
                setup
                    .providers_of(profile.api.as_deref().unwrap_or_default())
                    .map_err(|reason| anyhow::anyhow!("{}: {reason}", at("api")))?;
            }
            DriverKind::Browser => {
                let path = profile.browser.clone().unwrap_or_default();
                let text = std::fs::read_to_string(&path)
                    .with_context(|| format!("{}: reading {}", at("browser"), path.display()))?;
                let site = SiteProfile::from_yaml(&text)
                    .with_context(|| format!("{}: {}", at("browser"), path.display()))?;
                sites.insert(name.clone(), site);
            }
        }
    }
    setup.sites = sites;
    Ok(setup)
}
