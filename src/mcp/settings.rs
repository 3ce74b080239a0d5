//! Where the gateway is and how to prove who we are: `GATEWAY_HOST`, `GATEWAY_PORT`,
//! `GATEWAY_TOKEN`, read from the environment only (REQ-014-204).
//!
//! The token is deliberately not a command-line flag (flags show up in `ps` and shell
//! history) and never reaches the ledger; an MCP client passes it in its server
//! registration's `env` block.

use std::fmt;

/// Default gateway host.
pub const DEFAULT_HOST: &str = "127.0.0.1";
/// Default gateway port (that of `orchestrata up`).
pub const DEFAULT_PORT: u16 = 18790;

/// A setting that is missing or malformed, naming the variable and what is expected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    /// `GATEWAY_TOKEN` is not set.
    #[error("GATEWAY_TOKEN is not set: put the gateway's static token in the environment of `orchestrata mcp` (for `orchestrata up` without a configured token it is in <data-dir>/gateway.token)")]
    MissingToken,
    /// `GATEWAY_TOKEN` is set but empty or blank.
    #[error("GATEWAY_TOKEN is empty: it must be the gateway's static token")]
    EmptyToken,
    /// `GATEWAY_PORT` is not a port number.
    #[error("GATEWAY_PORT: `{0}` is not a port number (1-65535)")]
    BadPort(String),
    /// `GATEWAY_HOST` is blank or contains characters that cannot be in a host.
    #[error("GATEWAY_HOST: `{0}` is not a host name or IP address")]
    BadHost(String),
}

/// The gateway to connect to.
#[derive(Clone, PartialEq, Eq)]
pub struct GatewaySettings {
    /// Host name or IP address.
    pub host: String,
    /// TCP port.
    pub port: u16,
    /// The static token sent in `auth.authenticate`.
    pub token: String,
}

impl fmt::Debug for GatewaySettings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GatewaySettings")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("token", &"<redacted>")
            .finish()
    }
}

impl GatewaySettings {
    /// Reads the process environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }

    /// Reads the variables through `lookup` (the environment, or a map in tests).
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SettingsError> {
        let host = match lookup("GATEWAY_HOST") {
            None => DEFAULT_HOST.to_owned(),
            Some(h) if h.trim().is_empty() => DEFAULT_HOST.to_owned(),
            Some(h) => {
                let h = h.trim();
                let ok = h.chars().all(|c| {
                    c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_' | ':' | '[' | ']')
                });
                if !ok {
                    return Err(SettingsError::BadHost(h.to_owned()));
                }
                h.to_owned()
            }
        };
        let port = match lookup("GATEWAY_PORT") {
            None => DEFAULT_PORT,
            Some(p) if p.trim().is_empty() => DEFAULT_PORT,
            Some(p) => match p.trim().parse::<u16>() {
                Ok(n) if n > 0 => n,
                _ => return Err(SettingsError::BadPort(p)),
            },
        };
        let token = match lookup("GATEWAY_TOKEN") {
            None => return Err(SettingsError::MissingToken),
            Some(t) if t.trim().is_empty() => return Err(SettingsError::EmptyToken),
            Some(t) => t.trim().to_owned(),
        };
        Ok(GatewaySettings { host, port, token })
    }

    /// `ws://HOST:PORT/` (IPv6 literals bracketed).
    pub fn url(&self) -> String {
        if self.host.contains(':') && !self.host.starts_with('[') {
            format!("ws://[{}]:{}/", self.host, self.port)
        } else {
            format!("ws://{}:{}/", self.host, self.port)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn read(vars: &[(&str, &str)]) -> Result<GatewaySettings, SettingsError> {
        let map: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        GatewaySettings::from_lookup(|k| map.get(k).cloned())
    }

    // REQ-014-204
    #[test]
    fn defaults_and_overrides() {
        let s = read(&[("GATEWAY_TOKEN", "t")]).expect("settings");
        assert_eq!(s.url(), "ws://127.0.0.1:18790/");
        let s = read(&[
            ("GATEWAY_TOKEN", "t"),
            ("GATEWAY_HOST", "gw.local"),
            ("GATEWAY_PORT", "9000"),
        ])
        .expect("settings");
        assert_eq!(s.url(), "ws://gw.local:9000/");
        let s = read(&[("GATEWAY_TOKEN", "t"), ("GATEWAY_HOST", "::1")]).expect("settings");
        assert_eq!(s.url(), "ws://[::1]:18790/");
        assert!(!format!("{s:?}").contains("\"t\""));
    }

    // REQ-014-204
    #[test]
    fn bad_settings_name_the_variable() {
        assert_eq!(read(&[]), Err(SettingsError::MissingToken));
        assert_eq!(
            read(&[("GATEWAY_TOKEN", "  ")]),
            Err(SettingsError::EmptyToken)
        );
        let e = read(&[("GATEWAY_TOKEN", "t"), ("GATEWAY_PORT", "http")]).unwrap_err();
        assert!(e.to_string().starts_with("GATEWAY_PORT"), "{e}");
        let e = read(&[("GATEWAY_TOKEN", "t"), ("GATEWAY_PORT", "0")]).unwrap_err();
        assert_eq!(e, SettingsError::BadPort("0".into()));
        let e = read(&[("GATEWAY_TOKEN", "t"), ("GATEWAY_HOST", "a/b")]).unwrap_err();
        assert!(e.to_string().starts_with("GATEWAY_HOST"), "{e}");
    }
}
