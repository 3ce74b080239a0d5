//! The set of Volks that took part in a thread.

use serde::Serialize;

/// Sender and recipient aliases of a thread's packets (and those named when it was
/// opened), sorted, each once.
///
/// A sorted `Vec`, not a `BTreeSet`: a thread has two or three participants, and a
/// `BTreeSet` allocates a whole node (eleven slots, ~0.3 KB) for them. The kernel holds
/// every thread, so that node was paid once per thread of the history (issue 18).
/// Serializes like the set did: a sorted JSON array.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(transparent)]
pub struct Participants(Vec<String>);

impl Participants {
    /// Adds `alias` unless it is there; `true` when it was new.
    pub fn insert(&mut self, alias: &str) -> bool {
        match self.0.binary_search_by(|p| p.as_str().cmp(alias)) {
            Ok(_) => false,
            Err(at) => {
                self.0.insert(at, alias.to_owned());
                true
            }
        }
    }

    /// Whether `alias` took part.
    pub fn contains(&self, alias: &str) -> bool {
        self.0.binary_search_by(|p| p.as_str().cmp(alias)).is_ok()
    }

    /// The aliases in order.
    pub fn iter(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(String::as_str)
    }

    /// How many took part.
    pub fn len(&self) -> usize {
        self.0.len()
    }

    /// Whether nobody did yet.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use proptest::prelude::*;

    use super::Participants;

    proptest! {
        /// Whatever the order and repeats of the inserts, the set holds and serializes
        /// exactly what a `BTreeSet` of the same inserts does (the form it replaced).
        #[test]
        fn behaves_like_the_btreeset_it_replaced(
            names in proptest::collection::vec("U:[A-Z][a-z]|[a-z]{0,3}", 0..12)
        ) {
            let mut ours = Participants::default();
            let mut set = BTreeSet::new();
            for name in &names {
                prop_assert_eq!(ours.insert(name), set.insert(name.clone()));
            }
            prop_assert_eq!(ours.iter().collect::<Vec<_>>(), set.iter().map(String::as_str).collect::<Vec<_>>());
            prop_assert_eq!(ours.len(), set.len());
            prop_assert_eq!(ours.is_empty(), set.is_empty());
            for name in &names {
                prop_assert!(ours.contains(name));
            }
            prop_assert!(!ours.contains("U:Nobody"));
            prop_assert_eq!(
                serde_json::to_string(&ours).expect("json"),
                serde_json::to_string(&set).expect("json")
            );
        }
    }
}
