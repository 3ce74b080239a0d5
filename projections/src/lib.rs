//! Orchestrata's views: pure folds of the event log.
//!
//! Every view is a plain value built by applying [`Envelope`]s one at a time with
//! [`View::apply`]. Folding is:
//!
//! - **pure**: no I/O, no clock, no randomness. Time comes only from event timestamps,
//!   so the same log always folds into the same view, byte for byte.
//! - **idempotent**: a view remembers, per stream, the last sequence it applied (its
//!   [`Checkpoint`]) and ignores any event at or below it, so re-delivery after a crash
//!   or a retried read never counts an event twice.
//! - **deterministic to serialize**: views hold only ordered maps (`BTreeMap`), so two
//!   views with the same content serialize to identical JSON; tests compare views that
//!   way, and the runner stores them that way.
//!
//! The views:
//!
//! | view | folds | answers |
//! |------|-------|---------|
//! | [`ThreadView`] | `cxp.traffic` | packets by id / thread / sender / recipient / status / priority / time, threads and their status |
//! | [`SessionView`] | `session.events` | sessions, their context and facts, portfolio statistics |
//! | [`VolkView`] | `volk.lifecycle`, `cxp.traffic` | each Volk's registration, health, tasks, last activity |
//! | [`DecisionIndex`] | `governance.decisions` | governance decisions by time, subject, action, result |
//! | [`GraphView`] | `cxp.traffic`, `volk.lifecycle`, `session.events`, `governance.decisions` | the knowledge graph: nodes and relationships, filtered by label, type and properties |
//! | [`PacketIndex`] | `cxp.traffic` | each packet's sender, recipient and subject by message id: what subscription and replay filters match a packet's transitions on ([`packet::facts_of`]) |
//! | [`WorkflowView`] | `workflow.events` | each workflow run's status, steps and result |
//!
//! The runner that keeps these views up to date against the log, stores them and
//! answers read-your-write waits lives in the `orchestrata` crate (`orchestrata::projection`).
//!
//! [`Envelope`]: orchestrata_schemas::events::Envelope

pub mod agents;
mod checkpoint;
mod cold_ids;
pub mod decision;
pub mod graph;
pub mod let_go;
pub mod packet;
mod page;
pub mod sample;
pub mod seen;
pub mod session;
pub mod stored;
#[cfg(test)]
mod testkit;
pub mod thread;
mod transition;
mod view;
pub mod volk;
pub mod workflow;

pub use checkpoint::Checkpoint;
pub use decision::DecisionIndex;
pub use graph::GraphView;
pub use packet::PacketIndex;
pub use page::{Page, PageRequest};
pub use session::SessionView;
pub use stored::{Changes, StoredError};
pub use thread::ThreadView;
pub use transition::Transition;
pub use view::{fold, Restorer, UnknownView, View, ViewName};
pub use volk::VolkView;
pub use workflow::WorkflowView;
