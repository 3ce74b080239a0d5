//! Validating a command against the state and turning it into events.
//!
//! [`decide`] reads the state only: it either refuses the command with a
//! [`KernelError`] (nothing to append) or returns the events the command causes, in
//! order. The writer then folds them into the state and lets the Postman react (see
//! `postman`). One module per area.

mod agents;
pub(crate) mod packets;
mod providers;
mod sessions;
mod threads;
mod volks;
mod workflows;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::{Command, CommandKind, Event, EventRecord};
use uuid::Uuid;

use super::state::{KernelState, PacketState};
use super::KernelError;

/// What a decision needs besides the command: the state and the time.
pub(crate) struct Ctx<'a> {
    pub state: &'a KernelState,
    pub now: DateTime<Utc>,
    /// The command being decided (or that caused a Postman reaction).
    pub command_id: Option<Uuid>,
    /// Who acts: the command's issuer, or `U:PS` for the Postman's own steps.
    pub issuer: &'a str,
    /// The record's `source`: `kernel` or `postman`.
    pub source: &'static str,
}

impl Ctx<'_> {
    /// A record of `event` about `key`, caused by the command, at `at`.
    pub fn record_at(&self, key: &str, event: impl Into<Event>, at: DateTime<Utc>) -> EventRecord {
        let record = EventRecord::new(self.source, key, event, at);
        match self.command_id {
            Some(id) => record.caused_by(id),
            None => record,
        }
    }

    /// A record stamped now.
    pub fn record(&self, key: &str, event: impl Into<Event>) -> EventRecord {
        self.record_at(key, event, self.now)
    }

    /// A fresh id at the command's time ([`orchestrata_schemas::cxp::id_at`]): for ids
    /// the kernel makes up, such as a new conversation's thread.
    pub fn fresh_id(&self) -> Uuid {
        orchestrata_schemas::cxp::id_at(self.now)
    }

    /// The packet `id`, or `unknown_packet`.
    pub fn packet(&self, id: Uuid) -> Result<std::borrow::Cow<'_, PacketState>, KernelError> {
        self.state
            .packet(&id)
            .ok_or(KernelError::UnknownPacket { message_id: id })
    }

    /// Event time for a change to `p`: now, but never before the packet's own timestamp
    /// (a sender's clock may run ahead of ours; histories must stay ordered).
    pub fn at_for(&self, p: &PacketState) -> DateTime<Utc> {
        self.now.max(p.packet.timestamp())
    }
}

/// The events `command` causes in `state`, or why it is refused.
pub(crate) fn decide(
    state: &KernelState,
    now: DateTime<Utc>,
    command: &Command,
) -> Result<Vec<EventRecord>, KernelError> {
    let cx = Ctx {
        state,
        now,
        command_id: Some(command.id),
        issuer: &command.issuer,
        source: "kernel",
    };
    match &command.action {
        CommandKind::SendPacket { packet } => packets::send(&cx, packet),
        CommandKind::MarkDelivered { message_id } => packets::mark_delivered(&cx, *message_id),
        CommandKind::Acknowledge { message_id, by } => packets::acknowledge(&cx, *message_id, by),
        CommandKind::Fail { message_id, reason } => packets::fail(&cx, *message_id, reason),
        CommandKind::Retry { message_id } => packets::retry(&cx, *message_id),
        CommandKind::SetWorkStatus {
            message_id,
            status,
            assigned_to,
            resolution,
            notes,
        } => packets::set_work_status(
            &cx,
            *message_id,
            *status,
            assigned_to.as_deref(),
            resolution.clone(),
            notes.clone(),
        ),
        CommandKind::SetPriority {
            message_id,
            priority,
            reason,
        } => packets::set_priority(&cx, *message_id, *priority, reason.clone()),
        CommandKind::CloseThread { thread_id, reason } => {
            threads::close(&cx, thread_id, reason.clone())
        }
        CommandKind::ReopenThread { thread_id, reason } => {
            threads::reopen(&cx, thread_id, reason.clone())
        }
        CommandKind::ArchiveThread { thread_id, reason } => {
            threads::archive(&cx, thread_id, reason.clone())
        }
        CommandKind::OpenSession {
            session_id,
            portfolio_id,
            goals,
        } => sessions::open(&cx, session_id, portfolio_id, goals),
        CommandKind::CloseSession {
            session_id,
            summary,
            carryover,
        } => sessions::close(&cx, session_id, summary, carryover),
        CommandKind::ResumeSession { session_id } => sessions::resume(&cx, session_id),
        CommandKind::RegisterVolk {
            alias,
            capabilities,
            parent,
            protocols,
            metadata,
        } => volks::register(
            &cx,
            alias,
            capabilities,
            parent.as_deref(),
            protocols,
            metadata,
        ),
        CommandKind::DeregisterVolk { alias, reason } => volks::deregister(&cx, alias, reason),
        CommandKind::SpawnVolk {
            alias,
            parent,
            driver,
            purpose,
            scope,
            lifespan_ms,
            task_id,
            session_id,
        } => agents::spawn(
            &cx,
            agents::Spawn {
                alias,
                parent,
                driver,
                purpose,
                scope,
                lifespan_ms: *lifespan_ms,
                task_id: task_id.as_deref(),
                session_id: session_id.as_deref(),
            },
        ),
        CommandKind::TerminateVolk { alias, reason } => agents::terminate(&cx, alias, reason),
        CommandKind::EscalateVolk {
            alias,
            to,
            path,
            reason,
            thread_id,
            context,
        } => agents::escalate(
            &cx,
            agents::Escalate {
                alias,
                to,
                path,
                reason,
                thread_id: thread_id.as_deref(),
                context,
            },
        ),
        CommandKind::StartWorkflow {
            workflow_id,
            name,
            params,
            session_id,
        } => workflows::start(&cx, workflow_id, name, params, session_id.as_deref()),
        CommandKind::PauseWorkflow {
            workflow_id,
            reason,
        } => workflows::pause(&cx, workflow_id, reason.clone()),
        CommandKind::ResumeWorkflow { workflow_id } => workflows::resume(&cx, workflow_id),
        CommandKind::CancelWorkflow {
            workflow_id,
            reason,
        } => workflows::cancel(&cx, workflow_id, reason.clone()),
        CommandKind::RecordWorkflowStep {
            workflow_id,
            step,
            phase,
            assigned_to,
            output,
        } => workflows::step(
            &cx,
            workflow_id,
            step,
            phase,
            assigned_to.as_deref(),
            output,
        ),
        CommandKind::FailWorkflow {
            workflow_id,
            error,
            step,
        } => workflows::fail(&cx, workflow_id, error, step.clone()),
        CommandKind::SetVolkHealth {
            alias,
            health,
            details,
        } => volks::set_health(&cx, alias, *health, details.clone()),
        CommandKind::ResolveEscalation {
            escalation_id,
            decision,
            notes,
        } => agents::resolve(&cx, escalation_id, decision, notes.clone()),
        CommandKind::UpdateSessionContext { session_id, patch } => {
            sessions::update_context(&cx, session_id, patch)
        }
        CommandKind::AssertSessionFact {
            session_id,
            fact_type,
            data,
        } => sessions::assert_fact(&cx, session_id, fact_type, data),
        CommandKind::ReportSessionError {
            session_id,
            code,
            message,
            recoverable,
        } => sessions::report_error(&cx, session_id, code, message, *recoverable),
        CommandKind::RegisterProvider {
            provider,
            kind,
            models,
            quota_tokens,
        } => providers::register(&cx, provider, kind, models, *quota_tokens),
        CommandKind::RecordProviderUsage {
            provider,
            request_id,
            model,
            input_tokens,
            output_tokens,
            latency_ms,
        } => providers::usage(
            &cx,
            &providers::Usage {
                provider,
                request_id,
                model,
                input_tokens: *input_tokens,
                output_tokens: *output_tokens,
                latency_ms: *latency_ms,
            },
        ),
        CommandKind::RecordProviderFailure {
            provider,
            request_id,
            model,
            error,
            retryable,
            retry_after_ms,
            quota_exhausted,
        } => providers::failure(
            &cx,
            &providers::Failure {
                provider,
                request_id,
                model,
                error,
                retryable: *retryable,
                retry_after_ms: *retry_after_ms,
                quota_exhausted: *quota_exhausted,
            },
        ),
    }
}

/// What a command must satisfy before governance is asked about it: refusals that
/// depend on the request alone, so a request that cannot run is refused as itself
/// (spec 014 ERR-006: a send to an unknown target is -32602 `unknown_target_volk`),
/// never judged and recorded as a governance denial. Built from the command without
/// the state ([`Precheck::of`]), run on the state between batches ([`Precheck::run`]);
/// [`decide`] checks the same again when the command runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Precheck {
    /// `send_packet`: the target must be a known Volk (registered at least once; a
    /// deregistered recipient keeps its alias and fails the packet through the
    /// Postman's retries, as [`packets::send`] decides).
    Target(String),
}

impl Precheck {
    /// The pre-governance check of `command`, if it has one.
    pub(crate) fn of(command: &Command) -> Option<Precheck> {
        match &command.action {
            CommandKind::SendPacket { packet } => Some(Precheck::Target(packet.to_agent.clone())),
            _ => None,
        }
    }

    /// Runs the check on `state`.
    pub(crate) fn run(&self, state: &KernelState) -> Result<(), KernelError> {
        match self {
            Precheck::Target(alias) => packets::check_target(state, alias),
        }
    }
}

/// `Err(InvalidField)` when `value` is blank.
pub(crate) fn non_empty(field: &'static str, value: &str) -> Result<(), KernelError> {
    if value.trim().is_empty() {
        Err(KernelError::invalid(field, "must not be empty"))
    } else {
        Ok(())
    }
}

#[cfg(test)]
mod fresh_id_tests {
    use super::*;

    // ISSUE-18: a thread the kernel names is keyed in time order, at the command's time
    #[test]
    fn a_fresh_id_is_a_v7_at_the_commands_time() {
        let state = KernelState::new(3);
        let at = |ms: i64| DateTime::<Utc>::from_timestamp_millis(1_780_000_000_000 + ms);
        let id_at = |now: DateTime<Utc>| {
            Ctx {
                state: &state,
                now,
                command_id: None,
                issuer: "U:Ox",
                source: "kernel",
            }
            .fresh_id()
        };
        let (Some(early), Some(late)) = (at(0), at(1)) else {
            panic!("times in range");
        };
        let (a, b) = (id_at(early), id_at(late));
        assert_eq!((a.get_version_num(), b.get_version_num()), (7, 7));
        assert!(a < b, "a later millisecond sorts after");
        let stamp = a.get_timestamp().map(|t| t.to_unix());
        assert_eq!(stamp, Some((1_780_000_000, 0)));
    }
}
