//! Connection slots: how many connections are authenticated (`max_clients`) and how
//! many are still authenticating (`max_pending_auth`).
//!
//! A connection that has not authenticated yet holds one of the `max_pending_auth`
//! pending slots until it authenticates (then it takes a client slot, or is closed with
//! 1013 `max_clients` if none is free) or is closed after `auth_grace` (1008). So
//! sockets that never authenticate can exhaust at most the pending budget, never lock
//! authenticated clients out of `max_clients`.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use super::config::GatewayConfig;

/// How many connections hold a client slot (authenticated) and a pending slot (still
/// authenticating) on this gateway, pending ones by peer address, authenticated ones
/// by principal.
#[derive(Debug, Default)]
pub struct Slots {
    counts: std::sync::Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    counts: SlotCounts,
    pending_by_peer: HashMap<IpAddr, usize>,
    by_principal: HashMap<String, usize>,
}

/// The two slot counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SlotCounts {
    /// Connections still authenticating.
    pub pending: usize,
    /// Authenticated connections.
    pub authenticated: usize,
}

/// Decrements `map[key]`, forgetting the key at zero (the maps hold live keys only).
fn release<K: std::hash::Hash + Eq>(map: &mut HashMap<K, usize>, key: &K) {
    if let Some(n) = map.get_mut(key) {
        *n = n.saturating_sub(1);
        if *n == 0 {
            map.remove(key);
        }
    }
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counts now.
    pub fn counts(&self) -> SlotCounts {
        self.lock().counts
    }

    /// A pending slot for a new connection from `peer`, or the close reason:
    /// `max_clients` when every client slot is taken (it could not authenticate
    /// anyway), `max_pending_auth` when the pending budget is used up,
    /// `max_pending_auth_per_peer` when this address's share of it is.
    pub fn admit(
        self: &Arc<Self>,
        config: &GatewayConfig,
        peer: Option<IpAddr>,
    ) -> Result<Slot, &'static str> {
        let mut c = self.lock();
        if c.counts.authenticated >= config.max_clients {
            return Err("max_clients");
        }
        if c.counts.pending >= config.max_pending_auth {
            return Err("max_pending_auth");
        }
        if let Some(ip) = peer {
            let per_peer = config
                .max_pending_auth_per_peer
                .unwrap_or(config.max_pending_auth);
            let n = c.pending_by_peer.entry(ip).or_insert(0);
            if *n >= per_peer {
                return Err("max_pending_auth_per_peer");
            }
            *n += 1;
        }
        c.counts.pending += 1;
        Ok(Slot {
            slots: self.clone(),
            held: Held::Pending,
            peer,
            principal: None,
        })
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Held {
    Pending,
    Authenticated,
    Nothing,
}

/// The slot one connection holds; released when dropped.
#[derive(Debug)]
pub struct Slot {
    slots: Arc<Slots>,
    held: Held,
    peer: Option<IpAddr>,
    principal: Option<String>,
}

impl Slot {
    /// Trades the pending slot for a client slot of `principal`; the close reason (and
    /// no slot held) when all `max_clients` client slots are taken (`max_clients`) or
    /// the principal holds its share (`max_connections_per_principal`).
    pub fn promote(&mut self, config: &GatewayConfig, principal: &str) -> Result<(), &'static str> {
        if self.held == Held::Authenticated {
            return Ok(());
        }
        let mut c = self.slots.lock();
        if self.held == Held::Pending {
            c.counts.pending = c.counts.pending.saturating_sub(1);
            if let Some(ip) = self.peer {
                release(&mut c.pending_by_peer, &ip);
            }
        }
        self.held = Held::Nothing;
        if c.counts.authenticated >= config.max_clients {
            return Err("max_clients");
        }
        let per_principal = config
            .max_connections_per_principal
            .unwrap_or(config.max_clients);
        let n = c.by_principal.entry(principal.to_owned()).or_insert(0);
        if *n >= per_principal {
            if *n == 0 {
                c.by_principal.remove(principal);
            }
            return Err("max_connections_per_principal");
        }
        *n += 1;
        c.counts.authenticated += 1;
        self.held = Held::Authenticated;
        self.principal = Some(principal.to_owned());
        Ok(())
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.slots.lock();
        match self.held {
            Held::Pending => {
                c.counts.pending = c.counts.pending.saturating_sub(1);
                if let Some(ip) = self.peer {
                    release(&mut c.pending_by_peer, &ip);
                }
            }
            Held::Authenticated => {
                c.counts.authenticated = c.counts.authenticated.saturating_sub(1);
                if let Some(p) = self.principal.take() {
                    release(&mut c.by_principal, &p);
                }
            }
            Held::Nothing => {}
        }
        self.held = Held::Nothing;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max_clients: usize, max_pending_auth: usize) -> GatewayConfig {
        GatewayConfig {
            max_clients,
            max_pending_auth,
            ..GatewayConfig::default()
        }
    }

    // ISSUE-14: unauthenticated sockets exhausting max_clients
    #[test]
    fn pending_and_client_slots_are_counted_apart_and_released_on_drop() {
        let slots = Arc::new(Slots::default());
        let c = config(1, 2);
        let mut a = slots.admit(&c, None).expect("pending 1");
        let b = slots.admit(&c, None).expect("pending 2");
        assert_eq!(
            slots.admit(&c, None).expect_err("pending full"),
            "max_pending_auth"
        );
        assert_eq!(a.promote(&c, "p"), Ok(()), "first client slot");
        assert_eq!(
            slots.counts(),
            SlotCounts {
                pending: 1,
                authenticated: 1
            }
        );
        // The gateway is full of authenticated clients: new sockets are refused.
        assert_eq!(slots.admit(&c, None).expect_err("full"), "max_clients");
        let mut b = b;
        assert_eq!(
            b.promote(&c, "q"),
            Err("max_clients"),
            "no client slot left"
        );
        assert_eq!(
            slots.counts(),
            SlotCounts {
                pending: 0,
                authenticated: 1
            }
        );
        drop(b);
        drop(a);
        assert_eq!(slots.counts(), SlotCounts::default());
    }

    // ISSUE-60: one peer address holds at most its share of the pending budget, one
    // principal at most its share of the client slots; both are given back.
    #[test]
    fn shares_per_peer_and_per_principal_are_capped_and_released() {
        let slots = Arc::new(Slots::default());
        let c = GatewayConfig {
            max_pending_auth_per_peer: Some(2),
            max_connections_per_principal: Some(1),
            ..config(10, 10)
        };
        let one: IpAddr = [10, 0, 0, 1].into();
        let mut a = slots.admit(&c, Some(one)).expect("first from one");
        let _b = slots.admit(&c, Some(one)).expect("second from one");
        assert_eq!(
            slots.admit(&c, Some(one)).expect_err("third from one"),
            "max_pending_auth_per_peer"
        );
        let mut other = slots
            .admit(&c, Some([10, 0, 0, 2].into()))
            .expect("another peer");
        assert_eq!(a.promote(&c, "bot"), Ok(()));
        let _c = slots
            .admit(&c, Some(one))
            .expect("a pending slot of one came back");
        assert_eq!(
            other.promote(&c, "bot"),
            Err("max_connections_per_principal")
        );
        drop(a);
        let mut again = slots.admit(&c, None).expect("pending");
        assert_eq!(
            again.promote(&c, "bot"),
            Ok(()),
            "the principal's slot came back"
        );
    }
}
