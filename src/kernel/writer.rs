//! The kernel's single writer: one tokio task owns the state and is the only appender.
//!
//! Requests arrive on an mpsc channel. The task takes the first waiting request and up
//! to `max_batch - 1` more that are already queued (group commit), decides each command
//! in order against the state — folding each command's events before deciding the next,
//! so later commands of a batch see earlier ones — and then appends all of the batch's
//! events (one batch per stream) before answering anyone. Nobody hears "ok" before the
//! events are in the log. Reads ([`Request::Read`]) are answered between batches, so
//! they see only appended events. Retry timers fire between batches too.
//!
//! **The state is never ahead of the log.** The batch's folds are provisional until the
//! append returns. If any stream's append fails, the writer reloads the state from the
//! log before it answers or serves anything else: an append error does not say what
//! landed (a timed-out write may be stored; another stream of the batch may have
//! succeeded), and the log is the only authority on that. Each request of the batch is
//! then answered from what its own records did: all stored — applied; otherwise
//! `append_failed`, listing any of its events that did land. If the reload fails too,
//! the writer drops its state and answers every request with
//! [`KernelError::Unavailable`], retrying the reload first on each, until one succeeds.
//! See `docs/kernel.md` ("State never ahead of the log").

use std::collections::VecDeque;
use std::ops::Range;
use std::sync::{Arc, OnceLock};

use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};
use orchestrata_schemas::events::kernel::{CommandApplied, CommandRejected};
use orchestrata_schemas::events::{Command, EventRecord};
use tokio::sync::{mpsc, oneshot};

use super::contain::contained;
use super::decide;
use super::govern::{self, Folded};
use super::landing::Landing;
use super::load;
use super::outcome::{Appended, Inbox, Outcome};
use super::postman::{Emitter, RetrySchedule};
use super::state::KernelState;
use super::{Clock, KernelConfig, KernelError};
use crate::governance::Governance;
use crate::log::EventLog;

/// Most requests in one batch while governance is attached (see `Writer::batch_limit`).
pub(crate) const GOVERNED_BATCH: usize = 256;

/// A read of the state, run on the writer task; `Err` while the state is unavailable
/// (see [`KernelError::Unavailable`]).
pub(crate) type ReadFn = Box<dyn FnOnce(Result<&KernelState, KernelError>) + Send>;

/// What the writer task is asked to do.
pub(crate) enum Request {
    /// Execute a command; `from_stream` commands also record `command_applied` /
    /// `command_rejected`.
    Execute {
        command: Box<Command>,
        from_stream: bool,
        /// Records appended in the same batch, before the command's own (the gateway's
        /// audit of the call that issued it), whatever the command's answer.
        preface: Vec<EventRecord>,
        reply: oneshot::Sender<Result<Outcome, KernelError>>,
    },
    /// Append records decided elsewhere (the gateway's presence and audit records,
    /// governance's decisions for the gateway and `policy loaded`): they join the next
    /// batch, so this task stays the one appender; events of the streams the kernel
    /// folds are folded like its own.
    Record {
        records: Vec<EventRecord>,
        reply: oneshot::Sender<Result<Vec<Appended>, KernelError>>,
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
    /// The request's records, and how many of them come before the command's own
    /// events (the preface and the governance decision, not reported as its events).
    Execute(
        oneshot::Sender<Result<Outcome, KernelError>>,
        uuid::Uuid,
        Range<usize>,
        usize,
        Result<bool, KernelError>,
    ),
    Record(
        oneshot::Sender<Result<Vec<Appended>, KernelError>>,
        Range<usize>,
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
    /// `Some(why)` while the state could not be reloaded after a failed append: the
    /// state is then empty and every request first retries the reload.
    pub stale: Option<String>,
    /// Governance, once attached ([`super::Kernel::with_governance`]): governed
    /// commands are decided in the batch ([`super::govern`]).
    pub governance: Arc<OnceLock<Governance>>,
    /// Whether governance's facts were brought up to the log once since it was
    /// attached (see [`Writer::sync_governance_once`]).
    pub facts_synced: bool,
    /// Set when deciding or folding a command panicked ([`super::contain`]): the
    /// batch stops there, and the state is reloaded from the log after its append.
    pub poisoned: bool,
}

impl Writer {
    /// Serves requests until [`Request::Stop`] or until every sender is gone.
    pub async fn run(mut self, mut rx: mpsc::Receiver<Request>) {
        let mut deferred: VecDeque<Request> = VecDeque::new();
        loop {
            let request = match deferred.pop_front() {
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
                Some(Request::Read(f)) => match self.ready().await {
                    Ok(()) => f(Ok(&self.state)),
                    Err(reason) => f(Err(KernelError::Unavailable { reason })),
                },
                Some(Request::Stop(done)) => {
                    let _ = done.send(());
                    return;
                }
                Some(first) => {
                    let mut batch = vec![first];
                    let limit = self.batch_limit();
                    while batch.len() < limit {
                        let next = match deferred.pop_front() {
                            Some(r) => Ok(r),
                            None => rx.try_recv(),
                        };
                        match next {
                            Ok(r @ (Request::Read(_) | Request::Stop(_))) => {
                                deferred.push_front(r);
                                break;
                            }
                            Ok(r) => batch.push(r),
                            Err(_) => break,
                        }
                    }
                    // Requests after a command that panicked wait for the next batch,
                    // decided against the state reloaded from the log.
                    for r in self.process(batch).await.into_iter().rev() {
                        deferred.push_front(r);
                    }
                }
            }
        }
    }

    /// Requests taken into one batch. With governance attached every governed command
    /// waits for a policy evaluation on the engine thread before the batch is appended,
    /// so a batch of `max_batch` (1,024) commands would hold every answer for that many
    /// evaluations and the log would see one append per such batch; [`GOVERNED_BATCH`]
    /// keeps appends flowing while still sharing each append: large enough that a
    /// Kafka log (two broker round trips per batch, one per stream) is not left waiting
    /// more than deciding, small enough that the first answer of a batch waits only a
    /// few milliseconds of evaluations.
    fn batch_limit(&self) -> usize {
        let limit = self.config.max_batch.max(1);
        if self.governance.get().is_some() {
            limit.min(GOVERNED_BATCH)
        } else {
            limit
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
        if self.stale.is_some() {
            return; // the schedule is empty until the state is reloaded
        }
        let due = self.retries.take_due(log_time(self.clock.now()));
        let mut out = Vec::new();
        {
            let mut em = self.emitter(&mut out, None);
            for (id, used) in due {
                em.retry_due(id, used);
            }
        }
        let stored = self.append(&out, Folded::default()).await;
        if !stored.complete() {
            tracing::error!(error = %stored.reason(), "appending retries failed; state reloaded from the log");
        }
    }

    /// Decides and appends `batch`; answers every request of it but those after a
    /// command that panicked, which it returns untouched.
    async fn process(&mut self, batch: Vec<Request>) -> Vec<Request> {
        if let Err(reason) = self.ready().await {
            let unavailable = || KernelError::Unavailable {
                reason: reason.clone(),
            };
            for request in batch {
                match request {
                    Request::Execute { reply, .. } => {
                        let _ = reply.send(Err(unavailable()));
                    }
                    Request::Inbox { reply, .. } => {
                        let _ = reply.send(Err(unavailable()));
                    }
                    Request::Record { reply, .. } => {
                        let _ = reply.send(Err(unavailable()));
                    }
                    Request::Read(f) => f(Err(unavailable())),
                    Request::Stop(_) => {}
                }
            }
            return Vec::new();
        }
        let governance = self.governance.get().cloned();
        if let Some(g) = &governance {
            self.sync_governance_once(g).await;
        }
        let mut folded = Folded::default();
        let mut out: Vec<EventRecord> = Vec::new();
        let mut answers = Vec::with_capacity(batch.len());
        let mut batch = batch.into_iter();
        for request in batch.by_ref() {
            let start = out.len();
            match request {
                Request::Execute {
                    command,
                    from_stream,
                    preface,
                    reply,
                } => {
                    out.extend(preface);
                    if let Some(g) = &governance {
                        folded.catch_up(g, &out).await;
                    }
                    let mut own_from = out.len();
                    let result = self
                        .execute(
                            &command,
                            from_stream,
                            governance.as_ref(),
                            &mut out,
                            &mut own_from,
                        )
                        .await;
                    let own = own_from - start;
                    answers.push(Answer::Execute(
                        reply,
                        command.id,
                        start..out.len(),
                        own,
                        result,
                    ));
                }
                Request::Inbox {
                    alias,
                    limit,
                    reply,
                } => {
                    let result = self.pull(&alias, limit, &mut out);
                    answers.push(Answer::Inbox(reply, start..out.len(), result));
                }
                Request::Record { records, reply } => match self.fold_records(records) {
                    Ok(records) => {
                        out.extend(records);
                        answers.push(Answer::Record(reply, start..out.len()));
                    }
                    Err(e) => {
                        let _ = reply.send(Err(e));
                    }
                },
                Request::Read(_) | Request::Stop(_) => {}
            }
            if self.poisoned {
                break;
            }
        }
        let rest: Vec<Request> = batch.collect();
        let stored = self.append(&out, folded).await;
        if std::mem::take(&mut self.poisoned) && stored.complete() {
            if let Err(e) = self.reload().await {
                tracing::error!(error = %e, "cannot reload the kernel state after a failed command; refusing requests until a reload succeeds");
            }
        }
        let mut answers_from = Landing::new(&stored);
        for answer in answers {
            match answer {
                Answer::Execute(reply, command_id, range, skip, result) => {
                    // A duplicate is one if the log (the reloaded state) says so.
                    let confirmed = self.stale.is_none() && self.state.is_executed(&command_id);
                    let doubtful = match &result {
                        Err(_) => true,
                        Ok(duplicate) => *duplicate && !confirmed,
                    };
                    let answer = answers_from.events(range, doubtful).and_then(|events| {
                        result.map(|duplicate| Outcome {
                            command_id,
                            events: events.into_iter().skip(skip).collect(),
                            duplicate,
                        })
                    });
                    let _ = reply.send(answer);
                }
                Answer::Record(reply, range) => {
                    let _ = reply.send(answers_from.events(range, false));
                }
                Answer::Inbox(reply, range, result) => {
                    let doubtful = range.is_empty() || result.is_err();
                    let answer = answers_from
                        .events(range, doubtful)
                        .and_then(|events| result.map(|packets| Inbox { packets, events }));
                    let _ = reply.send(answer);
                }
            }
        }
        rest
    }

    /// Decides `command` and emits its events; `Ok(true)` for an already executed id.
    async fn execute(
        &mut self,
        command: &Command,
        from_stream: bool,
        governance: Option<&Governance>,
        out: &mut Vec<EventRecord>,
        own_from: &mut usize,
    ) -> Result<bool, KernelError> {
        *own_from = out.len();
        let now = log_time(self.clock.now());
        if self.state.is_executed(&command.id) {
            if from_stream {
                // Its issuer (a remote kernel client retrying with an idempotency key)
                // waits for an answer: applied, nothing new.
                let record = answer_record(command, CommandApplied { event_count: 0 }, now);
                self.emitter(out, Some(command)).emit(record);
            }
            return Ok(true);
        }
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
        let governed = match governance {
            Some(g) => govern::govern(g, &self.state, command, now, out).await,
            None => Ok(()),
        };
        // The decision's record belongs to the request, not to the command's events.
        *own_from = out.len();
        let start = out.len();
        match governed.and_then(|()| self.decide_and_emit(command, now, out)) {
            Ok(()) => {
                let mut em = self.emitter(out, Some(command));
                if from_stream {
                    let count = i32::try_from(em.out.len() - start).unwrap_or(i32::MAX);
                    em.emit(answer_record(
                        command,
                        CommandApplied { event_count: count },
                        now,
                    ));
                }
                Ok(false)
            }
            Err(e) => {
                if from_stream {
                    let rejected = CommandRejected {
                        code: e.code().into(),
                        message: e.to_string(),
                    };
                    let record = answer_record(command, rejected, now);
                    self.emitter(out, Some(command)).emit(record);
                }
                Err(e)
            }
        }
    }

    /// Decides `command` and emits (folds) its events into `out`; a panic in either
    /// drops what it emitted and refuses the command ([`super::contain`]).
    fn decide_and_emit(
        &mut self,
        command: &Command,
        now: chrono::DateTime<chrono::Utc>,
        out: &mut Vec<EventRecord>,
    ) -> Result<(), KernelError> {
        let start = out.len();
        let run = contained(command, || {
            let records = decide::decide(&self.state, now, command)?;
            let mut em = self.emitter(out, Some(command));
            for r in records {
                em.emit(r);
            }
            Ok(())
        });
        run.unwrap_or_else(|failed| {
            out.truncate(start);
            self.poisoned = true;
            Err(failed)
        })
    }

    /// Folds records decided elsewhere; a panic folding them refuses them all (none is
    /// appended) and has the state reloaded from the log after the batch.
    fn fold_records(&mut self, records: Vec<EventRecord>) -> Result<Vec<EventRecord>, KernelError> {
        let folded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            for record in &records {
                if load::FOLDED.contains(&record.stream()) {
                    self.state.apply(record);
                }
            }
        }));
        match folded {
            Ok(()) => Ok(records),
            Err(_) => {
                self.poisoned = true;
                tracing::error!(
                    records = records.len(),
                    "folding recorded events panicked; refused, state reloaded from the log"
                );
                Err(KernelError::Failed {
                    command: "record".to_owned(),
                    command_id: uuid::Uuid::nil(),
                    reason: "folding the records panicked".to_owned(),
                })
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
        Ok(self.state.inbox(parsed).into_iter().take(limit).collect())
    }

    /// Appends `out`. If any stream's append failed, reloads the state and the retry
    /// schedule from the log (see the module docs): the batch's folds are dropped and
    /// whatever did land is folded from the log.
    async fn append(&mut self, out: &[EventRecord], mut folded: Folded) -> load::Stored {
        if out.is_empty() {
            return load::Stored::default();
        }
        let governance = self.governance.get().cloned();
        if let Some(g) = &governance {
            folded.catch_up(g, out).await;
        }
        let stored = load::append_each(&self.log, out).await;
        if let Some(g) = &governance {
            folded.settle(g, &*self.log, out, &stored).await;
        }
        if !stored.complete() {
            tracing::error!(error = %stored.reason(), events = out.len(), "append failed; reloading the kernel state from the log");
            if let Err(e) = self.reload().await {
                tracing::error!(error = %e, "cannot reload the kernel state after a failed append; refusing requests until a reload succeeds");
            }
        }
        stored
    }

    /// Folds into governance's facts the fact events appended before it was attached
    /// (a fresh log's roster, registered while governance folded the log beside the
    /// kernel's start), once. From then on nothing is to catch up: this writer is the
    /// only appender of the fact streams and folds its records into the facts as it
    /// emits them, and should an append land at other sequences than it assumed,
    /// [`super::govern::Folded::settle`] refolds the facts from the log.
    async fn sync_governance_once(&mut self, governance: &Governance) {
        if self.facts_synced {
            return;
        }
        match governance.sync_facts().await {
            Ok(()) => self.facts_synced = true,
            Err(e) => {
                tracing::warn!(error = %e, "governance facts could not catch up with the log");
            }
        }
    }

    /// Makes the state what the log says: a fresh fold of the log. On failure the
    /// writer keeps no state at all (empty, `stale`) rather than unappended folds.
    async fn reload(&mut self) -> Result<(), KernelError> {
        match load::rebuild(&self.log, &self.config).await {
            Ok(state) => {
                self.retries = RetrySchedule::rebuild(&state, &self.config);
                self.state = state;
                if self.stale.take().is_some() {
                    tracing::info!("kernel state reloaded from the log; serving again");
                }
                Ok(())
            }
            Err(e) => {
                self.state = KernelState::new(self.config.max_retries);
                self.retries = RetrySchedule::default();
                self.stale = Some(e.to_string());
                Err(e)
            }
        }
    }

    /// `Ok` when the state is what the log says; while it is stale, retries the reload
    /// first and, if that fails again, says why (for [`KernelError::Unavailable`]).
    async fn ready(&mut self) -> Result<(), String> {
        if self.stale.is_none() {
            return Ok(());
        }
        self.reload().await.map_err(|e| e.to_string())
    }
}

/// The kernel's answer to a streamed command (`command_applied` / `command_rejected`),
/// keyed and caused by the command, so its issuer's watcher finds it.
fn answer_record(
    command: &Command,
    answer: impl Into<orchestrata_schemas::events::Event>,
    now: chrono::DateTime<chrono::Utc>,
) -> EventRecord {
    EventRecord::new("kernel", command.id.to_string(), answer, now).caused_by(command.id)
}

/// `t` at the log's precision (microseconds): the state folded in memory must equal
/// the state folded from the log, byte for byte.
pub(crate) fn log_time(t: chrono::DateTime<chrono::Utc>) -> chrono::DateTime<chrono::Utc> {
    use chrono::SubsecRound;
    t.trunc_subsecs(6)
}
