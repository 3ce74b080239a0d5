//! Commands from the log: the split deployment's way in.
//!
//! Another process (a gateway) appends `Event::Command` records to the `commands`
//! stream. [`Kernel::consume_commands`] tails that stream from the kernel's checkpoint —
//! the first command whose id the aggregate has not seen — and executes each command in
//! stream order, pipelined (up to [`IN_FLIGHT`] awaiting their group append). Every
//! outcome is recorded: the command's events plus `command_applied`, or one
//! `command_rejected` with the error code, all carrying the command id. Delivery is
//! at least once (after a crash the tail may hand a command again); the aggregate's set of
//! executed ids makes the second execution a no-op.

use std::time::Duration;

use futures::stream::FuturesOrdered;
use futures::StreamExt;
use orchestrata_schemas::events::{Event, Stream};
use tokio::task::JoinHandle;

use super::{Kernel, KernelError};
use crate::log::Pager;

/// Most commands submitted and not yet answered.
pub const IN_FLIGHT: usize = 512;

impl Kernel {
    /// The first sequence of the `commands` stream not yet executed (the checkpoint).
    pub async fn commands_checkpoint(&self) -> Result<u64, KernelError> {
        let Some(from) = self.log().first_sequence(Stream::Commands).await? else {
            return Ok(0);
        };
        let mut pages = Pager::new(&**self.log(), Stream::Commands, from, None);
        while let Some(page) = pages.next_page().await? {
            let ids: Vec<(u64, Option<uuid::Uuid>)> = page
                .iter()
                .map(|e| match &e.record.event {
                    Event::Command(c) => (e.sequence, Some(c.id)),
                    _ => (e.sequence, None),
                })
                .collect();
            let first_new = self
                .read(move |s| {
                    ids.into_iter()
                        .find(|(_, id)| id.is_some_and(|id| !s.is_executed(&id)))
                        .map(|(seq, _)| seq)
                })
                .await?;
            if let Some(seq) = first_new {
                return Ok(seq);
            }
        }
        Ok(pages.position())
    }

    /// Spawns the loop that executes commands appended to the `commands` stream (see
    /// the module docs). It runs until the kernel stops; log errors are reported and
    /// the loop resumes from the checkpoint.
    pub fn consume_commands(&self) -> JoinHandle<()> {
        let kernel = self.clone();
        tokio::spawn(async move {
            loop {
                match kernel.consume_once().await {
                    Err(KernelError::Stopped) => return,
                    Err(e) => {
                        tracing::warn!(error = %e, "commands consumer interrupted; resuming from the checkpoint");
                        tokio::time::sleep(Duration::from_millis(200)).await;
                    }
                    Ok(()) => return,
                }
            }
        })
    }

    async fn consume_once(&self) -> Result<(), KernelError> {
        let from = self.commands_checkpoint().await?;
        let mut tail = self.log().tail(Stream::Commands, from).await?;
        let mut pending = FuturesOrdered::new();
        loop {
            tokio::select! {
                biased;
                Some(answered) = pending.next(), if !pending.is_empty() => {
                    match answered {
                        // Not executed: resume from the checkpoint, which now points at it.
                        Ok(Err(
                            e @ (KernelError::AppendFailed { .. } | KernelError::Unavailable { .. }),
                        )) => return Err(e),
                        // Applied, duplicate, or rejected (recorded as command_rejected).
                        Ok(_) => {}
                        Err(_) => return Err(KernelError::Stopped),
                    }
                }
                next = tail.next(), if pending.len() < IN_FLIGHT => {
                    let Some(envelope) = next else { return Ok(()) };
                    let envelope = envelope?;
                    if let Event::Command(command) = envelope.record.event {
                        // Governed in the writer's batch like an in-process command; a
                        // refusal is recorded there as `command_rejected`.
                        let answer = self.submit(command, true, Vec::new()).await?;
                        pending.push_back(async move { answer.await.map_err(|_| ()) });
                    }
                }
            }
        }
    }
}
