//! The event log's own configuration section: which backend, how durable, how long to
//! keep events. It lives with the log (the log depends on nothing above it); the
//! system configuration ([`crate::config`]) embeds it as its `log:` section.
//!
//! The log reads the `log:` section (file, then environment, then command-line flags):
//!
//! ```yaml
//! log:
//!   data_dir: ./data            # sled backend (the default)
//!   # kafka: 127.0.0.1:9092     # or: Kafka backend (wins over data_dir)
//!   topic_prefix: orchestrata   # Kafka topics are <prefix>.<stream>
//!   delivery_timeout_ms: 10000  # an append not acknowledged by then fails
//!   request_timeout_ms: 5000    # reads and admin calls
//!   fsync: every_append         # or every_n:100, or every_ms:5 (sled)
//!   sled_cache_mb: 32           # sled's page cache (sled's own default: 1024)
//!   kafka_topics:               # how Orchestrata creates (and checks) its topics
//!     replication_factor: 3     # default: the cluster's default.replication.factor
//!     min_insync_replicas: 2    # default: the cluster's
//!     retention_ms: -1          # default -1: keep forever (the log is the record)
//!     accept_deleting_history: false  # start even if a topic deletes old records
//!   retention:
//!     cxp.traffic: { max_events: 1000000, max_age_ms: 604800000 }
//! ```
use std::collections::BTreeMap;
use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;
use std::time::Duration;

use orchestrata_schemas::events::Stream;
use serde::{Deserialize, Serialize};

/// Why a configuration could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("config file {path}: cannot read it: {source}")]
    Read {
        /// The file.
        path: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape.
    #[error("config file {path}: {reason}")]
    Parse {
        /// The file.
        path: String,
        /// Where and why parsing failed (serde names the field).
        reason: String,
    },
    /// A value is out of range.
    #[error("config field {field}: {reason}")]
    Invalid {
        /// The field, e.g. `log.fsync`.
        field: String,
        /// Why it is rejected.
        reason: String,
    },
}

/// When the sled backend forces appended data to disk.
///
/// Written as `every_append`, `every_n:<N>` or `every_ms:<T>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum FsyncPolicy {
    /// The default. An append returns only after its data is on disk. Concurrent appenders share one
    /// fsync (group commit), so throughput grows with concurrency.
    #[default]
    EveryAppend,
    /// One fsync per N appended events; up to N-1 acknowledged events can be lost in a crash.
    EveryN(u64),
    /// A background fsync every T milliseconds; up to T ms of acknowledged events can be lost.
    EveryMs(u64),
}

impl fmt::Display for FsyncPolicy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FsyncPolicy::EveryAppend => f.write_str("every_append"),
            FsyncPolicy::EveryN(n) => write!(f, "every_n:{n}"),
            FsyncPolicy::EveryMs(ms) => write!(f, "every_ms:{ms}"),
        }
    }
}

impl FromStr for FsyncPolicy {
    type Err = ConfigError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let invalid = |reason: String| ConfigError::Invalid {
            field: "log.fsync".into(),
            reason,
        };
        let number = |text: &str| -> Result<u64, ConfigError> {
            match text.trim().parse::<u64>() {
                Ok(0) => Err(invalid(format!("`{s}`: the number must be at least 1"))),
                Ok(n) => Ok(n),
                Err(_) => Err(invalid(format!("`{s}`: `{text}` is not a whole number"))),
            }
        };
        match s.trim().split_once(':') {
            None if s.trim() == "every_append" => Ok(FsyncPolicy::EveryAppend),
            Some(("every_n", n)) => Ok(FsyncPolicy::EveryN(number(n)?)),
            Some(("every_ms", ms)) => Ok(FsyncPolicy::EveryMs(number(ms)?)),
            _ => Err(invalid(format!(
                "`{s}` is not a policy; use every_append, every_n:<N> or every_ms:<T>"
            ))),
        }
    }
}

impl TryFrom<String> for FsyncPolicy {
    type Error = ConfigError;
    fn try_from(s: String) -> Result<Self, Self::Error> {
        s.parse()
    }
}

impl From<FsyncPolicy> for String {
    fn from(p: FsyncPolicy) -> String {
        p.to_string()
    }
}

/// How much of one stream to keep. Both limits apply; the newest event is always kept so
/// that sequences continue after it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionPolicy {
    /// Keep at most this many events (the newest ones).
    pub max_events: Option<u64>,
    /// Drop events stored longer ago than this many milliseconds.
    pub max_age_ms: Option<u64>,
}

impl RetentionPolicy {
    /// The age limit as a duration.
    pub fn max_age(&self) -> Option<Duration> {
        self.max_age_ms.map(Duration::from_millis)
    }
}

/// Where the log lives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Backend {
    /// The embedded sled database in this directory.
    Sled {
        /// The data directory.
        data_dir: PathBuf,
    },
    /// A Kafka(-protocol) cluster.
    Kafka {
        /// Bootstrap servers, `host:port[,host:port...]`.
        brokers: String,
    },
}

/// Everything the log needs to open. Build it with [`LogConfig::sled`] /
/// [`LogConfig::kafka`] or [`crate::config::load_log`], then adjust the public fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogConfig {
    /// The backend.
    pub backend: Backend,
    /// Kafka topics are `<topic_prefix>.<stream>`.
    pub topic_prefix: String,
    /// An append not acknowledged within this time fails with
    /// [`LogError::AppendTimeout`](crate::log::LogError::AppendTimeout) (Kafka).
    pub delivery_timeout: Duration,
    /// Reads and admin requests give up after this time (Kafka).
    pub request_timeout: Duration,
    /// Durability of sled appends.
    pub fsync: FsyncPolicy,
    /// sled's page cache, in bytes ([`DEFAULT_SLED_CACHE_BYTES`]).
    pub sled_cache_bytes: u64,
    /// Retention per stream; streams not listed keep everything.
    pub retention: BTreeMap<Stream, RetentionPolicy>,
    /// How Kafka topics are created and what an existing topic may be.
    pub topics: TopicSettings,
}

/// How the Kafka backend creates its topics, and what it accepts of existing ones.
///
/// The log is the system of record, so a topic keeps everything by default
/// (`retention.ms=-1`, `retention.bytes=-1`). Replication is the cluster's unless set:
/// a three-broker cluster's `default.replication.factor` and `min.insync.replicas`
/// apply, and a single test broker works unchanged.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TopicSettings {
    /// Replicas of each created topic; `None`: the cluster's default.
    pub replication_factor: Option<u16>,
    /// `min.insync.replicas` of each created topic; `None`: the cluster's default.
    pub min_insync_replicas: Option<u16>,
    /// `retention.ms` of each created topic; `None` or -1: keep every record.
    pub retention_ms: Option<i64>,
    /// Start even when an existing topic deletes old records (finite `retention.ms` or
    /// `retention.bytes`, or compaction), with a warning instead of refusing. Once the
    /// broker deletes a topic's first record (its epoch marker), the log cannot open.
    #[serde(default)]
    pub accept_deleting_history: bool,
}

impl TopicSettings {
    /// Whether topics are meant to delete old records (a finite `retention_ms` set).
    pub fn deletes_history(&self) -> bool {
        self.retention_ms.is_some_and(|ms| ms >= 0)
    }
}

/// Default data directory of the sled backend.
pub const DEFAULT_DATA_DIR: &str = "./data";
/// Default page cache of each store (the log's sled database, the view store's redb
/// file): 32 MiB, against sled's own 1 GiB, sized for a small machine. The live path
/// reads from memory (the kernel's hot entries, the log's tail), so the caches serve
/// cold reads only, and a larger cache raises resident memory (sled's pages exceed
/// its nominal bound) without raising throughput.
pub const DEFAULT_SLED_CACHE_BYTES: u64 = 32 << 20;
/// Default Kafka topic prefix.
pub const DEFAULT_TOPIC_PREFIX: &str = "orchestrata";

impl LogConfig {
    /// A sled log in `data_dir` with default settings.
    pub fn sled(data_dir: impl Into<PathBuf>) -> Self {
        Self::with_backend(Backend::Sled {
            data_dir: data_dir.into(),
        })
    }

    /// A Kafka log on `brokers` with default settings.
    pub fn kafka(brokers: impl Into<String>) -> Self {
        Self::with_backend(Backend::Kafka {
            brokers: brokers.into(),
        })
    }

    fn with_backend(backend: Backend) -> Self {
        LogConfig {
            backend,
            topic_prefix: DEFAULT_TOPIC_PREFIX.into(),
            delivery_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(5),
            fsync: FsyncPolicy::default(),
            sled_cache_bytes: DEFAULT_SLED_CACHE_BYTES,
            retention: BTreeMap::new(),
            topics: TopicSettings::default(),
        }
    }

    /// Parses the `log:` section of a YAML document.
    pub fn from_yaml(text: &str) -> Result<Self, ConfigError> {
        let file: FileConfig = serde_yaml_ng::from_str(text).map_err(|e| ConfigError::Parse {
            path: "<inline>".into(),
            reason: e.to_string(),
        })?;
        file.log.unwrap_or_default().into_config()
    }

    /// Applies command-line overrides: `--kafka` wins over `--data-dir`, and either
    /// replaces what the file chose.
    pub fn override_with(&mut self, data_dir: Option<PathBuf>, kafka: Option<String>) {
        if let Some(brokers) = kafka {
            self.backend = Backend::Kafka { brokers };
        } else if let Some(data_dir) = data_dir {
            self.backend = Backend::Sled { data_dir };
        }
    }
}

impl Default for LogConfig {
    fn default() -> Self {
        Self::sled(DEFAULT_DATA_DIR)
    }
}

#[derive(Debug, Default, Deserialize)]
struct FileConfig {
    log: Option<FileLog>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct FileLog {
    data_dir: Option<PathBuf>,
    kafka: Option<String>,
    topic_prefix: Option<String>,
    delivery_timeout_ms: Option<u64>,
    request_timeout_ms: Option<u64>,
    fsync: Option<FsyncPolicy>,
    sled_cache_mb: Option<u64>,
    #[serde(default)]
    retention: BTreeMap<String, RetentionPolicy>,
    kafka_topics: Option<TopicSettings>,
}

impl FileLog {
    fn into_config(self) -> Result<LogConfig, ConfigError> {
        let mut config = LogConfig::default();
        config.override_with(self.data_dir, self.kafka);
        if let Some(prefix) = self.topic_prefix {
            if prefix.is_empty()
                || !prefix
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
            {
                return Err(ConfigError::Invalid {
                    field: "log.topic_prefix".into(),
                    reason: format!(
                        "`{prefix}` must be non-empty and use only letters, digits, `.`, `_`, `-`"
                    ),
                });
            }
            config.topic_prefix = prefix;
        }
        for (field, value, target) in [
            (
                "log.delivery_timeout_ms",
                self.delivery_timeout_ms,
                &mut config.delivery_timeout,
            ),
            (
                "log.request_timeout_ms",
                self.request_timeout_ms,
                &mut config.request_timeout,
            ),
        ] {
            match value {
                Some(0) => {
                    return Err(ConfigError::Invalid {
                        field: field.into(),
                        reason: "must be at least 1 ms".into(),
                    })
                }
                Some(ms) => *target = Duration::from_millis(ms),
                None => {}
            }
        }
        if let Some(fsync) = self.fsync {
            config.fsync = fsync;
        }
        match self.sled_cache_mb {
            Some(0) => {
                return Err(ConfigError::Invalid {
                    field: "log.sled_cache_mb".into(),
                    reason: "must be at least 1".into(),
                })
            }
            Some(mb) => config.sled_cache_bytes = mb.saturating_mul(1 << 20),
            None => {}
        }
        if let Some(topics) = self.kafka_topics {
            let invalid = |field: &str, reason: &str| ConfigError::Invalid {
                field: format!("log.kafka_topics.{field}"),
                reason: reason.into(),
            };
            if topics.replication_factor == Some(0) {
                return Err(invalid("replication_factor", "must be at least 1"));
            }
            if topics.min_insync_replicas == Some(0) {
                return Err(invalid("min_insync_replicas", "must be at least 1"));
            }
            if let (Some(rf), Some(isr)) = (topics.replication_factor, topics.min_insync_replicas) {
                if isr > rf {
                    return Err(invalid(
                        "min_insync_replicas",
                        &format!("{isr} is more than the {rf} replicas: every append would fail"),
                    ));
                }
            }
            if topics.retention_ms.is_some_and(|ms| ms < -1 || ms == 0) {
                return Err(invalid(
                    "retention_ms",
                    "-1 (keep forever) or a positive number of ms",
                ));
            }
            config.topics = topics;
        }
        for (name, policy) in self.retention {
            let stream = name.parse::<Stream>().map_err(|e| ConfigError::Invalid {
                field: format!("log.retention.{name}"),
                reason: e.to_string(),
            })?;
            if policy.max_events == Some(0) {
                return Err(ConfigError::Invalid {
                    field: format!("log.retention.{name}.max_events"),
                    reason: "must be at least 1 (the newest event is always kept)".into(),
                });
            }
            config.retention.insert(stream, policy);
        }
        Ok(config)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fsync_policies_parse_and_print() {
        for text in ["every_append", "every_n:100", "every_ms:5"] {
            let policy: FsyncPolicy = text.parse().expect("valid policy");
            assert_eq!(policy.to_string(), text);
        }
        assert!("every_n:0".parse::<FsyncPolicy>().is_err());
        assert!("sometimes".parse::<FsyncPolicy>().is_err());
    }

    #[test]
    fn the_sled_cache_is_small_by_default_and_configurable() {
        assert_eq!(LogConfig::default().sled_cache_bytes, 32 << 20);
        let config = LogConfig::from_yaml("log:\n  sled_cache_mb: 16\n").expect("valid");
        assert_eq!(config.sled_cache_bytes, 16 << 20);
        let err = LogConfig::from_yaml("log:\n  sled_cache_mb: 0\n").expect_err("zero");
        assert!(err.to_string().contains("log.sled_cache_mb"), "{err}");
    }

    #[test]
    fn kafka_topic_settings_parse_and_refuse_what_cannot_work() {
        let config = LogConfig::from_yaml(
            "log:\n  kafka_topics: { replication_factor: 3, min_insync_replicas: 2 }\n",
        )
        .expect("valid");
        assert_eq!(config.topics.replication_factor, Some(3));
        assert_eq!(config.topics.min_insync_replicas, Some(2));
        assert!(!config.topics.deletes_history());
        assert!(!config.topics.accept_deleting_history);
        for (yaml, field) in [
            ("{ replication_factor: 0 }", "replication_factor"),
            (
                "{ replication_factor: 1, min_insync_replicas: 2 }",
                "min_insync_replicas",
            ),
            ("{ retention_ms: 0 }", "retention_ms"),
            ("{ retention_ms: -5 }", "retention_ms"),
            ("{ retention: 5 }", "retention"),
        ] {
            let err =
                LogConfig::from_yaml(&format!("log:\n  kafka_topics: {yaml}\n")).expect_err(yaml);
            assert!(err.to_string().contains(field), "{yaml}: {err}");
        }
        let keep = LogConfig::from_yaml("log:\n  kafka_topics: { retention_ms: 86400000 }\n")
            .expect("valid");
        assert!(keep.topics.deletes_history());
    }
}
