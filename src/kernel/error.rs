//! [`KernelError`]: why the kernel refused a command, with a stable machine code.
//!
//! A rejected command appends nothing to the log (in-process), or exactly one
//! `kernel.events` `command_rejected` event carrying [`KernelError::code`] (commands that
//! arrived on the `commands` stream), so clients in any process can branch on the code.

use orchestrata_schemas::cxp::CxpError;
use uuid::Uuid;

use crate::log::LogError;

/// Why a command or a kernel read was refused.
#[derive(Debug, thiserror::Error)]
pub enum KernelError {
    /// The packet is addressed to an alias that was never registered.
    #[error("field `to_agent`: `{alias}` is not a registered Volk")]
    UnknownTargetVolk {
        /// The recipient alias.
        alias: String,
    },
    /// The packet's sender was never registered.
    #[error("field `from_agent`: `{alias}` is not a registered Volk")]
    UnknownSenderVolk {
        /// The sender alias.
        alias: String,
    },
    /// The command names a Volk the registry does not know (or no longer holds).
    #[error("field `{field}`: `{alias}` is not a registered Volk")]
    UnknownVolk {
        /// Which field named it (`alias`, `parent`, `by`, `assigned_to`).
        field: &'static str,
        /// The alias.
        alias: String,
    },
    /// `register_volk` for an alias that is registered already.
    #[error("field `alias`: `{alias}` is already registered")]
    VolkExists {
        /// The alias.
        alias: String,
    },
    /// The Volk is deregistered or unhealthy and cannot take packets now.
    #[error("field `alias`: `{alias}` is {why}")]
    VolkUnavailable {
        /// The alias.
        alias: String,
        /// `deregistered` or its health.
        why: String,
    },
    /// No packet has this message id.
    #[error("field `message_id`: no packet {message_id}")]
    UnknownPacket {
        /// The id.
        message_id: Uuid,
    },
    /// A packet with this message id was sent already.
    #[error("field `message_id`: packet {message_id} was already sent")]
    DuplicatePacket {
        /// The id.
        message_id: Uuid,
    },
    /// The packet breaks the CXP contract (field and reason from the CXP crate).
    #[error("invalid packet: {0}")]
    InvalidPacket(#[from] CxpError),
    /// A field of the command is out of range or empty.
    #[error("field `{field}`: {reason}")]
    InvalidField {
        /// The field.
        field: &'static str,
        /// Why.
        reason: String,
    },
    /// A state machine (delivery, work, thread, session) forbids the move.
    #[error("invalid transition of `{field}` of {entity}: {from} -> {to}")]
    InvalidTransition {
        /// What moves, e.g. `packet 5f0…` or `thread t-1`.
        entity: String,
        /// The status field, e.g. `delivery_status`.
        field: &'static str,
        /// Current status.
        from: String,
        /// Refused target status.
        to: String,
    },
    /// A failed packet used its whole retry budget.
    #[error("field `retry_count`: packet {message_id} reached its retry limit of {max}")]
    RetryLimitReached {
        /// The packet.
        message_id: Uuid,
        /// The budget.
        max: u32,
    },
    /// Only a packet's recipient may acknowledge it.
    #[error("field `by`: `{by}` is not the recipient `{recipient}` of packet {message_id}")]
    NotRecipient {
        /// The packet.
        message_id: Uuid,
        /// Who tried.
        by: String,
        /// Who may.
        recipient: String,
    },
    /// No thread has this id.
    #[error("field `thread_id`: no thread `{thread_id}`")]
    UnknownThread {
        /// The id.
        thread_id: String,
    },
    /// Packets may be added only to active threads (reopen a closed one first).
    #[error(
        "field `thread_id`: thread `{thread_id}` is {status}; only active threads take packets"
    )]
    ThreadNotActive {
        /// The thread.
        thread_id: String,
        /// Its status.
        status: &'static str,
    },
    /// A reply must stay in the thread of the packet it answers.
    #[error(
        "field `thread_id`: a reply to {in_reply_to} belongs to thread `{expected}`, not `{found}`"
    )]
    ThreadMismatch {
        /// The packet answered.
        in_reply_to: Uuid,
        /// Its thread.
        expected: String,
        /// The thread the reply named.
        found: String,
    },
    /// No session has this id.
    #[error("field `session_id`: no session `{session_id}`")]
    UnknownSession {
        /// The id.
        session_id: String,
    },
    /// `open_session` for an id in use.
    #[error("field `session_id`: session `{session_id}` exists already")]
    SessionExists {
        /// The id.
        session_id: String,
    },
    /// The session is closed: it takes no packets until resumed.
    #[error("field `session_id`: session `{session_id}` is closed")]
    SessionClosed {
        /// The id.
        session_id: String,
    },
    /// Article III: state of another session is reachable only by naming that session.
    #[error("field `session_id`: thread `{thread_id}` belongs to session {owner}, not {asked}")]
    CrossSession {
        /// The thread.
        thread_id: String,
        /// Its session (`none` when it has none).
        owner: String,
        /// The session the caller named (`none` when it named none).
        asked: String,
    },
    /// The log refused or failed the append; nothing of the command is applied.
    #[error("event log: {0}")]
    Log(#[from] LogError),
    /// Appending the command's events failed: the command is not executed, and the
    /// kernel's state is again what the log says (it was reloaded from the log).
    ///
    /// `stored` is normally empty: nothing of the command is in the log and a retry
    /// with the same command id executes it. A command whose events span several
    /// streams can land in some of them only (the log appends each stream on its own):
    /// then `stored` names exactly the events that are in the log, the state counts
    /// them, and a retry answers `duplicate` (see `docs/kernel.md`).
    #[error("event log append failed: {reason}")]
    AppendFailed {
        /// What the log said.
        reason: String,
        /// The command's events that did land, in the order the command caused them.
        stored: Vec<crate::kernel::Appended>,
    },
    /// The kernel cannot serve: an append failed and reloading the state from the log
    /// failed too, so the writer dropped its state rather than answer from events the
    /// log may not hold. Nothing was executed; every request retries the reload first,
    /// and the kernel serves again once one succeeds.
    #[error("the kernel is reloading its state from the event log and cannot serve yet: {reason}")]
    Unavailable {
        /// Why the last reload failed.
        reason: String,
    },
    /// A stored event cannot be folded (reported while rebuilding at start).
    #[error("event log {stream} #{sequence}: {reason}")]
    Corrupt {
        /// The stream.
        stream: String,
        /// The position.
        sequence: u64,
        /// Why.
        reason: String,
    },
    /// The kernel's writer task has stopped.
    #[error("the kernel has stopped")]
    Stopped,
    /// Governance did not allow the command (deny or escalate); nothing was appended
    /// but the decision, which `decision_id` names on `governance.decisions`.
    #[error("governance answered {result} to `{action}` on `{resource}` (decision {decision_id}, trace {trace:?})")]
    Denied {
        /// The recorded decision.
        decision_id: uuid::Uuid,
        /// `deny` or `escalate`.
        result: String,
        /// The governed action, e.g. `cxp.send`.
        action: String,
        /// What it was asked on.
        resource: String,
        /// The rule path that decided.
        trace: Vec<String>,
    },
    /// Governance could not be asked (invalid request or log failure): fail closed.
    #[error("governance unavailable: {0}")]
    GovernanceFailed(String),
    /// A kernel in another process refused a command sent through the `commands`
    /// stream; `code` is the [`KernelError::code`] it recorded in `command_rejected`.
    #[error("{message}")]
    Rejected {
        /// The recorded code (one of the codes of this enum).
        code: &'static str,
        /// The recorded message.
        message: String,
    },
    /// A command appended to the `commands` stream got no `command_applied` /
    /// `command_rejected` in time: no kernel is running, or it is far behind. The
    /// command stays on the stream and may still be executed later.
    #[error("no kernel answered command {command_id} within {waited_ms} ms (is a kernel running against this log?)")]
    NoAnswer {
        /// The command.
        command_id: uuid::Uuid,
        /// How long the caller waited.
        waited_ms: u64,
    },
    /// Deciding or folding the command panicked inside the kernel: the command is
    /// refused, none of its events are appended, and the writer goes on serving with
    /// its state reloaded from the log.
    #[error(
        "command {command} ({command_id}) failed inside the kernel and was not applied: {reason}"
    )]
    Failed {
        /// The command's kind (`spawn_volk`, `send_packet`, ...).
        command: String,
        /// The command's id.
        command_id: uuid::Uuid,
        /// The panic's message.
        reason: String,
    },
}

/// Whose fault a refusal is ([`KernelError::fault`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// The request itself is wrong for the state it met (unknown Volk, bad transition,
    /// invalid field, duplicate...): the caller should change the request.
    Request,
    /// Governance refused it: the caller is not allowed to do this.
    Denied,
    /// The kernel or what it stands on failed (log, governance engine, no kernel): the
    /// request may succeed when retried.
    System,
}

impl Fault {
    /// The class of a recorded code (the codes of `CODES`); an unknown code (a newer
    /// kernel's) is the request's fault, as its `command_rejected` says it was refused.
    pub fn of_code(code: &str) -> Fault {
        match code {
            "governance_denied" => Fault::Denied,
            "log_unavailable"
            | "append_failed"
            | "corrupt_log"
            | "kernel_stopped"
            | "kernel_unavailable"
            | "governance_unavailable"
            | "kernel_no_answer"
            | "command_failed" => Fault::System,
            _ => Fault::Request,
        }
    }
}

/// Every code [`KernelError::code`] can return, for turning a recorded code back into
/// its static form.
pub const CODES: &[&str] = &[
    "unknown_target_volk",
    "unknown_sender_volk",
    "unknown_volk",
    "volk_exists",
    "volk_unavailable",
    "unknown_packet",
    "duplicate_packet",
    "invalid_packet",
    "invalid_field",
    "invalid_transition",
    "retry_limit_reached",
    "not_recipient",
    "unknown_thread",
    "thread_not_active",
    "thread_mismatch",
    "unknown_session",
    "session_exists",
    "session_closed",
    "cross_session",
    "log_unavailable",
    "append_failed",
    "corrupt_log",
    "kernel_stopped",
    "kernel_unavailable",
    "governance_denied",
    "governance_unavailable",
    "kernel_no_answer",
    "command_failed",
];

impl KernelError {
    /// The stable code of this error (written into `command_rejected` events and sent to
    /// clients): never changes once released.
    pub fn code(&self) -> &'static str {
        match self {
            KernelError::UnknownTargetVolk { .. } => "unknown_target_volk",
            KernelError::UnknownSenderVolk { .. } => "unknown_sender_volk",
            KernelError::UnknownVolk { .. } => "unknown_volk",
            KernelError::VolkExists { .. } => "volk_exists",
            KernelError::VolkUnavailable { .. } => "volk_unavailable",
            KernelError::UnknownPacket { .. } => "unknown_packet",
            KernelError::DuplicatePacket { .. } => "duplicate_packet",
            KernelError::InvalidPacket(_) => "invalid_packet",
            KernelError::InvalidField { .. } => "invalid_field",
            KernelError::InvalidTransition { .. } => "invalid_transition",
            KernelError::RetryLimitReached { .. } => "retry_limit_reached",
            KernelError::NotRecipient { .. } => "not_recipient",
            KernelError::UnknownThread { .. } => "unknown_thread",
            KernelError::ThreadNotActive { .. } => "thread_not_active",
            KernelError::ThreadMismatch { .. } => "thread_mismatch",
            KernelError::UnknownSession { .. } => "unknown_session",
            KernelError::SessionExists { .. } => "session_exists",
            KernelError::SessionClosed { .. } => "session_closed",
            KernelError::CrossSession { .. } => "cross_session",
            KernelError::Log(_) => "log_unavailable",
            KernelError::AppendFailed { .. } => "append_failed",
            KernelError::Corrupt { .. } => "corrupt_log",
            KernelError::Stopped => "kernel_stopped",
            KernelError::Unavailable { .. } => "kernel_unavailable",
            KernelError::Denied { .. } => "governance_denied",
            KernelError::GovernanceFailed(_) => "governance_unavailable",
            KernelError::Rejected { code, .. } => code,
            KernelError::NoAnswer { .. } => "kernel_no_answer",
            KernelError::Failed { .. } => "command_failed",
        }
    }

    /// Whose fault the refusal is: the request's, governance's, or the system's. Clients
    /// hear it as the class of their error (the gateway: -32602, -32001, -32603); a
    /// refusal recorded by another kernel ([`KernelError::Rejected`]) keeps the class of
    /// the error it was recorded from.
    pub fn fault(&self) -> Fault {
        match self {
            KernelError::Denied { .. } => Fault::Denied,
            KernelError::Log(_)
            | KernelError::AppendFailed { .. }
            | KernelError::Corrupt { .. }
            | KernelError::Stopped
            | KernelError::Unavailable { .. }
            | KernelError::GovernanceFailed(_)
            | KernelError::NoAnswer { .. }
            | KernelError::Failed { .. } => Fault::System,
            KernelError::Rejected { code, .. } => Fault::of_code(code),
            _ => Fault::Request,
        }
    }

    /// A refusal recorded by another kernel as `command_rejected {code, message}`;
    /// an unknown code (a newer kernel) keeps the message and reads `command_rejected`.
    pub fn rejected(code: &str, message: impl Into<String>) -> Self {
        KernelError::Rejected {
            code: CODES
                .iter()
                .copied()
                .find(|c| *c == code)
                .unwrap_or("command_rejected"),
            message: message.into(),
        }
    }

    /// Shorthand for [`KernelError::InvalidField`].
    pub fn invalid(field: &'static str, reason: impl Into<String>) -> Self {
        KernelError::InvalidField {
            field,
            reason: reason.into(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-15 structure: error codes as one enum — a refusal recorded by another
    // kernel is classed exactly like the error it was recorded from, and every code the
    // kernel can record has a class (no string matching elsewhere).
    #[test]
    fn a_recorded_refusal_keeps_its_class() {
        let errors = [
            KernelError::UnknownTargetVolk {
                alias: "U:Zz".into(),
            },
            KernelError::invalid("priority", "out of range"),
            KernelError::SessionClosed {
                session_id: "s".into(),
            },
            KernelError::AppendFailed {
                reason: "disk".into(),
                stored: Vec::new(),
            },
            KernelError::Unavailable {
                reason: "reload".into(),
            },
            KernelError::Stopped,
            KernelError::GovernanceFailed("engine".into()),
            KernelError::Denied {
                decision_id: Uuid::nil(),
                result: "deny".into(),
                action: "cxp.send".into(),
                resource: "U:Vz".into(),
                trace: Vec::new(),
            },
            KernelError::NoAnswer {
                command_id: Uuid::nil(),
                waited_ms: 1,
            },
        ];
        for e in errors {
            let recorded = KernelError::rejected(e.code(), e.to_string());
            assert_eq!(recorded.code(), e.code());
            assert_eq!(recorded.fault(), e.fault(), "{}", e.code());
        }
        assert_eq!(
            KernelError::UnknownTargetVolk { alias: "x".into() }.fault(),
            Fault::Request
        );
        assert_eq!(KernelError::Stopped.fault(), Fault::System);
        assert_eq!(Fault::of_code("from_a_newer_kernel"), Fault::Request);
        for code in CODES {
            // Every recorded code reads back as itself.
            assert_eq!(KernelError::rejected(code, "").code(), *code);
        }
    }
}
