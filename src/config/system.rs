//! The whole-system configuration: one YAML file, one section per component, every key
//! overridable from the environment (see [`env`](mod@super::env) for the exact rule).
//!
//! Each component keeps reading its own section with its own parser
//! ([`LogConfig::from_yaml`], [`GatewayConfig::from_yaml`]); this module merges file and
//! environment into the one document they read ([`merged_yaml`]), rejects unknown
//! sections, and gathers every section into a [`SystemConfig`] for `config check`,
//! `config print` and `orchestrata up`. Errors name the key and, when the key is written
//! in the file, its line.

use std::path::Path;

use serde_json::{json, Value as Json};
use serde_yaml_ng::{Mapping, Value};

use super::env::{self, EnvOverride};
use super::sections::{
    FileGovernance, FileKernel, FileProjections, LoggingConfig, ProjectionsSection,
};
use super::{ConfigError, LogConfig};
use crate::gateway::{GatewayConfig, GatewayConfigError};
use crate::governance::GovernanceConfig;
use crate::kernel::KernelConfig;

/// The top-level sections a config file may have.
pub const SECTIONS: [&str; 7] = [
    "log",
    "gateway",
    "kernel",
    "projections",
    "governance",
    "agents",
    "logging",
];

/// Why the whole-system configuration is unusable.
#[derive(Debug, thiserror::Error)]
pub enum SystemConfigError {
    /// The file could not be read.
    #[error("config file {path}: cannot read it: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// A key is missing its shape, unknown or out of range.
    #[error("{origin}{}: {key}: {reason}", .line.map(|l| format!(" line {l}")).unwrap_or_default())]
    Invalid {
        /// The file (or `<inline>`), with the variable when the value came from one.
        origin: String,
        /// The dotted key, e.g. `gateway.max_clients` (or the section for shape errors).
        key: String,
        /// Line in the file, when the key is written there.
        line: Option<usize>,
        /// Why.
        reason: String,
    },
    /// An environment variable cannot be applied.
    #[error("environment variable {var}: {reason}")]
    Env {
        /// The variable.
        var: String,
        /// Why.
        reason: String,
    },
}

/// Every section, parsed and checked; defaults fill what the file and environment left
/// out (the embedded mode: sled log in `./data`, gateway on 127.0.0.1:18790).
#[derive(Debug, Clone)]
pub struct SystemConfig {
    /// `log:`.
    pub log: LogConfig,
    /// `gateway:`.
    pub gateway: GatewayConfig,
    /// `kernel:`.
    pub kernel: KernelConfig,
    /// `projections:`.
    pub projections: ProjectionsSection,
    /// `governance:`.
    pub governance: GovernanceConfig,
    /// `logging:`.
    pub logging: LoggingConfig,
    /// `agents:` as written (read by the agents component).
    pub agents: Value,
    /// The merged document (file + environment) the sections were read from.
    pub merged: String,
    /// The overrides that were applied.
    pub overrides: Vec<EnvOverride>,
}

struct Source {
    origin: String,
    text: String,
    merged: String,
    overrides: Vec<EnvOverride>,
}

impl Source {
    fn invalid(&self, key: String, reason: String) -> SystemConfigError {
        let by_env = self
            .overrides
            .iter()
            .find(|o| key == o.key() || key.starts_with(&format!("{}.", o.key())));
        match by_env {
            Some(o) => SystemConfigError::Invalid {
                origin: format!("{} (set by {})", self.origin, o.var),
                key,
                line: None,
                reason,
            },
            None => SystemConfigError::Invalid {
                origin: self.origin.clone(),
                line: env::line_of(&self.text, &key),
                key,
                reason,
            },
        }
    }

    /// A serde error: the message names the key; its line is only right when the
    /// document the parser saw is the file itself.
    fn parse(&self, section: &str, reason: String) -> SystemConfigError {
        let reason = if self.overrides.is_empty() {
            reason
        } else {
            format!("{reason} (after environment overrides)")
        };
        SystemConfigError::Invalid {
            origin: self.origin.clone(),
            key: section.into(),
            line: None,
            reason,
        }
    }
}

fn load_source(
    path: Option<&Path>,
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Source, SystemConfigError> {
    let (origin, text) = match path {
        Some(p) => (
            p.display().to_string(),
            std::fs::read_to_string(p).map_err(|source| SystemConfigError::Read {
                path: p.display().to_string(),
                source,
            })?,
        ),
        None => ("<defaults>".to_string(), String::new()),
    };
    let overrides = env::overrides(vars)?;
    let mut doc: Value = if text.trim().is_empty() {
        Value::Mapping(Mapping::new())
    } else {
        serde_yaml_ng::from_str(&text).map_err(|e| SystemConfigError::Invalid {
            origin: origin.clone(),
            key: "<document>".into(),
            line: e.location().map(|l| l.line()),
            reason: format!("not valid YAML: {e}"),
        })?
    };
    let Value::Mapping(map) = &doc else {
        return Err(SystemConfigError::Invalid {
            origin,
            key: "<document>".into(),
            line: Some(1),
            reason: "the file must be a map of sections (log:, gateway:, ...)".into(),
        });
    };
    let source = Source {
        origin: origin.clone(),
        text: text.clone(),
        merged: String::new(),
        overrides: overrides.clone(),
    };
    for key in map.keys() {
        let name = key.as_str().unwrap_or("<not text>");
        if !SECTIONS.contains(&name) {
            return Err(source.invalid(
                name.to_string(),
                format!("unknown section; expected one of {}", SECTIONS.join(", ")),
            ));
        }
    }
    for o in &overrides {
        if !SECTIONS.contains(&o.path[0].as_str()) {
            return Err(SystemConfigError::Env {
                var: o.var.clone(),
                reason: format!(
                    "unknown section `{}`; expected one of {}",
                    o.path[0],
                    SECTIONS.join(", ")
                ),
            });
        }
    }
    env::apply(&mut doc, &overrides)?;
    let merged = if overrides.is_empty() {
        text.clone()
    } else {
        serde_yaml_ng::to_string(&doc).map_err(|e| SystemConfigError::Env {
            var: overrides[0].var.clone(),
            reason: e.to_string(),
        })?
    };
    Ok(Source { merged, ..source })
}

/// The YAML document the components read: the file (if any) with the process
/// environment's `ORCHESTRATA_<SECTION>__<KEY>` overrides applied.
pub fn merged_yaml(path: Option<&Path>) -> Result<String, SystemConfigError> {
    Ok(load_source(path, std::env::vars())?.merged)
}

fn section<T: serde::de::DeserializeOwned + Default>(
    source: &Source,
    doc: &Value,
    name: &str,
) -> Result<T, SystemConfigError> {
    match doc.get(name) {
        None | Some(Value::Null) => Ok(T::default()),
        Some(v) => serde_yaml_ng::from_value(v.clone()).map_err(|e| {
            let reason = e.to_string();
            let key = reason
                .split("unknown field `")
                .nth(1)
                .and_then(|r| r.split('`').next())
                .map_or_else(|| name.to_string(), |f| format!("{name}.{f}"));
            source.invalid(key, reason)
        }),
    }
}

impl SystemConfig {
    /// Reads `path` (or only defaults) with the process environment's overrides.
    pub fn load(path: Option<&Path>) -> Result<Self, SystemConfigError> {
        Self::load_with_env(path, std::env::vars())
    }

    /// Like [`load`](Self::load) with the given variables instead of the process's.
    pub fn load_with_env(
        path: Option<&Path>,
        vars: impl IntoIterator<Item = (String, String)>,
    ) -> Result<Self, SystemConfigError> {
        let s = load_source(path, vars)?;
        let doc: Value = if s.merged.trim().is_empty() {
            Value::Mapping(Mapping::new())
        } else {
            serde_yaml_ng::from_str(&s.merged).map_err(|e| s.parse("<document>", e.to_string()))?
        };
        let log = LogConfig::from_yaml(&s.merged).map_err(|e| match e {
            ConfigError::Invalid { field, reason } => s.invalid(field, reason),
            ConfigError::Parse { reason, .. } => s.parse("log", reason),
            ConfigError::Read { path, source } => SystemConfigError::Read { path, source },
        })?;
        let gateway = GatewayConfig::from_yaml(&s.merged).map_err(|e| match e {
            GatewayConfigError::Invalid { field, reason } => s.invalid(field, reason),
            GatewayConfigError::File { reason, .. } => s.parse("gateway", reason),
        })?;
        let kernel = section::<FileKernel>(&s, &doc, "kernel")?
            .into_config()
            .map_err(|(k, r)| s.invalid(k, r))?;
        let projections = section::<FileProjections>(&s, &doc, "projections")?
            .into_config()
            .map_err(|(k, r)| s.invalid(k, r))?;
        let governance = section::<FileGovernance>(&s, &doc, "governance")?
            .into_config()
            .map_err(|(k, r)| s.invalid(k, r))?;
        let logging: LoggingConfig = section(&s, &doc, "logging")?;
        logging.validate().map_err(|(k, r)| s.invalid(k, r))?;
        let agents = doc.get("agents").cloned().unwrap_or(Value::Null);
        if !(agents.is_null() || agents.is_mapping()) {
            return Err(s.invalid("agents".into(), "must be a map".into()));
        }
        Ok(SystemConfig {
            log,
            gateway,
            kernel,
            projections,
            governance,
            logging,
            agents,
            merged: s.merged,
            overrides: s.overrides,
        })
    }

    /// The effective configuration, defaults included, secrets redacted: what
    /// `orchestrata config print` shows.
    pub fn effective(&self) -> Json {
        let log = &self.log;
        let (backend, place) = match &log.backend {
            super::Backend::Sled { data_dir } => ("data_dir", data_dir.display().to_string()),
            super::Backend::Kafka { brokers } => ("kafka", brokers.clone()),
        };
        let g = &self.gateway;
        let k = &self.kernel;
        let gov = &self.governance;
        let mut log_view = json!({
                "topic_prefix": log.topic_prefix,
                "delivery_timeout_ms": log.delivery_timeout.as_millis() as u64,
                "request_timeout_ms": log.request_timeout.as_millis() as u64,
                "fsync": log.fsync.to_string(),
                "retention": log.retention.iter()
                    .map(|(s, p)| (s.as_str().to_string(), json!(p)))
                    .collect::<serde_json::Map<_, _>>(),
        });
        log_view[backend] = Json::String(place);
        let view = json!({
            "log": log_view,
            "gateway": g.view(),
            "kernel": {
                "node": k.node,
                "inbox_capacity": k.inbox_capacity,
                "max_retries": k.max_retries,
                "backoff_base_ms": k.backoff_base.as_millis() as u64,
                "backoff_max_ms": k.backoff_max.as_millis() as u64,
                "max_batch": k.max_batch,
                "register_roster": k.register_roster,
                "hot_entries": k.hot_entries,
            },
            "projections": {
                "views_dir": self.projections.views_dir.as_ref()
                    .map_or_else(|| crate::projection::views_dir(&self.log), Clone::clone)
                    .display().to_string(),
                "batch_events": self.projections.runner.batch_events,
                "batch_ms": self.projections.runner.batch_interval.as_millis() as u64,
                "store_cache_mb": self.projections.store_cache_bytes >> 20,
                "hot_entries": self.projections.runner.hot_entries,
            },
            "governance": {
                "policy_dir": gov.policy_dir.as_ref().map(|p| p.display().to_string()),
                "checkpoint": gov.checkpoint.as_ref().map(|p| p.display().to_string()),
                "cache_capacity": gov.cache_capacity,
                "timeout_ms": gov.timeout.as_millis() as u64,
                "inference_limit": gov.inference_limit,
                "sync_before_decide": gov.sync_before_decide,
            },
            "agents": serde_json::to_value(&self.agents).unwrap_or(Json::Null),
            "logging": self.logging,
        });
        redact(view)
    }
}

/// Whether a key holds a secret: `token`, `*_token`, `secret`, `password`, `api_key`,
/// `*_key` (but not `*_key_path`, a file name).
pub fn is_secret_key(key: &str) -> bool {
    let k = key.to_ascii_lowercase();
    k.ends_with("token")
        || k.contains("secret")
        || k.contains("password")
        || k == "key"
        || k.ends_with("_key")
        || k.ends_with("apikey")
}

/// Replaces every secret value (by key name, at any depth) with `"***"`.
pub fn redact(value: Json) -> Json {
    match value {
        Json::Object(map) => Json::Object(
            map.into_iter()
                .map(|(k, v)| {
                    let v = if is_secret_key(&k) && !v.is_null() {
                        Json::String("***".into())
                    } else {
                        redact(v)
                    };
                    (k, v)
                })
                .collect(),
        ),
        Json::Array(items) => Json::Array(items.into_iter().map(redact).collect()),
        other => other,
    }
}
