//! The kernel's writer as a [`Recorder`]: how governance, which the writer itself holds,
//! hands its records to the writer without keeping it alive.

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
        let (reply, rx) = oneshot::channel();
        tx.send(Request::Record { records, reply })
            .await
            .map_err(|_| RecordError::Stopped)?;
        drop(tx);
        match rx.await {
            Ok(Ok(landed)) => Ok(landed.into_iter().map(|a| a.sequence).collect()),
            Ok(Err(KernelError::Stopped)) | Err(_) => Err(RecordError::Stopped),
            Ok(Err(e)) => Err(RecordError::Failed(e.to_string())),
        }
    }
}
