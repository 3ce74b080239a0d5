//! The kernel's writer as a [`Recorder`]: for the gateway through its kernel handle, and
//! for governance, which the writer itself holds, through a weak door that does not keep
//! the writer alive.

use orchestrata_schemas::events::EventRecord;
use tokio::sync::{mpsc, oneshot};

use super::writer::Request;
use super::KernelError;
use crate::log::{RecordError, Recorder};

/// A weak door to the writer: it does not keep the writer's queue open, so the writer
/// can hold the governance service that holds this (no cycle), and a stopped writer
/// answers [`RecordError::Stopped`].
pub(crate) struct WriterRecorder {
    tx: mpsc::WeakSender<Request>,
}

impl WriterRecorder {
    pub(crate) fn new(tx: &mpsc::Sender<Request>) -> Self {
        WriterRecorder { tx: tx.downgrade() }
    }
}

#[async_trait::async_trait]
impl Recorder for WriterRecorder {
    async fn record(&self, records: Vec<EventRecord>) -> Result<Vec<u64>, RecordError> {
        let tx = self.tx.upgrade().ok_or(RecordError::Stopped)?;
        record_on(&tx, records).await
    }
}

/// A kernel handle records through its writer: `records` join the writer's next batch
/// (group commit with the commands queued beside them). For records decided outside
/// the kernel — the gateway's presence and audit records — so that the writer stays the
/// one appender: its governance facts and sequence bookkeeping see them, and events of
/// streams the kernel folds are folded like its own. Unlike `WriterRecorder` it holds
/// the queue open (the gateway holds the kernel anyway).
#[async_trait::async_trait]
impl Recorder for super::Kernel {
    async fn record(&self, records: Vec<EventRecord>) -> Result<Vec<u64>, RecordError> {
        record_on(self.queue(), records).await
    }
}

/// Hands `records` to the writer behind `tx` and waits for their sequences.
async fn record_on(
    tx: &mpsc::Sender<Request>,
    records: Vec<EventRecord>,
) -> Result<Vec<u64>, RecordError> {
    let (reply, rx) = oneshot::channel();
    tx.send(Request::Record { records, reply })
        .await
        .map_err(|_| RecordError::Stopped)?;
    match rx.await {
        Ok(Ok(landed)) => Ok(landed.into_iter().map(|a| a.sequence).collect()),
        Ok(Err(KernelError::Stopped)) | Err(_) => Err(RecordError::Stopped),
        Ok(Err(e)) => Err(RecordError::Failed(e.to_string())),
    }
}
