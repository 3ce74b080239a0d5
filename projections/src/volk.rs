//! [`VolkView`]: every Volk — registration, health, tasks, last activity.
//!
//! Folds `volk.lifecycle` for registration (`registered`, and `spawned` for junior
//! Volks), deregistration / termination, health, tasks and escalations, and
//! `cxp.traffic` for activity: sending a packet or acknowledging one counts as activity
//! of that Volk. The two streams are kept apart inside the view (packet activity is a
//! per-alias maximum of event times), so the result does not depend on how the two
//! streams interleave: [`VolkView::last_activity`] combines them when asked.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Health, TaskOutcome};
use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde::{Deserialize, Serialize};

use crate::{Checkpoint, Transition, View, ViewName};

/// Whether a Volk is in the registry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum VolkStatus {
    /// Registered (or spawned) and not gone.
    Registered,
    /// Left the registry (`deregistered`).
    Deregistered,
    /// A junior Volk that was terminated.
    Terminated,
}

/// A task a Volk is working on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ActiveTask {
    /// The thread that asked for it.
    pub thread_id: Option<String>,
    /// What it is.
    pub description: String,
    /// Event time it started.
    pub started_at: DateTime<Utc>,
}

/// An escalation a Volk raised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Escalation {
    /// Who must decide.
    pub escalated_to: String,
    /// The full path.
    pub path: Vec<String>,
    /// Why.
    pub reason: String,
    /// The thread concerned.
    pub thread_id: Option<String>,
    /// Event time.
    pub at: DateTime<Utc>,
}

/// One Volk.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct VolkState {
    /// Its alias, e.g. `U:Ox`.
    pub alias: String,
    /// What it can do.
    pub capabilities: Vec<String>,
    /// The Volk it reports to (for a junior Volk: the one that spawned it).
    pub parent: Option<String>,
    /// Protocols it speaks.
    pub protocols: Vec<String>,
    /// The session it belongs to.
    pub session_id: Option<String>,
    /// Free-form registration details.
    pub metadata: Json,
    /// For a junior Volk: what runs it.
    pub driver: Option<String>,
    /// For a junior Volk: what it is for.
    pub purpose: Option<String>,
    /// Event time of its (last) registration.
    pub registered_at: DateTime<Utc>,
    /// Registered, deregistered or terminated.
    pub status: VolkStatus,
    /// Every registry status it went through.
    pub status_history: Vec<Transition<VolkStatus>>,
    /// Current health (`healthy` at registration).
    pub health: Health,
    /// Every health it had.
    pub health_history: Vec<Transition<Health>>,
    /// Tasks started and not completed, by task id.
    pub active_tasks: BTreeMap<String, ActiveTask>,
    /// Completed tasks that succeeded.
    pub tasks_succeeded: u64,
    /// Completed tasks that failed.
    pub tasks_failed: u64,
    /// Completed tasks that were cancelled.
    pub tasks_cancelled: u64,
    /// Escalations it raised, in log order.
    pub escalations: Vec<Escalation>,
    /// Event time of its last `volk.lifecycle` event.
    pub lifecycle_activity: DateTime<Utc>,
}

/// The Volks view.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct VolkView {
    checkpoint: Checkpoint,
    volks: BTreeMap<String, VolkState>,
    /// Latest packet activity (send, acknowledge) per alias, from `cxp.traffic`.
    packet_activity: BTreeMap<String, DateTime<Utc>>,
}

impl View for VolkView {
    const NAME: ViewName = ViewName::Volk;
    const STREAMS: &'static [Stream] = &[Stream::VolkLifecycle, Stream::CxpTraffic];

    fn checkpoint(&self) -> &Checkpoint {
        &self.checkpoint
    }

    fn apply(&mut self, envelope: &Envelope) -> bool {
        if !Self::STREAMS.contains(&envelope.stream)
            || !self.checkpoint.admit(envelope.stream, envelope.sequence)
        {
            return false;
        }
        let at = envelope.record.timestamp;
        let sequence = envelope.sequence;
        let stamp = Stamp { at, sequence };
        match &envelope.record.event {
            Event::PacketSent(e) => self.packet_activity(&e.packet.from_agent, at),
            Event::PacketAcknowledged(e) => self.packet_activity(&e.acknowledged_by, at),
            Event::VolkRegistered(e) => {
                let mut volk = new_volk(
                    &e.alias,
                    at,
                    stamp.transition(VolkStatus::Registered, None),
                    stamp.transition(Health::Healthy, None),
                );
                volk.capabilities.clone_from(&e.capabilities);
                volk.parent.clone_from(&e.parent);
                volk.protocols.clone_from(&e.protocols);
                volk.session_id.clone_from(&e.session_id);
                volk.metadata = e.metadata.clone();
                self.register(volk, stamp.transition(VolkStatus::Registered, None));
            }
            Event::VolkSpawned(e) => {
                let mut volk = new_volk(
                    &e.alias,
                    at,
                    stamp.transition(VolkStatus::Registered, Some("spawned")),
                    stamp.transition(Health::Healthy, None),
                );
                volk.parent = Some(e.parent.clone());
                volk.driver = Some(e.driver.clone());
                volk.purpose = Some(e.purpose.clone());
                self.register(
                    volk,
                    stamp.transition(VolkStatus::Registered, Some("spawned")),
                );
            }
            Event::VolkDeregistered(e) => {
                self.leave(
                    &e.alias,
                    stamp.transition(VolkStatus::Deregistered, Some(&e.reason)),
                );
            }
            Event::VolkTerminated(e) => {
                self.leave(
                    &e.alias,
                    stamp.transition(VolkStatus::Terminated, Some(&e.reason)),
                );
            }
            Event::VolkHealthChanged(e) => {
                if let Some(v) = self.touch(&e.alias, at) {
                    v.health = e.new;
                    v.health_history
                        .push(stamp.transition(e.new, e.details.as_deref()));
                }
            }
            Event::VolkTaskStarted(e) => {
                if let Some(v) = self.touch(&e.alias, at) {
                    v.active_tasks.insert(
                        e.task_id.clone(),
                        ActiveTask {
                            thread_id: e.thread_id.clone(),
                            description: e.description.clone(),
                            started_at: at,
                        },
                    );
                }
            }
            Event::VolkTaskCompleted(e) => {
                if let Some(v) = self.touch(&e.alias, at) {
                    v.active_tasks.remove(&e.task_id);
                    match e.outcome {
                        TaskOutcome::Succeeded => v.tasks_succeeded += 1,
                        TaskOutcome::Failed => v.tasks_failed += 1,
                        TaskOutcome::Cancelled => v.tasks_cancelled += 1,
                    }
                }
            }
            Event::VolkEscalated(e) => {
                if let Some(v) = self.touch(&e.alias, at) {
                    v.escalations.push(Escalation {
                        escalated_to: e.escalated_to.clone(),
                        path: e.path.clone(),
                        reason: e.reason.clone(),
                        thread_id: e.thread_id.clone(),
                        at,
                    });
                }
            }
            _ => {}
        }
        true
    }
}

/// Time and sequence of the event being applied.
#[derive(Clone, Copy)]
struct Stamp {
    at: DateTime<Utc>,
    sequence: u64,
}

impl Stamp {
    fn transition<S>(self, status: S, note: Option<&str>) -> Transition<S> {
        Transition {
            status,
            at: self.at,
            sequence: self.sequence,
            by: None,
            note: note.map(str::to_owned),
        }
    }
}

fn new_volk(
    alias: &str,
    at: DateTime<Utc>,
    status: Transition<VolkStatus>,
    health: Transition<Health>,
) -> VolkState {
    VolkState {
        alias: alias.to_owned(),
        capabilities: Vec::new(),
        parent: None,
        protocols: Vec::new(),
        session_id: None,
        metadata: Json::default(),
        driver: None,
        purpose: None,
        registered_at: at,
        status: VolkStatus::Registered,
        status_history: vec![status],
        health: Health::Healthy,
        health_history: vec![health],
        active_tasks: BTreeMap::new(),
        tasks_succeeded: 0,
        tasks_failed: 0,
        tasks_cancelled: 0,
        escalations: Vec::new(),
        lifecycle_activity: at,
    }
}

impl VolkView {
    fn packet_activity(&mut self, alias: &str, at: DateTime<Utc>) {
        match self.packet_activity.get_mut(alias) {
            Some(last) => *last = (*last).max(at),
            None => {
                self.packet_activity.insert(alias.to_owned(), at);
            }
        }
    }

    /// Registers `volk`; a re-registration after leaving keeps the history and counters
    /// but takes the new registration's details.
    fn register(&mut self, volk: VolkState, transition: Transition<VolkStatus>) {
        match self.volks.get_mut(&volk.alias) {
            Some(old) if old.status != VolkStatus::Registered => {
                let mut status_history = std::mem::take(&mut old.status_history);
                status_history.push(transition);
                let mut health_history = std::mem::take(&mut old.health_history);
                health_history.extend(volk.health_history.iter().cloned());
                let (succeeded, failed, cancelled) =
                    (old.tasks_succeeded, old.tasks_failed, old.tasks_cancelled);
                let escalations = std::mem::take(&mut old.escalations);
                *old = VolkState {
                    status_history,
                    health_history,
                    tasks_succeeded: succeeded,
                    tasks_failed: failed,
                    tasks_cancelled: cancelled,
                    escalations,
                    ..volk
                };
            }
            Some(_) => {} // already registered: the first registration counts
            None => {
                self.volks.insert(volk.alias.clone(), volk);
            }
        }
    }

    fn leave(&mut self, alias: &str, transition: Transition<VolkStatus>) {
        let at = transition.at;
        if let Some(v) = self.touch(alias, at) {
            if v.status == VolkStatus::Registered {
                v.status = transition.status;
                v.status_history.push(transition);
                v.active_tasks.clear();
            }
        }
    }

    fn touch(&mut self, alias: &str, at: DateTime<Utc>) -> Option<&mut VolkState> {
        let v = self.volks.get_mut(alias)?;
        v.lifecycle_activity = v.lifecycle_activity.max(at);
        Some(v)
    }

    /// The Volk with this alias (registered or gone).
    pub fn volk(&self, alias: &str) -> Option<&VolkState> {
        self.volks.get(alias)
    }

    /// Every Volk ever registered, by alias; `registered_only` keeps those currently in
    /// the registry.
    pub fn volks(&self, registered_only: bool) -> impl Iterator<Item = &VolkState> {
        self.volks
            .values()
            .filter(move |v| !registered_only || v.status == VolkStatus::Registered)
    }

    /// The latest event time at which the Volk did anything: a lifecycle event about it,
    /// a packet it sent, or one it acknowledged.
    pub fn last_activity(&self, alias: &str) -> Option<DateTime<Utc>> {
        let lifecycle = self.volks.get(alias).map(|v| v.lifecycle_activity);
        let packets = self.packet_activity.get(alias).copied();
        lifecycle.max(packets)
    }

    /// Registered Volks that report to `parent` (its juniors and subordinates).
    pub fn children<'a>(&'a self, parent: &'a str) -> impl Iterator<Item = &'a VolkState> + 'a {
        self.volks(true)
            .filter(move |v| v.parent.as_deref() == Some(parent))
    }
}

#[cfg(test)]
mod tests;
