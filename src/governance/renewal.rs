//! Renewing the engine's machine without stopping decisions.
//!
//! A scryer 0.10 machine never gives memory back: every asserted clause stays even
//! when retracted and every query leaves some bytes behind (`examples/scryer_memory.rs`
//! shows how much). A server that decides and asserts
//! for hours therefore grows without bound however few facts are current. The one way
//! to reclaim that memory is a fresh machine, so the governance service asks for one
//! after a budget of work (`governance.engine_renew_mb`, estimated by the engine thread
//! from the goals it ran: [`goal_cost`], [`QUERY_COST`]), loaded with the policy in force and only the
//! current facts (the packet window, see `fact_window.rs`).
//!
//! Building a machine and loading a window of facts takes too long to stop decisions
//! for, so it happens on a second thread (a machine is `!Send` and must
//! live where it was built):
//!
//! 1. the serving thread, on `Renew(policy, facts)`, starts a [`Successor`] thread that
//!    builds the machine and loads the facts — a snapshot taken under the facts lock
//!    when the job was queued, so every fact change queued after it is one the
//!    snapshot lacks;
//! 2. the serving thread keeps answering, and forwards a copy of every fact change it
//!    applies (`Apply`, `Reset`) to the successor, which applies them after its load;
//! 3. once the successor has caught up it says so; the serving thread hands its seat
//!    (the job queue and shared counters) over and ends, dropping its machine; the
//!    successor applies what was forwarded before the hand-over and then serves the
//!    queue. No job is lost or reordered: the queue is never read by two threads.
//!
//! A successor that fails (load error, panic, thread gone) is dropped and the serving
//! machine stays; a policy load during a renewal cancels it.
//!
//! The successor compiles the packet window before it serves only on a server where a
//! goal has read packet facts (a decision that read them, or any query): there, the
//! next read would otherwise compile the whole window while every decision waits.
//! Where the policy never reads packets (the default policy's decisions do not), their
//! facts wait in the successor as they did in the serving machine (`pending.rs`), and
//! a renewal costs a machine build and the Volk and session facts only, not the
//! compilation of the whole window, which a busy server would pay at every renewal.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::Ordering;
use std::sync::mpsc;

use super::engine::Job;
use super::evaluator::Evaluator;
use super::facts::{Fact, FactChange};
use super::policy::Policy;
use super::worker::{engine_thread, guarded, Panicked, Seat, Worker};
use super::GovernanceError;

/// A fact job forwarded to the successor (no reply: the serving thread answered it).
enum Forwarded {
    Apply(Vec<FactChange>),
    Reset(Vec<Fact>),
}

/// Where a successor stands, as its serving thread sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Stage {
    Loading,
    Ready,
    Failed,
}

/// The serving thread's side of a renewal under way.
pub(super) struct Successor {
    forward: mpsc::Sender<Forwarded>,
    ready: mpsc::Receiver<Result<(), String>>,
    handover: mpsc::Sender<Seat>,
    stage: Stage,
}

impl Successor {
    /// Starts the thread that builds the fresh machine; `compile`: whether it compiles
    /// the packet facts it loads before it serves (see the module docs).
    pub(super) fn start(
        policy: Policy,
        facts: Vec<Fact>,
        inference_limit: u64,
        compile: bool,
    ) -> Self {
        let (forward, forwarded) = mpsc::channel();
        let (ready_tx, ready) = mpsc::channel();
        let (handover, handed) = mpsc::channel();
        let spawned = engine_thread().spawn(move || {
            let seed = Seed {
                policy,
                facts,
                inference_limit,
                compile,
            };
            successor(seed, forwarded, ready_tx, handed)
        });
        let stage = match spawned {
            Ok(_) => Stage::Loading,
            Err(e) => {
                tracing::warn!(error = %e, "cannot start a thread to renew the governance engine");
                Stage::Failed
            }
        };
        Successor {
            forward,
            ready,
            handover,
            stage,
        }
    }

    /// Whether the fresh machine has loaded and caught up. A failed one is logged
    /// and never ready (the caller drops it when it forwards the next change).
    pub(super) fn is_ready(&mut self) -> bool {
        if self.stage == Stage::Loading {
            self.stage = match self.ready.try_recv() {
                Ok(Ok(())) => Stage::Ready,
                Ok(Err(e)) => {
                    tracing::warn!(error = %e, "governance engine renewal failed; the serving machine stays");
                    Stage::Failed
                }
                Err(mpsc::TryRecvError::Empty) => Stage::Loading,
                Err(mpsc::TryRecvError::Disconnected) => Stage::Failed,
            };
        }
        self.stage == Stage::Ready
    }

    /// Forwards a copy of `job` if it changes facts; `false` if the successor is gone
    /// (or failed) and the renewal should be dropped.
    pub(super) fn forward(&self, job: &Job) -> bool {
        if self.stage == Stage::Failed {
            return false;
        }
        let copy = match job {
            Job::Apply(changes, _) => Forwarded::Apply(changes.clone()),
            Job::Reset(facts, _) => Forwarded::Reset(facts.clone()),
            _ => return true,
        };
        self.forward.send(copy).is_ok()
    }

    /// Hands the seat to the successor; gives it back if the successor is gone.
    pub(super) fn take_over(self, seat: Seat) -> Result<(), Seat> {
        let Successor {
            forward, handover, ..
        } = self;
        let sent = handover.send(seat).map_err(|mpsc::SendError(seat)| seat);
        // Everything forwarded so far is all the successor must apply before serving.
        drop(forward);
        sent
    }
}

fn apply(ev: &mut Evaluator, job: Forwarded) -> Result<(), GovernanceError> {
    match job {
        Forwarded::Apply(changes) => ev.apply(&changes),
        Forwarded::Reset(facts) => ev.clear_facts().and_then(|()| ev.load_facts(&facts)),
    }
}

/// What a successor builds its machine from.
struct Seed {
    policy: Policy,
    facts: Vec<Fact>,
    inference_limit: u64,
    /// Compile the packet facts before serving (a server whose goals read them).
    compile: bool,
}

/// The successor thread: build, load, catch up, say so, wait for the seat, apply the
/// rest, serve.
fn successor(
    seed: Seed,
    forwarded: mpsc::Receiver<Forwarded>,
    ready: mpsc::Sender<Result<(), String>>,
    handed: mpsc::Receiver<Seat>,
) {
    let Seed {
        policy,
        facts,
        inference_limit,
        compile,
    } = seed;
    let built = catch_unwind(AssertUnwindSafe(|| {
        let mut ev = Evaluator::load(&policy, inference_limit)?;
        ev.load_facts(&facts)?;
        // Compiled here, off the serving thread, where goals read packet facts: a
        // renewal must not hand their next read a window's worth of compiling
        // (`pending.rs`). Where none ever did, the packets wait as they did in the
        // serving machine, and are never compiled unless a goal reads them.
        if compile {
            ev.compile_waiting()?;
        }
        // What arrived while loading (the serving thread goes on forwarding).
        loop {
            match forwarded.try_recv() {
                Ok(job) => apply(&mut ev, job)?,
                Err(mpsc::TryRecvError::Empty) => return Ok::<_, GovernanceError>(Some(ev)),
                // Cancelled: the serving thread dropped the renewal.
                Err(mpsc::TryRecvError::Disconnected) => return Ok(None),
            }
        }
    }));
    let mut ev = match built {
        Ok(Ok(Some(ev))) => ev,
        Ok(Ok(None)) => return,
        Ok(Err(e)) => {
            let _ = ready.send(Err(e.to_string()));
            return;
        }
        Err(_) => {
            let _ = ready.send(Err("the fresh machine panicked while loading".into()));
            return;
        }
    };
    drop(policy);
    drop(facts);
    if ready.send(Ok(())).is_err() {
        return;
    }
    let Ok(seat) = handed.recv() else {
        return;
    };
    let mut worker = Worker {
        seat,
        current: None,
        broken: false,
    };
    // The serving thread forwarded every change it applied before the hand-over and
    // then closed the channel.
    while let Ok(job) = forwarded.recv() {
        match guarded(|| apply(&mut ev, job)) {
            Some(Ok(())) => {}
            Some(Err(e)) => tracing::error!(error = %e, "governance facts could not be applied"),
            None => {
                let (reply, _) = tokio::sync::oneshot::channel();
                worker.current = Some(ev);
                worker.fail(Panicked::Apply(reply));
                worker.run();
                return;
            }
        }
    }
    worker.current = Some(ev);
    worker.seat.health.renewals.fetch_add(1, Ordering::AcqRel);
    tracing::info!("governance engine renewed: a fresh machine with the current facts");
    worker.run();
}

/// What a decision or query is estimated to leave in a machine (bytes): more than a
/// trivial query leaves (`examples/scryer_memory.rs`), for a decision's goal, trace and
/// answer terms.
pub(super) const QUERY_COST: u64 = 1024;

/// What a goal applying facts is estimated to leave in a machine (bytes): an asserted
/// clause 8 KiB (above what a packet base's clause takes alone, since a live server's
/// asserts leave more than the clause), a retract its clause, a blackboard write
/// (counts, floor) a query's worth.
pub(super) fn goal_cost(goal: &str) -> u64 {
    if goal.starts_with("assertz(") {
        8192
    } else if goal.starts_with("(retract(") {
        4096
    } else {
        QUERY_COST
    }
}
