//! Tailing a log by polling its range reads, woken by a watch of the stream's end.
//!
//! The tail keeps a cursor (the next sequence it owes its reader). It reads stored
//! entries from the cursor up to the stream's visible end, hands them out, and when it
//! has caught up waits for the end to move. Because every entry is fetched by sequence
//! from the store and the cursor only moves past what was handed out, there is no gap
//! and no duplicate at the seam between history and live events, whatever races with
//! the tail's start. The watch receiver is subscribed before the first read, so no
//! wake-up is missed.
//!
//! What the tail hands out is its [`Source`]'s: stored entries as they are
//! ([`Stored`]), or decoded events another tail of the process already has at hand
//! (`event_log.rs`), in which case the store is not read at all for them.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, BoxStream, StreamExt};
use orchestrata_schemas::events::Stream;
use tokio::sync::watch;

use super::raw::{RawEntry, RawLog, TailFeed};
use super::LogError;

/// How many entries a tail fetches per read.
const TAIL_BATCH: usize = 1024;

/// How long a tail waits before reading again when the end says there is more but the
/// read returned nothing (see `watch_tail`).
const EMPTY_READ_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

/// Where a tail's items come from, beside the store.
pub(crate) trait Source: Send + 'static {
    /// What the tail hands out.
    type Item: Send + 'static;

    /// The item at `sequence` if it is at hand without reading the store. Only an
    /// item of an entry that was visible may be at hand.
    fn at_hand(&self, sequence: u64) -> Option<Self::Item>;

    /// The item of an entry read from the store. An error is handed out in its place;
    /// the tail goes on after it.
    fn of_entry(&self, entry: RawEntry) -> Result<Self::Item, LogError>;
}

/// The stored entries themselves: nothing at hand.
pub(crate) struct Stored;

impl Source for Stored {
    type Item = RawEntry;

    fn at_hand(&self, _: u64) -> Option<RawEntry> {
        None
    }

    fn of_entry(&self, entry: RawEntry) -> Result<RawEntry, LogError> {
        Ok(entry)
    }
}

struct State<S> {
    log: Arc<dyn RawLog>,
    stream: Stream,
    cursor: u64,
    buffer: VecDeque<RawEntry>,
    visible: watch::Receiver<u64>,
    failed: bool,
    source: S,
}

/// Builds a tail of `stream` over `feed` starting at `from`, handing out `source`'s
/// items: the one at hand for the cursor's sequence when there is one, else one made
/// from the entry read from the store.
pub(crate) fn watch_tail<S: Source>(
    feed: TailFeed,
    stream: Stream,
    from: u64,
    source: S,
) -> BoxStream<'static, Result<S::Item, LogError>> {
    let state = State {
        log: feed.log,
        stream,
        cursor: from,
        buffer: VecDeque::new(),
        visible: feed.visible,
        failed: false,
        source,
    };
    stream::unfold(state, |mut st| async move {
        if st.failed {
            return None;
        }
        loop {
            if let Some(entry) = st.buffer.pop_front() {
                st.cursor = entry.sequence + 1;
                return Some((st.source.of_entry(entry), st));
            }
            if let Some(item) = st.source.at_hand(st.cursor) {
                st.cursor += 1;
                return Some((Ok(item), st));
            }
            let end = *st.visible.borrow_and_update();
            if st.cursor < end {
                match st
                    .log
                    .read_raw(st.stream, st.cursor, Some(end - 1), TAIL_BATCH)
                    .await
                {
                    Ok(entries) if entries.is_empty() => {
                        // The end is past what the store hands out yet (a backend that
                        // publishes its end before the entries are readable, or offsets
                        // that hold no entry). Never spin: a read that completes at once
                        // would hold this runtime worker forever. Retry when the end
                        // moves, or after a short pause.
                        tokio::select! {
                            changed = st.visible.changed() => if changed.is_err() {
                                return None;
                            },
                            _ = tokio::time::sleep(EMPTY_READ_PAUSE) => {}
                        }
                    }
                    Ok(entries) => st.buffer.extend(entries),
                    Err(e) => {
                        st.failed = true;
                        return Some((Err(e), st));
                    }
                }
                continue;
            }
            if st.visible.changed().await.is_err() {
                return None;
            }
        }
    })
    .boxed()
}
