//! Cursor pagination shared by every list query.

use serde::{Deserialize, Serialize};

/// Which page of a list to return.
///
/// Lists are ordered by the sequence of the event that created each item (for packets:
/// their `packet_sent`), which never changes, so a cursor stays valid while the view
/// grows: pass the previous page's [`Page::next`] as `after`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageRequest {
    /// Return items strictly after this cursor (`None`: from the start).
    pub after: Option<u64>,
    /// At most this many items (0 is treated as 1).
    pub limit: usize,
}

impl PageRequest {
    /// The first page of `limit` items.
    pub fn first(limit: usize) -> Self {
        PageRequest { after: None, limit }
    }

    /// The page of `limit` items after `cursor`.
    pub fn after(cursor: u64, limit: usize) -> Self {
        PageRequest {
            after: Some(cursor),
            limit,
        }
    }

    /// The smallest sequence this page may contain.
    pub(crate) fn start(&self) -> u64 {
        self.after.map_or(0, |a| a.saturating_add(1))
    }

    /// Collects up to `limit` items from `candidates` (in cursor order), and the cursor of
    /// the next page if more remain.
    pub(crate) fn collect<T>(&self, candidates: impl Iterator<Item = (u64, T)>) -> Page<T> {
        let limit = self.limit.max(1);
        let mut items = Vec::new();
        let mut last = None;
        for (cursor, item) in candidates {
            if items.len() == limit {
                return Page { items, next: last };
            }
            last = Some(cursor);
            items.push(item);
        }
        Page { items, next: None }
    }
}

/// One page of results.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Page<T> {
    /// The items, in cursor order.
    pub items: Vec<T>,
    /// Cursor of the next page (`None`: this was the last page).
    pub next: Option<u64>,
}
