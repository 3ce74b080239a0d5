//! The engine thread: one [`Evaluator`] on a dedicated `std::thread`, fed through a
//! channel; each job carries a oneshot for its answer, so tokio callers simply await.
//!
//! A panic inside the machine is caught; the machine is then considered broken and
//! every later job is answered with [`GovernanceError::EngineUnavailable`] until a
//! policy (re)load builds a fresh one.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc;

use tokio::sync::oneshot;

use super::evaluator::Evaluator;
use super::facts::{Fact, FactChange};
use super::policy::Policy;
use super::request::{Outcome, Request};
use super::rules::RuleInfo;
use super::GovernanceError;

type Reply<T> = oneshot::Sender<Result<T, GovernanceError>>;

enum Job {
    Load(Box<Policy>, Vec<Fact>, Reply<Vec<RuleInfo>>),
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
}

fn unavailable(reason: &str) -> GovernanceError {
    GovernanceError::EngineUnavailable(reason.to_owned())
}

impl Engine {
    /// Starts the thread with no policy loaded (decisions fail closed until one is).
    pub fn start(inference_limit: u64) -> Self {
        let (jobs, rx) = mpsc::channel::<Job>();
        let spawned = std::thread::Builder::new()
            .name("orchestrata-governance".into())
            .spawn(move || worker(rx, inference_limit));
        if let Err(e) = spawned {
            tracing::error!(error = %e, "cannot start the governance engine thread");
        }
        Engine { jobs }
    }

    async fn call<T>(&self, make: impl FnOnce(Reply<T>) -> Job) -> Result<T, GovernanceError> {
        let (tx, rx) = oneshot::channel();
        self.jobs
            .send(make(tx))
            .map_err(|_| unavailable("the engine thread has stopped"))?;
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
        self.jobs
            .send(Job::Apply(changes, tx))
            .map_err(|_| unavailable("the engine thread has stopped"))
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
        self.jobs
            .send(Job::Decide(Box::new(request), tx))
            .map_err(|_| unavailable("the engine thread has stopped"))?;
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
        let _ = self.jobs.send(Job::Stop);
    }
}

fn worker(rx: mpsc::Receiver<Job>, inference_limit: u64) {
    let mut current: Option<Evaluator> = None;
    let mut broken = false;
    while let Ok(job) = rx.recv() {
        match job {
            Job::Stop => break,
            Job::Load(policy, facts, reply) => {
                let built = catch_unwind(AssertUnwindSafe(|| {
                    let mut ev = Evaluator::load(&policy, inference_limit)?;
                    ev.load_facts(&facts)?;
                    Ok::<_, GovernanceError>(ev)
                }));
                let answer = match built {
                    Ok(Ok(ev)) => {
                        let rules = ev.rules().to_vec();
                        current = Some(ev);
                        broken = false;
                        Ok(rules)
                    }
                    Ok(Err(e)) => Err(e),
                    Err(_) => Err(unavailable("the engine panicked while loading the policy")),
                };
                let _ = reply.send(answer);
            }
            job => {
                let ev = match (&mut current, broken) {
                    (Some(ev), false) => ev,
                    _ => {
                        reply_unavailable(
                            job,
                            if broken {
                                "the engine panicked earlier; reload the policy"
                            } else {
                                "no policy loaded"
                            },
                        );
                        continue;
                    }
                };
                let outcome = catch_unwind(AssertUnwindSafe(|| run_job(ev, job)));
                if outcome.is_err() {
                    tracing::error!("governance engine panicked; failing closed until a reload");
                    broken = true;
                }
            }
        }
    }
}

fn run_job(ev: &mut Evaluator, job: Job) {
    match job {
        Job::Apply(changes, reply) => {
            let result = ev.apply(&changes);
            if let Err(e) = &result {
                tracing::error!(error = %e, "governance facts could not be applied");
            }
            let _ = reply.send(result);
        }
        Job::Reset(facts, reply) => {
            let _ = reply.send(ev.clear_facts().and_then(|()| ev.load_facts(&facts)));
        }
        Job::Decide(request, reply) => {
            let _ = reply.send(ev.decide(&request));
        }
        Job::Query(goal, reply) => {
            let _ = reply.send(ev.query(&goal));
        }
        Job::Load(..) | Job::Stop => {}
    }
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
        Job::Stop => {}
    }
}
