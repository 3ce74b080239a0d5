//! Packet priority (US-009): a number 0..=10, higher is more urgent.

use std::fmt;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::CxpError;

/// A validated priority in `0..=10`. Higher values are served first.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Priority(u8);

impl Priority {
    /// The lowest possible priority.
    pub const MIN: Priority = Priority(0);
    /// Background work.
    pub const LOW: Priority = Priority(3);
    /// User requests; the default.
    pub const NORMAL: Priority = Priority(5);
    /// Errors.
    pub const HIGH: Priority = Priority(7);
    /// System messages. Reserved for system senders (see [`super::PriorityPolicy`]).
    pub const URGENT: Priority = Priority(10);
    /// The highest possible priority (same as [`Priority::URGENT`]).
    pub const MAX: Priority = Priority(10);

    /// Build a priority from any integer, refusing values outside `0..=10` with an error
    /// naming the `priority` field.
    pub fn new(value: i64) -> Result<Self, CxpError> {
        if (0..=10).contains(&value) {
            Ok(Priority(value as u8))
        } else {
            Err(CxpError::invalid(
                "priority",
                format!("{value} is outside the range 0..=10"),
            ))
        }
    }

    /// The numeric value.
    pub fn value(self) -> u8 {
        self.0
    }

    /// One step up by `by`, saturating at [`Priority::MAX`].
    pub fn escalated(self, by: u8) -> Priority {
        Priority(self.0.saturating_add(by).min(10))
    }

    /// One step down by `by`, saturating at [`Priority::MIN`].
    pub fn demoted(self, by: u8) -> Priority {
        Priority(self.0.saturating_sub(by))
    }
}

impl Default for Priority {
    /// `NORMAL` (5), as spec 004 requires.
    fn default() -> Self {
        Priority::NORMAL
    }
}

impl fmt::Display for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for Priority {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Priority({})", self.0)
    }
}

impl TryFrom<i64> for Priority {
    type Error = CxpError;
    fn try_from(v: i64) -> Result<Self, Self::Error> {
        Priority::new(v)
    }
}

impl Serialize for Priority {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u8(self.0)
    }
}

impl<'de> Deserialize<'de> for Priority {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = i64::deserialize(d)?;
        Priority::new(v).map_err(serde::de::Error::custom)
    }
}
