//! The engine thread: one [`Evaluator`] on a dedicated `std::thread`, fed through a
//! channel; each job carries a oneshot for its answer, so tokio callers simply await.
//!
//! A panic inside the machine is caught; the machine is then considered broken. The
//! job that panicked, and every job queued behind it until a fresh machine is built,
//! is answered with [`GovernanceError::EngineUnavailable`] (decisions fail closed,
//! saying governance was unavailable). The thread counts the failure
//! ([`Engine::failures`]) and calls the `on_failure` hook given to
//! [`Engine::start_with`], through which the governance service rebuilds the machine
//! at once: same policy, facts refolded from its facts view (a `Load` job). A panic
//! while loading leaves the thread failing closed until the next successful load.
//!
//! # Hand-off latency: bounded spinning on both sides
//!
//! A decision crosses two threads: the caller's task queues a job, the engine thread
//! answers on a oneshot. If either side is *parked* (blocked in the kernel) when the
//! other signals it, the wake-up is a futex round trip plus a reschedule — tens of
//! microseconds on a VM, more than the Prolog evaluation itself. So:
//!
//! - after each job the engine thread polls its queue for [`ENGINE_IDLE_SPIN`] before
//!   it blocks in `recv` (a burst of decisions never finds it parked; an idle engine
//!   stops burning its core after that window);
//! - a caller awaiting a decision polls its reply for up to [`REPLY_SPIN`] (see
//!   [`poll_reply`]) before it awaits the oneshot like any other future.
//!
//! Both bounds are fixed and small, so a slow or looping policy (stopped by the
//! inference limit and the caller's timeout) costs at most that much extra CPU per job.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use tokio::sync::oneshot;

use super::facts::{Fact, FactChange};
use super::policy::Policy;
use super::request::{Outcome, Request};
use super::rules::RuleInfo;
use super::worker::{engine_thread, Seat, Worker};
use super::GovernanceError;

pub(super) type Reply<T> = oneshot::Sender<Result<T, GovernanceError>>;

pub(super) enum Job {
    Load(Box<Policy>, Vec<Fact>, Reply<Vec<RuleInfo>>),
    /// Build a fresh machine with this policy and facts beside the serving one and
    /// swap it in when it has caught up (see `renewal.rs`).
    Renew(Box<Policy>, Vec<Fact>),
    Apply(Vec<FactChange>, Reply<()>),
    Reset(Vec<Fact>, Reply<()>),
    Decide(Box<Request>, Reply<Outcome>),
    Query(
        String,
        Reply<Option<std::collections::BTreeMap<String, String>>>,
    ),
    Stop,
}

/// Handle to the engine thread. Cloning shares the same thread.
#[derive(Clone)]
pub struct Engine {
    jobs: mpsc::Sender<Job>,
    /// Decisions sent and not yet taken by the engine thread (see [`Engine::queued`]).
    queued: Arc<AtomicUsize>,
    /// State shared with the thread: failures seen, test crash switch.
    health: Arc<Health>,
}

/// What the engine thread and its handles share about the machine's health.
#[derive(Default)]
pub(super) struct Health {
    /// Renewals completed (a fresh machine swapped in, see `renewal.rs`).
    pub(super) renewals: AtomicU64,
    /// Estimated bytes the serving machine has taken on since it was built or since
    /// the last renewal was asked for (see `renewal.rs`).
    pub(super) spent: AtomicU64,
    /// A renewal is queued and not yet taken by the engine thread.
    pub(super) renewal_queued: AtomicBool,
    /// Panics caught while running jobs on a loaded machine.
    pub(super) failures: AtomicU64,
    /// Set by [`Engine::crash_next_decision`]: the next decision panics.
    pub(super) crash_next: AtomicBool,
    /// Packets whose changes wait in the serving machine (`pending.rs`), as of the
    /// last job.
    pub(super) waiting: AtomicUsize,
    /// A goal on some machine of this engine may have read packet facts (as of the
    /// last job): renewals then compile the packet window ahead
    /// (`renewal.rs`). It never goes back: a server whose policy reads packets now
    /// and then should not meet a window's worth of compiling at its next read.
    pub(super) packets_read: AtomicBool,
}

/// Stack of the engine thread: 64 MiB of address space, touched only as deep as a
/// goal needs.
pub(super) const ENGINE_STACK: usize = 64 * 1024 * 1024;

/// Why a job was not run: its machine panicked (now or earlier) and is being rebuilt.
pub(super) const FAILED: &str = "the governance engine failed (panicked) and is restarting";

/// Called on the engine thread after it caught a panic (see [`Engine::start_with`]).
pub type FailureHook = Box<dyn Fn() + Send>;

pub(super) fn unavailable(reason: &str) -> GovernanceError {
    GovernanceError::EngineUnavailable(reason.to_owned())
}

impl Engine {
    /// Starts the thread with no policy loaded (decisions fail closed until one is).
    pub fn start(inference_limit: u64) -> Self {
        Engine::start_with(inference_limit, Box::new(|| {}))
    }

    /// Like [`Engine::start`]; `on_failure` is called on the engine thread each time
    /// it catches a panic of the machine, so its owner can rebuild it (a `load`).
    pub fn start_with(inference_limit: u64, on_failure: FailureHook) -> Self {
        let (jobs, rx) = mpsc::channel::<Job>();
        let queued = Arc::new(AtomicUsize::new(0));
        let health = Arc::new(Health::default());
        let seat = Seat {
            rx,
            queued: Arc::clone(&queued),
            health: Arc::clone(&health),
            inference_limit,
            on_failure,
        };
        let spawned = engine_thread().spawn(move || {
            Worker {
                seat,
                current: None,
                broken: false,
            }
            .run()
        });
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the governance engine thread");
        }
        Engine {
            jobs,
            queued,
            health,
        }
    }

    /// How many times a fresh machine has replaced the serving one (see `renewal.rs`).
    pub fn renewals(&self) -> u64 {
        self.health.renewals.load(Ordering::Acquire)
    }

    /// Packets whose fact changes wait to be compiled (see `pending.rs`).
    pub fn waiting_packets(&self) -> usize {
        self.health.waiting.load(Ordering::Acquire)
    }

    /// Estimated bytes the serving machine has taken on (see `renewal.rs`).
    pub fn spent(&self) -> u64 {
        self.health.spent.load(Ordering::Acquire)
    }

    /// Claims the one queued renewal: `true` if none was queued (the caller queues
    /// it), `false` if one is already waiting for the engine thread.
    pub(super) fn claim_renewal(&self) -> bool {
        !self.health.renewal_queued.swap(true, Ordering::AcqRel)
    }

    /// Gives the claim back without queueing (nothing to renew with).
    pub(super) fn release_renewal(&self) {
        self.health.renewal_queued.store(false, Ordering::Release);
    }

    /// Queues a renewal: a fresh machine with `policy` and `facts` (the facts as of
    /// this point in the job order) is built beside the serving one and swapped in
    /// once it has caught up; the serving machine answers meanwhile.
    pub fn renew_nowait(&self, policy: Policy, facts: Vec<Fact>) -> Result<(), GovernanceError> {
        self.send(Job::Renew(Box::new(policy), facts))
    }

    /// How many times the machine has panicked since the thread started. Counted
    /// before the failed job is answered, so a caller that got a failure answer sees it.
    pub fn failures(&self) -> u64 {
        self.health.failures.load(Ordering::Acquire)
    }

    /// Makes the next decision the thread evaluates panic inside the machine, as a
    /// parser or machine bug would: for tests of the fail-closed answer and the
    /// restart. Not for production use.
    #[doc(hidden)]
    pub fn crash_next_decision(&self) {
        self.health.crash_next.store(true, Ordering::Release);
    }

    /// Queues a job; a decision is counted in [`Engine::queued`] until the thread
    /// takes it.
    fn send(&self, job: Job) -> Result<(), GovernanceError> {
        let counted = matches!(job, Job::Decide(..));
        if counted {
            self.queued.fetch_add(1, Ordering::AcqRel);
        }
        self.jobs.send(job).map_err(|_| {
            if counted {
                self.queued.fetch_sub(1, Ordering::AcqRel);
            }
            unavailable("the engine thread has stopped")
        })
    }

    /// Decisions queued and not yet taken by the engine thread (a request just
    /// submitted counts itself; fact updates, quick to apply, do not count). A caller
    /// that finds other decisions ahead of its own will wait for several evaluations,
    /// so it parks at once instead of polling (see `REPLY_SPIN`).
    pub fn queued(&self) -> usize {
        self.queued.load(Ordering::Acquire)
    }

    async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Job) -> Result<T, GovernanceError> {
        let (tx, rx) = oneshot::channel();
        self.send(make(tx))?;
        rx.await
            .map_err(|_| unavailable("the engine thread dropped the request"))?
    }

    /// Loads `policy` into a fresh machine with `facts`; swaps it in only on success.
    pub async fn load(
        &self,
        policy: Policy,
        facts: Vec<Fact>,
    ) -> Result<Vec<RuleInfo>, GovernanceError> {
        self.call(|r| Job::Load(Box::new(policy), facts, r)).await
    }

    /// Applies fact changes in order.
    pub async fn apply(&self, changes: Vec<FactChange>) -> Result<(), GovernanceError> {
        self.call(|r| Job::Apply(changes, r)).await
    }

    /// Queues fact changes without waiting; the channel keeps them ahead of any later job.
    pub fn apply_nowait(&self, changes: Vec<FactChange>) -> Result<(), GovernanceError> {
        let (tx, _rx) = oneshot::channel();
        self.send(Job::Apply(changes, tx))
    }

    /// Replaces all facts.
    pub async fn reset(&self, facts: Vec<Fact>) -> Result<(), GovernanceError> {
        self.call(|r| Job::Reset(facts, r)).await
    }

    /// Evaluates a request.
    pub async fn decide(&self, request: Request) -> Result<Outcome, GovernanceError> {
        self.call(|r| Job::Decide(Box::new(request), r)).await
    }

    /// Queues a request and returns where its answer will arrive (so a caller can
    /// queue it while holding a lock and await it after releasing the lock).
    pub fn submit(
        &self,
        request: Request,
    ) -> Result<oneshot::Receiver<Result<Outcome, GovernanceError>>, GovernanceError> {
        let (tx, rx) = oneshot::channel();
        self.send(Job::Decide(Box::new(request), tx))?;
        Ok(rx)
    }

    /// Runs a trusted goal (built by code, never from outside input) and returns the
    /// first answer's bindings as text.
    pub async fn query(
        &self,
        goal: String,
    ) -> Result<Option<std::collections::BTreeMap<String, String>>, GovernanceError> {
        self.call(|r| Job::Query(goal, r)).await
    }

    /// Stops the thread; later calls fail closed.
    pub fn stop(&self) {
        let _ = self.send(Job::Stop);
    }
}

/// How long the engine thread keeps polling its queue after a job before it blocks.
///
/// 50 µs covers the gap between back-to-back decisions (a caller's bookkeeping, the
/// next request of a burst), so those find the thread awake; an engine with nothing
/// to do gives its core back after that. A caller that appends each decision to the
/// log first (hundreds of µs) finds it parked either way, so a longer window would
/// only burn CPU.
pub const ENGINE_IDLE_SPIN: Duration = Duration::from_micros(50);

/// How long a caller polls for a decision before it parks on the oneshot.
///
/// 100 µs is the p99 target of an uncached decision: a decision that takes longer has
/// missed its target anyway and the caller stops spending its (tokio worker) thread on
/// it; every faster one is collected without a futex wake-up of the caller.
pub const REPLY_SPIN: Duration = Duration::from_micros(100);

/// Between two polls a waiting thread calls `sched_yield` rather than spinning: on an
/// idle core it returns at once (the thread stays awake, so no wake-up is needed),
/// while on a busy machine it hands the core to whoever is runnable — often the very
/// thread being waited for. Pure `spin_loop` busy waiting raises the engine round
/// trip under load instead: the scheduler charges the spinning threads and then runs
/// them late.
pub(super) fn pause() {
    std::thread::yield_now();
}

/// What [`poll_reply`] saw.
#[derive(Debug, PartialEq, Eq)]
pub enum Polled<T> {
    /// The answer arrived.
    Ready(T),
    /// The engine dropped the request without answering.
    Dropped,
    /// Nothing yet: await the receiver (polling never consumes an empty one).
    Pending,
}

/// Polls `rx` for up to `bound` (see [`REPLY_SPIN`]). It blocks the calling thread
/// for at most that long, so call it only where a short busy wait is acceptable (a
/// tokio worker about to wait for this very answer).
pub fn poll_reply<T>(rx: &mut oneshot::Receiver<T>, bound: Duration) -> Polled<T> {
    use oneshot::error::TryRecvError;
    let started = Instant::now();
    loop {
        match rx.try_recv() {
            Ok(value) => return Polled::Ready(value),
            Err(TryRecvError::Closed) => return Polled::Dropped,
            Err(TryRecvError::Empty) => {}
        }
        if started.elapsed() >= bound {
            return Polled::Pending;
        }
        pause();
    }
}
