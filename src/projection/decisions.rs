//! Decisions as readers get them: a search of the [`DecisionIndex`] under its lock, and
//! the bodies it let go of read back from the log, where every decision already is.
//!
//! The index keeps the newest bodies in memory; the view store holds only what
//! searches filter on (`orchestrata_projections::decision`'s module docs). A body the
//! index let go of is the `decision_recorded` at its sequence of
//! `governance.decisions`: a page of a search reads them in runs of nearby sequences,
//! one log read per run.

use std::collections::BTreeMap;

use orchestrata_projections::decision::{DecisionEntry, DecisionQuery, StoredTimes};
use orchestrata_projections::{DecisionIndex, View, ViewName};
use orchestrata_schemas::events::Stream;
use uuid::Uuid;

use super::{ProjectionError, ViewHandle, ViewStore};
use crate::log::EventLog;

/// Sequences at most this far apart are read from the log in one read.
const RUN_SPAN: u64 = 256;

/// A search's page: each decision's sequence, and its body when the index holds it.
type Page = Vec<(u64, Option<DecisionEntry>)>;

impl ViewHandle<DecisionIndex> {
    /// Decisions matching `query`, newest first: how many match, and the entries from
    /// the `offset`-th on, at most `limit` of them (`governance.query`). The search runs
    /// under the view's lock; the blocks of times it needs from the store (a time bound
    /// in old history) are read outside it, and so are the bodies the index let go of,
    /// from `log` (the log the view folds).
    pub async fn newest(
        &self,
        log: &dyn EventLog,
        query: &DecisionQuery,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Vec<DecisionEntry>), ProjectionError> {
        let (total, page) = self.search(query, offset, limit)?;
        let missing: Vec<u64> = page
            .iter()
            .filter(|(_, body)| body.is_none())
            .map(|(sequence, _)| *sequence)
            .collect();
        let mut read = logged_decisions(log, &missing).await?;
        let entries = page
            .into_iter()
            .map(|(sequence, body)| match body {
                Some(entry) => Ok(entry),
                None => read
                    .remove(&sequence)
                    .ok_or_else(|| not_logged(&self.store, sequence)),
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok((total, entries))
    }

    /// The page of a search: each decision's sequence, and its body when the index
    /// holds it.
    fn search(
        &self,
        query: &DecisionQuery,
        offset: usize,
        limit: usize,
    ) -> Result<(usize, Page), ProjectionError> {
        let mut stored = StoredTimes::default();
        // Blocks never change once stored, so each round reads only blocks not read
        // before; a second round is needed only if a commit let more go meanwhile.
        for _ in 0..4 {
            let searched = {
                let index = self.read();
                index
                    .newest(query, offset, limit, &stored)
                    .map(|(total, page)| {
                        let page: Page =
                            page.iter().map(|d| (d.sequence, d.body.cloned())).collect();
                        (total, page)
                    })
            };
            match searched {
                Ok(found) => return Ok(found),
                Err(needs) => {
                    for key in needs.keys {
                        let bytes = self.store.let_go_entry(DecisionIndex::NAME, &key)?;
                        stored
                            .add(&key, &bytes)
                            .map_err(|e| self.store.corrupt(DecisionIndex::NAME, e.to_string()))?;
                    }
                }
            }
        }
        Err(self.store.corrupt(
            DecisionIndex::NAME,
            "a decision search kept asking for blocks of times the store was read for".into(),
        ))
    }
}

/// The decision recorded with `decision_id` in `index` (opened by
/// [`open_view`](super::open_view) or [`open_view_as_of`](super::open_view_as_of)), as
/// `projections show --view decision --id` prints it: among the bodies in memory, else
/// found in the stored summaries (read one entry at a time) and read from `log`. No key
/// holds a decision's id, so an old or unknown id costs a scan of the stored
/// summaries — but never more memory than a runner's.
pub async fn find_decision(
    index: &ViewHandle<DecisionIndex>,
    log: &dyn EventLog,
    decision_id: &Uuid,
) -> Result<Option<DecisionEntry>, ProjectionError> {
    let hot = index
        .read()
        .decision(decision_id)
        .and_then(|d| d.body.cloned());
    if hot.is_some() {
        return Ok(hot);
    }
    let found = index.store.find_entry(ViewName::Decision, |key, value| {
        DecisionIndex::sequence_in_entry(key, value, decision_id).map_err(|e| e.to_string())
    })?;
    let Some(sequence) = found else {
        return Ok(None);
    };
    let mut read = logged_decisions(log, &[sequence]).await?;
    read.remove(&sequence)
        .map(Some)
        .ok_or_else(|| not_logged(&index.store, sequence))
}

/// The decisions recorded at `sequences` of `governance.decisions`, read in runs of
/// sequences at most [`RUN_SPAN`] apart (one log read each). A sequence that holds no
/// decision is absent from the answer.
async fn logged_decisions(
    log: &dyn EventLog,
    sequences: &[u64],
) -> Result<BTreeMap<u64, DecisionEntry>, ProjectionError> {
    let mut wanted: Vec<u64> = sequences.to_vec();
    wanted.sort_unstable();
    wanted.dedup();
    let mut found = BTreeMap::new();
    let mut i = 0;
    while let Some(&first) = wanted.get(i) {
        let mut last = first;
        let mut j = i + 1;
        while let Some(&next) = wanted.get(j) {
            if next - first > RUN_SPAN {
                break;
            }
            last = next;
            j += 1;
        }
        let span = usize::try_from(last - first + 1).unwrap_or(usize::MAX);
        let envelopes = log
            .read(Stream::GovernanceDecisions, first, Some(last), span)
            .await
            .map_err(|source| ProjectionError::Log {
                view: ViewName::Decision,
                source,
            })?;
        for envelope in &envelopes {
            if wanted[i..j].binary_search(&envelope.sequence).is_ok() {
                if let Some(entry) = DecisionEntry::of(envelope) {
                    found.insert(entry.sequence, entry);
                }
            }
        }
        i = j;
    }
    Ok(found)
}

/// A decision the index found whose sequence holds none in the log: the index and the
/// log disagree (the log was truncated below it, or replaced).
fn not_logged(store: &ViewStore, sequence: u64) -> ProjectionError {
    store.corrupt(
        ViewName::Decision,
        format!("the index names a decision at sequence {sequence} of governance.decisions, and the log holds none there"),
    )
}
