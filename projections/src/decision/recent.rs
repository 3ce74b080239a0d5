//! [`RecentIds`]: the ids of the newest decisions, by which the fold knows a decision
//! logged twice.
//!
//! One writer appends each decision once, and a command retried after a failed append
//! is decided again under a new id, so a repeated id can only come from a record
//! delivered twice by the log (an at-least-once stream), right after the first copy.
//! Remembering every id ever recorded would cost memory that follows the history; the
//! newest [`RECENT_IDS`] are enough for a repeat, at a fixed cost. The window is a
//! function of the log
//! alone (its last ids, in log order), so a restored index holds the same window as the
//! folded one.

use std::collections::{HashSet, VecDeque};

use foldhash::fast::FixedState;
use uuid::Uuid;

/// Decision ids the index remembers: a repeat further back than this many decisions
/// would be counted again.
pub const RECENT_IDS: usize = 65_536;

/// The newest [`RECENT_IDS`] decision ids; see the module docs.
#[derive(Debug, Clone, Default)]
pub(super) struct RecentIds {
    order: VecDeque<Uuid>,
    held: HashSet<Uuid, FixedState>,
}

impl RecentIds {
    /// Whether `id` is among the newest ids.
    pub fn contains(&self, id: &Uuid) -> bool {
        self.held.contains(id)
    }

    /// Remembers `id` as the newest, forgetting the oldest past [`RECENT_IDS`].
    pub fn push(&mut self, id: Uuid) {
        if !self.held.insert(id) {
            return;
        }
        self.order.push_back(id);
        if self.order.len() > RECENT_IDS {
            if let Some(old) = self.order.pop_front() {
                self.held.remove(&old);
            }
        }
    }
}

impl PartialEq for RecentIds {
    fn eq(&self, other: &Self) -> bool {
        // `held` is `order` as a set.
        self.order == other.order
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_forgets_the_oldest_id_past_its_size() {
        let mut recent = RecentIds::default();
        for i in 0..=RECENT_IDS as u128 {
            recent.push(Uuid::from_u128(i));
        }
        assert!(!recent.contains(&Uuid::from_u128(0)));
        assert!(recent.contains(&Uuid::from_u128(1)));
        assert!(recent.contains(&Uuid::from_u128(RECENT_IDS as u128)));
        // A repeat inside the window changes nothing.
        recent.push(Uuid::from_u128(5));
        assert_eq!(recent.order.len(), RECENT_IDS);
        assert_eq!(
            recent.order.back(),
            Some(&Uuid::from_u128(RECENT_IDS as u128))
        );
    }
}
