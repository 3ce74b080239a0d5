//! The configuration: one YAML file whose sections each component reads
//! ([`SystemConfig`] gathers them all; [`env`](mod@env) documents the `ORCHESTRATA_<SECTION>__<KEY>`
//! environment overrides). The event log's own section is defined with the log
//! ([`crate::log::config`]) and re-exported here.

pub mod env;
pub mod sections;
pub mod system;

pub use crate::log::config::{
    Backend, ConfigError, FsyncPolicy, LogConfig, RetentionPolicy, TopicSettings, DEFAULT_DATA_DIR,
    DEFAULT_SLED_CACHE_BYTES, DEFAULT_TOPIC_PREFIX,
};
pub use sections::{LogFormat, LoggingConfig, ProjectionsSection};
pub use system::{merged_yaml, redact, SystemConfig, SystemConfigError, SECTIONS};

/// Reads the `log:` section of a YAML file (a missing section means defaults), with the
/// environment's `ORCHESTRATA_LOG__<KEY>` overrides applied. It lives here, not with
/// [`LogConfig`], because merging the file with the environment is the configuration
/// layer's job; the log only parses its own section ([`LogConfig::from_yaml`]).
pub fn load_log(path: &std::path::Path) -> Result<LogConfig, ConfigError> {
    let text = merged_yaml(Some(path)).map_err(|e| match e {
        SystemConfigError::Read { path, source } => ConfigError::Read { path, source },
        other => ConfigError::Parse {
            path: path.display().to_string(),
            reason: other.to_string(),
        },
    })?;
    LogConfig::from_yaml(&text).map_err(|e| match e {
        ConfigError::Parse { reason, .. } => ConfigError::Parse {
            path: path.display().to_string(),
            reason,
        },
        other => other,
    })
}
