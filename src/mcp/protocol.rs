//! MCP framing on stdio: JSON-RPC 2.0 messages, one per line (no embedded newlines),
//! and protocol-version negotiation.
//!
//! The client writes requests (`id` + `method`), notifications (`method`, no `id`) and
//! responses to requests the server made (this server makes none, so they are ignored).
//! A line that is not JSON answers `-32700` with a null id; a JSON value that is not a
//! message answers `-32600` naming the offending field. JSON-RPC batches were removed
//! from MCP in 2025-06-18 and are refused.

use serde_json::{json, Value};

/// The protocol revisions this server speaks, newest first. `initialize` echoes the
/// client's revision when it is one of these, else offers the newest.
pub const PROTOCOL_VERSIONS: &[&str] = &["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The revision to answer a client that asked for `requested`.
pub fn negotiate(requested: &str) -> &'static str {
    PROTOCOL_VERSIONS
        .iter()
        .find(|v| **v == requested)
        .copied()
        .unwrap_or(PROTOCOL_VERSIONS[0])
}

/// A JSON-RPC error the server answers with: code, message and optional `data`.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message} ({code})")]
pub struct ProtocolError {
    /// JSON-RPC error code.
    pub code: i64,
    /// Human-readable message naming what was wrong.
    pub message: String,
    /// Structured detail (`field`, `reason`, …).
    pub data: Option<Value>,
}

impl ProtocolError {
    /// -32700: the line is not JSON.
    pub fn parse_error(detail: &str) -> Self {
        Self::new(-32700, format!("Parse error: {detail}"), None)
    }

    /// -32600: JSON, but not a valid message; `field` names what is wrong.
    pub fn invalid_request(field: &str, reason: &str) -> Self {
        Self::new(
            -32600,
            format!("Invalid request: `{field}` {reason}"),
            Some(json!({"field": field, "reason": reason})),
        )
    }

    /// -32601: no such MCP method.
    pub fn method_not_found(method: &str) -> Self {
        Self::new(
            -32601,
            format!("Method not found: `{method}` (this server implements initialize, ping, tools/list, tools/call)"),
            Some(json!({"method": method})),
        )
    }

    /// -32602: the params of a known method are wrong; `field` names the param.
    pub fn invalid_params(field: &str, reason: &str) -> Self {
        Self::new(
            -32602,
            format!("Invalid params: `{field}` {reason}"),
            Some(json!({"field": field, "reason": reason})),
        )
    }

    /// -32603: the server itself failed.
    pub fn internal(detail: impl Into<String>) -> Self {
        Self::new(-32603, format!("Internal error: {}", detail.into()), None)
    }

    /// Any code.
    pub fn new(code: i64, message: impl Into<String>, data: Option<Value>) -> Self {
        ProtocolError {
            code,
            message: message.into(),
            data,
        }
    }
}

/// One parsed line.
#[derive(Debug, Clone, PartialEq)]
pub enum Incoming {
    /// A request: answer it with the same `id`.
    Request {
        /// String or integer id.
        id: Value,
        /// MCP method, e.g. `tools/call`.
        method: String,
        /// Params, if any.
        params: Option<Value>,
    },
    /// A notification: never answered.
    Notification {
        /// MCP method, e.g. `notifications/initialized`.
        method: String,
    },
    /// A response to a server request (the server sends none; ignored).
    Response,
}

/// Parses one line. On failure returns the id to answer with (null when unknown) and
/// the error.
pub fn parse(line: &str) -> Result<Incoming, (Value, ProtocolError)> {
    let value: Value = serde_json::from_str(line)
        .map_err(|e| (Value::Null, ProtocolError::parse_error(&e.to_string())))?;
    let mut map = match value {
        Value::Object(map) => map,
        Value::Array(_) => {
            return Err((
                Value::Null,
                ProtocolError::invalid_request(
                    "message",
                    "is a batch; MCP messages are sent one per line",
                ),
            ))
        }
        _ => {
            return Err((
                Value::Null,
                ProtocolError::invalid_request("message", "must be a JSON object"),
            ))
        }
    };
    let id = match map.remove("id") {
        None => None,
        Some(v @ Value::String(_)) => Some(v),
        Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Some(Value::Number(n)),
        Some(_) => {
            return Err((
                Value::Null,
                ProtocolError::invalid_request("id", "must be a string or an integer"),
            ))
        }
    };
    let answer_id = id.clone().unwrap_or(Value::Null);
    if map.get("jsonrpc") != Some(&json!("2.0")) {
        return Err((
            answer_id,
            ProtocolError::invalid_request("jsonrpc", "must be exactly \"2.0\""),
        ));
    }
    let method = match map.remove("method") {
        Some(Value::String(m)) if !m.is_empty() => m,
        Some(_) => {
            return Err((
                answer_id,
                ProtocolError::invalid_request("method", "must be a non-empty string"),
            ))
        }
        None if id.is_some() && (map.contains_key("result") || map.contains_key("error")) => {
            return Ok(Incoming::Response)
        }
        None => {
            return Err((
                answer_id,
                ProtocolError::invalid_request("method", "is missing"),
            ))
        }
    };
    let params = map.remove("params");
    match id {
        Some(id) => Ok(Incoming::Request { id, method, params }),
        None => Ok(Incoming::Notification { method }),
    }
}

/// A success response.
pub fn success(id: Value, result: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "result": result})
}

/// An error response.
pub fn failure(id: Value, error: &ProtocolError) -> Value {
    let mut body = json!({"code": error.code, "message": error.message});
    if let Some(data) = &error.data {
        body["data"] = data.clone();
    }
    json!({"jsonrpc": "2.0", "id": id, "error": body})
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-014-204
    #[test]
    fn requests_notifications_and_responses_are_told_apart() {
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#),
            Ok(Incoming::Request {
                id: json!(1),
                method: "tools/list".into(),
                params: None
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#),
            Ok(Incoming::Notification {
                method: "notifications/initialized".into()
            })
        );
        assert_eq!(
            parse(r#"{"jsonrpc":"2.0","id":"a","result":{}}"#),
            Ok(Incoming::Response)
        );
    }

    // REQ-014-204
    #[test]
    fn malformed_lines_get_errors_that_name_the_field() {
        let (id, e) = parse("{not json").unwrap_err();
        assert_eq!((id, e.code), (Value::Null, -32700));
        let (_, e) = parse(r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#).unwrap_err();
        assert_eq!(e.code, -32600);
        assert!(e.message.contains("batch"), "{e}");
        let (id, e) = parse(r#"{"jsonrpc":"1.0","id":7,"method":"ping"}"#).unwrap_err();
        assert_eq!(id, json!(7));
        assert_eq!(e.data.expect("data")["field"], "jsonrpc");
        let (_, e) = parse(r#"{"jsonrpc":"2.0","id":[1],"method":"ping"}"#).unwrap_err();
        assert_eq!(e.data.expect("data")["field"], "id");
        let (_, e) = parse(r#"{"jsonrpc":"2.0","id":2}"#).unwrap_err();
        assert_eq!(e.data.expect("data")["field"], "method");
    }

    // REQ-014-204
    #[test]
    fn the_version_is_the_clients_when_known_else_the_newest() {
        assert_eq!(negotiate("2025-06-18"), "2025-06-18");
        assert_eq!(negotiate("2024-11-05"), "2024-11-05");
        assert_eq!(negotiate("1999-01-01"), PROTOCOL_VERSIONS[0]);
        let wire = failure(json!(3), &ProtocolError::method_not_found("resources/list"));
        assert_eq!(wire["error"]["code"], -32601);
        assert_eq!(wire["id"], 3);
    }
}
