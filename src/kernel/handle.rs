//! [`Kernel`]: the handle everyone else holds (gateway, CLI, tests).

use std::sync::{Arc, OnceLock};

use orchestrata_schemas::cxp::CxpPacket;
use orchestrata_schemas::events::{Command, EventRecord};
use tokio::sync::{mpsc, oneshot};

use super::load;
use super::outcome::{Inbox, Outcome};
use super::postman::RetrySchedule;
use super::roster;
use super::state::KernelState;
use super::writer::{Request, Writer};
use super::{Clock, KernelConfig, KernelError};
use crate::log::EventLog;

/// A running kernel. Cheap to clone; every clone talks to the same single writer task.
#[derive(Clone)]
pub struct Kernel {
    tx: mpsc::Sender<Request>,
    log: Arc<dyn EventLog>,
    /// Shared with the writer, which decides governed commands in its batches.
    governance: Arc<OnceLock<crate::governance::Governance>>,
}

impl std::fmt::Debug for Kernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Kernel")
            .field("log", &self.log.location())
            .finish()
    }
}

/// What [`Kernel::start`] found and did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StartReport {
    /// Events folded from the log.
    pub events_folded: u64,
    /// Whether the standard roster was registered now (first start on this log).
    pub roster_registered: bool,
    /// Volks known after start.
    pub volks: usize,
}

impl Kernel {
    /// Rebuilds the state from `log`, registers the standard roster if the log has no
    /// Volk yet (and `config.register_roster`), and spawns the writer task.
    pub async fn start(
        log: Arc<dyn EventLog>,
        config: KernelConfig,
        clock: Arc<dyn Clock>,
    ) -> Result<(Kernel, StartReport), KernelError> {
        let mut state = load::rebuild(&log, &config).await?;
        let events_folded = state.applied();
        let mut roster_registered = false;
        if config.register_roster {
            // First start: the whole roster. A log whose roster predates the operator
            // Volk (every other roster Volk known, U:GW not) gets that one Volk, once.
            let at = super::writer::log_time(clock.now());
            let known = state.volk_aliases();
            let is_known = |alias: &str| known.iter().any(|k| k == alias);
            let records = if known.is_empty() {
                roster::roster_records(at)
            } else if roster::STANDARD_ROSTER
                .iter()
                .all(|(alias, _, _)| *alias == roster::OPERATOR_VOLK || is_known(alias))
            {
                roster::missing_records(at, is_known)
            } else {
                Vec::new()
            };
            if !records.is_empty() {
                load::append_all(&log, &records).await?;
                for r in &records {
                    state.apply(r);
                }
                roster_registered = known.is_empty();
            }
        }
        let volks = state.volk_aliases().len();
        let retries = RetrySchedule::rebuild(&state, &config);
        let (tx, rx) = mpsc::channel(config.max_batch.max(1) * 4);
        let governance = Arc::new(OnceLock::new());
        let writer = Writer {
            log: log.clone(),
            state,
            retries,
            config,
            clock,
            stale: None,
            governance: governance.clone(),
            facts_synced: false,
            poisoned: false,
        };
        tokio::spawn(writer.run(rx));
        Ok((
            Kernel {
                tx,
                log,
                governance,
            },
            StartReport {
                events_folded,
                roster_registered,
                volks,
            },
        ))
    }

    /// The log the kernel appends to.
    pub fn log(&self) -> &Arc<dyn EventLog> {
        &self.log
    }

    /// The same kernel, asking `governance` before every governed command
    /// ([`crate::governance::kernel::request_for`]) it executes, in-process or from the
    /// `commands` stream: the writer decides it in its batch and appends the decision
    /// with the events it allowed (see `govern`). Governance's other records (the
    /// decisions it makes for the gateway, a reloaded policy) go through this writer
    /// from now on as well ([`Governance::record_through`](crate::governance::Governance::record_through)),
    /// so the writer is the process's one appender. Attaches once: every clone of this
    /// kernel shares it, and a second call keeps the first governance.
    pub fn with_governance(self, governance: crate::governance::Governance) -> Self {
        if self.governance.set(governance).is_err() {
            tracing::warn!("governance is already attached to this kernel; keeping the first");
        } else if let Some(attached) = self.governance.get() {
            let writer = super::recorder::WriterRecorder::new(&self.tx);
            attached.record_through(std::sync::Arc::new(writer));
        }
        self
    }

    /// Validates `command` and appends the events it causes; on refusal appends nothing
    /// of the command and returns the reason. A command id executed before is not
    /// executed again (`Outcome::duplicate`). With governance attached, a governed
    /// command is first decided in the writer's batch; anything but allow is
    /// [`KernelError::Denied`] with the decision id (the decision is recorded either way).
    pub async fn execute(&self, command: Command) -> Result<Outcome, KernelError> {
        self.execute_with(command, Vec::new()).await
    }

    /// [`Kernel::execute`], appending `preface` in the same batch before the command's
    /// events whatever the command's answer: the gateway's audit record of the call
    /// that issued the command, so a call costs one append.
    pub async fn execute_with(
        &self,
        command: Command,
        preface: Vec<EventRecord>,
    ) -> Result<Outcome, KernelError> {
        self.submit(command, false, preface)
            .await?
            .await
            .map_err(|_| KernelError::Stopped)?
    }

    /// Whether governance is attached.
    pub fn governed(&self) -> bool {
        self.governance.get().is_some()
    }

    /// Queues `command` as if read from the `commands` stream and returns the receiver
    /// of its outcome; used by the commands consumer to pipeline.
    pub(crate) async fn submit(
        &self,
        command: Command,
        from_stream: bool,
        preface: Vec<EventRecord>,
    ) -> Result<oneshot::Receiver<Result<Outcome, KernelError>>, KernelError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(Request::Execute {
                command: Box::new(command),
                from_stream,
                preface,
                reply,
            })
            .await
            .map_err(|_| KernelError::Stopped)?;
        Ok(rx)
    }

    /// The writer's queue (for [`crate::log::Recorder`], `kernel/recorder.rs`).
    pub(super) fn queue(&self) -> &mpsc::Sender<Request> {
        &self.tx
    }

    /// Sends the request `make` builds around a reply channel to the writer and waits
    /// for its answer; [`KernelError::Stopped`] if the writer is gone.
    async fn ask<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T, KernelError>>) -> Request,
    ) -> Result<T, KernelError> {
        let (reply, rx) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| KernelError::Stopped)?;
        rx.await.map_err(|_| KernelError::Stopped)?
    }

    /// `alias` reads its inbox: the Postman first delivers queued packets (serving
    /// order) until `alias` holds `limit` delivered, unacknowledged packets, then
    /// returns up to `limit` of them. The Volk acknowledges each with an `acknowledge`
    /// command.
    pub async fn inbox(&self, alias: &str, limit: usize) -> Result<Inbox, KernelError> {
        let alias = alias.to_owned();
        self.ask(|reply| Request::Inbox {
            alias,
            limit,
            reply,
        })
        .await
    }

    /// Runs `f` on the state between batches (it sees only appended events);
    /// [`KernelError::Unavailable`] while the state cannot be reloaded from the log.
    pub async fn read<R: Send + 'static>(
        &self,
        f: impl FnOnce(&KernelState) -> R + Send + 'static,
    ) -> Result<R, KernelError> {
        self.ask(|reply| {
            Request::Read(Box::new(move |state| {
                let _ = reply.send(state.map(f));
            }))
        })
        .await
    }

    /// The packet `message_id` as the kernel holds it.
    pub async fn packet(&self, message_id: uuid::Uuid) -> Result<CxpPacket, KernelError> {
        self.read(move |s| s.packet(&message_id).map(|p| p.packet.clone()))
            .await?
            .ok_or(KernelError::UnknownPacket { message_id })
    }

    /// A thread's packets in order. Article III: a thread that belongs to a session is
    /// readable only by naming that session (`cross_session` otherwise).
    pub async fn thread_packets(
        &self,
        thread_id: &str,
        session_id: Option<&str>,
    ) -> Result<Vec<CxpPacket>, KernelError> {
        let (thread_id, session_id) = (thread_id.to_owned(), session_id.map(str::to_owned));
        self.read(move |s| {
            let t = s
                .thread(&thread_id)
                .ok_or_else(|| KernelError::UnknownThread {
                    thread_id: thread_id.clone(),
                })?;
            if t.session != session_id {
                return Err(KernelError::CrossSession {
                    thread_id: thread_id.clone(),
                    owner: t.session.clone().unwrap_or_else(|| "none".into()),
                    asked: session_id.unwrap_or_else(|| "none".into()),
                });
            }
            Ok(t.packets
                .iter()
                .filter_map(|id| s.packet(id).map(|p| p.packet.clone()))
                .collect())
        })
        .await?
    }

    /// The packets of one session, in order (the session id is always explicit).
    pub async fn session_packets(&self, session_id: &str) -> Result<Vec<CxpPacket>, KernelError> {
        let session_id = session_id.to_owned();
        self.read(move |s| {
            let session = s
                .session(&session_id)
                .ok_or_else(|| KernelError::UnknownSession {
                    session_id: session_id.clone(),
                })?;
            Ok(session
                .packets
                .iter()
                .filter_map(|id| s.packet(id).map(|p| p.packet.clone()))
                .collect())
        })
        .await?
    }

    /// Stops the writer after everything sent before has been answered.
    pub async fn stop(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Request::Stop(done)).await.is_ok() {
            let _ = rx.await;
        }
    }
}
