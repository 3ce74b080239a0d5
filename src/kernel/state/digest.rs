//! [`StateDigest`]: the state in a canonical, comparable form.
//!
//! The kernel promises that its state is always what the log says: the state it holds
//! while running equals a fresh fold of the log ([`crate::kernel::rebuild`]). A digest
//! makes that promise checkable: two states with equal digests answer every command
//! and read the same way. It leaves out what is bookkeeping only — the lazy-deletion
//! entries of the Postman's queues — and orders every map.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::Priority;
use uuid::Uuid;

use super::{KernelState, PacketState, SessionState, ThreadState, VolkState, WorkflowStatus};

/// A canonical copy of a [`KernelState`]; see the module docs. Compare two with `==`
/// (the `Debug` output of a difference names the entity that differs).
#[derive(Debug, Clone, PartialEq)]
pub struct StateDigest {
    /// Events folded.
    pub applied: u64,
    /// The retry budget.
    pub max_retries: u32,
    /// The Volk registry.
    pub volks: BTreeMap<String, VolkState>,
    /// Every packet.
    pub packets: BTreeMap<Uuid, PacketState>,
    /// The live queue position `(time, priority)` of every queued packet.
    pub queue_entries: BTreeMap<Uuid, (DateTime<Utc>, Priority)>,
    /// Every thread.
    pub threads: BTreeMap<String, ThreadState>,
    /// Every session.
    pub sessions: BTreeMap<String, SessionState>,
    /// Every workflow run.
    pub workflows: BTreeMap<String, WorkflowStatus>,
    /// The agent hierarchy, as JSON.
    pub agents: serde_json::Value,
    /// The ids of executed commands.
    pub executed: BTreeSet<Uuid>,
    /// Queued packets per recipient (recipients with none left out).
    pub queued: BTreeMap<String, usize>,
    /// Delivered, unacknowledged packets per recipient (empty sets left out).
    pub delivered: BTreeMap<String, BTreeSet<Uuid>>,
}

impl KernelState {
    /// This state in canonical form (see [`StateDigest`]).
    pub fn digest(&self) -> StateDigest {
        let packets = self
            .packets
            .iter()
            .map(|(id, p)| (id.into_owned(), p.into_owned()))
            .collect();
        StateDigest {
            applied: self.applied,
            max_retries: self.max_retries,
            volks: self.volks.clone().into_iter().collect(),
            packets,
            queue_entries: self
                .queue_entries
                .iter()
                .map(|(id, entry)| (*id, *entry))
                .collect(),
            threads: self
                .threads
                .iter()
                .map(|(id, t)| (id.into_owned(), t.into_owned()))
                .collect(),
            sessions: self.sessions.clone().into_iter().collect(),
            workflows: self.workflows.clone().into_iter().collect(),
            agents: serde_json::to_value(&self.agents).unwrap_or(serde_json::Value::Null),
            executed: self
                .executed
                .iter()
                .map(|(id, _)| id.into_owned())
                .collect(),
            queued: self
                .queued
                .iter()
                .filter(|(_, n)| **n > 0)
                .map(|(a, n)| (a.to_string(), *n))
                .collect(),
            delivered: self
                .delivered
                .iter()
                .filter(|(_, s)| !s.is_empty())
                .map(|(a, s)| (a.to_string(), s.clone()))
                .collect(),
        }
    }
}
