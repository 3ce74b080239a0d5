//! From a text frame to its response, in two steps.
//!
//! [`prepare`] runs in the connection's reader, one frame after another in arrival
//! order: framing ([`super::rpc`]), the rate limit ([`super::rate_limit`], one token per
//! call, so each element of a batch takes its own; calls over the limit answer -32002
//! without running) and whether the frame must run alone (see [`super::inflight`]).
//! [`run`] then answers it, possibly beside other frames of the same connection: the
//! authentication gate, method lookup, scope check, params validation, handler. The
//! members of a batch run concurrently and are answered as one array, in request
//! order, once all are done — except in a batch that must run alone, whose members run
//! one after another as written (so `[auth.authenticate, cxp.send]` works).

use std::sync::{Arc, Mutex};
use std::time::Instant;

use futures::future::BoxFuture;
use serde_json::Value;

use super::authz;
use super::client::Client;
use super::error::{ErrorCode, RpcError};
use super::methods;
use super::rate_limit;
use super::rpc::{self, Frame, Request};
use super::state::{Call, Shared};

/// Methods that change the connection's own state (its authentication, its
/// subscriptions). A frame holding one runs alone: after everything read before it
/// has finished, and before anything read after it starts.
pub const RUN_ALONE: &[&str] = &[
    "auth.authenticate",
    "gateway.subscribe",
    "cxp.subscribe",
    "gateway.unsubscribe",
    "cxp.unsubscribe",
];

/// The response text for a frame (if any) and work to run once it is queued.
pub struct Outcome {
    /// The response frame; `None` for notifications and all-notification batches.
    pub response: Option<String>,
    /// Follow-ups of the calls (e.g. making subscriptions live).
    pub after: Vec<BoxFuture<'static, ()>>,
}

/// One message of a frame after framing and the rate limit.
enum Item {
    /// Not a valid request: answered with this error (`id` as far as it could be read).
    Invalid(Value, RpcError),
    /// Over the rate limit: answered -32002 without running (nothing for a
    /// notification).
    Limited(Option<Value>, RpcError),
    /// Admitted: it runs.
    Admitted(Request),
}

enum Shape {
    Reject(RpcError),
    Single(Item),
    Batch(Vec<Item>),
}

/// A frame read, rate-limited and classified, not yet run.
pub struct Prepared {
    shape: Shape,
    /// Whether it must run alone: the client is not authenticated yet, or it calls a
    /// [`RUN_ALONE`] method.
    pub alone: bool,
    /// How many calls it runs (its share of `max_in_flight_per_connection`), at
    /// least 1.
    pub weight: usize,
}

/// Frames, rate-limits and classifies one text frame. Call in arrival order: the rate
/// limit's tokens are taken here.
pub fn prepare(gw: &Shared, client: &Client, text: &str) -> Prepared {
    let admit = |parsed: Result<Request, (Value, RpcError)>| match parsed {
        Err((id, error)) => Item::Invalid(id, error),
        Ok(request) => match rate_limit(gw, client) {
            Ok(()) => Item::Admitted(request),
            Err(error) => Item::Limited(request.id, error),
        },
    };
    let shape = match rpc::parse_frame(text, gw.config.max_batch) {
        Frame::Reject(error) => Shape::Reject(error),
        Frame::Single(item) => Shape::Single(admit(item)),
        Frame::Batch(items) => Shape::Batch(items.into_iter().map(admit).collect()),
    };
    let items: &[Item] = match &shape {
        Shape::Reject(_) => &[],
        Shape::Single(item) => std::slice::from_ref(item),
        Shape::Batch(items) => items,
    };
    let changes_connection = items
        .iter()
        .any(|i| matches!(i, Item::Admitted(r) if RUN_ALONE.contains(&r.method.as_str())));
    let admitted = items
        .iter()
        .filter(|i| matches!(i, Item::Admitted(_)))
        .count();
    Prepared {
        alone: changes_connection || client.scope().is_none(),
        weight: admitted.max(1),
        shape,
    }
}

/// Answers a prepared frame.
pub async fn run(gw: Arc<Shared>, client: Arc<Client>, frame: Prepared) -> Outcome {
    let after = Arc::new(Mutex::new(Vec::new()));
    let response = match frame.shape {
        Shape::Reject(error) => Some(rpc::failure(Value::Null, &error)),
        Shape::Single(item) => answer(&gw, &client, item, &after).await,
        Shape::Batch(items) => {
            let answers: Vec<Option<Value>> = if frame.alone {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    out.push(answer(&gw, &client, item, &after).await);
                }
                out
            } else {
                let calls = items
                    .into_iter()
                    .map(|item| answer(&gw, &client, item, &after));
                futures::future::join_all(calls).await
            };
            let out: Vec<Value> = answers.into_iter().flatten().collect();
            (!out.is_empty()).then_some(Value::Array(out))
        }
    };
    let after = std::mem::take(&mut *after.lock().unwrap_or_else(|e| e.into_inner()));
    Outcome {
        response: response.map(|v| v.to_string()),
        after,
    }
}

/// Handles one text frame at once: [`prepare`] then [`run`].
pub async fn handle_frame(gw: &Arc<Shared>, client: &Arc<Client>, text: &str) -> Outcome {
    let frame = prepare(gw, client, text);
    run(gw.clone(), client.clone(), frame).await
}

async fn answer(
    gw: &Arc<Shared>,
    client: &Arc<Client>,
    item: Item,
    after: &Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
) -> Option<Value> {
    let request = match item {
        Item::Invalid(id, error) => return Some(rpc::failure(id, &error)),
        Item::Limited(id, error) => return id.map(|id| rpc::failure(id, &error)),
        Item::Admitted(r) => r,
    };
    let started = Instant::now();
    let method = request.method.clone();
    let result = call(gw, client, request.method, request.params, after).await;
    if let Some(row) = methods::find(&method) {
        gw.metrics
            .rpc_latency
            .with_label_values(&[row.name])
            .observe(started.elapsed().as_secs_f64());
    }
    let id = request.id?;
    Some(match result {
        Ok(value) => rpc::success(id, value),
        Err(error) => rpc::failure(id, &error),
    })
}

/// Takes one token from the client's bucket; -32002 `rate_limited` with
/// `data.retry_after_ms` (time until the next token) when it is empty.
fn rate_limit(gw: &Shared, client: &Client) -> Result<(), RpcError> {
    let taken = client.lock().bucket.try_take(Instant::now());
    taken.map_err(|wait| {
        RpcError::new(ErrorCode::RateLimited, "rate_limited")
            .with("retry_after_ms", rate_limit::retry_after_ms(wait))
            .with("limit_per_second", gw.config.rate_limit_per_second)
    })
}

async fn call(
    gw: &Arc<Shared>,
    client: &Arc<Client>,
    name: String,
    params: Value,
    after: &Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
) -> Result<Value, RpcError> {
    let row = methods::find(&name);
    let scope = client.scope();
    let mut audit = None;
    let row = match (row, scope) {
        (Some(row), _) if row.scope.is_none() => row,
        (_, None) => return Err(RpcError::authentication_required()),
        (None, Some(_)) => {
            return Err(RpcError::new(ErrorCode::MethodNotFound, "method_not_found")
                .with(
                    "detail",
                    format!("no method `{name}`; see gateway.info capabilities"),
                )
                .with("method", name))
        }
        (Some(row), Some(have)) => {
            if let Some(need) = row.scope {
                audit = authz::decide(
                    gw,
                    client.id(),
                    have,
                    need,
                    row.name,
                    "gateway",
                    row.mutates,
                )
                .await?;
            }
            row
        }
    };
    // A call that acts through a kernel command has its audit record appended in that
    // command's batch (one append per call); any other call appends it before it acts.
    if !(row.via_kernel() && gw.services.kernel.is_some()) {
        if let Some(record) = audit.take() {
            gw.append(&record).await?;
        }
    }
    let pending = Arc::new(Mutex::new(audit));
    let answer = match gw.schemas.validate(row.name, &params) {
        Ok(()) => {
            let call = Call::new(gw.clone(), client.clone(), params, after.clone())
                .of_method(row.name)
                .with_audit(pending.clone());
            (row.handler)(call).await
        }
        Err(e) => Err(e),
    };
    // Refused before it issued its command: the allow is still recorded.
    let unused = pending.lock().unwrap_or_else(|e| e.into_inner()).take();
    if let Some(record) = unused {
        if let Err(e) = gw.append(&record).await {
            tracing::warn!(client = %client.id(), method = row.name, error = %e.reason, "cannot record the audit of a call that issued no command");
        }
    }
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-15: concurrent requests — every method that runs alone is in the table
    #[test]
    fn run_alone_methods_exist() {
        for name in RUN_ALONE {
            assert!(methods::find(name).is_some(), "{name} is no method");
        }
    }
}
