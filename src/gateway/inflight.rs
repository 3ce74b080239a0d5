//! The requests one connection is running: a bounded set of tasks, cancelled with the
//! connection.
//!
//! A connection's frames run concurrently, each in its own task, so a slow request
//! (a `knowledge.query` waiting on Neo4j) does not hold up a quick one sent after it,
//! and one connection pipelining `cxp.send` keeps many commands in front of the
//! kernel's writer at once. Answers go out as they complete; JSON-RPC 2.0 matches them
//! by `id`, not by order.
//!
//! Three rules keep that safe:
//! - **Bounded.** At most `max_in_flight_per_connection` requests run at once (a batch
//!   weighs as many as its members; a batch larger than the bound runs alone). A frame
//!   that does not fit waits here ([`InFlight::submit`] holds it) and the connection's
//!   reader stops reading ([`InFlight::accepting`] is `false`) until running requests
//!   finish: back-pressure through TCP, nothing is refused.
//! - **Some frames run alone.** A frame that [`must run alone`](Job::alone) — every
//!   frame before authentication, and any frame changing the connection's own state
//!   (`auth.authenticate`, subscribe, unsubscribe) — starts only once everything before
//!   it has finished, and nothing after it starts until it has finished. So requests
//!   sent after `auth.authenticate` are authorized with its outcome, requests before
//!   it are refused exactly as if they had run one by one, and a request sent after a
//!   subscribe finds the subscription in place.
//! - **Cancelled with the connection** (ERR-012). Dropping the set (its `JoinSet`)
//!   aborts every task: their futures are dropped at their next await point, so
//!   nothing keeps working for a client that is gone (a Neo4j connection opened for
//!   it is closed, a wait on the views ends). Each task counts itself in
//!   `orchestrata_gateway_rpc_in_flight` while it exists and in
//!   `orchestrata_gateway_rpc_cancelled_total` when it is dropped unfinished.

use std::collections::HashMap;
use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::BoxFuture;
use tokio::task::{Id, JoinError, JoinSet};

use super::metrics::Metrics;

/// A frame's work, ready to start.
pub struct Job<T> {
    /// How many requests it runs (its share of the bound), at least 1.
    pub weight: usize,
    /// Whether it must run with nothing else in flight (see the module docs).
    pub alone: bool,
    /// The work.
    pub work: BoxFuture<'static, T>,
}

/// What a finished task left behind.
pub enum Finished<T> {
    /// It ran to the end and returned this.
    Done(T),
    /// It panicked (a bug: its requests got no answer).
    Panicked(String),
}

/// The bounded set of running tasks of one connection; see the module docs.
pub struct InFlight<T> {
    tasks: JoinSet<T>,
    weights: HashMap<Id, usize>,
    running: usize,
    alone: bool,
    max: usize,
    waiting: Option<Job<T>>,
    metrics: Arc<Metrics>,
}

impl<T: Send + 'static> InFlight<T> {
    /// An empty set running at most `max` requests at once (0 is taken as 1).
    pub fn new(max: usize, metrics: Arc<Metrics>) -> Self {
        InFlight {
            tasks: JoinSet::new(),
            weights: HashMap::new(),
            running: 0,
            alone: false,
            max: max.max(1),
            waiting: None,
            metrics,
        }
    }

    /// Whether the reader may read the next frame: no frame is waiting for room, no
    /// frame running alone, and fewer than the bound's requests running.
    pub fn accepting(&self) -> bool {
        self.waiting.is_none() && !self.alone && self.running < self.max
    }

    /// Whether nothing is running or waiting.
    pub fn is_empty(&self) -> bool {
        self.tasks.is_empty() && self.waiting.is_none()
    }

    /// Whether a task is running (so [`InFlight::next`] has something to wait for).
    pub fn is_running(&self) -> bool {
        !self.tasks.is_empty()
    }

    /// Requests running now.
    pub fn running(&self) -> usize {
        self.running
    }

    fn fits(&self, job: &Job<T>) -> bool {
        if self.tasks.is_empty() {
            return true;
        }
        !job.alone && !self.alone && self.running + job.weight <= self.max
    }

    /// Starts `job` now if it fits, else holds it until a finished task makes room.
    /// Call only while [`InFlight::accepting`] (at most one job waits).
    ///
    /// A job that fits is first polled once right here, in the reader: one that needs
    /// no waiting (`gateway.ping`, a view read, a refusal) finishes in that poll and its
    /// output is returned, costing no task. One that waits (on the kernel, the log,
    /// Neo4j) continues as a task of the set.
    pub fn submit(&mut self, job: Job<T>) -> Option<T> {
        if !self.fits(&job) {
            debug_assert!(self.waiting.is_none(), "submit while not accepting");
            self.waiting = Some(job);
            return None;
        }
        let Job {
            weight,
            alone,
            mut work,
        } = job;
        // The task polls it again at once with its own waker, so what this poll
        // registered with the no-op waker is registered again there.
        let mut cx = Context::from_waker(futures::task::noop_waker_ref());
        match work.as_mut().poll(&mut cx) {
            Poll::Ready(out) => Some(out),
            Poll::Pending => {
                self.start(Job {
                    weight,
                    alone,
                    work,
                });
                None
            }
        }
    }

    fn start(&mut self, job: Job<T>) {
        let weight = job.weight.max(1);
        // Made before the task exists, moved into it: a task aborted before its first
        // poll still drops its guard and is counted as cancelled.
        let guard = Running::new(self.metrics.clone());
        let work = job.work;
        let handle = self
            .tasks
            .spawn(tracing::Instrument::in_current_span(async move {
                let mut guard = guard;
                let out = work.await;
                guard.finished = true;
                out
            }));
        self.weights.insert(handle.id(), weight);
        self.running += weight;
        self.alone = job.alone;
    }

    /// Waits for the next task to finish, then starts the waiting job if it now fits.
    /// Pending forever while nothing runs (guard the `select!` branch with
    /// [`InFlight::is_running`]).
    pub async fn next(&mut self) -> Finished<T> {
        match self.tasks.join_next_with_id().await {
            Some(joined) => self.finish(joined),
            None => std::future::pending().await,
        }
    }

    /// A task that has finished already, if any (without waiting); like
    /// [`InFlight::next`] it may start the waiting job. The reader reaps with this
    /// after each frame, so a finishing task need not wake it.
    pub fn try_next(&mut self) -> Option<Finished<T>> {
        let joined = self.tasks.try_join_next_with_id()?;
        Some(self.finish(joined))
    }

    fn finish(&mut self, joined: Result<(Id, T), JoinError>) -> Finished<T> {
        let finished = match joined {
            Ok((id, out)) => {
                self.settle(id);
                Finished::Done(out)
            }
            Err(e) => {
                self.settle(e.id());
                Finished::Panicked(e.to_string())
            }
        };
        if self.tasks.is_empty() {
            self.alone = false;
        }
        if self.waiting.as_ref().is_some_and(|job| self.fits(job)) {
            if let Some(job) = self.waiting.take() {
                self.start(job);
            }
        }
        finished
    }

    fn settle(&mut self, id: Id) {
        let weight = self.weights.remove(&id).unwrap_or(0);
        self.running = self.running.saturating_sub(weight);
    }
}

/// Counts one task in the in-flight gauge while it exists, and as cancelled when it
/// is dropped before finishing.
struct Running {
    metrics: Arc<Metrics>,
    finished: bool,
}

impl Running {
    fn new(metrics: Arc<Metrics>) -> Self {
        metrics.rpc_in_flight.inc();
        Running {
            metrics,
            finished: false,
        }
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        self.metrics.rpc_in_flight.dec();
        if !self.finished {
            self.metrics.rpc_cancelled.inc();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::sync::oneshot;

    fn metrics() -> Arc<Metrics> {
        Arc::new(Metrics::new().expect("metrics register"))
    }

    fn job(weight: usize, alone: bool, rx: oneshot::Receiver<u32>) -> Job<u32> {
        Job {
            weight,
            alone,
            work: Box::pin(async move { rx.await.unwrap_or(0) }),
        }
    }

    fn value(f: Finished<u32>) -> u32 {
        match f {
            Finished::Done(v) => v,
            Finished::Panicked(e) => panic!("task panicked: {e}"),
        }
    }

    // ISSUE-15: concurrent requests — the bound holds a frame back until room is made
    #[tokio::test]
    async fn a_job_past_the_bound_waits_and_starts_when_room_is_made() {
        let m = metrics();
        let mut set = InFlight::new(2, m.clone());
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        let (tx3, rx3) = oneshot::channel();
        set.submit(job(1, false, rx1));
        assert!(set.accepting());
        // A batch of two does not fit beside the running request: it waits, and the
        // reader pauses.
        set.submit(job(2, false, rx2));
        assert_eq!(set.running(), 1);
        assert!(!set.accepting(), "a frame waits: the reader pauses");
        tx1.send(1).expect("job 1 waits");
        assert_eq!(value(set.next().await), 1);
        assert_eq!(
            set.running(),
            2,
            "the waiting batch started in the freed room"
        );
        assert!(
            !set.accepting(),
            "two of two running: the reader stays paused"
        );
        assert_eq!(m.rpc_in_flight.get(), 1, "one task runs the batch");
        tx2.send(2).expect("job 2 waits");
        assert_eq!(value(set.next().await), 2);
        set.submit(job(1, false, rx3));
        tx3.send(3).expect("job 3 waits");
        assert_eq!(value(set.next().await), 3);
        assert!(set.is_empty());
        assert_eq!(m.rpc_in_flight.get(), 0);
        assert_eq!(m.rpc_cancelled.get(), 0);
    }

    // ISSUE-15: concurrent requests — a frame that runs alone waits for the others, and
    // nothing starts beside it
    #[tokio::test]
    async fn a_job_running_alone_waits_for_the_others_and_blocks_the_next() {
        let mut set = InFlight::new(8, metrics());
        let (tx1, rx1) = oneshot::channel();
        let (tx2, rx2) = oneshot::channel();
        set.submit(job(1, false, rx1));
        set.submit(job(1, true, rx2));
        assert_eq!(set.running(), 1, "the alone job waits for the running one");
        assert!(!set.accepting());
        tx2.send(2).expect("alone job waits");
        tx1.send(1).expect("job 1 waits");
        assert_eq!(value(set.next().await), 1);
        assert!(
            !set.accepting(),
            "the alone job runs now; nothing else is read"
        );
        assert_eq!(value(set.next().await), 2);
        assert!(set.accepting());
    }

    // ISSUE-15: concurrent requests — a job that needs no waiting is answered in the
    // reader, without a task
    #[tokio::test]
    async fn a_job_ready_at_once_is_answered_without_a_task() {
        let m = metrics();
        let mut set = InFlight::new(2, m.clone());
        let ready = Job {
            weight: 1,
            alone: false,
            work: Box::pin(async { 7u32 }),
        };
        assert_eq!(set.submit(ready), Some(7));
        assert!(set.is_empty());
        assert_eq!(m.rpc_in_flight.get(), 0);
        assert!(set.try_next().is_none());
    }

    // ERR-012: dropping the set cancels what runs and counts it
    #[tokio::test]
    async fn dropping_the_set_cancels_running_jobs() {
        let m = metrics();
        let mut set = InFlight::new(4, m.clone());
        let (_tx1, rx1) = oneshot::channel();
        let (mut tx2, rx2) = oneshot::channel::<u32>();
        set.submit(job(1, false, rx1));
        set.submit(job(1, false, rx2));
        assert_eq!(m.rpc_in_flight.get(), 2);
        drop(set);
        // The aborted task dropped its future, and with it the receiver.
        tx2.closed().await;
        while m.rpc_in_flight.get() != 0 {
            tokio::task::yield_now().await;
        }
        assert_eq!(m.rpc_cancelled.get(), 2);
    }
}
