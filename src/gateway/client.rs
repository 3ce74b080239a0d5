//! A connected client: its outbound queue, its authentication and its subscriptions.
//!
//! Everything sent to a client — responses and event notifications — goes through one
//! bounded queue drained by the connection's writer, so frames leave in the order they
//! were queued. Responses wait for room (the client's own backlog slows only itself);
//! events never wait: a client whose queue is full when an event arrives is asked to
//! close with 1008 `slow_consumer` so it cannot hold up other subscribers.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Mutex;
use std::time::Instant;

use axum::extract::ws::Utf8Bytes;
use chrono::{DateTime, Utc};
use orchestrata_schemas::events::Stream;
use serde_json::Value;
use tokio::sync::{mpsc, watch};

use super::auth::Scope;

/// A frame for the writer.
#[derive(Debug, Clone)]
pub enum Outbound {
    /// A text frame.
    Frame(Utf8Bytes),
    /// A heartbeat ping.
    Ping,
}

/// Why and how the server wants a connection closed: WebSocket close code and reason.
pub type CloseRequest = Option<(u16, String)>;

/// The part of a client the topic hubs hold: where to push, and how to ask it to close.
pub struct ClientHandle {
    /// The client id, e.g. `client-3f2a…`.
    pub id: String,
    tx: mpsc::Sender<Outbound>,
    close: watch::Sender<CloseRequest>,
}

impl ClientHandle {
    /// A handle and the receivers its connection drains.
    pub fn new(
        id: String,
        capacity: usize,
    ) -> (
        Self,
        mpsc::Receiver<Outbound>,
        watch::Receiver<CloseRequest>,
    ) {
        let (tx, rx) = mpsc::channel(capacity.max(1));
        let (close, close_rx) = watch::channel(None);
        (ClientHandle { id, tx, close }, rx, close_rx)
    }

    /// Queues an event frame without waiting; `false` when the queue is full or closed.
    pub fn try_push(&self, frame: Utf8Bytes) -> bool {
        self.tx.try_send(Outbound::Frame(frame)).is_ok()
    }

    /// Queues a frame, waiting for room; `false` once the connection is gone.
    pub async fn push(&self, frame: Utf8Bytes) -> bool {
        self.tx.send(Outbound::Frame(frame)).await.is_ok()
    }

    /// Queues a heartbeat ping without waiting.
    pub fn try_ping(&self) -> bool {
        self.tx.try_send(Outbound::Ping).is_ok()
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
    /// The scope.
    pub scope: Scope,
    /// The grant's name.
    pub grant: Option<String>,
    /// `client_metadata` the client sent.
    pub metadata: Value,
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
    /// Start of the current rate-limit window and requests in it.
    pub window: (Instant, u32),
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
    /// A fresh, unauthenticated client.
    pub fn new(handle: std::sync::Arc<ClientHandle>, remote_addr: Option<SocketAddr>) -> Self {
        let now = Utc::now();
        Client {
            handle,
            connected_at: now,
            remote_addr,
            state: Mutex::new(ClientState {
                auth: None,
                last_activity: now,
                subscriptions: BTreeMap::new(),
                window: (Instant::now(), 0),
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
        self.lock().auth.as_ref().map(|a| a.scope)
    }
}
