//! JSON-RPC 2.0 framing: one text frame in, zero or one text frame out.
//!
//! A frame holds one request or a batch (a JSON array). Requests without an `id` (or
//! with `"id": null`, as the contract allows) are notifications: they run, but get no
//! response. A batch of notifications gets no frame at all. Framing errors are answered
//! with `id: null` unless the id could be read.

use serde_json::{json, Map, Value};

use super::error::{ErrorCode, RpcError};

/// One well-formed request.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// `None` for a notification (no response is sent).
    pub id: Option<Value>,
    /// The method name, e.g. `gateway.ping`.
    pub method: String,
    /// The params (`null` when absent).
    pub params: Value,
}

/// What a frame turned out to be.
#[derive(Debug)]
pub enum Frame {
    /// A single message: a request, or the error that answers it.
    Single(Result<Request, (Value, RpcError)>),
    /// A batch: each element a request or the error answering it.
    Batch(Vec<Result<Request, (Value, RpcError)>>),
    /// An answer for the whole frame (parse error, empty or oversized batch).
    Reject(RpcError),
}

/// Splits a text frame into requests; `max_batch` bounds a batch's length.
pub fn parse_frame(text: &str, max_batch: usize) -> Frame {
    let value: Value = match serde_json::from_str(text) {
        Ok(v) => v,
        Err(e) => {
            return Frame::Reject(
                RpcError::new(ErrorCode::ParseError, "invalid_json")
                    .with("detail", format!("not JSON: {e}")),
            )
        }
    };
    match value {
        Value::Array(items) if items.is_empty() => Frame::Reject(
            RpcError::new(ErrorCode::InvalidRequest, "empty_batch")
                .with("detail", "a batch must hold at least one request"),
        ),
        Value::Array(items) if items.len() > max_batch => Frame::Reject(
            RpcError::new(ErrorCode::InvalidRequest, "batch_too_large")
                .with(
                    "detail",
                    format!(
                        "a batch holds at most {max_batch} requests; this one has {}",
                        items.len()
                    ),
                )
                .with("max_batch", max_batch)
                .with("batch_size", items.len()),
        ),
        Value::Array(items) => Frame::Batch(items.into_iter().map(parse_request).collect()),
        other => Frame::Single(parse_request(other)),
    }
}

fn invalid(id: Value, field: &str, detail: String) -> (Value, RpcError) {
    (
        id,
        RpcError::new(ErrorCode::InvalidRequest, "invalid_request")
            .with("field", field)
            .with("detail", detail),
    )
}

/// Checks one message against the JSON-RPC 2.0 request shape.
pub fn parse_request(value: Value) -> Result<Request, (Value, RpcError)> {
    let Value::Object(mut map) = value else {
        return Err(invalid(
            Value::Null,
            "request",
            "a request must be a JSON object".into(),
        ));
    };
    let id = match map.remove("id") {
        None | Some(Value::Null) => None,
        Some(v @ Value::String(_)) => Some(v),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(_) => {
            return Err(invalid(
                Value::Null,
                "id",
                "`id` must be a string, an integer or null".into(),
            ))
        }
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    match map.remove("jsonrpc") {
        Some(Value::String(v)) if v == "2.0" => {}
        _ => {
            return Err(invalid(
                answer_id,
                "jsonrpc",
                "`jsonrpc` must be exactly \"2.0\"".into(),
            ))
        }
    }
    let method = match map.remove("method") {
        Some(Value::String(m)) if valid_method_name(&m) => m,
        Some(Value::String(m)) => {
            return Err(invalid(
                answer_id,
                "method",
                format!("`{m}` is not a namespaced method name like `gateway.ping`"),
            ))
        }
        _ => {
            return Err(invalid(
                answer_id,
                "method",
                "`method` must be a string".into(),
            ))
        }
    };
    let params = match map.remove("params") {
        None => Value::Null,
        Some(p @ (Value::Object(_) | Value::Array(_) | Value::Null)) => p,
        Some(_) => {
            return Err(invalid(
                answer_id,
                "params",
                "`params` must be an object, an array or null".into(),
            ))
        }
    };
    if let Some(extra) = map.keys().next() {
        return Err(invalid(
            answer_id,
            extra,
            format!("unknown member `{extra}` (allowed: jsonrpc, id, method, params)"),
        ));
    }
    Ok(Request { id, method, params })
}

/// `^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)+$`, checked by hand.
fn valid_method_name(name: &str) -> bool {
    let mut parts = 0;
    for part in name.split('.') {
        let mut chars = part.chars();
        match chars.next() {
            Some(c) if c.is_ascii_lowercase() => {}
            _ => return false,
        }
        if !chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_') {
            return false;
        }
        parts += 1;
    }
    parts >= 2
}

/// A success response.
pub fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn failure(id: Value, error: &RpcError) -> Value {
    let mut map = Map::new();
    map.insert("jsonrpc".into(), Value::String("2.0".into()));
    map.insert("id".into(), id);
    map.insert("error".into(), error.to_json());
    Value::Object(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn method_names() {
        assert!(valid_method_name("gateway.ping"));
        assert!(valid_method_name("session.portfolio.stats"));
        assert!(!valid_method_name("ping"));
        assert!(!valid_method_name("Gateway.ping"));
        assert!(!valid_method_name("gateway."));
    }
}
