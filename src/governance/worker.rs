//! The engine thread: one machine, its job queue, and what happens when a job panics
//! or a renewal is ready (see `engine.rs` for the handle side, `renewal.rs` for the
//! hand-over).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use super::engine::{
    pause, unavailable, FailureHook, Health, Job, Reply, ENGINE_IDLE_SPIN, ENGINE_STACK, FAILED,
};
use super::evaluator::Evaluator;
use super::renewal::{Successor, QUERY_COST};
use super::request::Outcome;
use super::GovernanceError;

/// The next job: polled for [`ENGINE_IDLE_SPIN`] after the previous one, then waited
/// for in `recv` (parked). `None` once every sender is gone.
fn next_job(rx: &mpsc::Receiver<Job>) -> Option<Job> {
    let idle_since = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(job) => return Some(job),
            Err(mpsc::TryRecvError::Disconnected) => return None,
            Err(mpsc::TryRecvError::Empty) => {}
        }
        if idle_since.elapsed() >= ENGINE_IDLE_SPIN {
            return rx.recv().ok();
        }
        pause();
    }
}

/// A thread for a machine: named, with [`ENGINE_STACK`]. scryer's reader recurses per
/// nesting level of a goal; a stack overflow aborts the process (no unwinding to
/// catch), so leave a wide margin over the deepest goal a client can cause
/// (serde_json stops at 128 levels).
pub(super) fn engine_thread() -> std::thread::Builder {
    std::thread::Builder::new()
        .name("orchestrata-governance".into())
        .stack_size(ENGINE_STACK)
}

/// What moves from one engine thread to the next at a renewal: the queue and what the
/// thread shares with the handles (a machine is `!Send` and stays on its thread).
pub(super) struct Seat {
    pub(super) rx: mpsc::Receiver<Job>,
    pub(super) queued: Arc<AtomicUsize>,
    pub(super) health: Arc<Health>,
    pub(super) inference_limit: u64,
    pub(super) on_failure: FailureHook,
}

/// The engine thread's state: its seat and its machine.
pub(super) struct Worker {
    pub(super) seat: Seat,
    pub(super) current: Option<Evaluator>,
    pub(super) broken: bool,
}

impl Worker {
    /// Serves jobs until stopped; hands its seat over to a renewed machine's thread
    /// when one has caught up (see `renewal.rs`).
    pub(super) fn run(mut self) {
        let mut renewal: Option<Successor> = None;
        loop {
            if renewal.as_mut().is_some_and(Successor::is_ready) {
                if let Some(successor) = renewal.take() {
                    match successor.take_over(self.seat) {
                        Ok(()) => return,
                        // The fresh machine's thread is gone: keep serving.
                        Err(seat) => self.seat = seat,
                    }
                }
            }
            let job = if renewal.is_some() {
                match self.seat.rx.recv_timeout(RENEWAL_POLL) {
                    Ok(job) => Some(job),
                    Err(mpsc::RecvTimeoutError::Timeout) => continue,
                    Err(mpsc::RecvTimeoutError::Disconnected) => None,
                }
            } else {
                next_job(&self.seat.rx)
            };
            let Some(job) = job else { return };
            if self.handle(job, &mut renewal) {
                return;
            }
        }
    }

    /// Runs one job; `true` when the thread must stop.
    fn handle(&mut self, job: Job, renewal: &mut Option<Successor>) -> bool {
        if matches!(job, Job::Decide(..)) {
            self.seat.queued.fetch_sub(1, Ordering::AcqRel);
        }
        match job {
            Job::Stop => return true,
            Job::Renew(policy, facts) => {
                // What the fresh machine (or the one already loading) will reclaim.
                self.seat.health.spent.store(0, Ordering::Release);
                self.seat
                    .health
                    .renewal_queued
                    .store(false, Ordering::Release);
                // One at a time: a renewal under way already reclaims what this one
                // would (replacing it could starve renewals when they come faster
                // than a machine loads).
                if renewal.is_none() && !self.broken && self.current.is_some() {
                    let compile = self.seat.health.packets_read.load(Ordering::Acquire);
                    let limit = self.seat.inference_limit;
                    *renewal = Some(Successor::start(*policy, facts, limit, compile));
                }
            }
            Job::Load(policy, facts, reply) => {
                // A renewal under way was built with the policy this load replaces.
                *renewal = None;
                let limit = self.seat.inference_limit;
                let built = catch_unwind(AssertUnwindSafe(|| {
                    let mut ev = Evaluator::load(&policy, limit)?;
                    ev.load_facts(&facts)?;
                    Ok::<_, GovernanceError>(ev)
                }));
                let answer = match built {
                    Ok(Ok(ev)) => {
                        let rules = ev.rules().to_vec();
                        self.current = Some(ev);
                        self.seat.health.spent.store(0, Ordering::Release);
                        self.broken = false;
                        Ok(rules)
                    }
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(unavailable("the engine panicked while loading the policy")),
                };
                let _ = reply.send(answer);
            }
            job => {
                if renewal.as_ref().is_some_and(|s| !s.forward(&job)) {
                    tracing::warn!("governance engine renewal failed; the serving machine stays");
                    *renewal = None;
                }
                let ev = match (&mut self.current, self.broken) {
                    (Some(ev), false) => ev,
                    (Some(_), true) => {
                        reply_unavailable(job, FAILED);
                        return false;
                    }
                    (None, _) => {
                        reply_unavailable(job, "no policy loaded");
                        return false;
                    }
                };
                if let Err(panicked) = run_job(ev, job, &self.seat.health) {
                    *renewal = None;
                    self.fail(panicked);
                }
            }
        }
        let waiting = self.current.as_ref().map_or(0, Evaluator::waiting_packets);
        self.seat.health.waiting.store(waiting, Ordering::Release);
        // Noted after every job, so a policy load or a restart that replaces the
        // machine does not forget it.
        if self.current.as_ref().is_some_and(Evaluator::packets_read) {
            self.seat.health.packets_read.store(true, Ordering::Release);
        }
        false
    }

    /// After a panic of the machine: fail closed until a load, count it, answer the
    /// job and tell the owner.
    pub(super) fn fail(&mut self, panicked: Panicked) {
        self.broken = true;
        self.seat.health.failures.fetch_add(1, Ordering::AcqRel);
        tracing::error!("governance engine panicked; failing closed and restarting it");
        // The failure is counted before its job is answered.
        panicked.answer();
        (self.seat.on_failure)();
    }
}

/// How often a worker with a renewal under way looks whether it is ready while no job
/// arrives.
const RENEWAL_POLL: Duration = Duration::from_millis(5);

/// A job whose evaluation panicked, still holding its reply.
pub(super) enum Panicked {
    Apply(Reply<()>),
    Decide(Reply<Outcome>),
    Query(Reply<Option<std::collections::BTreeMap<String, String>>>),
}

impl Panicked {
    /// Answers the job: governance was unavailable.
    fn answer(self) {
        match self {
            Panicked::Apply(r) => {
                let _ = r.send(Err(unavailable(FAILED)));
            }
            Panicked::Decide(r) => {
                let _ = r.send(Err(unavailable(FAILED)));
            }
            Panicked::Query(r) => {
                let _ = r.send(Err(unavailable(FAILED)));
            }
        }
    }
}

/// Runs `f` on the machine, catching a panic.
pub(super) fn guarded<T>(f: impl FnOnce() -> T) -> Option<T> {
    catch_unwind(AssertUnwindSafe(f)).ok()
}

/// Runs one job; `Err` (with the job's reply, unanswered) if the machine panicked.
fn run_job(ev: &mut Evaluator, job: Job, health: &Health) -> Result<(), Panicked> {
    match job {
        Job::Apply(changes, reply) => {
            let Some(result) = guarded(|| ev.apply_measured(changes)) else {
                return Err(Panicked::Apply(reply));
            };
            let result = result.map(|cost| {
                health.spent.fetch_add(cost, Ordering::AcqRel);
            });
            if let Err(e) = &result {
                tracing::error!(error = %e, "governance facts could not be applied");
            }
            // What waits is known before the answer is.
            note_waiting(ev, health);
            let _ = reply.send(result);
        }
        Job::Reset(facts, reply) => {
            let Some(result) = guarded(|| ev.clear_facts().and_then(|()| ev.load_facts(&facts)))
            else {
                return Err(Panicked::Apply(reply));
            };
            // What waits is known before the answer is.
            note_waiting(ev, health);
            let _ = reply.send(result);
        }
        Job::Decide(request, reply) => {
            health.spent.fetch_add(QUERY_COST, Ordering::AcqRel);
            let crash = health.crash_next.swap(false, Ordering::AcqRel);
            let Some(result) = guarded(|| {
                if crash {
                    panic!("governance engine crash requested by a test");
                }
                ev.decide(&request)
            }) else {
                return Err(Panicked::Decide(reply));
            };
            health
                .spent
                .fetch_add(ev.take_flushed_cost(), Ordering::AcqRel);
            // What waits is known before the answer is.
            note_waiting(ev, health);
            let _ = reply.send(result);
        }
        Job::Query(goal, reply) => {
            health.spent.fetch_add(QUERY_COST, Ordering::AcqRel);
            let Some(result) = guarded(|| ev.query(&goal)) else {
                return Err(Panicked::Query(reply));
            };
            health
                .spent
                .fetch_add(ev.take_flushed_cost(), Ordering::AcqRel);
            // What waits is known before the answer is.
            note_waiting(ev, health);
            let _ = reply.send(result);
        }
        Job::Load(..) | Job::Renew(..) | Job::Stop => {}
    }
    Ok(())
}

fn reply_unavailable(job: Job, reason: &str) {
    match job {
        Job::Apply(_, r) | Job::Reset(_, r) => {
            let _ = r.send(Err(unavailable(reason)));
        }
        Job::Decide(_, r) => {
            let _ = r.send(Err(unavailable(reason)));
        }
        Job::Query(_, r) => {
            let _ = r.send(Err(unavailable(reason)));
        }
        Job::Load(_, _, r) => {
            let _ = r.send(Err(unavailable(reason)));
        }
        Job::Renew(..) | Job::Stop => {}
    }
}

/// Publishes how many packets wait in `ev` (the service extends a decision's timeout by
/// it): before a job is answered, so a caller that waited for an apply reads the count
/// that apply left.
fn note_waiting(ev: &Evaluator, health: &Health) {
    health
        .waiting
        .store(ev.waiting_packets(), Ordering::Release);
}
