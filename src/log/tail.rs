//! Tailing a log by polling its range reads, woken by a watch of the stream's end.
//!
//! The tail keeps a cursor (the next sequence it owes its reader). It reads stored
//! entries from the cursor up to the stream's visible end, hands them out, and when it
//! has caught up waits for the end to move. Because every entry is fetched by sequence
//! from the store and the cursor only moves past what was handed out, there is no gap
//! and no duplicate at the seam between history and live events, whatever races with
//! the tail's start. The watch receiver is subscribed before the first read, so no
//! wake-up is missed.

use std::collections::VecDeque;
use std::sync::Arc;

use futures::stream::{self, StreamExt};
use orchestrata_schemas::events::Stream;
use tokio::sync::watch;

use super::raw::{RawEntry, RawLog, RawTail};

/// How many entries a tail fetches per read.
const TAIL_BATCH: usize = 1024;

/// How long a tail waits before reading again when the end says there is more but the
/// read returned nothing (see `watch_tail`).
const EMPTY_READ_PAUSE: std::time::Duration = std::time::Duration::from_millis(20);

struct State {
    log: Arc<dyn RawLog>,
    stream: Stream,
    cursor: u64,
    buffer: VecDeque<RawEntry>,
    visible: watch::Receiver<u64>,
    failed: bool,
}

/// Builds a tail over `log` starting at `from`; `visible` carries the sequence the next
/// append will get, updated only once appended entries are readable (and durable, if the
/// backend promises that).
pub(crate) fn watch_tail(
    log: Arc<dyn RawLog>,
    stream: Stream,
    from: u64,
    visible: watch::Receiver<u64>,
) -> RawTail {
    let state = State {
        log,
        stream,
        cursor: from,
        buffer: VecDeque::new(),
        visible,
        failed: false,
    };
    stream::unfold(state, |mut st| async move {
        if st.failed {
            return None;
        }
        loop {
            if let Some(entry) = st.buffer.pop_front() {
                st.cursor = entry.sequence + 1;
                return Some((Ok(entry), st));
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
