//! Decision searches as set operations on bitmaps of positions.
//!
//! Every filter but time is a bitmap the index keeps (subject, action, principal,
//! result, dry run: a decision's position is in one set of each), so a search is their
//! intersection: its count is the set's length and a page is read off the set by rank
//! (`select`), without visiting the decisions that do not match. Time is decided block
//! by block (`decision/times.rs`): a block wholly inside or outside the bounds is taken
//! or dropped whole; a block the bounds fall inside is read, from memory or, for the
//! oldest, from the view store ([`NeedsStored`]). A count over every decision was a
//! scan of every decision's summary: ~3 M at 1.5 M `cxp.send`.

use roaring::RoaringBitmap;

use super::times::{block_key, NeedsStored, StoredTimes, Verdict, BLOCK};
use super::{DecisionIndex, DecisionQuery, DecisionRef};
use crate::{Page, PageRequest};

impl DecisionIndex {
    /// Decisions matching `query` in log order, one page at a time. Blocks of times a
    /// search by time needs from the view store are in `stored`; when some are missing
    /// the search answers which ([`NeedsStored`]) instead.
    pub fn decisions(
        &self,
        query: &DecisionQuery,
        page: &PageRequest,
        stored: &StoredTimes,
    ) -> Result<Page<DecisionRef<'_>>, NeedsStored> {
        let matching = self.matching(query, page.start(), stored)?;
        Ok(page.collect(matching.iter().filter_map(|p| {
            let found = self.found(p)?;
            Some((found.sequence, found))
        })))
    }

    /// Decisions matching `query`, newest first: how many match, and the matches from
    /// the `offset`-th on, at most `limit` of them (`governance.query`'s paging). Only
    /// the page is looked up; `stored` as for [`DecisionIndex::decisions`].
    pub fn newest(
        &self,
        query: &DecisionQuery,
        offset: usize,
        limit: usize,
        stored: &StoredTimes,
    ) -> Result<(usize, Vec<DecisionRef<'_>>), NeedsStored> {
        let matching = self.matching(query, 0, stored)?;
        let total = usize::try_from(matching.len()).unwrap_or(usize::MAX);
        let page = (offset..total.min(offset.saturating_add(limit)))
            .filter_map(|k| u32::try_from(total - 1 - k).ok())
            .filter_map(|rank| matching.select(rank))
            .filter_map(|p| self.found(p))
            .collect();
        Ok((total, page))
    }

    /// The positions of the decisions matching `query` with a sequence at or after
    /// `start`.
    fn matching(
        &self,
        query: &DecisionQuery,
        start: u64,
        stored: &StoredTimes,
    ) -> Result<RoaringBitmap, NeedsStored> {
        // Positions saturate at u32::MAX (see `DecisionIndex::push`).
        let len = u32::try_from(self.len()).unwrap_or(u32::MAX);
        let first = match start.checked_sub(1) {
            Some(below) => self.sequences.rank(below),
            None => 0,
        };
        let first = u32::try_from(first).unwrap_or(u32::MAX);
        let mut set = RoaringBitmap::new();
        set.insert_range(first..len);
        // A name nobody has matches nothing; a named set is intersected in place, not
        // cloned (the set of a common action holds every decision).
        let named = [
            (&query.subject, &self.by_subject),
            (&query.action, &self.by_action),
            (&query.principal, &self.by_principal),
        ];
        for (name, map) in named {
            match name.as_deref().map(|n| map.get(n)) {
                Some(Some(positions)) => set &= positions,
                Some(None) => set.clear(),
                None => {}
            }
        }
        if let Some(result) = query.result {
            set &= &self.by_result[super::result_index(result)];
        }
        match query.dry_run {
            Some(true) => set &= &self.dry_runs,
            Some(false) => set -= &self.dry_runs,
            None => {}
        }
        if query.from.is_some() || query.until.is_some() {
            self.within_times(&mut set, query, stored)?;
        }
        Ok(set)
    }

    /// Takes out of `set` the positions whose time is outside the query's bounds: one
    /// intersection with the positions kept, built in order (removing block by block
    /// would shift a sparse set's array once a block).
    fn within_times(
        &self,
        set: &mut RoaringBitmap,
        query: &DecisionQuery,
        stored: &StoredTimes,
    ) -> Result<(), NeedsStored> {
        let blocks = self.times.frozen() + 1;
        let mut keep = RoaringBitmap::new();
        let mut needs = Vec::new();
        for block in 0..blocks {
            let span = block_span(block);
            match self.times.verdict(block, query.from, query.until) {
                Verdict::All => {
                    keep.insert_range(span);
                }
                Verdict::Nothing => {}
                // Only blocks holding a match are worth reading.
                Verdict::Mixed if set.range_cardinality(span.clone()) == 0 => {}
                Verdict::Mixed => match self.times.block(block, stored) {
                    None => needs.push(block_key(block)),
                    Some(times) => {
                        for (at, position) in times.iter().zip(span) {
                            let inside = query.from.is_none_or(|f| *at >= f)
                                && query.until.is_none_or(|u| *at < u);
                            if inside {
                                keep.insert(position);
                            }
                        }
                    }
                },
            }
        }
        if !needs.is_empty() {
            return Err(NeedsStored { keys: needs });
        }
        *set &= keep;
        Ok(())
    }
}

/// The positions of block `block`.
fn block_span(block: usize) -> std::ops::Range<u32> {
    let at = |b: usize| u32::try_from(b.saturating_mul(BLOCK)).unwrap_or(u32::MAX);
    at(block)..at(block + 1)
}
