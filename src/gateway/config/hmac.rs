//! `gateway.hmac`: the settings of the `hmac` strategy, one entry per client with its
//! own secrets (see [`crate::gateway::auth_hmac`] for the check itself).

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use serde::Deserialize;

use super::GatewayConfigError;
use crate::gateway::auth::Scope;

/// Settings of the `hmac` strategy: the client signs
/// `timestamp + nonce + client_id` with HMAC-SHA256 under one of *its* secrets
/// ([`HmacConfig::secrets_of`]).
///
/// Each client normally has its own secrets ([`HmacClient::secrets`]), so holding one
/// client's secret proves nothing about another client. A client listed without its
/// own secrets (`clients: { id: scope }`, the spec's single `hmac_secret`) is checked
/// under the shared `secrets` list; anyone holding that shared secret can then sign as
/// any such client, which the gateway warns about at start
/// ([`HmacConfig::shared_secret_warning`]).
#[derive(Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HmacConfig {
    /// Secrets shared by the clients that have none of their own (legacy single
    /// secret; several during a rotation). Empty when every client has its own.
    #[serde(default)]
    pub secrets: Vec<String>,
    /// The clients by id. A client id not listed is refused (`unknown_client`).
    #[serde(default)]
    pub clients: BTreeMap<String, HmacClient>,
    /// Largest accepted difference between the client's timestamp and the server clock;
    /// nonces are remembered this long.
    #[serde(default = "default_drift", rename = "drift_window_ms", with = "millis")]
    pub drift_window: Duration,
}

/// One HMAC client: its scope, its own secrets and the Volks it may act as.
///
/// In YAML either the full form
/// `{scope: read_write, secrets: [«new», «old»], acts_as: ["U:Cx"], default_volk: "U:Cx"}`
/// or just a scope (`read_write`: legacy, checked under the shared `secrets`).
#[derive(Clone, PartialEq, Eq)]
pub struct HmacClient {
    /// The scope the client gets.
    pub scope: Scope,
    /// The client's own secrets (several during a rotation); empty: the shared list.
    pub secrets: Vec<String>,
    /// Volk aliases the client may act as.
    pub acts_as: Vec<String>,
    /// The Volk a `cxp.send` without `from` sends as.
    pub default_volk: Option<String>,
}

impl HmacClient {
    /// A client with `scope`, no secrets of its own and no Volks.
    pub fn new(scope: Scope) -> Self {
        HmacClient {
            scope,
            secrets: Vec::new(),
            acts_as: Vec::new(),
            default_volk: None,
        }
    }

    /// Gives the client its own secrets.
    pub fn with_secrets<S: Into<String>>(mut self, secrets: impl IntoIterator<Item = S>) -> Self {
        self.secrets = secrets.into_iter().map(Into::into).collect();
        self
    }

    /// Lets the client act as `aliases`; the first is its default Volk unless one is set.
    pub fn acting_as<S: Into<String>>(mut self, aliases: impl IntoIterator<Item = S>) -> Self {
        self.acts_as = aliases.into_iter().map(Into::into).collect();
        if self.default_volk.is_none() {
            self.default_volk = self.acts_as.first().cloned();
        }
        self
    }
}

#[derive(Deserialize)]
#[serde(untagged)]
enum FileHmacClient {
    Scope(Scope),
    Full(FullHmacClient),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct FullHmacClient {
    scope: Scope,
    #[serde(default)]
    secrets: Vec<String>,
    #[serde(default)]
    acts_as: Vec<String>,
    default_volk: Option<String>,
}

impl<'de> Deserialize<'de> for HmacClient {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        Ok(match FileHmacClient::deserialize(d)? {
            FileHmacClient::Scope(scope) => HmacClient::new(scope),
            FileHmacClient::Full(f) => HmacClient {
                scope: f.scope,
                secrets: f.secrets,
                acts_as: f.acts_as,
                default_volk: f.default_volk,
            },
        })
    }
}

/// Shown by `config.get`: the secrets only counted.
impl serde::Serialize for HmacClient {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        let mut m = s.serialize_map(Some(4))?;
        m.serialize_entry("scope", &self.scope)?;
        m.serialize_entry("secrets", &self.secrets.len())?;
        m.serialize_entry("acts_as", &self.acts_as)?;
        m.serialize_entry("default_volk", &self.default_volk)?;
        m.end()
    }
}

impl fmt::Debug for HmacClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacClient")
            .field("scope", &self.scope)
            .field("secrets", &format!("<{} redacted>", self.secrets.len()))
            .field("acts_as", &self.acts_as)
            .field("default_volk", &self.default_volk)
            .finish()
    }
}

fn default_drift() -> Duration {
    Duration::from_secs(60)
}

mod millis {
    use serde::{Deserialize, Deserializer};
    use std::time::Duration;
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        u64::deserialize(d).map(Duration::from_millis)
    }
}

impl fmt::Debug for HmacConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HmacConfig")
            .field("secrets", &format!("<{} redacted>", self.secrets.len()))
            .field("clients", &self.clients)
            .field("drift_window", &self.drift_window)
            .finish()
    }
}

impl HmacConfig {
    /// Shared secrets `secrets` (may be empty), no clients, the default 60 s window.
    pub fn new<S: Into<String>>(secrets: impl IntoIterator<Item = S>) -> Self {
        HmacConfig {
            secrets: secrets.into_iter().map(Into::into).collect(),
            clients: BTreeMap::new(),
            drift_window: default_drift(),
        }
    }

    /// Lists `client_id` with `scope` and no secret of its own: it signs with the
    /// shared `secrets` (legacy; see [`HmacConfig::shared_secret_warning`]).
    pub fn with_client(self, client_id: &str, scope: Scope) -> Self {
        self.with_hmac_client(client_id, HmacClient::new(scope))
    }

    /// Lists `client_id` as `client` (typically with its own secrets).
    pub fn with_hmac_client(mut self, client_id: &str, client: HmacClient) -> Self {
        self.clients.insert(client_id.to_owned(), client);
        self
    }

    /// The secrets a signature claiming `client` is checked under: the client's own,
    /// or the shared list when it has none.
    pub fn secrets_of<'a>(&'a self, client: &'a HmacClient) -> &'a [String] {
        if client.secrets.is_empty() {
            &self.secrets
        } else {
            &client.secrets
        }
    }

    /// The clients that sign with the shared secret list (no secret of their own).
    pub fn shared_secret_clients(&self) -> Vec<&str> {
        self.clients
            .iter()
            .filter(|(_, c)| c.secrets.is_empty())
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// The warning logged at start when clients share the secret list: any holder of
    /// that secret can claim any of those client ids (and their scopes).
    pub fn shared_secret_warning(&self) -> Option<String> {
        let shared = self.shared_secret_clients();
        if shared.is_empty() {
            return None;
        }
        Some(format!(
            "gateway.hmac: clients {shared:?} have no secrets of their own and sign with the shared \
             gateway.hmac.secrets; anyone holding that shared secret can authenticate as any of \
             them. Give each client its own `secrets` (gateway.hmac.clients.<id>.secrets)."
        ))
    }
}

impl HmacConfig {
    /// Refuses a configuration without any secret, a client left without a secret
    /// (none of its own and no shared list), empty secrets, a `default_volk` the client
    /// may not act as (unless admin), and a zero drift window; errors name the field
    /// (`gateway.hmac.clients.<id>.secrets`).
    pub fn validate(&self) -> Result<(), GatewayConfigError> {
        let hmac = self;
        let invalid = |field: &str, reason: &str| GatewayConfigError::Invalid {
            field: format!("gateway.hmac.{field}"),
            reason: reason.into(),
        };
        let own_secrets = hmac.clients.values().any(|c| !c.secrets.is_empty());
        if hmac.secrets.is_empty() && !own_secrets {
            return Err(invalid(
                "secrets",
                "at least one secret is required (per client: gateway.hmac.clients.<id>.secrets)",
            ));
        }
        if let Some(i) = hmac.secrets.iter().position(|s| s.is_empty()) {
            return Err(invalid(&format!("secrets[{i}]"), "must not be empty"));
        }
        for (id, client) in &hmac.clients {
            if client.secrets.is_empty() && hmac.secrets.is_empty() {
                return Err(invalid(
                    &format!("clients.{id}.secrets"),
                    "the client has no secret: give it `secrets` (or set gateway.hmac.secrets)",
                ));
            }
            if let Some(i) = client.secrets.iter().position(|s| s.is_empty()) {
                return Err(invalid(
                    &format!("clients.{id}.secrets[{i}]"),
                    "must not be empty",
                ));
            }
            if let Some(v) = &client.default_volk {
                if client.scope != Scope::Admin && !client.acts_as.contains(v) {
                    return Err(invalid(
                        &format!("clients.{id}.default_volk"),
                        "must be one of the client's acts_as",
                    ));
                }
            }
        }
        if hmac.drift_window.is_zero() {
            return Err(invalid("drift_window_ms", "must be at least 1"));
        }
        Ok(())
    }
}
