//! `gateway.replay`: a topic's history, read from the log (not a copy).
//!
//! Selection, in order of precedence:
//! - `sequence_from` / `sequence_to`: that inclusive range (gap fill);
//! - `since` / `until`: events whose timestamp lies in that range;
//! - `count`: with neither of the above, the last `count` matching events; otherwise at
//!   most `count` events from the start of the range.
//!
//! `filters` are the live subscription filters. Events come oldest first. The result
//! holds `total_matched` (matches in the scanned range), `buffer_range` (the log's
//! oldest and newest sequence of the topic) and `epoch`. A scan reads at most
//! `max_replay_scan` events; when it stops early `scan_truncated` is true and
//! `next_sequence` says where to continue. An explicit `sequence_from..sequence_to`
//! range larger than that budget is refused up front with -32003 `replay_scan_budget`.
//!
//! Filters match each event on its facts (REQ-014-129: the same filters as live
//! subscriptions); a packet transition's sender, recipient and subject come from the
//! packet index view, which the replay first waits to have folded as far as the events
//! it filters. The answer is therefore a function of the log alone — the same for the
//! same request whatever was replayed or subscribed before — and an old range's
//! transitions match a `volk_id` filter as well as recent ones (-32603 `view_lagging`
//! if the index cannot get there within `topic::facts::CATCH_UP`).

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::{json, Value};

use super::subscribe::{authorize_topic, parse_topic};
use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::gateway::topic::event::TopicEvent;
use crate::gateway::topic::facts::Facts;
use crate::gateway::topic::filter::Filter;
use crate::projection::ProjectionError;

/// Most events one replay answer carries.
pub const MAX_EVENTS: usize = 10_000;
const CHUNK: usize = 1000;

#[derive(Debug, Deserialize)]
struct ReplayParams {
    topic: String,
    since: Option<DateTime<Utc>>,
    until: Option<DateTime<Utc>>,
    count: Option<usize>,
    sequence_from: Option<u64>,
    sequence_to: Option<u64>,
    filters: Option<Value>,
    max_payload_size: Option<u64>,
}

fn bad_range(detail: &str, field: &str) -> RpcError {
    RpcError::invalid_params("invalid_range", detail).with("field", field)
}

/// Answers `gateway.replay`.
pub async fn replay(call: Call) -> RpcResult {
    let p: ReplayParams = call.parse()?;
    let stream = parse_topic(&p.topic)?;
    // Same scope check, same recorded decision as a live subscription.
    authorize_topic(&call.gw, &call.client, stream).await?;
    let filter = Filter::parse(p.filters.as_ref())?;
    let max = p
        .max_payload_size
        .map(|m| usize::try_from(m).unwrap_or(usize::MAX));
    if let (Some(a), Some(b)) = (p.sequence_from, p.sequence_to) {
        if a > b {
            return Err(bad_range(
                "sequence_from is after sequence_to",
                "params.sequence_from",
            ));
        }
    }
    if let (Some(a), Some(b)) = (p.since, p.until) {
        if a > b {
            return Err(bad_range("since is after until", "params.since"));
        }
    }
    let log = &call.gw.services.log;
    let internal = |e: crate::log::LogError| RpcError::internal("log_unavailable", e);
    let bounds = log.bounds(stream).await.map_err(internal)?;
    let epoch = log.epoch(stream).await.map_err(internal)?;
    let range = json!({"oldest_sequence": bounds.first, "newest_sequence": bounds.last});
    let empty = |events: Vec<Value>| {
        json!({"topic": stream.as_str(), "events": events, "total_matched": 0,
               "buffer_range": range.clone(), "epoch": epoch.clone()})
    };
    let (Some(first), Some(last)) = (bounds.first, bounds.last) else {
        return Ok(empty(Vec::new()));
    };
    let lo = p.sequence_from.map_or(first, |s| s.max(first));
    let hi = p.sequence_to.map_or(last, |s| s.min(last));
    if lo > hi {
        return Ok(empty(Vec::new()));
    }
    let budget = call.gw.config.max_replay_scan;
    // `lo <= hi` here; the width saturates (a range of every u64 does not overflow).
    let width = (hi - lo).saturating_add(1);
    if p.sequence_from.is_some() && p.sequence_to.is_some() && width > budget {
        return Err(RpcError::new(
            crate::gateway::error::ErrorCode::BudgetExceeded,
            "replay_scan_budget",
        )
        .with(
            "detail",
            format!("the range holds {width} events; one replay reads at most {budget}: split it"),
        )
        .with("max_scan", budget));
    }
    let by_time = |e: &TopicEvent| {
        let ts = e.envelope.record.timestamp;
        p.since.is_none_or(|s| ts >= s) && p.until.is_none_or(|u| ts <= u)
    };
    let limit = p.count.unwrap_or(MAX_EVENTS).min(MAX_EVENTS);
    let newest_first =
        p.count.is_some() && p.sequence_from.is_none() && p.since.is_none() && p.until.is_none();
    let mut matched: Vec<TopicEvent> = Vec::new();
    let mut total = 0u64;
    let mut scanned = 0u64;
    let mut next_sequence: Option<u64> = None;
    if newest_first {
        // Walk back from the end until `count` matches are found.
        let mut end = hi;
        loop {
            let start = end.saturating_sub(CHUNK as u64 - 1).max(lo);
            let chunk = log
                .read(stream, start, Some(end), CHUNK)
                .await
                .map_err(internal)?;
            scanned += chunk.len() as u64;
            let facts = facts_of_chunk(&call, &chunk).await?;
            for (envelope, facts) in chunk.into_iter().zip(facts).rev() {
                let Ok(event) = TopicEvent::new(envelope, facts) else {
                    continue;
                };
                if matched.len() < limit && filter.matches(&event.facts) {
                    matched.push(event);
                }
            }
            if matched.len() >= limit || start == lo {
                break;
            }
            if scanned >= budget {
                next_sequence = Some(start.saturating_sub(1));
                break;
            }
            end = start - 1;
        }
        matched.reverse();
        total = matched.len() as u64;
    } else {
        let mut next = lo;
        while next <= hi {
            if scanned >= budget {
                next_sequence = Some(next);
                break;
            }
            let chunk = log
                .read(stream, next, Some(hi), CHUNK)
                .await
                .map_err(internal)?;
            let Some(tail) = chunk.last() else { break };
            let Some(after) = tail.sequence.checked_add(1) else {
                break;
            };
            next = after;
            scanned += chunk.len() as u64;
            let facts = facts_of_chunk(&call, &chunk).await?;
            for (envelope, facts) in chunk.into_iter().zip(facts) {
                let Ok(event) = TopicEvent::new(envelope, facts) else {
                    continue;
                };
                if by_time(&event) && filter.matches(&event.facts) {
                    total += 1;
                    if matched.len() < limit {
                        matched.push(event);
                    }
                }
            }
        }
    }
    let events: Vec<Value> = matched.iter().map(|e| e.params(max)).collect();
    let mut result = json!({
        "topic": stream.as_str(),
        "events": events,
        "total_matched": total,
        "buffer_range": range,
        "epoch": epoch,
    });
    if let Some(n) = next_sequence {
        result["scan_truncated"] = json!(true);
        result["next_sequence"] = json!(n);
    }
    Ok(result)
}

/// The filter facts of `chunk`, once the packet index has folded as far as it.
// ISSUE-15: filters are a function of the log
async fn facts_of_chunk(
    call: &Call,
    chunk: &[orchestrata_schemas::events::Envelope],
) -> Result<Vec<Facts>, RpcError> {
    call.gw
        .index
        .facts_all(chunk, crate::gateway::topic::facts::CATCH_UP)
        .await
        .map_err(|e: ProjectionError| RpcError::internal("view_lagging", e))
}
