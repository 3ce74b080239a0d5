//! `gateway.subscribe`, `cxp.subscribe`, `gateway.unsubscribe`, `cxp.unsubscribe`.
//!
//! Resume protocol: a client that saw events up to `(epoch, sequence)` subscribes with
//! `since: {epoch, sequence}`. The gateway answers with the subscription id, then
//! replays the topic from the log starting at `sequence + 1` up to where its live tail
//! is, then continues live — no gap, no duplicate (see [`crate::gateway::topic::hub`]).
//! The replay is paced by the client (it waits for room in the client's outbox); live
//! events that arrive meanwhile are buffered in the pending subscription.
//!
//! Limits: at most `max_subscriptions_per_client` (50) live subscriptions per client;
//! one more answers -32602 `subscription_limit` with `data.current_count` and
//! `data.max` (REQ-014-194, REQ-014-195, ERR-005). A duplicate (same topic, filters and
//! `max_payload_size`) returns the existing id and does not count.
//! A different epoch means the log was recreated and the position is void: -32602
//! `epoch_mismatch` with the current epoch. A position older than the log retains:
//! -32602 `position_truncated` with the first retained sequence; a position past the
//! log's end (a client cannot have seen it) -32602 `position_ahead`.

use std::sync::Arc;

use serde::Deserialize;
use serde_json::{json, Value};
use uuid::Uuid;

use crate::gateway::authz;
use crate::gateway::client::SubscriptionRecord;
use crate::gateway::error::{ErrorCode, RpcError};
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;
use crate::gateway::topic::event::TopicEvent;
use crate::gateway::topic::filter::Filter;
use crate::gateway::topic::topic_scope;
use orchestrata_schemas::events::Stream;

/// Events read from the log per request while replaying a resume.
const REPLAY_CHUNK: usize = 512;

/// A resume position.
#[derive(Debug, Clone, Deserialize)]
pub struct Since {
    /// The stream epoch the client saw.
    pub epoch: String,
    /// The last sequence the client saw.
    pub sequence: u64,
}

#[derive(Debug, Deserialize)]
struct SubscribeParams {
    topic: Option<String>,
    filters: Option<Value>,
    max_payload_size: Option<u64>,
    since: Option<Since>,
}

#[derive(Debug, Deserialize)]
struct UnsubscribeParams {
    subscription_id: String,
}

/// Parses a topic name (-32602 `unknown_topic`).
pub fn parse_topic(name: &str) -> Result<Stream, RpcError> {
    name.parse::<Stream>()
        .ok()
        .filter(|s| topic_scope(*s).is_some())
        .ok_or_else(|| {
            RpcError::invalid_params("unknown_topic", format!("`{name}` is not a topic"))
                .with("field", "params.topic")
        })
}

/// `gateway.subscribe {topic, filters?, max_payload_size?, since?}`.
pub async fn subscribe(call: Call) -> RpcResult {
    let p: SubscribeParams = call.parse()?;
    let topic = p.topic.as_deref().unwrap_or_default();
    let stream = parse_topic(topic)?;
    open(call, stream, p).await
}

/// `cxp.subscribe {filters?, max_payload_size?, since?}`: `gateway.subscribe` on
/// `cxp.traffic`.
pub async fn cxp_subscribe(call: Call) -> RpcResult {
    let p: SubscribeParams = call.parse()?;
    open(call, Stream::CxpTraffic, p).await
}

/// The one topic-scope check of `gateway.subscribe`, `cxp.subscribe` and
/// `gateway.replay`: the caller's scope must cover the topic's scope in the contract's
/// `event_topics` ([`topic_scope`]), asked through [`authz::decide`] as
/// `subscribe:<topic>` and recorded on `governance.decisions` either way. A denial
/// answers -32001 `insufficient_scope`, an unauthenticated caller -32001
/// `authentication_required`, a stream that is no topic -32602 `unknown_topic`.
///
/// Reading history is reading the topic: replay must not show a client what a live
/// subscription would refuse it.
pub async fn authorize_topic(
    gw: &crate::gateway::state::Shared,
    client: &crate::gateway::client::Client,
    stream: Stream,
) -> Result<(), RpcError> {
    let need = topic_scope(stream)
        .ok_or_else(|| RpcError::invalid_params("unknown_topic", format!("`{stream}`")))?;
    let have = client
        .scope()
        .ok_or_else(RpcError::authentication_required)?;
    let allowed = authz::decide(
        gw,
        client.id(),
        have,
        need,
        &format!("subscribe:{stream}"),
        stream.as_str(),
        true,
    )
    .await?;
    if let Some(record) = allowed {
        gw.append(&record).await?;
    }
    Ok(())
}

async fn open(call: Call, stream: Stream, p: SubscribeParams) -> RpcResult {
    let gw = call.gw.clone();
    let client = call.client.clone();
    authorize_topic(&gw, &client, stream).await?;
    let filter = Arc::new(Filter::parse(p.filters.as_ref())?);
    let max = p
        .max_payload_size
        .map(|m| usize::try_from(m).unwrap_or(usize::MAX));
    let canonical = format!("{stream}|{}|{max:?}", filter.canonical());
    let hub = gw.hub(stream)?.clone();
    {
        let st = client.lock();
        if let Some((id, _)) = st
            .subscriptions
            .iter()
            .find(|(_, r)| r.canonical == canonical)
        {
            return Ok(json!({
                "subscription_id": id,
                "topic": stream.as_str(),
                "filters": filter.summary(),
                "duplicate": true,
                "epoch": hub.epoch,
            }));
        }
        if st.subscriptions.len() >= gw.config.max_subscriptions_per_client {
            return Err(
                RpcError::new(ErrorCode::InvalidParams, "subscription_limit")
                    .with(
                        "detail",
                        format!(
                            "at most {} subscriptions per client",
                            gw.config.max_subscriptions_per_client
                        ),
                    )
                    .with("current_count", st.subscriptions.len())
                    .with("max", gw.config.max_subscriptions_per_client),
            );
        }
    }
    let skip_below = match &p.since {
        // Live from now: whatever the log holds already is history, even if the hub's
        // tail has not pushed it yet.
        None => gw
            .services
            .log
            .bounds(stream)
            .await
            .map_err(|e| RpcError::internal("log_unavailable", e))?
            .next(),
        Some(since) => {
            if since.epoch != hub.epoch {
                return Err(RpcError::invalid_params(
                    "epoch_mismatch",
                    "the log was recreated since this position was saved; the position is void. \
                     Subscribe without `since` (and use gateway.replay for history).",
                )
                .with("epoch", hub.epoch.clone())
                .with("field", "params.since.epoch"));
            }
            let bounds = gw
                .services
                .log
                .bounds(stream)
                .await
                .map_err(|e| RpcError::internal("log_unavailable", e))?;
            let first = bounds.first;
            let from = since.sequence.saturating_add(1);
            // A position past the log's end cannot have been seen; accepting it would
            // silently skip every event up to it (e.g. 2^64 - 1: all of them).
            if from > bounds.next() {
                return Err(RpcError::invalid_params(
                    "position_ahead",
                    format!(
                        "sequence {} is past the end of the log (next sequence {})",
                        since.sequence,
                        bounds.next()
                    ),
                )
                .with("next_sequence", bounds.next())
                .with("field", "params.since.sequence"));
            }
            if let Some(first) = first {
                if from < first {
                    return Err(RpcError::invalid_params(
                        "position_truncated",
                        format!("events from {from} are no longer retained; the oldest is {first}"),
                    )
                    .with("first_sequence", first)
                    .with("field", "params.since.sequence"));
                }
            }
            from
        }
    };
    let id = format!("sub-{}", Uuid::new_v4().simple());
    client.lock().subscriptions.insert(
        id.clone(),
        SubscriptionRecord {
            topic: stream,
            canonical,
            filters: filter.summary(),
            max_payload_size: max,
        },
    );
    let origin = hub.origin(id.clone());
    let live_from = hub.add(
        client.handle.clone(),
        origin.clone(),
        filter.clone(),
        max,
        skip_below,
    );
    let resuming = p.since.is_some();
    {
        let gw = gw.clone();
        let id = id.clone();
        let handle = client.handle.clone();
        let filter = filter.clone();
        call.after_response(Box::pin(async move {
            if resuming && skip_below < live_from {
                let mut next = skip_below;
                while next < live_from {
                    let chunk = match gw
                        .services
                        .log
                        .read(stream, next, Some(live_from - 1), REPLAY_CHUNK)
                        .await
                    {
                        Ok(chunk) if !chunk.is_empty() => chunk,
                        Ok(_) => break,
                        Err(e) => {
                            tracing::warn!(topic = %stream, error = %e, "resume replay failed");
                            handle.request_close(1011, "resume_failed");
                            return;
                        }
                    };
                    // ISSUE-15: filters are a function of the log
                    let facts = match gw
                        .index
                        .facts_all(&chunk, crate::gateway::topic::facts::CATCH_UP)
                        .await
                    {
                        Ok(facts) => facts,
                        Err(e) => {
                            tracing::warn!(topic = %stream, error = %e, "resume replay: packet index lags");
                            handle.request_close(1011, "resume_failed");
                            return;
                        }
                    };
                    for (envelope, facts) in chunk.into_iter().zip(facts) {
                        next = envelope.sequence + 1;
                        let Ok(event) = TopicEvent::new(envelope, facts) else {
                            continue;
                        };
                        if filter.matches(&event.facts)
                            && !handle
                                .outbox
                                .push_event_wait(event.frame_for(max), event.sequence, &origin)
                                .await
                        {
                            return;
                        }
                    }
                }
            }
            hub.go_live(&handle.id, &id);
        }));
    }
    let mut result = json!({
        "subscription_id": id,
        "topic": stream.as_str(),
        "filters": filter.summary(),
        "epoch": hub_epoch(&gw, stream),
        "live_from_sequence": live_from,
    });
    if let Some(since) = &p.since {
        result["resumed_from_sequence"] = json!(since.sequence.saturating_add(1));
    }
    if let Some(m) = max {
        result["max_payload_size"] = json!(m);
    }
    Ok(result)
}

fn hub_epoch(gw: &crate::gateway::state::Shared, stream: Stream) -> String {
    gw.hubs
        .get(&stream)
        .map(|h| h.epoch.clone())
        .unwrap_or_default()
}

/// `gateway.unsubscribe` / `cxp.unsubscribe {subscription_id}`; unknown ids answer
/// -32602 `unknown_subscription`.
pub async fn unsubscribe(call: Call) -> RpcResult {
    let p: UnsubscribeParams = call.parse()?;
    let record = call.client.lock().subscriptions.remove(&p.subscription_id);
    let Some(record) = record else {
        return Err(RpcError::invalid_params(
            "unknown_subscription",
            format!("no subscription `{}` on this connection", p.subscription_id),
        )
        .with("field", "params.subscription_id"));
    };
    if let Some(hub) = call.gw.hubs.get(&record.topic) {
        hub.remove(call.client.id(), &p.subscription_id);
    }
    Ok(json!({ "unsubscribed": true, "subscription_id": p.subscription_id }))
}
