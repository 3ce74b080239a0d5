//! What a policy says about reusing its decisions, read once when it is loaded.
//!
//! Two declarations, both optional:
//!
//! - `cacheable(Action)`: a decision of `Action` depends on the request alone (subject,
//!   action, resource, context) and the policy, never on facts. The service caches it
//!   until the policy changes (`service.rs`).
//! - `cacheable_with(Action, Keys)`: a decision of `Action` depends on its subject, its
//!   resource, the context keys `Keys` (a list of atoms), the policy and the *roster*
//!   facts (`volk/4`, `volk_capability/2`, `volk_status/2`, `session/4`), unless it
//!   reads traffic facts (`cxp_packet/12`, `cxp_delivery_status/3`,
//!   `cxp_work_status/3`, `cxp_sends/3`). The engine notes every such read
//!   (`'$traffic_read'` in the prelude); a decision that made none is reused until a
//!   roster fact changes (`roster_cache.rs`). A `cxp.send` without a session reads
//!   only roster facts under the default policy; one in a session reads its send count
//!   and is decided every time.
//!
//! The engine can check the traffic reads, not the declaration itself: a policy that
//! declares a key list leaving out a context key its decision reads, or that reads the
//! clock, gets decisions reused where they should not be. One safety net is checked
//! here: a policy whose text names the engine's internal fact predicates or the
//! blackboard (through which a read would not be noted) gets no `cacheable_with/2`
//! reuse at all, and a warning.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use scryer_prolog::{Machine, Term};

use super::run_caught;
use crate::governance::policy::Policy;
use crate::governance::term::{term_list, term_text};

/// Names through which a policy could read traffic facts without the read being noted.
const UNNOTED_READS: &[&str] = &[
    "cxp_packet_base",
    "cxp_status",
    "cxp_fresh",
    "cxp_sends_key",
    "bb_get",
    "global_var",
];

/// The actions the policy declares `cacheable/1`.
pub(super) enum Cacheable {
    /// `cacheable(_)`: every action.
    All,
    /// The actions named.
    Actions(HashSet<String>),
}

impl Cacheable {
    pub(super) fn read(machine: &mut Machine) -> Self {
        let items = declared(machine, "findall(A, catch(cacheable(A), _, fail), As)");
        if items.iter().any(|t| matches!(t, Term::Var(_))) {
            return Cacheable::All;
        }
        Cacheable::Actions(items.iter().filter_map(term_text).collect())
    }

    pub(super) fn is_cacheable(&self, action: &str) -> bool {
        match self {
            Cacheable::All => true,
            Cacheable::Actions(set) => set.contains(action),
        }
    }
}

/// The actions the policy declares `cacheable_with/2`, each with its context keys
/// (sorted, without duplicates).
#[derive(Default)]
pub(super) struct RosterCacheable {
    actions: HashMap<String, Arc<[String]>>,
}

impl RosterCacheable {
    pub(super) fn read(machine: &mut Machine, policy: &Policy) -> Self {
        let declared = declared(
            machine,
            "findall(A-K, catch(cacheable_with(A, K), _, fail), As)",
        );
        if declared.is_empty() {
            return RosterCacheable::default();
        }
        if let Some(name) = unnoted_read(policy) {
            tracing::warn!(
                predicate = name,
                "the policy names {name}, through which a traffic read would go unnoticed: \
                 its cacheable_with/2 declarations are ignored and every such decision runs"
            );
            return RosterCacheable::default();
        }
        let mut actions = HashMap::new();
        for item in &declared {
            match declaration(item) {
                Some((action, keys)) => {
                    actions.insert(action, keys);
                }
                None => tracing::warn!(
                    declaration = %super::render(item),
                    "cacheable_with/2 needs an action and a list of context keys (atoms); \
                     this declaration is ignored"
                ),
            }
        }
        RosterCacheable { actions }
    }

    /// The context keys a decision of `action` depends on, if the policy declared it
    /// `cacheable_with/2`.
    pub(super) fn keys(&self, action: &str) -> Option<&Arc<[String]>> {
        self.actions.get(action)
    }
}

/// The list `findall` binds to `As` in `goal` (empty if the goal failed or threw).
fn declared(machine: &mut Machine, goal: &str) -> Vec<Term> {
    match run_caught(machine, goal) {
        Ok(Some(b)) => b
            .get("As")
            .and_then(term_list)
            .map(<[Term]>::to_vec)
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

/// `Action-Keys` as the action's text and its sorted keys; `None` if either is not
/// what the declaration needs (an unbound action or key, a key that is not an atom).
fn declaration(item: &Term) -> Option<(String, Arc<[String]>)> {
    let Term::Compound(f, args) = item else {
        return None;
    };
    let [action, keys] = args.as_slice() else {
        return None;
    };
    if f != "-" {
        return None;
    }
    // An unbound action or key has no text.
    let action = term_text(action)?;
    let mut names = Vec::new();
    for key in term_list(keys)? {
        match key {
            Term::Atom(_) => names.push(term_text(key)?),
            _ => return None,
        }
    }
    names.sort();
    names.dedup();
    Some((action, names.into()))
}

/// The first internal name the policy's text mentions, if any.
fn unnoted_read(policy: &Policy) -> Option<&'static str> {
    UNNOTED_READS
        .iter()
        .copied()
        .find(|name| policy.files().iter().any(|f| f.text.contains(name)))
}
