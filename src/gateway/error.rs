//! JSON-RPC errors: the codes of the contract and the `data.reason` every one carries.
//!
//! A handler returns `Err(RpcError)`; the dispatcher turns it into
//! `{"jsonrpc":"2.0","id":…,"error":{"code":…,"message":…,"data":{"reason":…}}}`.
//! `reason` is a stable snake_case word clients can branch on; `message` is the
//! contract's fixed text for the code; more detail goes into other `data` fields.

use serde_json::{json, Map, Value};

/// The JSON-RPC error codes the gateway answers with (JSON-RPC 2.0 plus the contract's
/// custom -3200x codes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorCode {
    /// -32700: the frame is not JSON.
    ParseError,
    /// -32600: JSON, but not a JSON-RPC request (or a batch that is too large / empty).
    InvalidRequest,
    /// -32601: no such method.
    MethodNotFound,
    /// -32602: params fail the method's schema or meaning.
    InvalidParams,
    /// -32603: the gateway or a component behind it failed.
    InternalError,
    /// -32001: not authenticated, bad credentials or insufficient scope.
    Unauthorized,
    /// -32002: over the per-client request rate.
    RateLimited,
    /// -32003: a token or resource budget is spent.
    BudgetExceeded,
}

impl ErrorCode {
    /// The numeric code.
    pub fn code(self) -> i64 {
        match self {
            ErrorCode::ParseError => -32700,
            ErrorCode::InvalidRequest => -32600,
            ErrorCode::MethodNotFound => -32601,
            ErrorCode::InvalidParams => -32602,
            ErrorCode::InternalError => -32603,
            ErrorCode::Unauthorized => -32001,
            ErrorCode::RateLimited => -32002,
            ErrorCode::BudgetExceeded => -32003,
        }
    }

    /// The contract's message for the code.
    pub fn message(self) -> &'static str {
        match self {
            ErrorCode::ParseError => "Parse error",
            ErrorCode::InvalidRequest => "Invalid request",
            ErrorCode::MethodNotFound => "Method not found",
            ErrorCode::InvalidParams => "Invalid params",
            ErrorCode::InternalError => "Internal error",
            ErrorCode::Unauthorized => "Unauthorized",
            ErrorCode::RateLimited => "Rate limited",
            ErrorCode::BudgetExceeded => "Budget exceeded",
        }
    }
}

/// A JSON-RPC error with its `data` object (always holding `reason`).
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{} ({}): {reason}", .code.message(), .code.code())]
pub struct RpcError {
    /// Which error.
    pub code: ErrorCode,
    /// Stable machine-readable reason, e.g. `authentication_required`.
    pub reason: String,
    /// Further `data` fields (`hint`, `field`, `detail`, `current_count`...).
    pub extra: Map<String, Value>,
}

impl RpcError {
    /// An error with `code` and `data.reason = reason`.
    pub fn new(code: ErrorCode, reason: impl Into<String>) -> Self {
        RpcError {
            code,
            reason: reason.into(),
            extra: Map::new(),
        }
    }

    /// Adds a `data` field.
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// -32602 with a reason and a human `detail`.
    pub fn invalid_params(reason: &str, detail: impl Into<String>) -> Self {
        RpcError::new(ErrorCode::InvalidParams, reason).with("detail", detail.into())
    }

    /// -32603 with a reason and a human `detail` (never a panic message or secret).
    pub fn internal(reason: &str, detail: impl std::fmt::Display) -> Self {
        RpcError::new(ErrorCode::InternalError, reason).with("detail", detail.to_string())
    }

    /// -32001 `authentication_required`, with the contract's hint.
    pub fn authentication_required() -> Self {
        RpcError::new(ErrorCode::Unauthorized, "authentication_required")
            .with("hint", "Call auth.authenticate before any other method.")
    }

    /// -32001 `insufficient_scope` for `what` (a method or topic).
    pub fn insufficient_scope(what: &str, have: &str, need: &str) -> Self {
        RpcError::new(ErrorCode::Unauthorized, "insufficient_scope")
            .with(
                "detail",
                format!("`{what}` needs scope {need}; this client has {have}"),
            )
            .with("required_scope", need)
            .with("scope", have)
    }

    /// The `error` member of a response.
    pub fn to_json(&self) -> Value {
        let mut data = self.extra.clone();
        data.insert("reason".into(), Value::String(self.reason.clone()));
        json!({
            "code": self.code.code(),
            "message": self.code.message(),
            "data": Value::Object(data),
        })
    }
}
