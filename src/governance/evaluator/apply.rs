//! How fact changes reach the machine: every change but a packet's at once, packet
//! changes when a goal reads them (`pending.rs`).

use super::{run_caught, Evaluator};
use crate::governance::error::GovernanceError;
use crate::governance::fact_goals;
use crate::governance::facts::{Fact, FactChange};
use crate::governance::pending::packet_of;
use crate::governance::term::{message_id_parts, PlTerm};

/// Packets compiled alone (each with a marker) before the next read by id compiles
/// everything instead.
const FRESH_LIMIT: usize = 1_024;

impl Evaluator {
    /// Asserts and retracts facts, in order, a batch per goal (see `fact_goals`
    /// for how packet facts are kept).
    pub fn apply(&mut self, changes: &[FactChange]) -> Result<(), GovernanceError> {
        self.apply_measured(changes.to_vec()).map(|_| ())
    }

    /// [`Evaluator::apply`], returning what the goals are estimated to have left in
    /// the machine (bytes; see `renewal.rs`).
    ///
    /// Packet changes wait (`pending.rs`) unless too many do, counts and the floor
    /// wait for the next goal (`deferred.rs`); the rest run now.
    pub(in crate::governance) fn apply_measured(
        &mut self,
        changes: Vec<FactChange>,
    ) -> Result<u64, GovernanceError> {
        let (pending, fresh, deferred) = (&mut self.pending, &self.fresh, &mut self.deferred);
        let mut now = Vec::new();
        for change in changes {
            // A packet compiled alone for a read keeps being applied at once.
            if packet_of(&change).is_some_and(|id| fresh.contains(id)) {
                now.push(change);
            } else if let Some(change) = pending.offer(change).and_then(|c| deferred.offer(c)) {
                now.push(change);
            }
        }
        let mut cost = self.run_changes(&now)?;
        if self.deferred.full() {
            let counts = self.deferred.take();
            cost += self.run_changes(&counts)?;
        }
        if self.pending.must_apply() {
            cost += self.flush()?;
        } else if !self.pending.is_empty() && !self.stale {
            self.set_stale(true)?;
        }
        Ok(cost)
    }

    /// Runs the goals of `changes` in order, 64 per query.
    fn run_changes(&mut self, changes: &[FactChange]) -> Result<u64, GovernanceError> {
        self.run_goals(&fact_goals::goals(changes))
    }

    fn run_goals(&mut self, goals: &[String]) -> Result<u64, GovernanceError> {
        let cost = goals
            .iter()
            .map(|g| crate::governance::renewal::goal_cost(g))
            .sum();
        for chunk in goals.chunks(64) {
            // A list, not a conjunction: see the prelude's '$all'/1.
            let goal = format!("'$all'([{}])", chunk.join(","));
            match run_caught(&mut self.machine, &goal) {
                Ok(Some(_)) => {}
                Ok(None) => return Err(GovernanceError::Prolog("asserting facts failed".into())),
                Err(e) => return Err(GovernanceError::Prolog(e)),
            }
        }
        Ok(cost)
    }

    /// Compiles every waiting packet change now (a renewal's successor does, before it
    /// serves).
    pub(in crate::governance) fn compile_waiting(&mut self) -> Result<(), GovernanceError> {
        self.settle()?;
        if !self.pending.is_empty() {
            self.flush()?;
        }
        Ok(())
    }

    /// Sets the counts and the floor that wait (`deferred.rs`), before a goal that may
    /// read them runs.
    pub(super) fn settle(&mut self) -> Result<(), GovernanceError> {
        if !self.deferred.is_empty() {
            let changes = self.deferred.take();
            self.flushed_cost += self.run_changes(&changes)?;
        }
        Ok(())
    }

    /// Applies the waiting packet changes and clears the stale flag.
    fn flush(&mut self) -> Result<u64, GovernanceError> {
        let changes = self.pending.take();
        let cost = self.run_changes(&changes)?;
        if !self.fresh.is_empty() {
            run_caught(&mut self.machine, "retractall(cxp_fresh(_,_,_))")
                .map_err(GovernanceError::Prolog)?;
            self.fresh.clear();
        }
        if self.stale {
            self.set_stale(false)?;
        }
        Ok(cost)
    }

    fn set_stale(&mut self, stale: bool) -> Result<(), GovernanceError> {
        let goal = if stale {
            "'$set_stale'(1)"
        } else {
            "'$set_stale'(0)"
        };
        run_caught(&mut self.machine, goal).map_err(GovernanceError::Prolog)?;
        self.stale = stale;
        Ok(())
    }

    /// Packets whose changes wait to be compiled: a read by id takes its one packet
    /// out, a scan or a query takes them all (0 after one).
    pub fn waiting_packets(&self) -> usize {
        self.pending.len()
    }

    /// What applying waiting changes inside [`Evaluator::decide`] and
    /// [`Evaluator::query`] is estimated to have left in the machine since the last
    /// call (bytes, as [`Evaluator::apply_measured`] counts them).
    pub(in crate::governance) fn take_flushed_cost(&mut self) -> u64 {
        std::mem::take(&mut self.flushed_cost)
    }

    /// Compiles the waiting changes of packet `id` alone and marks it fresh, for a
    /// decision that read it by id; everything, when too many were compiled alone or
    /// nothing else waits.
    pub(super) fn compile_one(&mut self, id: &str) -> Result<(), GovernanceError> {
        if self.fresh.len() >= FRESH_LIMIT || self.fresh.contains(id) {
            return self.flush_counted();
        }
        let mut goals = fact_goals::goals(&self.pending.take_one(id));
        let marker = PlTerm::compound("cxp_fresh", message_id_parts(id).to_vec());
        goals.push(format!("assertz({marker})"));
        self.flushed_cost += self.run_goals(&goals)?;
        self.fresh.insert(id.to_owned());
        if self.pending.is_empty() {
            self.flush_counted()?;
        }
        Ok(())
    }

    pub(super) fn flush_counted(&mut self) -> Result<(), GovernanceError> {
        let cost = self.flush()?;
        self.flushed_cost += cost;
        Ok(())
    }

    /// Loads a whole fact set (a fresh machine, or after a reset).
    pub fn load_facts(&mut self, facts: &[Fact]) -> Result<(), GovernanceError> {
        let changes: Vec<FactChange> = facts.iter().cloned().map(FactChange::Assert).collect();
        self.apply(&changes)
    }

    /// Removes every fact.
    pub fn clear_facts(&mut self) -> Result<(), GovernanceError> {
        self.pending.clear();
        self.deferred.clear();
        self.stale = false;
        self.fresh.clear();
        let goal = "'$clear_blackboard', retractall(cxp_sends_key(_,_,_)), retractall(cxp_fresh(_,_,_)), \
                    retractall(cxp_packet_base(_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_)), retractall(cxp_status(_,_,_,_,_,_)), \
                    retractall(volk(_,_,_,_)), \
                    retractall(volk_capability(_,_)), retractall(volk_status(_,_)), retractall(session(_,_,_,_))";
        run_caught(&mut self.machine, goal)
            .map_err(GovernanceError::Prolog)
            .map(|_| ())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::evaluator::DEFAULT_INFERENCE_LIMIT;
    use crate::governance::policy::Policy;

    fn count(volk: usize) -> FactChange {
        FactChange::Assert(Fact::Sends(format!("U:V{volk}"), "none".into(), 1))
    }

    // ISSUE-15: counts wait for the next goal, but no more than the bound of them.
    #[test]
    fn counts_past_the_bound_are_set_without_waiting_for_a_goal() {
        let mut ev =
            Evaluator::load(&Policy::default_policy(), DEFAULT_INFERENCE_LIMIT).expect("load");
        let below: Vec<_> = (1..super::super::deferred::LIMIT).map(count).collect();
        ev.apply(&below).expect("apply");
        assert!(!ev.deferred.is_empty(), "below the bound they wait");
        ev.apply(&[count(0)]).expect("apply");
        assert!(ev.deferred.is_empty(), "at the bound they are set");
        let n = ev
            .query("cxp_sends('U:V0', none, N)")
            .expect("query")
            .and_then(|b| b.get("N").cloned());
        assert_eq!(n.as_deref(), Some("1"));
    }
}
