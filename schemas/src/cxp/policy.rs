//! Priority classes and the anti-manipulation rule (US-009).
//!
//! Classes map to priorities: system = URGENT (10), error = HIGH (7), user = NORMAL (5),
//! background = LOW (3). The rule against manipulation: only the configured *system
//! senders* may put a packet above HIGH; any other sender asking for more is refused
//! (never silently clamped, so the attempt is visible). A per-Volk cap can lower a
//! sender's ceiling further.

use std::collections::{BTreeMap, BTreeSet};

use chrono::{DateTime, Utc};

use super::alias::VolkAlias;
use super::error::CxpError;
use super::packet::CxpPacket;
use super::priority::Priority;

/// What kind of message a packet is, for default priorities.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MessageClass {
    /// Control-plane messages: URGENT.
    System,
    /// Error reports: HIGH.
    Error,
    /// User requests: NORMAL.
    User,
    /// Background tasks: LOW.
    Background,
}

impl MessageClass {
    /// The priority a packet of this class gets.
    pub fn default_priority(self) -> Priority {
        match self {
            MessageClass::System => Priority::URGENT,
            MessageClass::Error => Priority::HIGH,
            MessageClass::User => Priority::NORMAL,
            MessageClass::Background => Priority::LOW,
        }
    }
}

/// Who may set which priority.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PriorityPolicy {
    system_senders: BTreeSet<VolkAlias>,
    caps: BTreeMap<VolkAlias, Priority>,
}

impl PriorityPolicy {
    /// A policy where `senders` are the system senders (allowed up to URGENT). With no
    /// system senders nobody may exceed HIGH.
    pub fn with_system_senders(senders: impl IntoIterator<Item = VolkAlias>) -> Self {
        PriorityPolicy {
            system_senders: senders.into_iter().collect(),
            caps: BTreeMap::new(),
        }
    }

    /// Lower `volk`'s ceiling to `cap` (a custom per-Volk policy).
    pub fn with_cap(mut self, volk: VolkAlias, cap: Priority) -> Self {
        self.caps.insert(volk, cap);
        self
    }

    /// Whether `volk` is a system sender.
    pub fn is_system(&self, volk: VolkAlias) -> bool {
        self.system_senders.contains(&volk)
    }

    /// The highest priority `volk` may set.
    pub fn ceiling(&self, volk: VolkAlias) -> Priority {
        let base = if self.is_system(volk) {
            Priority::URGENT
        } else {
            Priority::HIGH
        };
        self.caps.get(&volk).map_or(base, |cap| (*cap).min(base))
    }

    /// Accept `requested` from `actor`, or refuse it naming `priority`.
    pub fn check(&self, actor: VolkAlias, requested: Priority) -> Result<Priority, CxpError> {
        let ceiling = self.ceiling(actor);
        if requested > ceiling {
            return Err(CxpError::invalid(
                "priority",
                format!("{actor} may not set priority {requested} (ceiling {ceiling})"),
            ));
        }
        Ok(requested)
    }

    /// The priority for a packet of `class` sent by `sender`; a non-system sender cannot
    /// claim the system class.
    pub fn for_class(&self, sender: VolkAlias, class: MessageClass) -> Result<Priority, CxpError> {
        self.check(sender, class.default_priority())
    }

    /// Set `packet`'s priority on behalf of `actor` at `at`, enforcing the ceiling.
    pub fn apply(
        &self,
        packet: &mut CxpPacket,
        actor: VolkAlias,
        requested: Priority,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        let p = self.check(actor, requested)?;
        packet.set_priority(p, at)
    }

    /// Raise `packet`'s priority by `steps` on behalf of `actor` (escalation).
    pub fn escalate(
        &self,
        packet: &mut CxpPacket,
        actor: VolkAlias,
        steps: u8,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        self.apply(packet, actor, packet.priority().escalated(steps), at)
    }

    /// Lower `packet`'s priority by `steps` (demotion is always allowed).
    pub fn demote(
        &self,
        packet: &mut CxpPacket,
        steps: u8,
        at: DateTime<Utc>,
    ) -> Result<(), CxpError> {
        packet.set_priority(packet.priority().demoted(steps), at)
    }
}
