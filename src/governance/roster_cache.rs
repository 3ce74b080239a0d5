//! Decisions reused while the roster holds: the answers to actions a policy declares
//! `cacheable_with(Action, Keys)` (see `evaluator/reuse.rs`).
//!
//! Such a decision is a function of the policy, the request's subject, action, resource
//! and declared context keys, and the roster facts (`volk/4`, `volk_capability/2`,
//! `volk_status/2`, `session/4`), provided it read no traffic fact — which the engine
//! checks on every run ([`Outcome::roster_keys`] is `None` otherwise). So an answer
//! stays right until one of those inputs changes:
//!
//! - the **policy**: the key holds the policy's hash, and a load empties the cache;
//! - the **roster**: every change of a roster fact ([`touches_roster`]) and every
//!   refold of the facts (a resync, a restart) moves the cache to a new *generation*
//!   and empties it. An answer is kept only if it was asked in the generation still
//!   current when it comes back, so a decision that raced a roster change is not kept.
//!
//! Every step that reads or moves the generation runs under the facts lock, in the
//! order the facts change, which is the order the engine applies them: the answer a
//! hit gives is the answer the engine would give on the facts at that moment. That is
//! why a hit is recorded with the facts positions of the moment it was served, and
//! `audit verify` re-evaluates it like any other decision.
//!
//! Under the default policy this serves every `cxp.send` outside a session after the
//! first of its kind, without the engine (`docs/performance.md`, "Governance":
//! `judge_reused_roster`).

use std::collections::HashMap;
use std::num::NonZeroUsize;
use std::sync::Arc;

use lru::LruCache;

use super::facts::{Fact, FactChange};
use super::request::{Outcome, Request};

/// Longest key an answer is kept under. Aliases, session ids and route subjects are
/// short; a request carrying kilobytes in them is decided by the engine every time,
/// so the cache stays within about `capacity` KiB whatever clients send.
const MAX_KEY_BYTES: usize = 1024;

/// The reusable decisions of the current roster generation.
pub(super) struct RosterCache {
    generation: u64,
    /// Per action: the policy (hash) that declared it `cacheable_with/2` and the context
    /// keys it named, learned from the first reusable answer.
    keys: HashMap<String, (String, Arc<[String]>)>,
    entries: LruCache<String, Outcome>,
    /// Answers served from the cache since start.
    hits: u64,
}

impl RosterCache {
    /// An empty cache holding at most `capacity` decisions.
    pub(super) fn new(capacity: usize) -> Self {
        let capacity = NonZeroUsize::new(capacity.max(1)).unwrap_or(NonZeroUsize::MIN);
        RosterCache {
            generation: 0,
            keys: HashMap::new(),
            entries: LruCache::new(capacity),
            hits: 0,
        }
    }

    /// The current generation: note it (under the facts lock) when a decision is
    /// asked, and hand it back to [`RosterCache::put`] with the answer.
    pub(super) fn generation(&self) -> u64 {
        self.generation
    }

    /// The roster changed, or the facts were refolded: no answer kept so far, and none
    /// asked before now, may be served again.
    pub(super) fn invalidate(&mut self) {
        self.generation += 1;
        self.entries.clear();
    }

    /// A policy was loaded: [`RosterCache::invalidate`], and forget which actions the
    /// old one declared.
    pub(super) fn policy_replaced(&mut self) {
        self.invalidate();
        self.keys.clear();
    }

    /// The answer kept for `request` under the policy `policy_hash`, if any.
    pub(super) fn get(&mut self, policy_hash: &str, request: &Request) -> Option<Outcome> {
        let (hash, keys) = self.keys.get(&request.action)?;
        if hash != policy_hash || self.entries.is_empty() {
            return None;
        }
        let key = entry_key(policy_hash, request, keys)?;
        let hit = self.entries.get(&key).cloned()?;
        self.hits += 1;
        Some(hit)
    }

    /// Answers served from the cache since start.
    pub(super) fn hits(&self) -> u64 {
        self.hits
    }

    /// Keeps `outcome`, the answer to `request` asked in `generation` under the policy
    /// `policy_hash`, if it is reusable and the generation is still current.
    pub(super) fn put(
        &mut self,
        policy_hash: &str,
        request: &Request,
        generation: u64,
        outcome: &Outcome,
    ) {
        let Some(keys) = &outcome.roster_keys else {
            return;
        };
        if generation != self.generation {
            return;
        }
        let Some(key) = entry_key(policy_hash, request, keys) else {
            return;
        };
        if key.len() > MAX_KEY_BYTES {
            return;
        }
        self.keys.insert(
            request.action.clone(),
            (policy_hash.to_owned(), keys.clone()),
        );
        self.entries.put(key, outcome.clone());
    }
}

/// Whether any of `changes` is a roster fact's.
fn touches_roster(changes: &[FactChange]) -> bool {
    changes.iter().any(|c| {
        let (FactChange::Assert(f) | FactChange::Retract(f)) = c;
        matches!(
            f,
            Fact::Volk(..) | Fact::VolkCapability(..) | Fact::VolkStatus(..) | Fact::Session(..)
        )
    })
}

/// What a reusable answer depends on, as one string: the policy, the subject, action
/// and resource, and each declared context key with its value (a key that is absent
/// differs from one whose value is `null`). `None` if it cannot be written (then the
/// answer is neither kept nor looked for).
fn entry_key(policy_hash: &str, request: &Request, keys: &[String]) -> Option<String> {
    let context: Vec<(&str, Option<[&serde_json::Value; 1]>)> = keys
        .iter()
        .map(|k| (k.as_str(), request.context.get(k).map(|v| [v])))
        .collect();
    serde_json::to_string(&(
        policy_hash,
        request.subject_kind,
        &request.subject,
        &request.action,
        &request.resource,
        context,
    ))
    .ok()
}

impl super::Governance {
    /// Runs `f` on the roster cache. A lock poisoned by a panic is taken back emptied:
    /// whatever the panic interrupted is not served.
    pub(super) fn roster_cache<T>(&self, f: impl FnOnce(&mut RosterCache) -> T) -> T {
        let mut cache = match self.inner.roster.lock() {
            Ok(cache) => cache,
            Err(poisoned) => {
                let mut cache = poisoned.into_inner();
                cache.policy_replaced();
                self.inner.roster.clear_poison();
                cache
            }
        };
        f(&mut cache)
    }

    /// Called under the facts lock with fact changes about to be queued for the
    /// engine: any roster fact among them ends every reuse so far.
    pub(super) fn note_fact_changes(&self, changes: &[FactChange]) {
        if touches_roster(changes) {
            self.roster_cache(RosterCache::invalidate);
        }
    }

    /// Decisions answered from the roster cache since start, without the engine
    /// (`cacheable_with/2` in the policy).
    pub fn decisions_reused(&self) -> u64 {
        self.roster_cache(|c| c.hits())
    }

    /// Called under the facts lock when `request` is asked under the policy
    /// `policy_hash`: the answer kept for it, or else the generation its answer is to
    /// be kept under.
    pub(super) fn reusable(
        &self,
        policy_hash: &str,
        request: &Request,
    ) -> (Option<Outcome>, Option<u64>) {
        self.roster_cache(|c| match c.get(policy_hash, request) {
            Some(outcome) => (Some(outcome), None),
            None => (None, Some(c.generation())),
        })
    }
}

#[cfg(test)]
mod tests {
    use orchestrata_schemas::events::types::DecisionResult;

    use super::*;

    fn reusable(keys: &[&str]) -> Outcome {
        Outcome {
            result: DecisionResult::Allow,
            trace: vec!["send_allowed".into()],
            articles: Vec::new(),
            cacheable: false,
            roster_keys: Some(keys.iter().map(|k| (*k).to_owned()).collect()),
        }
    }

    fn send() -> Request {
        Request::volk("U:Ox", "cxp.send", "U:Vz").with("thread", "t1")
    }

    // ISSUE-15
    #[test]
    fn an_answer_asked_before_the_roster_moved_is_not_kept() {
        let mut cache = RosterCache::new(8);
        let asked = cache.generation();
        cache.invalidate();
        cache.put("h", &send(), asked, &reusable(&["session"]));
        assert_eq!(cache.get("h", &send()), None);
        cache.put("h", &send(), cache.generation(), &reusable(&["session"]));
        assert!(cache.get("h", &send()).is_some());
        assert_eq!(cache.get("other policy", &send()), None);
        assert_eq!(cache.hits(), 1);
    }

    // ISSUE-15
    #[test]
    fn declared_keys_tell_requests_apart_and_others_do_not() {
        let mut cache = RosterCache::new(8);
        let at = cache.generation();
        cache.put("h", &send(), at, &reusable(&["session"]));
        // An undeclared key (the thread) does not matter.
        assert!(cache.get("h", &send().with("thread", "t2")).is_some());
        // A declared key absent differs from one present, even as null.
        assert_eq!(cache.get("h", &send().with("session", "s1")), None);
        assert_eq!(
            cache.get("h", &send().with("session", serde_json::Value::Null)),
            None
        );
        // Not reusable, not kept; an oversized key, not kept.
        let mut plain = reusable(&[]);
        plain.roster_keys = None;
        let other = Request::volk("U:Ox", "cxp.send", "U:Qa");
        cache.put("h", &other, at, &plain);
        assert_eq!(cache.get("h", &other), None);
        let huge = Request::volk("U:Ox", "cxp.send", &"x".repeat(MAX_KEY_BYTES));
        cache.put("h", &huge, at, &reusable(&["session"]));
        assert_eq!(cache.get("h", &huge), None);
    }

    // ISSUE-15
    #[test]
    fn only_roster_facts_touch_the_roster() {
        let volk = |s: &str| Fact::VolkStatus("U:Vz".into(), s.into());
        assert!(touches_roster(&[FactChange::Retract(volk("active"))]));
        assert!(touches_roster(&[FactChange::Assert(Fact::Session(
            "s1".into(),
            "p".into(),
            "closed".into(),
            "U:Ox".into()
        ))]));
        let traffic = [
            FactChange::Assert(Fact::Sends("U:Ox".into(), "s1".into(), 3)),
            FactChange::Assert(Fact::Floor(7)),
            FactChange::Retract(Fact::DeliveryStatus("m".into(), "queued".into(), 1)),
        ];
        assert!(!touches_roster(&traffic));
    }
}
