//! [`Governance`]: the async façade the kernel and gateway ask.
//!
//! `decide` = (cache or engine) + one `decision recorded` event on the log. Fail
//! closed: an engine that is unavailable, panicked, timed out or raised a Prolog error
//! answers **deny**; that answer is not cached and the error is recorded in the event
//! (`reason`, `query.error_kind`) and returned in [`Decision::error`]. A machine that
//! panicked is rebuilt at once with the policy in force and the facts of the view
//! (`Governance::restart_if_failed`), so one bad request costs one decision, not the
//! service.

use std::collections::BTreeMap;
use std::num::NonZeroUsize;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, RwLock, Weak};
use std::time::{Duration, Instant};

use chrono::Utc;
use lru::LruCache;
use orchestrata_schemas::events::governance::PolicyLoaded;
use orchestrata_schemas::events::EventRecord;

use super::config::GovernanceConfig;
use super::engine::{poll_reply, Engine, Polled, REPLY_SPIN};
use super::facts::{FactsView, FACT_STREAMS};
use super::judgment::Judgment;
use super::policy::Policy;
use super::request::{Decision, Outcome, Request};
use super::roster_cache::RosterCache;
use super::rules::{filter_rules, RuleInfo};
use super::GovernanceError;
use crate::log::{EventLog, Pager};

type CacheKey = (String, String);

pub(super) struct Inner {
    pub(super) log: Arc<dyn EventLog>,
    pub(super) engine: Engine,
    pub(super) config: GovernanceConfig,
    pub(super) cache: Mutex<LruCache<CacheKey, Outcome>>,
    /// Decisions reused while the roster holds (`roster_cache.rs`); read and
    /// invalidated under the `facts` lock.
    pub(super) roster: Mutex<RosterCache>,
    pub(super) policy: RwLock<Option<Policy>>,
    pub(super) rules: RwLock<Vec<RuleInfo>>,
    pub(super) facts: tokio::sync::Mutex<FactsView>,
    /// The engine's failure count the last automatic restart was made for.
    pub(super) restarted_for: AtomicU64,
    /// Where this service's records go once a kernel runs beside it (see
    /// [`Governance::record_through`]); `None`: straight to `log`.
    pub(super) recorder: RwLock<Option<Arc<dyn crate::log::Recorder>>>,
}

/// The governance service. Cheap to clone; all clones share one engine.
#[derive(Clone)]
pub struct Governance {
    pub(super) inner: Arc<Inner>,
}

impl Governance {
    /// Starts the engine, restores the facts view (checkpoint, then the log) and loads
    /// the configured policy (appending its `policy loaded` event).
    pub async fn start(
        log: Arc<dyn EventLog>,
        config: GovernanceConfig,
    ) -> Result<Self, GovernanceError> {
        let facts = match &config.checkpoint {
            Some(path) => {
                super::queries::load_checkpoint(path, log.as_ref(), config.fact_window).await?
            }
            None => FactsView::with_window(config.fact_window),
        };
        let capacity = NonZeroUsize::new(config.cache_capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        // A panic of the machine wakes the restart task (see `restart_if_failed`).
        let (failed, mut failures) = tokio::sync::mpsc::unbounded_channel::<()>();
        let engine = Engine::start_with(
            config.inference_limit,
            Box::new(move || {
                let _ = failed.send(());
            }),
        );
        let policy = match &config.policy_dir {
            Some(dir) => Policy::from_dir(dir)?,
            None => Policy::default_policy(),
        };
        let governance = Governance {
            inner: Arc::new(Inner {
                log,
                engine,
                config,
                cache: Mutex::new(LruCache::new(capacity)),
                roster: Mutex::new(RosterCache::new(capacity.get())),
                policy: RwLock::new(None),
                rules: RwLock::new(Vec::new()),
                facts: tokio::sync::Mutex::new(facts),
                restarted_for: AtomicU64::new(0),
                recorder: RwLock::new(None),
            }),
        };
        let weak: Weak<Inner> = Arc::downgrade(&governance.inner);
        tokio::spawn(async move {
            while failures.recv().await.is_some() {
                let Some(inner) = weak.upgrade() else { break };
                Governance { inner }.restart_if_failed().await;
            }
        });
        governance.sync_facts().await?;
        governance.load_policy(policy).await?;
        Ok(governance)
    }

    /// Loads a policy. On success it replaces the current one, the decision cache is
    /// emptied (REQ-014-104) and a `policy loaded` event records its hash and text. On
    /// failure the current policy stays in force and the error names file and line.
    pub async fn load_policy(&self, policy: Policy) -> Result<String, GovernanceError> {
        // The facts lock is held until the new policy is the one in force and the
        // caches are empty: a decision asked under the lock then sees the hash of the
        // machine that answers it (`roster_cache.rs`).
        let facts = self.inner.facts.lock().await;
        let rules = self
            .inner
            .engine
            .load(policy.clone(), facts.facts())
            .await?;
        let hash = policy.hash().to_owned();
        let event = PolicyLoaded {
            policy_hash: hash.clone(),
            origin: policy.origin().to_owned(),
            text: policy.text().to_owned(),
            rule_count: i32::try_from(rules.len()).unwrap_or(i32::MAX),
        };
        if let Ok(mut current) = self.inner.policy.write() {
            *current = Some(policy);
        }
        if let Ok(mut r) = self.inner.rules.write() {
            *r = rules;
        }
        if let Ok(mut cache) = self.inner.cache.lock() {
            cache.clear();
        }
        self.roster_cache(RosterCache::policy_replaced);
        drop(facts);
        self.append(EventRecord::new(
            "governance",
            hash.clone(),
            event,
            Utc::now(),
        ))
        .await?;
        Ok(hash)
    }

    /// Reloads the policy from a directory (see [`Governance::load_policy`]).
    pub async fn load_policy_dir(&self, dir: &Path) -> Result<String, GovernanceError> {
        self.load_policy(Policy::from_dir(dir)?).await
    }

    /// Hash of the policy in force.
    pub fn policy_hash(&self) -> Option<String> {
        self.inner
            .policy
            .read()
            .ok()
            .and_then(|p| p.as_ref().map(|p| p.hash().to_owned()))
    }

    /// Decides and records: the kernel and gateway call this before acting.
    pub async fn decide(&self, request: Request) -> Result<Decision, GovernanceError> {
        self.decide_inner(request, false).await
    }

    /// Dry run (REQ-014-041..044): the would-be result with its trace and articles. No
    /// effect except one `decision recorded` event with `dry_run = true`; the cache is
    /// neither read nor filled. A Prolog error is returned in [`Decision::error`]
    /// (ERR-016).
    pub async fn evaluate(&self, request: Request) -> Result<Decision, GovernanceError> {
        self.decide_inner(request, true).await
    }

    /// The loaded predicates, grouped by category, filtered by category and by a
    /// substring of the predicate name (REQ-014-046..050).
    pub fn rules(&self, category: Option<&str>, search: Option<&str>) -> Vec<RuleInfo> {
        self.inner
            .rules
            .read()
            .map(|r| filter_rules(&r, category, search))
            .unwrap_or_default()
    }

    async fn decide_inner(
        &self,
        request: Request,
        dry_run: bool,
    ) -> Result<Decision, GovernanceError> {
        request.validate()?;
        let judgment = self.judge_with(&request, !dry_run, true).await;
        let (mut decision, record) = super::step::recorded(&request, judgment, dry_run, Utc::now());
        decision.sequence = self.append(record).await?;
        Ok(decision)
    }

    /// Evaluates without recording (cache, then engine). `decide` records what this
    /// returns; benchmarks and tools use it to measure the engine alone.
    pub async fn judge(&self, request: &Request) -> Judgment {
        self.judge_with(request, true, true).await
    }

    /// Cache, else the engine. `catch_up`: fold fact events appended since the view's
    /// positions first (when `sync_before_decide`); the kernel's writer passes `false`,
    /// since it keeps the facts current itself ([`super::step`]).
    pub(super) async fn judge_with(
        &self,
        request: &Request,
        use_cache: bool,
        catch_up: bool,
    ) -> Judgment {
        let started = Instant::now();
        let policy_hash = self.policy_hash().unwrap_or_else(|| "none".into());
        let key = (policy_hash.clone(), cache_key(request));
        if use_cache {
            let hit = self
                .inner
                .cache
                .lock()
                .ok()
                .and_then(|mut c| c.get(&key).cloned());
            if let Some(outcome) = hit {
                return Judgment::cached(outcome, policy_hash, BTreeMap::new(), None, started);
            }
        }
        let (policy_hash, facts_at, facts_window, submitted, generation) = {
            let mut facts = self.inner.facts.lock().await;
            if catch_up && self.inner.config.sync_before_decide {
                if let Err(e) = self.catch_up(&mut facts).await {
                    tracing::warn!(error = %e, "governance facts could not catch up with the log");
                }
            }
            // Read again under the lock: the hash of the machine that answers.
            let policy_hash = self.policy_hash().unwrap_or_else(|| "none".into());
            let (hit, generation) = match use_cache {
                true => self.reusable(&policy_hash, request),
                false => (None, None),
            };
            if let Some(outcome) = hit {
                let (at, window) = (facts.positions.clone(), facts.window());
                return Judgment::cached(outcome, policy_hash, at, window, started);
            }
            let submitted = self.inner.engine.submit(request.clone());
            self.renew_if_due(&facts);
            (
                policy_hash,
                facts.positions.clone(),
                facts.window(),
                submitted,
                generation,
            )
        };
        let dropped =
            || GovernanceError::EngineUnavailable("the engine dropped the request".into());
        let answer = match submitted {
            Err(e) => Err(e),
            // Most answers come within REPLY_SPIN: collect them without parking,
            // unless other jobs are queued ahead of this one (then the wait is
            // several evaluations long and polling would only burn this worker).
            Ok(mut rx) => match poll_reply(&mut rx, reply_spin(&self.inner.engine)) {
                Polled::Ready(answer) => answer,
                Polled::Dropped => Err(dropped()),
                Polled::Pending => {
                    let deadline = self.inner.config.timeout
                        + compile_allowance(self.inner.engine.waiting_packets());
                    match tokio::time::timeout(deadline, rx).await {
                        Err(_) => Err(GovernanceError::EngineUnavailable(format!(
                            "no answer within {deadline:?}"
                        ))),
                        Ok(Err(_)) => Err(dropped()),
                        Ok(Ok(answer)) => answer,
                    }
                }
            },
        };
        let latency = started.elapsed();
        if answer.is_err() {
            // This decision failed closed; if the machine panicked, the decisions
            // asked after this answer must meet a rebuilt one.
            self.restart_if_failed().await;
        }
        match answer {
            Ok(outcome) => {
                if use_cache && outcome.cacheable {
                    if let Ok(mut cache) = self.inner.cache.lock() {
                        cache.put(key, outcome.clone());
                    }
                }
                if let Some(generation) = generation {
                    self.roster_cache(|c| c.put(&policy_hash, request, generation, &outcome));
                }
                Judgment {
                    outcome: Ok(outcome),
                    error_kind: None,
                    cached: false,
                    policy_hash,
                    facts_at,
                    facts_window,
                    latency,
                }
            }
            Err(e) => {
                let kind = match e {
                    GovernanceError::Prolog(_) => "prolog",
                    _ => "engine",
                };
                Judgment {
                    outcome: Err(e.to_string()),
                    error_kind: Some(kind.into()),
                    cached: false,
                    policy_hash,
                    facts_at,
                    facts_window,
                    latency,
                }
            }
        }
    }

    /// Folds every fact event appended since the view's positions into the engine.
    pub async fn sync_facts(&self) -> Result<(), GovernanceError> {
        let mut facts = self.inner.facts.lock().await;
        self.catch_up(&mut facts).await
    }

    pub(super) async fn catch_up(&self, facts: &mut FactsView) -> Result<(), GovernanceError> {
        self.fold_log(facts, true).await
    }

    /// Folds the fact events appended since `facts`' positions into `facts`; `to_engine`:
    /// also queue each change for the engine (else the caller loads the engine itself).
    pub(super) async fn fold_log(
        &self,
        facts: &mut FactsView,
        to_engine: bool,
    ) -> Result<(), GovernanceError> {
        for stream in FACT_STREAMS {
            let from = facts.position(stream);
            let mut pages = Pager::new(&*self.inner.log, stream, from, None).page_size(1024);
            while let Some(batch) = pages.next_page().await? {
                let mut changes = Vec::new();
                for envelope in &batch {
                    changes.extend(facts.apply(envelope));
                    facts
                        .epochs
                        .insert(stream.as_str().to_owned(), envelope.epoch.clone());
                }
                if to_engine && !changes.is_empty() {
                    self.note_fact_changes(&changes);
                    // Queued ahead of any later decision on the same channel.
                    if let Err(e) = self.inner.engine.apply_nowait(changes) {
                        tracing::warn!(error = %e, "facts not applied: engine unavailable");
                    }
                    self.renew_if_due(facts);
                }
            }
        }
        Ok(())
    }

    /// Queues a renewal (a fresh machine with the policy in force and `facts`, the
    /// current facts) once the serving machine has taken on `engine_renew_mb`, as the
    /// engine thread estimates it. Call with the facts lock held, after queueing the
    /// changes folded into them, so the snapshot and the changes queued before it
    /// never overlap (see `renewal.rs`).
    pub(super) fn renew_if_due(&self, facts: &FactsView) {
        let budget = self.inner.config.engine_renew_mb.saturating_mul(1 << 20);
        let engine = &self.inner.engine;
        if budget == 0 || engine.spent() < budget || !engine.claim_renewal() {
            return;
        }
        let Some(policy) = self.inner.policy.read().ok().and_then(|p| p.clone()) else {
            engine.release_renewal();
            return;
        };
        if let Err(e) = engine.renew_nowait(policy, facts.facts()) {
            engine.release_renewal();
            tracing::warn!(error = %e, "governance engine renewal not queued");
        }
    }

    /// Fresh machines that replaced a serving one after a budget of work.
    pub fn engine_renewals(&self) -> u64 {
        self.inner.engine.renewals()
    }

    /// Packets whose fact changes wait to be compiled into the serving machine until
    /// a goal reads packet facts (`pending.rs`).
    pub fn waiting_packets(&self) -> usize {
        self.inner.engine.waiting_packets()
    }

    /// What the serving machine is estimated to have taken on (bytes; see `renewal.rs`).
    pub fn engine_spent(&self) -> u64 {
        self.inner.engine.spent()
    }

    /// Stops the engine thread; later decisions fail closed (deny, recorded).
    pub fn stop_engine(&self) {
        self.inner.engine.stop();
    }

    /// After a panic of the machine (ERR-011), builds a new one: the policy in force,
    /// the facts refolded from the facts view. No `policy loaded` event (the policy
    /// did not change) and the cache stays (same policy, same facts). Decisions queued
    /// before the rebuild fail closed as unavailable; decisions asked after it is
    /// queued (they need the facts lock it holds) are answered by the new machine.
    /// Runs once per failure: from the decision that saw it, or from the restart task
    /// woken by the engine thread (a fact update has no caller to notice).
    pub(super) async fn restart_if_failed(&self) {
        let facts = self.inner.facts.lock().await;
        let failures = self.inner.engine.failures();
        if failures <= self.inner.restarted_for.load(Ordering::Acquire) {
            return;
        }
        self.inner.restarted_for.store(failures, Ordering::Release);
        // The machine is rebuilt from the facts view: what it held before may have
        // differed, so nothing it answered is reused.
        self.roster_cache(RosterCache::invalidate);
        let policy = self.inner.policy.read().ok().and_then(|p| p.clone());
        let Some(policy) = policy else {
            return;
        };
        match self.inner.engine.load(policy, facts.facts()).await {
            Ok(_) => tracing::warn!(
                failures,
                "governance engine restarted: policy reloaded, facts refolded from the view"
            ),
            Err(e) => tracing::error!(
                error = %e,
                "governance engine could not be restarted; decisions fail closed until a reload"
            ),
        }
    }

    /// How many times the engine's machine has panicked (each followed by a restart).
    pub fn engine_failures(&self) -> u64 {
        self.inner.engine.failures()
    }

    /// Makes the engine panic inside its next decision, as a reader or machine bug
    /// would: that decision fails closed as unavailable and the engine restarts. For
    /// tests only.
    #[doc(hidden)]
    pub fn crash_engine_for_test(&self) {
        self.inner.engine.crash_next_decision();
    }

    /// Rebuilds the engine with the current policy and facts (after a panic or stop
    /// of the machine; a stopped thread cannot be restarted).
    pub async fn reload(&self) -> Result<String, GovernanceError> {
        let policy = self
            .inner
            .policy
            .read()
            .ok()
            .and_then(|p| p.clone())
            .ok_or_else(|| GovernanceError::EngineUnavailable("no policy loaded".into()))?;
        self.load_policy(policy).await
    }
}

/// How long to poll for an answer just submitted: [`REPLY_SPIN`] when the request is
/// the only one queued, nothing when others are ahead of it.
fn reply_spin(engine: &Engine) -> Duration {
    if engine.queued() <= 1 {
        REPLY_SPIN
    } else {
        Duration::ZERO
    }
}

fn cache_key(request: &Request) -> String {
    serde_json::to_string(request).unwrap_or_default()
}

/// Extra time a decision may wait when `waiting` packets wait to be compiled: the
/// decision may be the first read of packet facts, which compiles them all first
/// (`pending.rs`); 2 ms a packet, well above what compiling one takes, so a loaded
/// machine or a debug build still fits. Without it, the first read after a long run of
/// sends would fail closed on the timeout although the engine is working for it.
fn compile_allowance(waiting: usize) -> Duration {
    Duration::from_millis(u64::try_from(waiting).unwrap_or(u64::MAX).saturating_mul(2))
}
