//! [`Event`]: one variant per event type, across all streams.
//!
//! The list below is the single place an event type is declared: the macro derives
//! the enum, its stream and event-type name, its Avro schema file, the fieldless
//! [`EventKind`] used to index schemas, and the JSON / Avro dispatch. Adding a variant
//! here without its `.avsc` fails the schema tests; adding one without a test sample
//! fails to compile the exhaustive sample in `schemas/tests/events_roundtrip.rs`.

use serde::Serialize;

use super::codec::AvroError;
use super::Stream;
use super::{
    command, cxp_traffic, governance, kernel, presence, provider, session, volk_lifecycle, workflow,
};

/// Static facts about one event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventTypeInfo {
    /// Which kind of event (index into [`EventKind::ALL`]).
    pub kind: EventKind,
    /// The stream it is appended to.
    pub stream: Stream,
    /// Its name within the stream, e.g. `packet_sent` (the envelope's `event_type`).
    pub event_type: &'static str,
    /// Its Avro schema file under `schemas/avro/`.
    pub avro_file: &'static str,
    /// The schema text (embedded at compile time).
    pub avro_schema: &'static str,
}

macro_rules! events {
    ($( $variant:ident($ty:ty) => $stream:ident, $etype:literal, $file:literal; )*) => {
        /// Every event Orchestrata appends to its log, typed. The stream and the
        /// event-type name derive from the variant; see `docs/events.md`.
        #[derive(Debug, Clone, PartialEq)]
        pub enum Event {
            $(
                #[doc = concat!("`", $etype, "` on its stream; Avro `schemas/avro/", $file, "`.")]
                $variant($ty),
            )*
        }

        /// The kind of an [`Event`] without its data; `kind as usize` indexes
        /// [`EventKind::ALL`] and the codec's schema table.
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum EventKind {
            $(
                #[doc = concat!("See [`Event::", stringify!($variant), "`].")]
                $variant,
            )*
        }

        impl EventKind {
            /// Every event type with its stream, name and schema, in declaration order.
            pub const ALL: &'static [EventTypeInfo] = &[
                $(EventTypeInfo {
                    kind: EventKind::$variant,
                    stream: Stream::$stream,
                    event_type: $etype,
                    avro_file: $file,
                    avro_schema: include_str!(concat!("../../avro/", $file)),
                },)*
            ];

            /// This kind's static facts.
            pub fn info(self) -> &'static EventTypeInfo {
                &Self::ALL[self as usize]
            }

            /// The kind named `event_type` on `stream`, if any.
            pub fn find(stream: Stream, event_type: &str) -> Option<EventKind> {
                Self::ALL
                    .iter()
                    .find(|i| i.stream == stream && i.event_type == event_type)
                    .map(|i| i.kind)
            }
        }

        impl Event {
            /// The kind of this event.
            pub fn kind(&self) -> EventKind {
                match self {
                    $(Event::$variant(_) => EventKind::$variant,)*
                }
            }

            /// Serializes the event's own fields (no envelope) with `serializer`.
            pub(crate) fn serialize_payload<S: serde::Serializer>(
                &self,
                serializer: S,
            ) -> Result<S::Ok, S::Error> {
                match self {
                    $(Event::$variant(e) => e.serialize(serializer),)*
                }
            }

            /// Reads the fields of an event of `kind` from Avro binary.
            pub(crate) fn read_avro(
                kind: EventKind,
                de: &mut super::codec::de::AvroDeserializer<'_>,
            ) -> Result<Event, AvroError> {
                use serde::Deserialize as _;
                Ok(match kind {
                    $(EventKind::$variant => Event::$variant(<$ty>::deserialize(&mut *de)?),)*
                })
            }

            /// Builds an event of `kind` from its JSON payload (the envelope's `payload`).
            pub fn from_json(kind: EventKind, payload: serde_json::Value) -> Result<Event, serde_json::Error> {
                Ok(match kind {
                    $(EventKind::$variant => Event::$variant(serde_json::from_value(payload)?),)*
                })
            }
        }

        $(
            impl From<$ty> for Event {
                fn from(e: $ty) -> Event {
                    Event::$variant(e)
                }
            }
        )*
    };
}

events! {
    PacketSent(cxp_traffic::PacketSent) => CxpTraffic, "packet_sent", "cxp.traffic.PacketSent.avsc";
    PacketDelivered(cxp_traffic::PacketDelivered) => CxpTraffic, "packet_delivered", "cxp.traffic.PacketDelivered.avsc";
    PacketAcknowledged(cxp_traffic::PacketAcknowledged) => CxpTraffic, "packet_acknowledged", "cxp.traffic.PacketAcknowledged.avsc";
    PacketFailed(cxp_traffic::PacketFailed) => CxpTraffic, "packet_failed", "cxp.traffic.PacketFailed.avsc";
    PacketRetried(cxp_traffic::PacketRetried) => CxpTraffic, "packet_retried", "cxp.traffic.PacketRetried.avsc";
    WorkStatusChanged(cxp_traffic::WorkStatusChanged) => CxpTraffic, "work_status_changed", "cxp.traffic.WorkStatusChanged.avsc";
    PriorityChanged(cxp_traffic::PriorityChanged) => CxpTraffic, "priority_changed", "cxp.traffic.PriorityChanged.avsc";
    ThreadOpened(cxp_traffic::ThreadOpened) => CxpTraffic, "thread_opened", "cxp.traffic.ThreadOpened.avsc";
    ThreadClosed(cxp_traffic::ThreadClosed) => CxpTraffic, "thread_closed", "cxp.traffic.ThreadClosed.avsc";
    ThreadReopened(cxp_traffic::ThreadReopened) => CxpTraffic, "thread_reopened", "cxp.traffic.ThreadReopened.avsc";
    ThreadArchived(cxp_traffic::ThreadArchived) => CxpTraffic, "thread_archived", "cxp.traffic.ThreadArchived.avsc";
    VolkRegistered(volk_lifecycle::VolkRegistered) => VolkLifecycle, "registered", "volk.lifecycle.VolkRegistered.avsc";
    VolkDeregistered(volk_lifecycle::VolkDeregistered) => VolkLifecycle, "deregistered", "volk.lifecycle.VolkDeregistered.avsc";
    VolkHealthChanged(volk_lifecycle::VolkHealthChanged) => VolkLifecycle, "health_changed", "volk.lifecycle.VolkHealthChanged.avsc";
    VolkTaskStarted(volk_lifecycle::VolkTaskStarted) => VolkLifecycle, "task_started", "volk.lifecycle.VolkTaskStarted.avsc";
    VolkTaskCompleted(volk_lifecycle::VolkTaskCompleted) => VolkLifecycle, "task_completed", "volk.lifecycle.VolkTaskCompleted.avsc";
    VolkSpawned(volk_lifecycle::VolkSpawned) => VolkLifecycle, "spawned", "volk.lifecycle.VolkSpawned.avsc";
    VolkTerminated(volk_lifecycle::VolkTerminated) => VolkLifecycle, "terminated", "volk.lifecycle.VolkTerminated.avsc";
    VolkEscalated(volk_lifecycle::VolkEscalated) => VolkLifecycle, "escalated", "volk.lifecycle.VolkEscalated.avsc";
    HumanEscalationQueued(volk_lifecycle::HumanEscalationQueued) => VolkLifecycle, "human_escalation_queued", "volk.lifecycle.HumanEscalationQueued.avsc";
    HumanEscalationResolved(volk_lifecycle::HumanEscalationResolved) => VolkLifecycle, "human_escalation_resolved", "volk.lifecycle.HumanEscalationResolved.avsc";
    DecisionRecorded(governance::DecisionRecorded) => GovernanceDecisions, "decision_recorded", "governance.decisions.DecisionRecorded.avsc";
    PolicyLoaded(governance::PolicyLoaded) => GovernanceDecisions, "policy_loaded", "governance.decisions.PolicyLoaded.avsc";
    SessionOpened(session::SessionOpened) => SessionEvents, "opened", "session.events.SessionOpened.avsc";
    SessionClosed(session::SessionClosed) => SessionEvents, "closed", "session.events.SessionClosed.avsc";
    SessionRecovered(session::SessionRecovered) => SessionEvents, "recovered", "session.events.SessionRecovered.avsc";
    SessionContextUpdated(session::SessionContextUpdated) => SessionEvents, "context_updated", "session.events.SessionContextUpdated.avsc";
    SessionFactAsserted(session::SessionFactAsserted) => SessionEvents, "fact_asserted", "session.events.SessionFactAsserted.avsc";
    SessionErrorOccurred(session::SessionErrorOccurred) => SessionEvents, "error_occurred", "session.events.SessionErrorOccurred.avsc";
    WorkflowStarted(workflow::WorkflowStarted) => WorkflowEvents, "started", "workflow.events.WorkflowStarted.avsc";
    WorkflowPaused(workflow::WorkflowPaused) => WorkflowEvents, "paused", "workflow.events.WorkflowPaused.avsc";
    WorkflowResumed(workflow::WorkflowResumed) => WorkflowEvents, "resumed", "workflow.events.WorkflowResumed.avsc";
    WorkflowCancelled(workflow::WorkflowCancelled) => WorkflowEvents, "cancelled", "workflow.events.WorkflowCancelled.avsc";
    WorkflowStepStarted(workflow::WorkflowStepStarted) => WorkflowEvents, "step_started", "workflow.events.WorkflowStepStarted.avsc";
    WorkflowStepCompleted(workflow::WorkflowStepCompleted) => WorkflowEvents, "step_completed", "workflow.events.WorkflowStepCompleted.avsc";
    WorkflowCompleted(workflow::WorkflowCompleted) => WorkflowEvents, "completed", "workflow.events.WorkflowCompleted.avsc";
    WorkflowFailed(workflow::WorkflowFailed) => WorkflowEvents, "failed", "workflow.events.WorkflowFailed.avsc";
    ClientConnected(presence::ClientConnected) => GatewayPresence, "connected", "gateway.presence.ClientConnected.avsc";
    ClientDisconnected(presence::ClientDisconnected) => GatewayPresence, "disconnected", "gateway.presence.ClientDisconnected.avsc";
    ClientTimedOut(presence::ClientTimedOut) => GatewayPresence, "timeout", "gateway.presence.ClientTimedOut.avsc";
    ClientMetadataUpdated(presence::ClientMetadataUpdated) => GatewayPresence, "metadata_updated", "gateway.presence.ClientMetadataUpdated.avsc";
    KernelStarted(kernel::KernelStarted) => KernelEvents, "started", "kernel.events.KernelStarted.avsc";
    KernelStopped(kernel::KernelStopped) => KernelEvents, "stopped", "kernel.events.KernelStopped.avsc";
    CommandApplied(kernel::CommandApplied) => KernelEvents, "command_applied", "kernel.events.CommandApplied.avsc";
    CommandRejected(kernel::CommandRejected) => KernelEvents, "command_rejected", "kernel.events.CommandRejected.avsc";
    EpochMarked(kernel::EpochMarked) => KernelEvents, "epoch_marked", "kernel.events.EpochMarked.avsc";
    ProviderRegistered(provider::ProviderRegistered) => ProviderEvents, "registered", "provider.events.ProviderRegistered.avsc";
    ProviderRequestStarted(provider::ProviderRequestStarted) => ProviderEvents, "request_started", "provider.events.ProviderRequestStarted.avsc";
    ProviderRequestCompleted(provider::ProviderRequestCompleted) => ProviderEvents, "request_completed", "provider.events.ProviderRequestCompleted.avsc";
    ProviderRequestFailed(provider::ProviderRequestFailed) => ProviderEvents, "request_failed", "provider.events.ProviderRequestFailed.avsc";
    ProviderRateLimited(provider::ProviderRateLimited) => ProviderEvents, "rate_limited", "provider.events.ProviderRateLimited.avsc";
    ProviderHealthChanged(provider::ProviderHealthChanged) => ProviderEvents, "health_changed", "provider.events.ProviderHealthChanged.avsc";
    ProviderQuotaExhausted(provider::ProviderQuotaExhausted) => ProviderEvents, "quota_exhausted", "provider.events.ProviderQuotaExhausted.avsc";
    Command(command::Command) => Commands, "command_submitted", "commands.Command.avsc";
}

impl Event {
    /// The stream this event belongs on.
    pub fn stream(&self) -> Stream {
        self.kind().info().stream
    }

    /// Its name within the stream, e.g. `packet_sent` (the envelope's `event_type`).
    pub fn event_type(&self) -> &'static str {
        self.kind().info().event_type
    }
}

/// Serializes only the event's own fields: this is the envelope's `payload` object.
impl Serialize for Event {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize_payload(serializer)
    }
}
