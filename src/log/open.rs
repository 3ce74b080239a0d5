//! Opening the configured log, and keeping its retention applied.

use std::sync::Arc;
use std::time::Duration;

use super::config::{Backend, LogConfig};
use super::{EventLog, KafkaLog, LogError, RawLog, SledLog, TypedLog};

/// Opens the byte-level backend `config` chooses.
pub async fn open_raw(config: &LogConfig) -> Result<Arc<dyn RawLog>, LogError> {
    Ok(match &config.backend {
        Backend::Sled { data_dir } => Arc::new(
            SledLog::open(
                data_dir,
                config.fsync,
                config.retention.iter().map(|(s, p)| (*s, *p)),
                config.sled_cache_bytes,
            )
            .await?,
        ),
        Backend::Kafka { brokers } => Arc::new(KafkaLog::connect(brokers, config)?),
    })
}

/// Opens the typed event log `config` chooses (sled directory or Kafka brokers).
pub async fn open(config: &LogConfig) -> Result<Arc<dyn EventLog>, LogError> {
    Ok(Arc::new(TypedLog::new(open_raw(config).await?)))
}

/// Applies every configured retention policy now and then every `every`, until the
/// returned task is aborted. Failures are reported through `tracing` and retried.
pub fn spawn_retention(
    log: Arc<dyn EventLog>,
    config: &LogConfig,
    every: Duration,
) -> tokio::task::JoinHandle<()> {
    let streams: Vec<_> = config.retention.keys().copied().collect();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(every);
        loop {
            tick.tick().await;
            for stream in &streams {
                if let Err(e) = log.enforce_retention(*stream).await {
                    tracing::warn!(%stream, error = %e, "retention failed; will retry");
                }
            }
        }
    })
}
