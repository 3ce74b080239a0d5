//! Topics: log streams pushed to subscribers, live or replayed.
//!
//! - [`hub`]: one tail per topic, fanned out to subscribers.
//! - [`event`]: an event serialized once as a notification frame.
//! - [`facts`] and [`filter`]: what subscription filters match.
//! - [`views`]: the packet index filters read and the workflow runs `workflow.get`
//!   answers from, folded once per event by a projection runner.

pub mod event;
pub mod facts;
pub mod filter;
pub mod hub;
pub mod views;

use orchestrata_schemas::events::Stream;

use super::auth::Scope;

/// The topics clients may subscribe to, with the scope each requires (contract
/// `event_topics`; `workflow.events` is read_only like the other lifecycle topics).
pub const TOPICS: [(Stream, Scope); 8] = [
    (Stream::CxpTraffic, Scope::ReadOnly),
    (Stream::VolkLifecycle, Scope::ReadOnly),
    (Stream::GovernanceDecisions, Scope::ReadWrite),
    (Stream::SessionEvents, Scope::ReadOnly),
    (Stream::WorkflowEvents, Scope::ReadOnly),
    (Stream::KernelEvents, Scope::ReadWrite),
    (Stream::GatewayPresence, Scope::ReadOnly),
    (Stream::ProviderEvents, Scope::ReadOnly),
];

/// The scope a topic requires, or `None` if `stream` is not a topic.
pub fn topic_scope(stream: Stream) -> Option<Scope> {
    TOPICS.iter().find(|(s, _)| *s == stream).map(|(_, sc)| *sc)
}
