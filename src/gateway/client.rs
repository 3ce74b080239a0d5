//! A connected client: its outbound queue, its authentication and its subscriptions.
//!
//! Everything sent to a client — responses and event notifications — goes through its
//! [`Outbox`], drained by the connection's writer, so frames leave in the order they
//! were queued. Responses wait for room (the client's own backlog slows only itself);
//! events never wait: when the client's event buffer is full the oldest queued event
//! is evicted and the client later receives a `gateway.gap` notification naming what
//! it missed (see [`super::outbox`]), so a slow client never holds up the log tail or
//! other subscribers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::ws::Utf8Bytes;
use chrono::{DateTime, Utc};
use orchestrata_schemas::events::Stream;
use serde_json::Value;
use tokio::sync::watch;

use super::auth::Scope;
pub use super::outbox::Outbound;
use super::outbox::Outbox;
use super::principal::Principal;
use super::rate_limit::TokenBucket;

/// Why and how the server wants a connection closed: WebSocket close code and reason.
pub type CloseRequest = Option<(u16, String)>;

/// The part of a client the topic hubs hold: where to push, and how to ask it to close.
pub struct ClientHandle {
    /// The client id, e.g. `client-3f2a…`.
    pub id: String,
    /// The outbound queue the connection's writer drains.
    pub outbox: Outbox,
    close: watch::Sender<CloseRequest>,
}

impl ClientHandle {
    /// A handle whose outbox buffers at most `event_capacity` events
    /// (`event_buffer_per_client`), and the receiver of its close requests.
    pub fn new(id: String, event_capacity: usize) -> (Self, watch::Receiver<CloseRequest>) {
        let (close, close_rx) = watch::channel(None);
        let handle = ClientHandle {
            id,
            outbox: Outbox::new(event_capacity),
            close,
        };
        (handle, close_rx)
    }

    /// Queues a response frame, waiting for room; `false` once the connection is gone.
    pub async fn push(&self, frame: Utf8Bytes) -> bool {
        self.outbox.push_control(Outbound::Frame(frame)).await
    }

    /// Queues a heartbeat ping without waiting; `false` if the client's control queue
    /// is full or the connection is gone.
    pub fn try_ping(&self) -> bool {
        self.outbox.try_push_control(Outbound::Ping)
    }

    /// Asks the connection to close with `code` and `reason` (first request wins).
    pub fn request_close(&self, code: u16, reason: impl Into<String>) {
        let reason = reason.into();
        self.close.send_if_modified(|slot| {
            if slot.is_none() {
                *slot = Some((code, reason));
                true
            } else {
                false
            }
        });
    }
}

/// What authentication granted.
#[derive(Debug, Clone)]
pub struct Auth {
    /// Who is acting: name, scope, the Volks it may act as.
    pub principal: Principal,
    /// `client_metadata` the client sent.
    pub metadata: Value,
}

impl Auth {
    /// The granted scope.
    pub fn scope(&self) -> Scope {
        self.principal.scope
    }
}

/// One live subscription as the client sees it.
#[derive(Debug, Clone)]
pub struct SubscriptionRecord {
    /// The topic.
    pub topic: Stream,
    /// Canonical filters (duplicate detection).
    pub canonical: String,
    /// The filters as given.
    pub filters: Value,
    /// Payload truncation limit.
    pub max_payload_size: Option<usize>,
}

/// Mutable per-connection state.
#[derive(Debug)]
pub struct ClientState {
    /// `None` until `auth.authenticate` succeeds.
    pub auth: Option<Auth>,
    /// Last frame (of any kind) received.
    pub last_activity: DateTime<Utc>,
    /// Live subscriptions by id.
    pub subscriptions: BTreeMap<String, SubscriptionRecord>,
    /// The request-rate token bucket (`rate_limit_per_second`).
    pub bucket: TokenBucket,
}

/// A connected client.
pub struct Client {
    /// Queue and close handle (shared with the hubs).
    pub handle: std::sync::Arc<ClientHandle>,
    /// When it connected.
    pub connected_at: DateTime<Utc>,
    /// Peer address.
    pub remote_addr: Option<SocketAddr>,
    /// Everything that changes.
    pub state: Mutex<ClientState>,
}

impl Client {
    /// A fresh, unauthenticated client allowed `rate_per_second` requests per second.
    pub fn new(
        handle: std::sync::Arc<ClientHandle>,
        remote_addr: Option<SocketAddr>,
        rate_per_second: u32,
    ) -> Self {
        let now = Utc::now();
        Client {
            handle,
            connected_at: now,
            remote_addr,
            state: Mutex::new(ClientState {
                auth: None,
                last_activity: now,
                subscriptions: BTreeMap::new(),
                bucket: TokenBucket::new(rate_per_second, Instant::now()),
            }),
        }
    }

    /// The client id.
    pub fn id(&self) -> &str {
        &self.handle.id
    }

    /// Locks the state (a poisoned lock is recovered: the state stays consistent
    /// because every critical section is a few assignments).
    pub fn lock(&self) -> std::sync::MutexGuard<'_, ClientState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The granted scope, if authenticated.
    pub fn scope(&self) -> Option<Scope> {
        self.lock().auth.as_ref().map(Auth::scope)
    }

    /// The principal, if authenticated.
    pub fn principal(&self) -> Option<Principal> {
        self.lock().auth.as_ref().map(|a| a.principal.clone())
    }
}
