//! Rebuilding the aggregate from the log, and appending a batch of records.

use std::sync::Arc;

use futures::future::try_join_all;
use orchestrata_schemas::events::{EventRecord, Stream};

use super::outcome::Appended;
use super::state::KernelState;
use super::KernelError;
use crate::log::EventLog;

/// The streams the aggregate folds, in fold order (sessions before the packets that
/// name them).
pub const FOLDED: [Stream; 5] = [
    Stream::VolkLifecycle,
    Stream::SessionEvents,
    Stream::WorkflowEvents,
    Stream::CxpTraffic,
    Stream::KernelEvents,
];

const PAGE: usize = 4096;

/// Folds every stored event of [`FOLDED`] into a fresh state.
pub async fn rebuild(
    log: &Arc<dyn EventLog>,
    max_retries: u32,
) -> Result<KernelState, KernelError> {
    let mut state = KernelState::new(max_retries);
    for stream in FOLDED {
        let Some(mut from) = log.first_sequence(stream).await? else {
            continue;
        };
        loop {
            let page = log.read(stream, from, None, PAGE).await?;
            let Some(last) = page.last().map(|e| e.sequence) else {
                break;
            };
            for envelope in &page {
                state.apply(&envelope.record);
            }
            from = last + 1;
        }
    }
    Ok(state)
}

/// Appends `records` (any mix of streams): one contiguous batch per stream, the
/// streams concurrently. Returns each record's position, in input order.
pub async fn append_all(
    log: &Arc<dyn EventLog>,
    records: &[EventRecord],
) -> Result<Vec<Appended>, crate::log::LogError> {
    let mut by_stream: Vec<(Stream, Vec<usize>)> = Vec::new();
    for (i, r) in records.iter().enumerate() {
        let stream = r.stream();
        match by_stream.iter_mut().find(|(s, _)| *s == stream) {
            Some((_, idx)) => idx.push(i),
            None => by_stream.push((stream, vec![i])),
        }
    }
    let batches: Vec<(Stream, Vec<usize>, Vec<EventRecord>)> = by_stream
        .into_iter()
        .map(|(s, idx)| {
            let batch = idx.iter().map(|&i| records[i].clone()).collect();
            (s, idx, batch)
        })
        .collect();
    let firsts = try_join_all(batches.iter().map(|(_, _, batch)| log.append_batch(batch))).await?;
    let mut out = vec![
        Appended {
            stream: Stream::KernelEvents,
            sequence: 0,
            event_type: "",
        };
        records.len()
    ];
    for ((stream, idx, _), first) in batches.iter().zip(firsts) {
        for (k, &i) in idx.iter().enumerate() {
            out[i] = Appended {
                stream: *stream,
                sequence: first + k as u64,
                event_type: records[i].event_type(),
            };
        }
    }
    Ok(out)
}
