//! What the decision index keeps of every decision: the fields its searches filter on,
//! with subjects, actions and principals interned (a server records millions of
//! decisions by a handful of subjects).

use std::collections::HashMap;

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::types::DecisionResult;

/// One decision as searches see it (about 40 bytes).
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Summary {
    pub sequence: u64,
    pub at: DateTime<Utc>,
    pub subject: u32,
    pub action: u32,
    pub principal: Option<u32>,
    pub result: DecisionResult,
    pub dry_run: bool,
}

/// Interned names: each distinct string once, named by its position.
#[derive(Debug, Clone, Default, PartialEq)]
pub(super) struct Names {
    ids: HashMap<String, u32>,
    names: Vec<String>,
}

impl Names {
    /// The id of `name`, adding it the first time.
    pub fn intern(&mut self, name: &str) -> u32 {
        if let Some(id) = self.ids.get(name) {
            return *id;
        }
        // Past u32::MAX distinct names every further one shares the last id; a server
        // would need four billion distinct subjects to get there.
        let id = u32::try_from(self.names.len()).unwrap_or(u32::MAX);
        self.names.push(name.to_owned());
        self.ids.insert(name.to_owned(), id);
        id
    }

    /// The name with this id (`""` for an id never handed out).
    pub fn get(&self, id: u32) -> &str {
        usize::try_from(id)
            .ok()
            .and_then(|i| self.names.get(i))
            .map_or("", String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_is_interned_once() {
        let mut names = Names::default();
        let a = names.intern("U:Vz");
        let b = names.intern("cxp.send");
        assert_eq!(names.intern("U:Vz"), a);
        assert_ne!(a, b);
        assert_eq!((names.get(a), names.get(b)), ("U:Vz", "cxp.send"));
        assert_eq!(names.get(99), "");
    }
}
