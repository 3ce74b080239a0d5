//! Presence (US-007): who is connected, the heartbeat that notices who silently left,
//! and the `gateway.presence` events that put all of it on the log.
//!
//! Events, in the order a client's life produces them:
//! - `connected` when `auth.authenticate` first succeeds, with the client's metadata
//!   (`client_metadata` or `metadata`: client_name, client_version, purpose);
//! - `metadata_updated` when the client authenticates again with other metadata;
//! - `timeout` when it missed `heartbeat_max_misses` pongs in a row, just before
//!   `disconnected` with reason `timeout`;
//! - `disconnected` with reason `clean_close`, `timeout`, `error` or
//!   `server_shutdown` (REQ-014-118, REQ-014-119).
//!
//! Unauthenticated connections leave no presence events: they never became clients.
//!
//! Heartbeat (REQ-014-106..110): a ping every `heartbeat_interval`; a ping not answered
//! within `heartbeat_timeout` (capped at the interval, so misses never overlap) is a
//! miss; any frame from the client — pong or request — answers it and resets the count.

use std::sync::Arc;

use chrono::Utc;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::presence::{
    ClientConnected, ClientDisconnected, ClientMetadataUpdated, ClientTimedOut,
};
use orchestrata_schemas::events::types::DisconnectReason;
use orchestrata_schemas::events::{Event, EventRecord};
use serde_json::Value;
use tokio::time::{Duration, Instant};

use super::client::Client;
use super::config::GatewayConfig;
use super::error::RpcError;
use super::principal::Principal;
use super::shared::ClientEntry;
use super::state::Shared;

fn text(v: &Value, key: &str) -> Option<String> {
    v.get(key).and_then(Value::as_str).map(str::to_owned)
}

/// The metadata object of `auth.authenticate` params: `client_metadata` (the
/// contract's name) or `metadata`; `{}` when neither is an object.
pub fn metadata_of(params: &Value) -> Value {
    ["client_metadata", "metadata"]
        .iter()
        .find_map(|k| params.get(*k).filter(|v| v.is_object()).cloned())
        .unwrap_or_else(|| Value::Object(Default::default()))
}

/// The registry entry of an authenticated client (`None` before authentication).
pub fn entry(gw: &Shared, client: &Client) -> Option<ClientEntry> {
    let st = client.lock();
    let auth = st.auth.as_ref()?;
    Some(ClientEntry {
        client_id: client.id().to_owned(),
        instance_id: gw.services.shared_state.instance_id().to_owned(),
        connected_at: client.connected_at,
        last_activity: st.last_activity,
        auth_scope: auth.scope(),
        client_metadata: auth.metadata.clone(),
        subscriptions: st.subscriptions.keys().cloned().collect(),
        remote_addr: client.remote_addr.map(|a| a.to_string()),
    })
}

/// Publishes the client's current entry to the shared registry (after authentication
/// and on every heartbeat, so other instances see fresh activity and subscriptions).
pub async fn refresh(gw: &Shared, client: &Client) {
    if let Some(e) = entry(gw, client) {
        if let Err(err) = gw.services.shared_state.register_client(&e).await {
            tracing::debug!(client = %e.client_id, error = %err, "registry refresh failed");
        }
    }
}

/// A presence record about `client`, attributed to its principal (issue 14): the
/// connection is the principal's doing.
fn record(client: &Client, event: impl Into<Event>) -> EventRecord {
    EventRecord::new("gateway", client.id(), event, Utc::now())
        .by(client.principal().map(|p| p.name))
}

/// Appends `connected` for a client that just authenticated as `principal` (whose
/// name the record carries: the client's own auth is not set yet).
pub async fn connected(
    gw: &Shared,
    client: &Client,
    principal: &Principal,
    metadata: &Value,
) -> Result<(), RpcError> {
    let scope = principal.scope;
    let event = ClientConnected {
        client_id: client.id().to_owned(),
        client_name: text(metadata, "client_name"),
        client_version: text(metadata, "client_version"),
        purpose: text(metadata, "purpose"),
        auth_scope: scope.as_str().into(),
        remote_addr: client.remote_addr.map(|a| a.to_string()),
    };
    gw.append(&record(client, event).by(Some(principal.name.clone())))
        .await?;
    Ok(())
}

/// Appends `metadata_updated` with the new metadata, sent by `principal`.
pub async fn metadata_updated(
    gw: &Shared,
    client: &Client,
    principal: &Principal,
    metadata: &Value,
) -> Result<(), RpcError> {
    let event = ClientMetadataUpdated {
        client_id: client.id().to_owned(),
        metadata: Json(metadata.clone()),
    };
    gw.append(&record(client, event).by(Some(principal.name.clone())))
        .await?;
    Ok(())
}

/// Appends `timeout` for a client that missed `misses` heartbeats.
pub async fn timed_out(gw: &Shared, client: &Client, misses: u32) {
    if client.scope().is_none() {
        return;
    }
    let event = ClientTimedOut {
        client_id: client.id().to_owned(),
        last_activity: client.lock().last_activity,
        missed_heartbeats: i32::try_from(misses).unwrap_or(i32::MAX),
    };
    if let Err(e) = gw.append(&record(client, event)).await {
        tracing::warn!(client = %client.id(), error = %e, "cannot record heartbeat timeout");
    }
    super::volk_health::missed_heartbeats(gw, client, misses).await;
}

/// Forgets a client that is going away: out of every topic hub and the shared
/// registry (REQ-014-116, REQ-014-117). Called as soon as its reader stops, so cleanup
/// does not wait for the closing handshake (REQ-014-120).
pub async fn forget(gw: &Shared, client: &Client) {
    let id = client.id();
    for hub in gw.hubs.values() {
        hub.remove_client(id);
    }
    if let Err(e) = gw.services.shared_state.remove_client(id).await {
        tracing::debug!(client = %id, error = %e, "registry removal failed");
    }
}

/// Appends `disconnected` with `reason` for an authenticated client.
pub async fn disconnected(
    gw: &Shared,
    client: &Client,
    reason: DisconnectReason,
    detail: Option<String>,
) {
    if client.scope().is_none() {
        return;
    }
    let event = ClientDisconnected {
        client_id: client.id().to_owned(),
        reason,
        detail,
        connected_ms: (Utc::now() - client.connected_at).num_milliseconds(),
    };
    if let Err(e) = gw.append(&record(client, event)).await {
        tracing::warn!(client = %client.id(), error = %e, "cannot record disconnect");
    }
}

/// What the heartbeat wants done when it wakes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Beat {
    /// Send a ping now.
    Ping,
    /// Nothing yet (a pong deadline passed but misses remain).
    Wait,
    /// `heartbeat_max_misses` pings in a row went unanswered: drop the client.
    TimedOut(u32),
}

/// The heartbeat of one connection: when to ping, when a ping counts as missed.
#[derive(Debug)]
pub struct Heartbeat {
    interval: Duration,
    timeout: Duration,
    max_misses: u32,
    misses: u32,
    next_ping: Instant,
    pong_due: Option<Instant>,
}

impl Heartbeat {
    /// A heartbeat per `config`, first ping one interval from now.
    pub fn new(config: &GatewayConfig) -> Self {
        let interval = config.heartbeat_interval.max(Duration::from_millis(1));
        Heartbeat {
            interval,
            timeout: config.heartbeat_timeout.min(interval),
            max_misses: config.heartbeat_max_misses.max(1),
            misses: 0,
            next_ping: Instant::now() + interval,
            pong_due: None,
        }
    }

    /// When [`Heartbeat::wake`] should next be called.
    pub fn deadline(&self) -> Instant {
        match self.pong_due {
            Some(due) => due.min(self.next_ping),
            None => self.next_ping,
        }
    }

    /// Any frame from the client: it is alive.
    pub fn activity(&mut self) {
        self.misses = 0;
        self.pong_due = None;
    }

    /// Consecutive misses so far.
    pub fn misses(&self) -> u32 {
        self.misses
    }

    /// Advances to `now`: counts a missed pong, then decides whether to ping.
    pub fn wake(&mut self, now: Instant) -> Beat {
        if self.pong_due.is_some_and(|due| now >= due) {
            self.pong_due = None;
            self.misses += 1;
            if self.misses >= self.max_misses {
                return Beat::TimedOut(self.misses);
            }
        }
        if now >= self.next_ping {
            self.next_ping = now + self.interval;
            self.pong_due = Some(now + self.timeout);
            return Beat::Ping;
        }
        Beat::Wait
    }
}

/// Runs after a ping is queued: refreshes the registry entry in the background.
pub fn on_ping(gw: &Arc<Shared>, client: &Arc<Client>) {
    let (gw, client) = (gw.clone(), client.clone());
    tokio::spawn(async move { refresh(&gw, &client).await });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(interval_ms: u64, timeout_ms: u64, misses: u32) -> GatewayConfig {
        GatewayConfig {
            heartbeat_interval: Duration::from_millis(interval_ms),
            heartbeat_timeout: Duration::from_millis(timeout_ms),
            heartbeat_max_misses: misses,
            ..GatewayConfig::default()
        }
    }

    // REQ-014-106 REQ-014-107 REQ-014-108
    #[tokio::test(start_paused = true)]
    async fn unanswered_pings_time_out_after_max_misses_and_activity_resets_the_count() {
        let mut hb = Heartbeat::new(&config(1000, 200, 3));
        let t0 = Instant::now();
        assert_eq!(hb.wake(t0), Beat::Wait, "no ping before the interval");
        assert_eq!(hb.wake(t0 + Duration::from_millis(1000)), Beat::Ping);
        assert_eq!(hb.deadline(), t0 + Duration::from_millis(1200), "pong due");
        assert_eq!(hb.wake(t0 + Duration::from_millis(1200)), Beat::Wait);
        assert_eq!(hb.misses(), 1);
        hb.activity();
        assert_eq!(hb.misses(), 0, "any frame answers");
        let mut t = t0 + Duration::from_millis(2000);
        let mut outcome = Beat::Wait;
        for _ in 0..3 {
            assert_eq!(hb.wake(t), Beat::Ping);
            outcome = hb.wake(t + Duration::from_millis(200));
            t += Duration::from_millis(1000);
        }
        assert_eq!(outcome, Beat::TimedOut(3));
    }

    // REQ-014-110
    #[test]
    fn a_timeout_longer_than_the_interval_is_capped_at_the_interval() {
        let hb = Heartbeat::new(&config(100, 10_000, 2));
        assert_eq!(hb.timeout, Duration::from_millis(100));
    }
}
