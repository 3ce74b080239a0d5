//! Which web pages may open a WebSocket to the gateway (REQ-014-188).
//!
//! A browser attaches an `Origin` header (`https://ops.example.com`) to every WebSocket
//! handshake, naming the page that asked for it; the page cannot forge it. Without a
//! check, any page a logged-in operator visits could open a socket to a gateway on
//! their network and drive it with whatever token it can get. The policy:
//!
//! - no `Origin` header: not a browser (websocat, Python, Rust clients) — allowed; such
//!   clients still have to authenticate;
//! - an origin listed in `gateway.allowed_origins` (exact, case-insensitive) — allowed;
//!   `*` in the list allows every origin;
//! - a loopback origin (`http(s)://localhost`, `127.0.0.0/8`, `[::1]`, any port) —
//!   allowed only when the gateway listens on a loopback address, so the built-in
//!   `/console` works on the default `127.0.0.1:18790`. A gateway listening on another
//!   address (e.g. `0.0.0.0` in a container) serves its console to browsers only from
//!   an origin listed in `allowed_origins`;
//! - anything else — refused with HTTP 403 `{"error": "origin_not_allowed", "origin"}`
//!   before the upgrade, logged at warn and counted in
//!   `orchestrata_gateway_origin_refused_total`.
//!
//! The `Host` header is deliberately not trusted: with DNS rebinding a page of
//! `http://evil.example:18790` whose name now resolves to `127.0.0.1` sends
//! `Origin: http://evil.example:18790` *and* `Host: evil.example:18790`, so "Origin
//! equals Host" would let any web page reach a gateway on the visitor's loopback.

use axum::http::{header, HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use prometheus::{IntCounter, Registry};
use serde_json::json;

use super::metrics::MetricsError;

/// The allow-list entry that admits every origin.
pub const ANY_ORIGIN: &str = "*";

/// Whether a WebSocket handshake carrying `origin` (its `Origin` header) may proceed
/// under the allow-list `allowed` on a gateway whose listener is (`loopback_listener`)
/// or is not bound to a loopback address.
///
/// `allowed` holds entries as [`normalize_entry`] returns them; the comparison ignores
/// case and a default port (`:80` for http, `:443` for https). The request's `Host`
/// plays no part (it is whatever the page's URL says, see the module docs).
///
/// ```
/// use orchestrata::gateway::origin::origin_allowed;
/// let none: &[String] = &[];
/// assert!(origin_allowed(None, none, false)); // not a browser
/// assert!(origin_allowed(Some("http://127.0.0.1:18790"), none, true)); // console, loopback
/// assert!(!origin_allowed(Some("http://127.0.0.1:18790"), none, false));
/// assert!(!origin_allowed(Some("https://evil.example"), none, true));
/// let ops = ["https://ops.example.com".to_string()];
/// assert!(origin_allowed(Some("https://OPS.example.com"), &ops, false));
/// ```
pub fn origin_allowed(origin: Option<&str>, allowed: &[String], loopback_listener: bool) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    if allowed.iter().any(|a| a == ANY_ORIGIN) {
        return true;
    }
    let Some((scheme, authority)) = split_origin(origin) else {
        // `null` (sandboxed frames, file: pages) and garbage match only `*`.
        return false;
    };
    if loopback_listener && is_loopback_authority(&authority) {
        return true;
    }
    let authority = without_default_port(scheme, &authority);
    allowed.iter().any(|entry| {
        split_origin(entry)
            .is_some_and(|(s, a)| s == scheme && without_default_port(s, &a) == authority)
    })
}

/// Whether a lower-case `host[:port]` names this machine: `localhost`, an address in
/// `127.0.0.0/8`, or `[::1]` (any port).
fn is_loopback_authority(authority: &str) -> bool {
    let host = if let Some(rest) = authority.strip_prefix('[') {
        // [v6]:port
        match rest.split_once(']') {
            Some((v6, tail)) if tail.is_empty() || tail.starts_with(':') => v6,
            _ => return false,
        }
    } else {
        match authority.rsplit_once(':') {
            Some((h, port)) if port.chars().all(|c| c.is_ascii_digit()) => h,
            Some(_) => return false,
            None => authority,
        }
    };
    if host == "localhost" {
        return true;
    }
    host.parse::<std::net::IpAddr>()
        .is_ok_and(|ip| ip.is_loopback())
}

/// Checks an allow-list entry from the config and returns it in canonical form
/// (lower case, no trailing `/`): `*`, or `scheme://host[:port]` with scheme http or
/// https and nothing after the authority. The error says what is wrong with it.
pub fn normalize_entry(entry: &str) -> Result<String, String> {
    let trimmed = entry.trim();
    if trimmed == ANY_ORIGIN {
        return Ok(ANY_ORIGIN.to_owned());
    }
    let Some((scheme, authority)) = split_origin(trimmed) else {
        return Err(format!(
            "`{entry}` is not an origin: expected `*` or http(s)://host[:port] with nothing after it, e.g. https://ops.example.com"
        ));
    };
    Ok(format!("{scheme}://{authority}"))
}

/// Splits `scheme://authority` into lower-case parts; `None` when it is not of that
/// shape (a path, query or user info, an empty host, or `null`).
fn split_origin(origin: &str) -> Option<(&'static str, String)> {
    let origin = origin.trim();
    let (scheme, rest) = origin.split_once("://")?;
    let scheme = match scheme.to_ascii_lowercase().as_str() {
        "http" => "http",
        "https" => "https",
        // Other schemes (browser extensions, apps) are admitted only by `*`.
        _ => return None,
    };
    let authority = rest.strip_suffix('/').unwrap_or(rest);
    if authority.is_empty()
        || authority.starts_with(':')
        || authority.contains(['/', '?', '#', '@', ' '])
    {
        return None;
    }
    Some((scheme, authority.to_ascii_lowercase()))
}

/// `authority` without the scheme's default port, so `gw:443` equals `gw` for https.
fn without_default_port(scheme: &str, authority: &str) -> String {
    let default = if scheme == "https" { ":443" } else { ":80" };
    authority
        .strip_suffix(default)
        .unwrap_or(authority)
        .to_owned()
}

/// The gateway's origin check with its refusal counter.
pub struct OriginPolicy {
    allowed: Vec<String>,
    loopback_listener: bool,
    refused: IntCounter,
}

impl OriginPolicy {
    /// A policy over `allowed` (canonical entries, see [`normalize_entry`]) for a
    /// gateway listening on a loopback address (`loopback_listener`: loopback origins
    /// allowed too) or not, whose refusals are counted in `registry` as
    /// `orchestrata_gateway_origin_refused_total`.
    pub fn new(
        allowed: Vec<String>,
        loopback_listener: bool,
        registry: &Registry,
    ) -> Result<Self, MetricsError> {
        let refused = IntCounter::new(
            "orchestrata_gateway_origin_refused_total",
            "WebSocket handshakes refused because their Origin is not allowed",
        )?;
        registry.register(Box::new(refused.clone()))?;
        Ok(OriginPolicy {
            allowed,
            loopback_listener,
            refused,
        })
    }

    /// `Ok` when the handshake with `headers` may be upgraded; otherwise the refusal
    /// (already logged and counted) to answer instead.
    pub fn check(&self, headers: &HeaderMap) -> Result<(), OriginRefused> {
        let Some(raw) = headers.get(header::ORIGIN) else {
            return Ok(());
        };
        let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
        // An Origin that is not even text is refused like any unknown origin.
        let origin = raw.to_str().ok();
        if origin.is_some_and(|o| origin_allowed(Some(o), &self.allowed, self.loopback_listener)) {
            return Ok(());
        }
        let shown = String::from_utf8_lossy(raw.as_bytes()).into_owned();
        self.refused.inc();
        tracing::warn!(origin = %shown, host = host.unwrap_or(""), "websocket origin not allowed");
        Err(OriginRefused { origin: shown })
    }
}

/// A handshake refused for its `Origin`; answers HTTP 403
/// `{"error": "origin_not_allowed", "origin": "<as sent>"}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("origin not allowed: {origin}")]
pub struct OriginRefused {
    /// The `Origin` header as sent (invalid UTF-8 replaced).
    pub origin: String,
}

impl IntoResponse for OriginRefused {
    fn into_response(self) -> Response {
        (
            StatusCode::FORBIDDEN,
            Json(json!({"error": "origin_not_allowed", "origin": self.origin})),
        )
            .into_response()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(entries: &[&str]) -> Vec<String> {
        entries
            .iter()
            .map(|e| normalize_entry(e).expect("valid entry"))
            .collect()
    }

    // REQ-014-188
    #[test]
    fn clients_without_an_origin_are_always_allowed() {
        assert!(origin_allowed(None, &[], false));
        assert!(origin_allowed(None, &list(&["https://a.example"]), true));
    }

    // REQ-014-188 ISSUE-14: DNS rebinding (foreign Origin with a matching Host)
    #[test]
    fn by_default_only_loopback_origins_and_only_on_a_loopback_listener() {
        for origin in [
            "http://127.0.0.1:18790",
            "https://127.0.0.1:18790",
            "http://127.1.2.3:8080",
            "http://localhost:3000",
            "http://localhost",
            "http://[::1]:18790",
            "https://[::1]",
        ] {
            assert!(origin_allowed(Some(origin), &[], true), "{origin}");
            assert!(!origin_allowed(Some(origin), &[], false), "{origin}");
        }
        for origin in [
            "https://evil.example",
            "http://evil.example:18790",
            "http://localhost.evil.example",
            "http://127.0.0.1.evil.example:18790",
            "http://[::2]:18790",
            "http://10.0.0.1:18790",
            "http://0.0.0.0:18790",
        ] {
            assert!(!origin_allowed(Some(origin), &[], true), "{origin}");
        }
    }

    // REQ-014-188
    #[test]
    fn listed_origins_match_exactly_by_scheme_host_and_port() {
        let allowed = list(&["https://ops.example.com", "http://localhost:3000/"]);
        for (origin, ok) in [
            ("https://ops.example.com", true),
            ("https://ops.example.com:443", true),
            ("HTTPS://OPS.example.com", true),
            ("http://localhost:3000", true),
            ("http://ops.example.com", false),
            ("https://ops.example.com.evil.io", false),
            ("https://evil.io/https://ops.example.com", false),
            ("http://localhost:3001", false),
        ] {
            assert_eq!(
                origin_allowed(Some(origin), &allowed, false),
                ok,
                "{origin}"
            );
        }
        // A non-loopback gateway's own origin is allowed only when listed.
        assert!(!origin_allowed(Some("http://gw:18790"), &allowed, false));
        assert!(origin_allowed(
            Some("http://gw:18790"),
            &list(&["http://gw:18790"]),
            false
        ));
    }

    // REQ-014-188
    #[test]
    fn star_allows_every_origin_even_opaque_ones() {
        let allowed = list(&["*"]);
        assert!(origin_allowed(
            Some("https://anything.example"),
            &allowed,
            false
        ));
        assert!(origin_allowed(Some("null"), &allowed, false));
        assert!(!origin_allowed(Some("null"), &[], true));
    }

    // REQ-014-188
    #[test]
    fn bad_allow_list_entries_are_refused_with_the_reason() {
        assert_eq!(
            normalize_entry(" HTTPS://Ops.Example.com/ "),
            Ok("https://ops.example.com".into())
        );
        for bad in [
            "ops.example.com",
            "https://",
            "https://a.example/path",
            "ftp://a.example",
            "null",
            "",
        ] {
            let e = normalize_entry(bad).expect_err(bad);
            assert!(e.contains(&format!("`{bad}`")), "{bad}: {e}");
        }
    }

    // REQ-014-188
    #[test]
    fn policy_answers_403_with_the_origin_and_counts_it() {
        let registry = Registry::new();
        let policy =
            OriginPolicy::new(list(&["https://ops.example.com"]), true, &registry).expect("policy");
        let mut headers = HeaderMap::new();
        headers.insert(header::HOST, "gw:1".parse().expect("header"));
        assert!(policy.check(&headers).is_ok());
        headers.insert(
            header::ORIGIN,
            "https://ops.example.com".parse().expect("header"),
        );
        assert!(policy.check(&headers).is_ok());
        // DNS rebinding: the page's own name in both Origin and Host.
        headers.insert(header::HOST, "evil.example:1".parse().expect("header"));
        headers.insert(
            header::ORIGIN,
            "http://evil.example:1".parse().expect("header"),
        );
        let refused = policy.check(&headers).expect_err("refused");
        assert_eq!(refused.origin, "http://evil.example:1");
        assert_eq!(refused.into_response().status(), StatusCode::FORBIDDEN);
        assert_eq!(policy.refused.get(), 1);
    }
}
