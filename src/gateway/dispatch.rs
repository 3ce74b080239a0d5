//! From a text frame to its response: framing, authentication gate, rate limit, method
//! lookup, scope check, params validation, handler.
//!
//! The rate limit ([`super::rate_limit`]) is checked per call, so each element of a
//! batch takes its own token; calls over the limit answer -32002 without running.

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

/// The response text for a frame (if any) and work to run once it is queued.
pub struct Outcome {
    /// The response frame; `None` for notifications and all-notification batches.
    pub response: Option<String>,
    /// Follow-ups of the calls (e.g. making subscriptions live).
    pub after: Vec<BoxFuture<'static, ()>>,
}

/// Handles one text frame.
pub async fn handle_frame(gw: &Arc<Shared>, client: &Arc<Client>, text: &str) -> Outcome {
    let after = Arc::new(Mutex::new(Vec::new()));
    let response = match rpc::parse_frame(text, gw.config.max_batch) {
        Frame::Reject(error) => Some(rpc::failure(Value::Null, &error)),
        Frame::Single(item) => answer(gw, client, item, &after).await,
        Frame::Batch(items) => {
            let mut out = Vec::new();
            for item in items {
                if let Some(r) = answer(gw, client, item, &after).await {
                    out.push(r);
                }
            }
            (!out.is_empty()).then_some(Value::Array(out))
        }
    };
    let after = std::mem::take(&mut *after.lock().unwrap_or_else(|e| e.into_inner()));
    Outcome {
        response: response.map(|v| v.to_string()),
        after,
    }
}

async fn answer(
    gw: &Arc<Shared>,
    client: &Arc<Client>,
    item: Result<Request, (Value, RpcError)>,
    after: &Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
) -> Option<Value> {
    let request = match item {
        Ok(r) => r,
        Err((id, error)) => return Some(rpc::failure(id, &error)),
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
    rate_limit(gw, client)?;
    let row = methods::find(&name);
    let scope = client.scope();
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
                authz::decide(
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
    gw.schemas.validate(row.name, &params)?;
    let call = Call::new(gw.clone(), client.clone(), params, after.clone());
    (row.handler)(call).await
}
