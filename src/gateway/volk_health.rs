//! A Volk's health from the connections that act as it (spec 014 `health_changed`,
//! REQ-014-022): when the last authenticated connection whose principal's default Volk
//! is `V` misses its heartbeats, `V`'s health becomes `unknown`; when a connection
//! authenticates as `V` again, `V` is `healthy` (the kernel records a change only).
//!
//! The operator Volk `U:GW` is every operator connection's default, so no single
//! connection speaks for its health; it is left out. Both changes are kernel commands
//! (`set_volk_health`) issued by `U:GW` — the gateway is the observer — so they are on
//! the log, folded by the kernel and the Volk view, and shown by `volk.get`/`volk.list`.

use orchestrata_schemas::events::types::Health;
use orchestrata_schemas::events::CommandKind;

use super::client::Client;
use super::state::Shared;
use crate::kernel::cmd;
use crate::kernel::roster::OPERATOR_VOLK;

/// The Volk `client`'s connection stands for, if any (see the module docs).
fn volk_of(client: &Client) -> Option<String> {
    client
        .principal()
        .and_then(|p| p.default_volk)
        .filter(|v| v != OPERATOR_VOLK)
}

/// `client` missed `misses` heartbeats and is going away: its Volk is `unknown` unless
/// another authenticated connection still acts as it.
pub async fn missed_heartbeats(gw: &Shared, client: &Client, misses: u32) {
    let Some(volk) = volk_of(client) else { return };
    let others = gw
        .clients()
        .values()
        .any(|c| c.id() != client.id() && volk_of(c).as_deref() == Some(volk.as_str()));
    if !others {
        let details = format!("missed {misses} heartbeats (client {})", client.id());
        set(gw, &volk, Health::Unknown, details).await;
    }
}

/// `client` authenticated: its Volk is `healthy` (again).
pub async fn connected(gw: &Shared, client: &Client) {
    if let Some(volk) = volk_of(client) {
        let details = format!("client {} connected", client.id());
        set(gw, &volk, Health::Healthy, details).await;
    }
}

async fn set(gw: &Shared, alias: &str, health: Health, details: String) {
    let Some(kernel) = gw.services.kernel.clone() else {
        return;
    };
    let command = cmd::command(
        OPERATOR_VOLK,
        CommandKind::SetVolkHealth {
            alias: alias.to_owned(),
            health,
            details: Some(details),
        },
    );
    if let Err(e) = kernel.execute(command).await {
        // An unregistered default Volk has no health to record.
        tracing::debug!(volk = alias, error = %e, "volk health not recorded");
    }
}
