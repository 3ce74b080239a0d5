//! Rebuilding the aggregate from the log, and appending a batch of records.

use std::sync::Arc;

use orchestrata_schemas::events::{EventRecord, Stream};

use super::outcome::Appended;
use super::state::KernelState;
use super::KernelError;
use crate::log::{EventLog, Pager};

/// The streams the aggregate folds, in fold order (sessions before the packets that
/// name them).
pub const FOLDED: [Stream; 6] = [
    Stream::VolkLifecycle,
    Stream::SessionEvents,
    Stream::WorkflowEvents,
    Stream::CxpTraffic,
    Stream::KernelEvents,
    Stream::ProviderEvents,
];

/// Folds every stored event of [`FOLDED`] into a fresh state: the state a kernel
/// starts from, and the state a running kernel's must equal between batches (compare
/// with [`KernelState::digest`]).
pub async fn rebuild(
    log: &Arc<dyn EventLog>,
    config: &super::KernelConfig,
) -> Result<KernelState, KernelError> {
    let mut state = KernelState::with_spill(config.max_retries, config.spill());
    for stream in FOLDED {
        let Some(from) = log.first_sequence(stream).await? else {
            continue;
        };
        let mut pages = Pager::new(&**log, stream, from, None);
        while let Some(page) = pages.next_page().await? {
            for envelope in &page {
                state.apply(&envelope.record);
            }
        }
    }
    Ok(state)
}

/// What [`append_each`] stored: each record's position (`None`: it did not land) and
/// the stream whose append failed, with what the log said.
#[derive(Debug, Default)]
pub(crate) struct Stored {
    /// One entry per input record, in input order.
    pub positions: Vec<Option<Appended>>,
    /// The stream whose append failed (the streams after it were not attempted).
    pub failure: Option<(Stream, crate::log::LogError)>,
    /// Streams not attempted because an earlier one failed.
    pub skipped: Vec<Stream>,
    /// The streams written as one unit that failed as one (the log writes streams
    /// atomically): nothing of the batch landed.
    pub atomic: Vec<Stream>,
}

impl Stored {
    /// Whether every record landed.
    pub fn complete(&self) -> bool {
        self.failure.is_none()
    }

    /// The failure in one line, for answers and logs.
    pub fn reason(&self) -> String {
        let Some((stream, e)) = &self.failure else {
            return String::new();
        };
        if !self.atomic.is_empty() {
            let names: Vec<String> = self.atomic.iter().map(|s| s.to_string()).collect();
            return format!(
                "{e} (one write across {}: nothing stored)",
                names.join(", ")
            );
        }
        let mut reason = format!("{stream}: {e}");
        if !self.skipped.is_empty() {
            let names: Vec<String> = self.skipped.iter().map(|s| s.to_string()).collect();
            reason.push_str(&format!(" (not attempted after it: {})", names.join(", ")));
        }
        reason
    }
}

/// The order in which a batch's streams are appended: what other events presuppose
/// comes first (a Volk before packets to it, a session before its packets, a
/// governance decision before what it allowed), and `kernel.events` — whose
/// `command_applied` tells a streamed command's issuer it is done — last.
const APPEND_ORDER: [Stream; 6] = [
    Stream::GovernanceDecisions,
    Stream::VolkLifecycle,
    Stream::SessionEvents,
    Stream::WorkflowEvents,
    Stream::CxpTraffic,
    Stream::KernelEvents,
];

fn rank(stream: Stream) -> usize {
    APPEND_ORDER
        .iter()
        .position(|s| *s == stream)
        .unwrap_or(APPEND_ORDER.len())
}

/// Appends `records` (any mix of streams): one contiguous batch per stream. The answer
/// says exactly which records landed.
///
/// On a log whose streams are written atomically ([`EventLog::atomic_streams`], sled)
/// the whole batch is one write: every record lands, or none does. Otherwise the
/// streams are appended one after another in [`APPEND_ORDER`], stopping at the first
/// that fails; that order is what keeps a failure from leaving events in the log whose
/// premises in an earlier stream are missing.
pub(crate) async fn append_each(log: &Arc<dyn EventLog>, records: &[EventRecord]) -> Stored {
    let mut by_stream = crate::log::by_stream(records);
    by_stream.sort_by_key(|(s, _)| rank(*s));
    let mut stored = Stored {
        positions: vec![None; records.len()],
        ..Stored::default()
    };
    if log.atomic_streams() && by_stream.len() > 1 {
        // One write: the order of the streams within it does not matter.
        match log.append_streams(records).await {
            Ok(sequences) => {
                for (i, sequence) in sequences.into_iter().enumerate() {
                    stored.positions[i] = Some(Appended {
                        stream: records[i].stream(),
                        sequence,
                        event_type: records[i].event_type(),
                    });
                }
            }
            Err(e) => {
                stored.atomic = by_stream.iter().map(|(s, _)| *s).collect();
                if let Some(first) = stored.atomic.first() {
                    stored.failure = Some((*first, e));
                }
            }
        }
        return stored;
    }
    for (stream, idx) in by_stream {
        if stored.failure.is_some() {
            stored.skipped.push(stream);
            continue;
        }
        let batch: Vec<EventRecord> = idx.iter().map(|&i| records[i].clone()).collect();
        match log.append_batch(&batch).await {
            Ok(first) => {
                for (k, &i) in idx.iter().enumerate() {
                    stored.positions[i] = Some(Appended {
                        stream,
                        sequence: first + k as u64,
                        event_type: records[i].event_type(),
                    });
                }
            }
            Err(e) => stored.failure = Some((stream, e)),
        }
    }
    stored
}

/// Appends `records` like [`append_each`]; `Err` with the failure if a stream failed
/// (the records of the streams before it landed).
pub async fn append_all(
    log: &Arc<dyn EventLog>,
    records: &[EventRecord],
) -> Result<Vec<Appended>, crate::log::LogError> {
    let stored = append_each(log, records).await;
    if let Some((_, e)) = stored.failure {
        return Err(e);
    }
    Ok(stored.positions.into_iter().flatten().collect())
}
