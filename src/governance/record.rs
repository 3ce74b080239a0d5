//! Where governance's own records go: through the kernel's writer when one runs in this
//! process ([`Governance::record_through`]), else straight to the log.
//!
//! Governance records a `decision recorded` for every decision the gateway asks of it
//! (authentication, `act_as`, knowledge queries, dry runs) and a `policy loaded` when it
//! (re)loads its policy. Routed through the writer they join its next batch — one
//! appender, one group commit — and the writer folds them into the facts in order. The
//! kernel's own decisions never come here: the writer appends them in the batch of the
//! command they judge.

use std::sync::Arc;

use orchestrata_schemas::events::EventRecord;

use super::service::Governance;
use super::GovernanceError;
use crate::log::{append_via, RecordError, Recorder};

impl Governance {
    /// Sends this service's records through `recorder` (the kernel's writer) from now
    /// on. The kernel calls it when governance is attached to it; a recorder that has
    /// stopped (shutdown) sends them back to the log.
    pub fn record_through(&self, recorder: Arc<dyn Recorder>) {
        if let Ok(mut current) = self.inner.recorder.write() {
            *current = Some(recorder);
        }
    }

    /// Whether a recorder is set (see [`Governance::record_through`]).
    pub fn records_through_writer(&self) -> bool {
        self.inner.recorder.read().is_ok_and(|r| r.is_some())
    }

    /// Appends `record` through the recorder if one is set and running, else to the log;
    /// returns its sequence. Must not be awaited while holding the facts lock: the writer
    /// takes it to fold the record.
    pub(super) async fn append(&self, record: EventRecord) -> Result<u64, GovernanceError> {
        let recorder = self.inner.recorder.read().ok().and_then(|r| r.clone());
        append_via(recorder.as_deref(), self.inner.log.as_ref(), &record)
            .await
            .map_err(|e| match e {
                RecordError::Log(e) => GovernanceError::Log(e),
                RecordError::Failed(reason) => GovernanceError::NotRecorded(reason),
                RecordError::Stopped => GovernanceError::NotRecorded(e.to_string()),
            })
    }
}
