//! [`RemoteKernel`]: the kernel of another process, reached through the log.
//!
//! In a split deployment a gateway holds no kernel. It appends each command to the
//! `commands` stream and waits, bounded, for the kernel's answer: the events the command
//! caused (every one carries the command id in its envelope) followed by
//! `command_applied {event_count}`, or one `command_rejected {code, message}`.
//!
//! One watcher task per event stream (all but `commands`) tails the log from where it
//! stood when the client started and hands every record that names a waiting command
//! to its waiter. The answer is complete when `command_applied` arrived *and* as many
//! caused events as it counts have been seen: on Kafka the streams are separate topics,
//! so `command_applied` may become visible before the events it sums up. The
//! [`Outcome`] is then the same as an in-process kernel's — the streams and sequences
//! a caller waits on to read its own write.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use chrono::Utc;
use futures::StreamExt;
use orchestrata_schemas::events::{Command, Event, EventRecord, Stream};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use uuid::Uuid;

use super::outcome::{Appended, Outcome};
use super::KernelError;
use crate::log::EventLog;

/// How long [`RemoteKernel::execute`] waits for an answer by default.
pub const DEFAULT_ANSWER_TIMEOUT: Duration = Duration::from_secs(10);

/// What has arrived for one waiting command.
struct Waiter {
    events: Vec<Appended>,
    applied: Option<usize>,
    reply: Option<oneshot::Sender<Result<Outcome, KernelError>>>,
}

impl Waiter {
    /// Answers once `command_applied` and every event it counts are in.
    fn try_finish(&mut self, command_id: Uuid) -> bool {
        let Some(count) = self.applied else {
            return false;
        };
        if self.events.len() < count {
            return false;
        }
        let mut events = std::mem::take(&mut self.events);
        events.sort_by_key(|a| (a.stream != Stream::KernelEvents, a.sequence));
        // A command the kernel had executed before is applied with no event.
        let duplicate = count == 0 && events.is_empty();
        if let Some(reply) = self.reply.take() {
            let _ = reply.send(Ok(Outcome {
                command_id,
                events,
                duplicate,
            }));
        }
        true
    }
}

type Waiters = Arc<Mutex<HashMap<Uuid, Waiter>>>;

fn lock(waiters: &Waiters) -> MutexGuard<'_, HashMap<Uuid, Waiter>> {
    waiters.lock().unwrap_or_else(|e| e.into_inner())
}

/// A client of the kernel that runs in another process. Cheap to clone.
#[derive(Clone)]
pub struct RemoteKernel {
    log: Arc<dyn EventLog>,
    issuer_node: String,
    waiters: Waiters,
    timeout: Duration,
    _watchers: Arc<Watchers>,
}

struct Watchers(Vec<JoinHandle<()>>);

impl Drop for Watchers {
    fn drop(&mut self) {
        for w in &self.0 {
            w.abort();
        }
    }
}

impl std::fmt::Debug for RemoteKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RemoteKernel")
            .field("log", &self.log.location())
            .field("node", &self.issuer_node)
            .finish()
    }
}

impl RemoteKernel {
    /// Starts watching every event stream of `log` from its current end. `node` names
    /// this process on the command records it appends (the envelope `source`).
    pub async fn connect(
        log: Arc<dyn EventLog>,
        node: impl Into<String>,
        timeout: Duration,
    ) -> Result<Self, KernelError> {
        let waiters: Waiters = Arc::default();
        let mut handles = Vec::new();
        for stream in Stream::ALL.iter().copied() {
            if stream == Stream::Commands {
                continue;
            }
            let from = log.last_sequence(stream).await?.map_or(0, |s| s + 1);
            let tail = log.tail(stream, from).await?;
            handles.push(tokio::spawn(watch(stream, tail, waiters.clone())));
        }
        Ok(RemoteKernel {
            log,
            issuer_node: node.into(),
            waiters,
            timeout,
            _watchers: Arc::new(Watchers(handles)),
        })
    }

    /// The log the commands go to.
    pub fn log(&self) -> &Arc<dyn EventLog> {
        &self.log
    }

    /// Appends `command` to the `commands` stream and waits for the kernel's answer:
    /// the [`Outcome`] as an in-process kernel gives it, the recorded refusal as
    /// [`KernelError::Rejected`], or [`KernelError::NoAnswer`] after the timeout.
    pub async fn execute(&self, command: Command) -> Result<Outcome, KernelError> {
        let id = command.id;
        let (reply, answer) = oneshot::channel();
        lock(&self.waiters).insert(
            id,
            Waiter {
                events: Vec::new(),
                applied: None,
                reply: Some(reply),
            },
        );
        let principal = command.principal.clone();
        let record = EventRecord::new(
            "gateway",
            self.issuer_node.clone(),
            command,
            super::writer::log_time(Utc::now()),
        )
        .caused_by(id)
        .by(principal);
        if let Err(e) = self.log.append(&record).await {
            lock(&self.waiters).remove(&id);
            return Err(e.into());
        }
        let answered = tokio::time::timeout(self.timeout, answer).await;
        lock(&self.waiters).remove(&id);
        match answered {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(KernelError::Stopped),
            Err(_) => Err(KernelError::NoAnswer {
                command_id: id,
                waited_ms: u64::try_from(self.timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        }
    }
}

/// Hands the records of one stream that name a waiting command to their waiters.
async fn watch(stream: Stream, mut tail: crate::log::EnvelopeStream, waiters: Waiters) {
    while let Some(next) = tail.next().await {
        let envelope = match next {
            Ok(envelope) => envelope,
            Err(e) => {
                tracing::warn!(stream = stream.as_str(), error = %e, "remote kernel watcher stopped; commands will time out");
                return;
            }
        };
        let Some(command_id) = envelope.record.command_id else {
            continue;
        };
        let mut waiters = lock(&waiters);
        let Some(waiter) = waiters.get_mut(&command_id) else {
            continue;
        };
        match &envelope.record.event {
            Event::CommandApplied(applied) => {
                waiter.applied = Some(usize::try_from(applied.event_count).unwrap_or(0));
            }
            Event::CommandRejected(rejected) => {
                if let Some(reply) = waiter.reply.take() {
                    let _ = reply.send(Err(KernelError::rejected(
                        &rejected.code,
                        rejected.message.clone(),
                    )));
                }
                continue;
            }
            event => waiter.events.push(Appended {
                stream,
                sequence: envelope.sequence,
                event_type: event.event_type(),
            }),
        }
        waiter.try_finish(command_id);
    }
}
