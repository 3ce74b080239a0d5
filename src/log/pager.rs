//! Reading a range of one stream page by page: the one loop every reader of history
//! (replay, audit, rebuild, catch-up) would otherwise write again.

use orchestrata_schemas::events::{Envelope, Stream};

use super::{EventLog, LogError};

/// The page size readers use unless they have a reason to pick another: large enough
/// that a page costs one round trip per few thousand events, small enough to bound a
/// page's memory (events are at most a few KiB each).
pub const DEFAULT_PAGE: usize = 4096;

/// Pages of `from..=to` of one stream, oldest first.
///
/// Each [`next_page`](Pager::next_page) is one [`EventLog::read`]. The range ends at `to`
/// (inclusive), at an empty page, or at a page shorter than asked for: `read` returns
/// `limit` events whenever that many exist in the range, so a short page is the end of
/// what the log holds now. Events appended after that are not waited for; use
/// [`EventLog::tail`] to follow the log.
///
/// ```no_run
/// # async fn demo(log: &dyn orchestrata::log::EventLog) -> Result<(), orchestrata::log::LogError> {
/// use orchestrata::log::Pager;
/// use orchestrata_schemas::events::Stream;
/// let mut pages = Pager::new(log, Stream::CxpTraffic, 0, None);
/// while let Some(page) = pages.next_page().await? {
///     for envelope in &page {
///         println!("{} {}", envelope.sequence, envelope.record.event_type());
///     }
/// }
/// # Ok(()) }
/// ```
pub struct Pager<'a> {
    log: &'a dyn EventLog,
    stream: Stream,
    next: u64,
    to: Option<u64>,
    size: usize,
    done: bool,
}

impl<'a> Pager<'a> {
    /// Pages of `stream` from sequence `from` to `to` (`None`: the current end).
    pub fn new(log: &'a dyn EventLog, stream: Stream, from: u64, to: Option<u64>) -> Self {
        Pager {
            log,
            stream,
            next: from,
            to,
            size: DEFAULT_PAGE,
            done: to.is_some_and(|to| to < from),
        }
    }

    /// Pages of `size` events (at least 1) instead of [`DEFAULT_PAGE`].
    pub fn page_size(mut self, size: usize) -> Self {
        self.size = size.max(1);
        self
    }

    /// The sequence the next page starts at (one past the last event handed out).
    pub fn position(&self) -> u64 {
        self.next
    }

    /// The next page, or `None` once the range is exhausted. A read error is returned
    /// as is and leaves the pager where it was, so the caller may retry.
    pub async fn next_page(&mut self) -> Result<Option<Vec<Envelope>>, LogError> {
        if self.done {
            return Ok(None);
        }
        let page = self
            .log
            .read(self.stream, self.next, self.to, self.size)
            .await?;
        let Some(last) = page.last().map(|e| e.sequence) else {
            self.done = true;
            return Ok(None);
        };
        self.next = last.saturating_add(1);
        self.done = page.len() < self.size || self.to.is_some_and(|to| last >= to);
        Ok(Some(page))
    }

    /// Every event of the range, in one vector (for ranges known to be small, and for
    /// tools that need the whole history at once, such as an offline audit).
    pub async fn collect(mut self) -> Result<Vec<Envelope>, LogError> {
        let mut all = Vec::new();
        while let Some(page) = self.next_page().await? {
            all.extend(page);
        }
        Ok(all)
    }
}
