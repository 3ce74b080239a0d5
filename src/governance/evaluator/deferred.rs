//! Counts and the floor, set in the machine when a goal is about to run, not when they
//! change.
//!
//! Every `packet_sent` moves its sender's `cxp_sends/3` count and, once the window is
//! full, the window's floor. Both live in the blackboard (`prelude.pl`), so applying
//! them is cheap in the machine, but each apply is still a goal scryer parses from
//! text: one `'$all'([...])` per batch the kernel folds, on the engine's one thread,
//! paid even while decisions are reused without the engine (`roster_cache.rs`) and
//! nothing reads either value.
//!
//! So the evaluator keeps the latest value of each count and of the floor here, and
//! sets them all in one goal before the next goal that could read them (a decision or
//! a query, `Evaluator::settle`). Only the last value of each matters: setting a count
//! or the floor replaces it, and no goal runs in between.

use std::collections::BTreeMap;

use crate::governance::facts::{Fact, FactChange};

/// Distinct counts waiting beyond which they are set at once (bounds the memory a
/// long run without decisions keeps here; a count is two names and a number).
pub(super) const LIMIT: usize = 4_096;

/// The counts and the floor not yet set in the machine, each at its latest value.
#[derive(Debug, Default)]
pub(super) struct Deferred {
    /// `(sender, session)` -> the count's change (an assert of the new count, or a
    /// retract when it dropped to 0).
    sends: BTreeMap<(String, String), FactChange>,
    floor: Option<FactChange>,
}

impl Deferred {
    /// Takes `change` if it sets a count or the floor; hands every other change back.
    pub(super) fn offer(&mut self, change: FactChange) -> Option<FactChange> {
        match change {
            FactChange::Assert(Fact::Sends(ref v, ref s, _))
            | FactChange::Retract(Fact::Sends(ref v, ref s, _)) => {
                self.sends.insert((v.clone(), s.clone()), change);
                None
            }
            FactChange::Assert(Fact::Floor(_)) => {
                self.floor = Some(change);
                None
            }
            // Setting the next floor replaces it; a retract alone sets nothing.
            FactChange::Retract(Fact::Floor(_)) => None,
            other => Some(other),
        }
    }

    /// Whether so many counts wait that they should be set now.
    pub(super) fn full(&self) -> bool {
        self.sends.len() >= LIMIT
    }

    pub(super) fn is_empty(&self) -> bool {
        self.sends.is_empty() && self.floor.is_none()
    }

    /// The waiting changes, latest value of each, leaving none.
    pub(super) fn take(&mut self) -> Vec<FactChange> {
        let mut out: Vec<FactChange> = std::mem::take(&mut self.sends).into_values().collect();
        out.extend(self.floor.take());
        out
    }

    pub(super) fn clear(&mut self) {
        self.sends.clear();
        self.floor = None;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sends(v: &str, s: &str, n: i64) -> Fact {
        Fact::Sends(v.into(), s.into(), n)
    }

    // ISSUE-15
    #[test]
    fn keeps_only_the_latest_value_of_each_count_and_the_floor() {
        let mut d = Deferred::default();
        for change in [
            FactChange::Assert(sends("U:Ox", "none", 1)),
            FactChange::Retract(sends("U:Ox", "none", 1)),
            FactChange::Assert(sends("U:Ox", "none", 2)),
            FactChange::Assert(sends("U:Vz", "s1", 1)),
            FactChange::Retract(sends("U:Vz", "s1", 1)),
            FactChange::Retract(Fact::Floor(0)),
            FactChange::Assert(Fact::Floor(5)),
            FactChange::Retract(Fact::Floor(5)),
            FactChange::Assert(Fact::Floor(6)),
        ] {
            assert_eq!(d.offer(change), None);
        }
        let taken = d.take();
        assert_eq!(
            taken,
            vec![
                FactChange::Assert(sends("U:Ox", "none", 2)),
                // Dropped to 0: the retract is what sets it to 0 in the machine.
                FactChange::Retract(sends("U:Vz", "s1", 1)),
                FactChange::Assert(Fact::Floor(6)),
            ]
        );
        assert!(d.is_empty());
    }

    // ISSUE-15
    #[test]
    fn is_full_at_the_limit_of_distinct_counts_however_often_one_changes() {
        let mut d = Deferred::default();
        for n in 1..=10_000 {
            d.offer(FactChange::Assert(sends("U:Ox", "none", n)));
        }
        assert!(!d.full(), "one count changed 10,000 times is one entry");
        for i in 1..LIMIT {
            d.offer(FactChange::Assert(sends(&format!("U:V{i}"), "none", 1)));
        }
        assert!(d.full());
        assert_eq!(d.take().len(), LIMIT);
        assert!(!d.full());
    }

    // ISSUE-15
    #[test]
    fn hands_back_every_other_change() {
        let mut d = Deferred::default();
        let volk = FactChange::Assert(Fact::VolkStatus("U:Ox".into(), "active".into()));
        assert_eq!(d.offer(volk.clone()), Some(volk));
        assert!(d.is_empty());
    }
}
