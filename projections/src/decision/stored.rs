//! The decision index's stored form: a head (checkpoint, policies) and one entry per
//! decision (`d` + its sequence, big-endian, so entries load in log order). Decisions
//! are only ever appended, so a commit writes those past the last commit. The id,
//! subject and action indexes are rebuilt on load.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{index, DecisionEntry, DecisionIndex, PolicyEntry};
use crate::stored::{self, Changes, Saved, StoredEntry, StoredError};
use crate::Checkpoint;

const DECISION: u8 = b'd';

#[derive(Serialize, Deserialize)]
struct Head {
    checkpoint: Checkpoint,
    policies: BTreeMap<String, PolicyEntry>,
}

impl DecisionIndex {
    pub(super) fn changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let head = stored::encode(
            "decision index head",
            &Head {
                checkpoint: self.checkpoint.clone(),
                policies: self.policies.clone(),
            },
        )?;
        let from = if all { 0 } else { self.saved.0 };
        let mut entries = Vec::new();
        for entry in self.decisions.get(from..).unwrap_or_default() {
            let value = stored::encode("decision", entry)?;
            entries.push((
                stored::key(DECISION, &entry.sequence.to_be_bytes()),
                Some(value),
            ));
        }
        self.saved = Saved(self.decisions.len());
        Ok(Changes::tracked(head, entries))
    }

    pub(super) fn restore(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        let head: Head = stored::decode("decision index head", head)?;
        let mut view = DecisionIndex {
            checkpoint: head.checkpoint,
            policies: head.policies,
            ..DecisionIndex::default()
        };
        for (key, value) in entries {
            if key.first() != Some(&DECISION) {
                return Err(StoredError::entry(
                    "decision index",
                    format!("unknown key {key:?}"),
                ));
            }
            let entry: DecisionEntry = stored::decode("decision", &value)?;
            let d = &entry.decision;
            view.by_id.insert(d.decision_id, entry.sequence);
            index(&mut view.by_subject, &d.subject, entry.sequence);
            index(&mut view.by_action, &d.action, entry.sequence);
            view.decisions.push(entry);
        }
        view.saved = Saved(view.decisions.len());
        Ok(view)
    }
}
