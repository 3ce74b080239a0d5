//! How fact changes reach the machine: packet changes when a goal reads them
//! (`pending.rs`); every other change with the next goal the machine runs.
//!
//! Running a goal has a fixed cost in scryer (parsing and compiling the query text:
//! ~60 µs), larger than asserting a send count or moving the packet window's floor. So
//! the goals of eager changes are not run as a query of their own: they wait, in
//! order, and run as the first conjuncts of the next decision's query — one query per
//! decision instead of two. Anything else that runs a goal (a query, a packet
//! compilation, a flush) runs them first, and more than [`DEFERRED_LIMIT`] of them run
//! at once, so they stay few.

use super::{run_caught, Evaluator};
use crate::governance::error::GovernanceError;
use crate::governance::fact_goals;
use crate::governance::facts::{Fact, FactChange};
use crate::governance::pending::packet_of;
use crate::governance::term::{message_id_parts, PlTerm};

/// Packets compiled alone (each with a marker) before the next read by id compiles
/// everything instead.
const FRESH_LIMIT: usize = 1_024;

/// Eager change goals that may wait for the next decision; past this they run at once.
const DEFERRED_LIMIT: usize = 64;

impl Evaluator {
    /// Asserts and retracts facts, in order, a batch per goal (see [`fact_goals`]
    /// for how packet facts are kept).
    pub fn apply(&mut self, changes: &[FactChange]) -> Result<(), GovernanceError> {
        self.apply_measured(changes).map(|_| ())
    }

    /// [`Evaluator::apply`], returning what the goals are estimated to have left in
    /// the machine (bytes; see `renewal.rs`).
    ///
    /// Packet changes wait (`pending.rs`) unless too many do; the rest run now.
    pub(in crate::governance) fn apply_measured(
        &mut self,
        changes: &[FactChange],
    ) -> Result<u64, GovernanceError> {
        let (pending, fresh) = (&mut self.pending, &self.fresh);
        let now: Vec<FactChange> = changes
            .iter()
            // A packet compiled alone for a read keeps being applied at once.
            .filter(|c| packet_of(c).is_some_and(|id| fresh.contains(id)) || !pending.offer(c))
            .cloned()
            .collect();
        let goals = fact_goals::goals(&now);
        let mut cost = goals_cost(&goals);
        self.defer(goals)?;
        if self.pending.must_apply() {
            cost += self.flush()?;
        } else if !self.pending.is_empty() && !self.stale {
            self.stale = true;
            self.defer(vec!["'$set_stale'(1)".to_owned()])?;
        }
        Ok(cost)
    }

    /// Queues eager change goals for the next query; runs them now past the limit.
    fn defer(&mut self, goals: Vec<String>) -> Result<(), GovernanceError> {
        self.deferred.extend(goals);
        if self.deferred.len() > DEFERRED_LIMIT {
            self.run_deferred()?;
        }
        Ok(())
    }

    /// Runs the queued eager change goals now (before any other goal runs).
    pub(super) fn run_deferred(&mut self) -> Result<(), GovernanceError> {
        if self.deferred.is_empty() {
            return Ok(());
        }
        let goals = std::mem::take(&mut self.deferred);
        self.run_goals_now(&goals)
    }

    /// The queued eager change goals as the first conjuncts of a decision's query
    /// (empty when none wait), taken: they run with it. If one of them fails, the
    /// query throws `orchestrata_apply_failed` before deciding anything.
    pub(super) fn take_deferred_prefix(&mut self) -> String {
        if self.deferred.is_empty() {
            return String::new();
        }
        let goals = std::mem::take(&mut self.deferred);
        format!(
            "({} -> true ; throw(orchestrata_apply_failed)), ",
            goals.join(",")
        )
    }

    /// Runs the goals of `changes` in order, 64 per query (after the queued ones).
    fn run_changes(&mut self, changes: &[FactChange]) -> Result<u64, GovernanceError> {
        self.run_goals(&fact_goals::goals(changes))
    }

    fn run_goals(&mut self, goals: &[String]) -> Result<u64, GovernanceError> {
        self.run_deferred()?;
        self.run_goals_now(goals)?;
        Ok(goals_cost(goals))
    }

    fn run_goals_now(&mut self, goals: &[String]) -> Result<(), GovernanceError> {
        for chunk in goals.chunks(64) {
            let goal = chunk.join(",");
            match run_caught(&mut self.machine, &goal) {
                Ok(Some(_)) => {}
                Ok(None) => return Err(GovernanceError::Prolog("asserting facts failed".into())),
                Err(e) => return Err(GovernanceError::Prolog(e)),
            }
        }
        Ok(())
    }

    /// Compiles every waiting packet change now (a renewal's successor does, before it
    /// serves).
    pub(in crate::governance) fn compile_waiting(&mut self) -> Result<(), GovernanceError> {
        self.run_deferred()?;
        if !self.pending.is_empty() {
            self.flush()?;
        }
        Ok(())
    }

    /// Applies the waiting packet changes and clears the stale flag.
    fn flush(&mut self) -> Result<u64, GovernanceError> {
        self.run_deferred()?;
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
        self.run_deferred()?;
        let goal = if stale {
            "'$set_stale'(1)"
        } else {
            "'$set_stale'(0)"
        };
        run_caught(&mut self.machine, goal).map_err(GovernanceError::Prolog)?;
        self.stale = stale;
        Ok(())
    }

    /// Goals of eager fact changes (send counts, Volks, sessions, the window's floor)
    /// waiting to run as the first conjuncts of the next query; at most 64.
    pub fn waiting_goals(&self) -> usize {
        self.deferred.len()
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
        self.deferred.clear();
        self.pending.clear();
        self.stale = false;
        self.fresh.clear();
        let goal = "'$clear_blackboard', retractall(cxp_sends_key(_,_)), retractall(cxp_fresh(_,_,_)), \
                    retractall(cxp_packet_base(_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_,_)), retractall(cxp_status(_,_,_,_,_,_)), \
                    retractall(volk(_,_,_,_)), \
                    retractall(volk_capability(_,_)), retractall(volk_status(_,_)), retractall(session(_,_,_,_))";
        run_caught(&mut self.machine, goal)
            .map_err(GovernanceError::Prolog)
            .map(|_| ())
    }
}

/// What `goals` are estimated to leave in the machine (bytes; see `renewal.rs`).
fn goals_cost(goals: &[String]) -> u64 {
    goals
        .iter()
        .map(|g| crate::governance::renewal::goal_cost(g))
        .sum()
}
