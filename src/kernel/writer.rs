//! The kernel's single writer: one tokio task owns the state and is the only appender.
//!
//! Requests arrive on an mpsc channel. The task takes the first waiting request and up
//! to `max_batch - 1` more that are already queued (group commit), decides each command
//! in order against the state — folding each command's events before deciding the next,
//! so later commands of a batch see earlier ones — and then appends all of the batch's
//! events (one batch per stream) before answering anyone. Nobody hears "ok" before the
//! events are in the log. If the append fails, every request of the batch gets
//! `append_failed` and the state is rebuilt from the log, so it matches the log again.
//! Reads ([`Request::Read`]) are answered between batches, so they see only appended
//! events. Retry timers fire between batches too.

use std::ops::Range;
use std::sync::Arc;

use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};
use orchestrata_schemas::events::kernel::{CommandApplied, CommandRejected};
use orchestrata_schemas::events::{Command, EventRecord};
use tokio::sync::{mpsc, oneshot};

use super::decide;
use super::load;
use super::outcome::{Appended, Inbox, Outcome};
use super::postman::{Emitter, RetrySchedule};
use super::state::KernelState;
use super::{Clock, KernelConfig, KernelError};
use crate::log::EventLog;

/// A read of the state, run on the writer task.
pub(crate) type ReadFn = Box<dyn FnOnce(&KernelState) + Send>;

/// What the writer task is asked to do.
pub(crate) enum Request {
    /// Execute a command; `from_stream` commands also record `command_applied` /
    /// `command_rejected`.
    Execute {
        command: Box<Command>,
        from_stream: bool,
        reply: oneshot::Sender<Result<Outcome, KernelError>>,
    },
    /// A Volk reads its inbox.
    Inbox {
        alias: String,
        limit: usize,
        reply: oneshot::Sender<Result<Inbox, KernelError>>,
    },
    /// Read the state.
    Read(ReadFn),
    /// Stop after answering what came before.
    Stop(oneshot::Sender<()>),
}

enum Answer {
    Execute(
        oneshot::Sender<Result<Outcome, KernelError>>,
        uuid::Uuid,
        Range<usize>,
        Result<bool, KernelError>,
    ),
    Inbox(
        oneshot::Sender<Result<Inbox, KernelError>>,
        Range<usize>,
        Result<Vec<CxpPacket>, KernelError>,
    ),
}

pub(crate) struct Writer {
    pub log: Arc<dyn EventLog>,
    pub state: KernelState,
    pub retries: RetrySchedule,
    pub config: KernelConfig,
    pub clock: Arc<dyn Clock>,
}

impl Writer {
    /// Serves requests until [`Request::Stop`] or until every sender is gone.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        let mut deferred: Option<Request> = None;
        loop {
            let request = match deferred.take() {
                Some(r) => Some(r),
                None => {
                    let due = self.retries.next_due();
                    let timer = async {
                        match due {
                            Some(at) => self.clock.sleep_until(at).await,
                            None => std::future::pending().await,
                        }
                    };
                    tokio::select! {
                        r = rx.recv() => match r {
                            Some(r) => Some(r),
                            None => return,
                        },
                        () = timer => None,
                    }
                }
            };
            match request {
                None => self.fire_timers().await,
                Some(Request::Read(f)) => f(&self.state),
                Some(Request::Stop(done)) => {
                    let _ = done.send(());
                    return;
                }
                Some(first) => {
                    let mut batch = vec![first];
                    while batch.len() < self.config.max_batch.max(1) {
                        match rx.try_recv() {
                            Ok(r @ (Request::Read(_) | Request::Stop(_))) => {
                                deferred = Some(r);
                                break;
                            }
                            Ok(r) => batch.push(r),
                            Err(_) => break,
                        }
                    }
                    self.process(batch).await;
                }
            }
        }
    }

    fn emitter<'a>(
        &'a mut self,
        out: &'a mut Vec<EventRecord>,
        command: Option<&Command>,
    ) -> Emitter<'a> {
        Emitter {
            now: log_time(self.clock.now()),
            state: &mut self.state,
            config: &self.config,
            retries: &mut self.retries,
            out,
            command_id: command.map(|c| c.id),
            principal: command.and_then(|c| c.principal.clone()),
        }
    }

    async fn fire_timers(&mut self) {
        let due = self.retries.take_due(log_time(self.clock.now()));
        let mut out = Vec::new();
        {
            let mut em = self.emitter(&mut out, None);
            for (id, used) in due {
                em.retry_due(id, used);
            }
        }
        if let Err(e) = self.append(&out).await {
            tracing::error!(error = %e, "appending retries failed; state reloaded from the log");
        }
    }

    async fn process(&mut self, batch: Vec<Request>) {
        let mut out: Vec<EventRecord> = Vec::new();
        let mut answers = Vec::with_capacity(batch.len());
        for request in batch {
            let start = out.len();
            match request {
                Request::Execute {
                    command,
                    from_stream,
                    reply,
                } => {
                    let result = self.execute(&command, from_stream, &mut out);
                    answers.push(Answer::Execute(reply, command.id, start..out.len(), result));
                }
                Request::Inbox {
                    alias,
                    limit,
                    reply,
                } => {
                    let result = self.pull(&alias, limit, &mut out);
                    answers.push(Answer::Inbox(reply, start..out.len(), result));
                }
                Request::Read(_) | Request::Stop(_) => {}
            }
        }
        let appended = self.append(&out).await;
        for answer in answers {
            match (answer, &appended) {
                (Answer::Execute(reply, command_id, range, result), Ok(pos)) => {
                    let _ = reply.send(result.map(|duplicate| Outcome {
                        command_id,
                        events: pos[range].to_vec(),
                        duplicate,
                    }));
                }
                (Answer::Inbox(reply, range, result), Ok(pos)) => {
                    let _ = reply.send(result.map(|packets| Inbox {
                        packets,
                        events: pos[range].to_vec(),
                    }));
                }
                (Answer::Execute(reply, ..), Err(e)) => {
                    let _ = reply.send(Err(e.clone_failure()));
                }
                (Answer::Inbox(reply, ..), Err(e)) => {
                    let _ = reply.send(Err(e.clone_failure()));
                }
            }
        }
    }

    /// Decides `command` and emits its events; `Ok(true)` for an already executed id.
    fn execute(
        &mut self,
        command: &Command,
        from_stream: bool,
        out: &mut Vec<EventRecord>,
    ) -> Result<bool, KernelError> {
        if self.state.is_executed(&command.id) {
            return Ok(true);
        }
        let now = log_time(self.clock.now());
        let start = out.len();
        if tracing::enabled!(tracing::Level::DEBUG) {
            let (message_id, thread_id, session_id) = super::cmd::ids(command);
            tracing::debug!(
                command_id = %command.id,
                issuer = %command.issuer,
                message_id,
                thread_id,
                session_id,
                from_stream,
                "executing command"
            );
        }
        match decide::decide(&self.state, now, command) {
            Ok(records) => {
                let mut em = self.emitter(out, Some(command));
                for r in records {
                    em.emit(r);
                }
                if from_stream {
                    let count = i32::try_from(em.out.len() - start).unwrap_or(i32::MAX);
                    let record = EventRecord::new(
                        "kernel",
                        command.id.to_string(),
                        CommandApplied { event_count: count },
                        now,
                    )
                    .caused_by(command.id);
                    em.emit(record);
                }
                Ok(false)
            }
            Err(e) => {
                if from_stream {
                    let record = EventRecord::new(
                        "kernel",
                        command.id.to_string(),
                        CommandRejected {
                            code: e.code().into(),
                            message: e.to_string(),
                        },
                        now,
                    )
                    .caused_by(command.id);
                    self.emitter(out, Some(command)).emit(record);
                }
                Err(e)
            }
        }
    }

    fn pull(
        &mut self,
        alias: &str,
        limit: usize,
        out: &mut Vec<EventRecord>,
    ) -> Result<Vec<CxpPacket>, KernelError> {
        let unknown = || KernelError::UnknownVolk {
            field: "alias",
            alias: alias.to_owned(),
        };
        let parsed = VolkAlias::parse_field(alias, "alias").map_err(|_| unknown())?;
        let volk = self.state.volk(alias).ok_or_else(unknown)?;
        volk.availability()
            .map_err(|why| KernelError::VolkUnavailable {
                alias: alias.to_owned(),
                why,
            })?;
        self.emitter(out, None).deliver(parsed, limit);
        Ok(self
            .state
            .inbox(parsed)
            .into_iter()
            .take(limit)
            .cloned()
            .collect())
    }

    /// Appends `out`; on failure reloads the state and the retry schedule from the log.
    async fn append(&mut self, out: &[EventRecord]) -> Result<Vec<Appended>, Failure> {
        if out.is_empty() {
            return Ok(Vec::new());
        }
        match load::append_all(&self.log, out).await {
            Ok(positions) => Ok(positions),
            Err(e) => {
                let reason = e.to_string();
                match load::rebuild(&self.log, self.config.max_retries).await {
                    Ok(state) => {
                        self.retries = RetrySchedule::rebuild(&state, &self.config);
                        self.state = state;
                    }
                    Err(again) => {
                        tracing::error!(error = %again, "cannot reload the kernel state after a failed append");
                    }
                }
                Err(Failure(reason))
            }
        }
    }
}

/// `t` at the log's precision (microseconds): the state folded in memory must equal
/// the state folded from the log, byte for byte.
pub(crate) fn log_time(t: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound;
    t.trunc_subsecs(6)
}

/// A failed append, answerable to every request of the batch.
#[derive(Debug)]
struct Failure(String);

impl Failure {
    fn clone_failure(&self) -> KernelError {
        KernelError::AppendFailed {
            reason: self.0.clone(),
        }
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
