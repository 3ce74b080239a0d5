//! The follower's cache of one topic: a contiguous run of offsets `[floor, end)`, the
//! newest records of the partition, bounded in count and bytes; records acknowledged
//! beyond a gap wait in `pending` until the gap is filled.

use std::collections::{BTreeMap, VecDeque};

use super::fetch::Fetched;

/// Most records the cache keeps per topic.
const CACHE_RECORDS: usize = 65_536;
/// Most payload bytes the cache keeps per topic.
const CACHE_BYTES: usize = 64 << 20;

#[derive(Default)]
pub(super) struct Cache {
    /// Offset 0, the epoch marker, kept whatever the eviction.
    pub(super) head: Option<Fetched>,
    /// Offset of `records[0]`.
    pub(super) floor: u64,
    pub(super) records: VecDeque<Fetched>,
    bytes: usize,
    /// Acknowledged records beyond a gap, by offset.
    pending: BTreeMap<u64, Fetched>,
}

impl Cache {
    pub(super) fn end(&self) -> u64 {
        self.floor + self.records.len() as u64
    }

    /// Drops the records from `offset` on (fault injection: see `Follower::forget_from`).
    pub(super) fn truncate(&mut self, offset: u64) {
        let keep = usize::try_from(offset.saturating_sub(self.floor)).unwrap_or(usize::MAX);
        while self.records.len() > keep {
            if let Some(gone) = self.records.pop_back() {
                self.bytes -= gone.value.len();
            }
        }
    }

    /// Acknowledged records kept aside until the gap before them is filled.
    pub(super) fn waiting(&self) -> usize {
        self.pending.len()
    }

    fn push(&mut self, record: Fetched) {
        if record.offset == 0 {
            self.head = Some(record.clone());
        }
        self.bytes += record.value.len();
        self.records.push_back(record);
        while let Some(next) = self.pending.remove(&self.end()) {
            self.bytes += next.value.len();
            self.records.push_back(next);
        }
        while self.records.len() > CACHE_RECORDS || self.bytes > CACHE_BYTES {
            let Some(old) = self.records.pop_front() else {
                break;
            };
            self.bytes -= old.value.len();
            self.floor += 1;
        }
        let end = self.end();
        self.pending = self.pending.split_off(&end);
    }

    /// A record the follower consumed, in offset order. The first one may lie beyond
    /// offset 0 (records the broker deleted): the cache starts there.
    pub(super) fn followed(&mut self, record: Fetched) {
        let end = self.end();
        if record.offset < end {
            return;
        }
        if record.offset > end && self.records.is_empty() {
            self.floor = record.offset;
            self.pending = self.pending.split_off(&record.offset);
        }
        self.acked(record);
    }

    /// A record this process appended, as the broker acknowledged it, or one read
    /// beyond a gap: kept aside until the records before it arrive.
    pub(super) fn acked(&mut self, record: Fetched) {
        let end = self.end();
        if record.offset == end {
            self.push(record);
        } else if record.offset > end {
            self.pending.insert(record.offset, record);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(offset: u64) -> Fetched {
        Fetched {
            offset,
            key: None,
            value: vec![1, 2, 3],
            timestamp_ms: 0,
            is_marker: offset == 0,
        }
    }

    fn offsets(cache: &Cache) -> Vec<u64> {
        cache.records.iter().map(|r| r.offset).collect()
    }

    // ISSUE-15: a record acknowledged beyond a gap waits until the follower fills it.
    #[test]
    fn acked_beyond_a_gap_waits_for_the_follower() {
        let mut cache = Cache::default();
        cache.followed(record(0));
        cache.acked(record(2));
        assert_eq!(cache.end(), 1);
        cache.followed(record(1));
        assert_eq!(offsets(&cache), [0, 1, 2]);
        cache.followed(record(2));
        assert_eq!(cache.end(), 3);
        assert!(cache.head.is_some());
    }

    // ISSUE-15: records the broker deleted below the follower's first record restart the cache.
    #[test]
    fn a_jump_forward_restarts_the_cache() {
        let mut cache = Cache::default();
        cache.followed(record(40));
        assert_eq!((cache.floor, cache.end()), (40, 41));
        cache.acked(record(40));
        assert_eq!(cache.end(), 41);
    }
}
