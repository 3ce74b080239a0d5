//! [`Recorder`]: the door through which records decided outside the kernel reach the
//! one appender.
//!
//! Governance decides on behalf of the gateway (authentication, `act_as`, knowledge
//! queries, dry runs) and reloads its policy after an engine failure. Each of these
//! leaves a record. When a kernel runs in the same process, those records travel to its
//! writer through a `Recorder` and join its next append batch: the writer stays the only
//! appender, so its group commit covers them and its governance facts see them in order.
//! Before a kernel exists (start-up) or after it stopped (shutdown), nothing else
//! appends, and a component holding no recorder appends to the log itself.

use orchestrata_schemas::events::EventRecord;

use super::{EventLog, LogError};

/// Why a [`Recorder`] did not record.
#[derive(Debug, thiserror::Error)]
pub enum RecordError {
    /// The writer behind it has stopped (the process is shutting down): nothing was
    /// appended, and the caller may append to the log itself.
    #[error("the writer has stopped")]
    Stopped,
    /// The writer could not append the records (the log failed, or its state is being
    /// reloaded from the log); nothing of them is acknowledged.
    #[error("the writer could not append: {0}")]
    Failed(String),
    /// With no writer running, the log itself refused the append ([`append_via`]).
    #[error(transparent)]
    Log(#[from] LogError),
}

/// Appends records through the one writer in front of the log.
///
/// Never call it from the writer's own task: the writer would wait on itself.
#[async_trait::async_trait]
pub trait Recorder: Send + Sync {
    /// Appends `records`, in order, in the writer's next batch; returns each one's
    /// sequence in its stream, in input order, once the batch is as durable as the
    /// log's policy promises.
    async fn record(&self, records: Vec<EventRecord>) -> Result<Vec<u64>, RecordError>;
}

/// Appends `record` through `recorder` while its writer runs; with no recorder, or once
/// its writer has stopped (shutdown), straight to `log`. Returns the record's sequence.
/// The one place that makes that choice, for the gateway's records and governance's.
pub async fn append_via(
    recorder: Option<&dyn Recorder>,
    log: &dyn EventLog,
    record: &EventRecord,
) -> Result<u64, RecordError> {
    if let Some(recorder) = recorder {
        match recorder.record(vec![record.clone()]).await {
            Ok(sequences) => {
                return sequences
                    .first()
                    .copied()
                    .ok_or_else(|| RecordError::Failed("the writer reported no sequence".into()))
            }
            Err(RecordError::Stopped) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(log.append(record).await?)
}
