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
        Value::String(text) => Value::String(without_userinfo(text)),
        other => other.clone(),
    }
}

/// `text` with the credentials of a URL (`bolt://user:pass@host`,
/// `redis://:pass@host`) replaced by `<redacted>`, whatever key holds it; other text
/// unchanged.
fn without_userinfo(text: &str) -> String {
    let Some(scheme_end) = text.find("://") else {
        return text.to_owned();
    };
    let rest = &text[scheme_end + 3..];
    let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    match rest[..authority_end].rfind('@') {
        Some(at) => format!("{}<redacted>{}", &text[..scheme_end + 3], &rest[at..]),
        None => text.to_owned(),
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

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-60: a password in a URL (neo4j.uri, redis_url) is redacted whatever the
    // key is called; URLs without credentials and other text stay as they are.
    #[test]
    fn credentials_in_urls_are_redacted() {
        let view = json!({
            "gateway": {
                "neo4j": { "uri": "bolt://neo4j:hunter2@graph:7687/db" },
                "redis_url": "redis://:s3cret@cache:6379",
                "listen": "127.0.0.1:18790",
                "plain": "http://example.org/a@b"
            }
        });
        let shown = redact(&view).to_string();
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cret"),
            "{shown}"
        );
        assert!(shown.contains("bolt://<redacted>@graph:7687/db"), "{shown}");
        assert!(shown.contains("redis://<redacted>@cache:6379"), "{shown}");
        assert!(shown.contains("http://example.org/a@b"), "{shown}");
        assert!(shown.contains("127.0.0.1:18790"), "{shown}");
    }
}
