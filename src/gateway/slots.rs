//! Connection slots: how many connections are authenticated (`max_clients`) and how
//! many are still authenticating (`max_pending_auth`).
//!
//! A connection that has not authenticated yet holds one of the `max_pending_auth`
//! pending slots until it authenticates (then it takes a client slot, or is closed with
//! 1013 `max_clients` if none is free) or is closed after `auth_grace` (1008). So
//! sockets that never authenticate can exhaust at most the pending budget, never lock
//! authenticated clients out of `max_clients`.

use std::sync::Arc;

use super::config::GatewayConfig;

/// How many connections hold a client slot (authenticated) and a pending slot (still
/// authenticating) on this gateway.
#[derive(Debug, Default)]
pub struct Slots {
    counts: std::sync::Mutex<SlotCounts>,
}

/// The two slot counts.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct SlotCounts {
    /// Connections still authenticating.
    pub pending: usize,
    /// Authenticated connections.
    pub authenticated: usize,
}

impl Slots {
    fn lock(&self) -> std::sync::MutexGuard<'_, SlotCounts> {
        self.counts.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The counts now.
    pub fn counts(&self) -> SlotCounts {
        *self.lock()
    }

    /// A pending slot for a new connection, or the close reason: `max_clients` when
    /// every client slot is taken (it could not authenticate anyway), `max_pending_auth`
    /// when the pending budget is used up.
    pub fn admit(self: &Arc<Self>, config: &GatewayConfig) -> Result<Slot, &'static str> {
        let mut c = self.lock();
        if c.authenticated >= config.max_clients {
            return Err("max_clients");
        }
        if c.pending >= config.max_pending_auth {
            return Err("max_pending_auth");
        }
        c.pending += 1;
        Ok(Slot {
            slots: self.clone(),
            held: Held::Pending,
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
}

impl Slot {
    /// Trades the pending slot for a client slot; `false` (and no slot held) when all
    /// `max_clients` client slots are taken.
    pub fn promote(&mut self, config: &GatewayConfig) -> bool {
        if self.held == Held::Authenticated {
            return true;
        }
        let mut c = self.slots.lock();
        if self.held == Held::Pending {
            c.pending = c.pending.saturating_sub(1);
        }
        if c.authenticated < config.max_clients {
            c.authenticated += 1;
            self.held = Held::Authenticated;
            true
        } else {
            self.held = Held::Nothing;
            false
        }
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        let mut c = self.slots.lock();
        match self.held {
            Held::Pending => c.pending = c.pending.saturating_sub(1),
            Held::Authenticated => c.authenticated = c.authenticated.saturating_sub(1),
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
        let mut a = slots.admit(&c).expect("pending 1");
        let b = slots.admit(&c).expect("pending 2");
        assert_eq!(
            slots.admit(&c).expect_err("pending full"),
            "max_pending_auth"
        );
        assert!(a.promote(&c), "first client slot");
        assert_eq!(
            slots.counts(),
            SlotCounts {
                pending: 1,
                authenticated: 1
            }
        );
        // The gateway is full of authenticated clients: new sockets are refused.
        assert_eq!(slots.admit(&c).expect_err("full"), "max_clients");
        let mut b = b;
        assert!(!b.promote(&c), "no client slot left");
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
}
