//! `config.get`: the effective configuration, read-only, secrets redacted.

use chrono::SecondsFormat;
use serde_json::{json, Value};

use crate::gateway::error::RpcError;
use crate::gateway::methods::RpcResult;
use crate::gateway::state::Call;

/// Key names whose values are never shown.
const SECRET_WORDS: [&str; 6] = [
    "token",
    "secret",
    "password",
    "key",
    "credential",
    "signature",
];

/// Replaces the value of every key that names a secret with `"<redacted>"`.
pub fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase();
                    if SECRET_WORDS.iter().any(|w| lower.contains(w)) && !v.is_null() {
                        (k.clone(), Value::String("<redacted>".into()))
                    } else {
                        (k.clone(), redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

/// The whole configuration, or the value at `path` (`gateway.max_clients`). Unknown
/// paths answer -32602 `unknown_config_path`. There is no `config.set`: the gateway
/// never changes configuration.
pub async fn get(call: Call) -> RpcResult {
    let view = redact(&call.gw.services.config_view);
    let last_updated = call
        .gw
        .services
        .config_loaded_at
        .to_rfc3339_opts(SecondsFormat::Millis, true);
    let path = call.params.get("path").and_then(Value::as_str);
    let Some(path) = path else {
        return Ok(json!({ "config": view, "last_updated": last_updated }));
    };
    let mut node = &view;
    for part in path.split('.') {
        node = node.get(part).ok_or_else(|| {
            RpcError::invalid_params(
                "unknown_config_path",
                format!("config has no key `{part}` on path `{path}`"),
            )
            .with("field", "params.path")
        })?;
    }
    Ok(json!({ "path": path, "value": node, "last_updated": last_updated }))
}
