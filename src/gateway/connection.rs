//! One WebSocket connection: a reader that starts each frame as a task and a writer
//! that drains the client's outbound queue ([`super::outbox`]).
//!
//! A connection's requests run concurrently, at most `max_in_flight_per_connection`
//! at once, and are answered as they complete; frames that change the connection's
//! own state (authentication, subscriptions) run alone; closing the connection
//! cancels what still runs (ERR-012). See [`super::inflight`].
//!
//! A slow client is never closed for being slow: its oldest queued events are evicted
//! and it gets a `gateway.gap` notification to refill from `gateway.replay`. Only its
//! responses wait (its request tasks wait for room in its outbox, so its in-flight
//! bound fills and its reader stops reading), which slows nobody else.
//!
//! Close codes the server uses:
//! - 1001 `server_shutdown` (SIGTERM / Ctrl-C) or `heartbeat_timeout`;
//! - 1003 `binary_frames_not_supported`: only text frames carry JSON-RPC;
//! - 1007 `invalid_utf8`: a text frame whose payload is not UTF-8 (RFC 6455);
//! - 1008 `authentication_timeout` (no successful `auth.authenticate` within the grace
//!   period);
//! - 1009 `message_too_big`: a frame over `max_message_size_bytes`;
//! - 1011 `internal_error`: a request task panicked (a bug), so its answer is lost;
//! - 1013 `max_clients`: the gateway is full, try again later; 1013
//!   `max_pending_auth`: too many connections are still authenticating.
//!
//! Slots ([`Slots`], in [`super::slots`]): `max_clients` counts authenticated clients
//! only; connections still authenticating hold one of `max_pending_auth` pending slots.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use chrono::Utc;
use futures::{SinkExt, StreamExt};
use orchestrata_schemas::events::types::DisconnectReason;
use tokio::sync::watch;
use uuid::Uuid;

use super::client::{Client, ClientHandle, CloseRequest, Outbound};
use super::dispatch;
use super::inflight::{Finished, InFlight, Job};
use super::presence::{self, Beat, Heartbeat};
use super::state::Shared;

/// Close code: going away (shutdown, heartbeat timeout).
pub const CLOSE_GOING_AWAY: u16 = 1001;
/// Close code: unsupported data (binary frames).
pub const CLOSE_UNSUPPORTED: u16 = 1003;
/// Close code: invalid frame payload data (a text frame that is not UTF-8, RFC 6455
/// section 7.4.1).
pub const CLOSE_INVALID_PAYLOAD: u16 = 1007;
/// Close code: policy violation (authentication timeout).
pub const CLOSE_POLICY: u16 = 1008;
/// Close code: message too big.
pub const CLOSE_TOO_BIG: u16 = 1009;
/// Close code: internal error (a request task panicked).
pub const CLOSE_INTERNAL: u16 = 1011;
/// Close code: try again later (gateway full).
pub const CLOSE_TRY_LATER: u16 = 1013;

async fn refuse(mut socket: WebSocket, code: u16, reason: &'static str) {
    let frame = CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    };
    let _ = socket.send(Message::Close(Some(frame))).await;
    let _ = tokio::time::timeout(Duration::from_secs(1), socket.next()).await;
}

/// Serves one upgraded socket until it closes.
pub async fn serve(gw: Arc<Shared>, socket: WebSocket, remote: Option<SocketAddr>) {
    if gw.shutting_down() {
        return refuse(socket, CLOSE_GOING_AWAY, "server_shutdown").await;
    }
    let simple = Uuid::new_v4().simple().to_string();
    let id = format!("client-{}", simple.get(..12).unwrap_or(&simple));
    tracing::Span::current().record("client_id", id.as_str());
    let (handle, close_rx) = ClientHandle::new(id.clone(), gw.config.event_buffer_per_client);
    let client = Arc::new(Client::new(
        Arc::new(handle),
        remote,
        gw.config.rate_limit_per_second,
    ));
    let mut slot = match gw.slots.admit(&gw.config, remote.map(|a| a.ip())) {
        Ok(slot) => slot,
        Err(reason) => {
            tracing::warn!(
                max_clients = gw.config.max_clients,
                max_pending_auth = gw.config.max_pending_auth,
                ?remote,
                reason,
                "connection refused"
            );
            return refuse(socket, CLOSE_TRY_LATER, reason).await;
        }
    };
    gw.clients().insert(id.clone(), client.clone());
    gw.metrics.connected_clients.inc();
    gw.metrics.total_connections.inc();
    let (sink, mut stream) = socket.split();
    let writer = tokio::spawn(write_loop(
        gw.clone(),
        sink,
        client.handle.clone(),
        close_rx.clone(),
    ));
    let reason = read_loop(&gw, &client, &mut slot, &mut stream, close_rx).await;
    drop(slot);
    client.handle.request_close(1000, "bye");
    // Subscriptions, registry entry and the presence event go at once, not after the
    // closing handshake (REQ-014-120).
    presence::forget(&gw, &client).await;
    presence::disconnected(&gw, &client, reason.0, reason.1).await;
    gw.clients().remove(&id);
    gw.metrics.connected_clients.dec();
    let _ = tokio::time::timeout(Duration::from_secs(1), writer).await;
    // Closing handshake: keep reading until the client answers our close frame, so its
    // last writes (e.g. pongs) do not hit a reset socket.
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        while let Some(Ok(msg)) = stream.next().await {
            if matches!(msg, Message::Close(_)) {
                break;
            }
        }
    })
    .await;
}

type Sink = futures::stream::SplitSink<WebSocket, Message>;
type Source = futures::stream::SplitStream<WebSocket>;

/// Most frames the writer takes from the outbox per write.
const WRITE_BATCH: usize = 256;

/// Drains the client's outbox: takes every queued frame (up to [`WRITE_BATCH`]),
/// `feed`s them to the socket and flushes once, so a burst of notifications costs one
/// write syscall instead of one per frame. A close request interrupts even a write
/// blocked on a client that does not read. On exit the outbox is closed so nobody
/// waits for room that will never come.
async fn write_loop(
    gw: Arc<Shared>,
    mut sink: Sink,
    handle: Arc<ClientHandle>,
    mut close_rx: watch::Receiver<CloseRequest>,
) {
    let outbox = &handle.outbox;
    let mut batch: Vec<Outbound> = Vec::with_capacity(WRITE_BATCH);
    'run: loop {
        tokio::select! {
            biased;
            changed = close_rx.changed() => {
                send_close(&mut sink, changed.is_ok(), &close_rx).await;
                break 'run;
            }
            () = outbox.ready() => {}
        }
        loop {
            outbox.drain(&mut batch, WRITE_BATCH);
            if batch.is_empty() {
                break;
            }
            let frames = batch
                .iter()
                .filter(|o| matches!(o, Outbound::Frame(_)))
                .count() as u64;
            let write = async {
                for out in batch.drain(..) {
                    let msg = match out {
                        Outbound::Frame(text) => Message::Text(text),
                        Outbound::Ping => Message::Ping(Default::default()),
                    };
                    sink.feed(msg).await?;
                }
                sink.flush().await
            };
            let written = tokio::select! {
                biased;
                changed = close_rx.changed() => Err(changed.is_ok()),
                r = write => Ok(r),
            };
            match written {
                Ok(Ok(())) => gw.metrics.messages_sent.inc_by(frames),
                Ok(Err(e)) => {
                    tracing::debug!(client = %handle.id, error = %e, "write failed; closing");
                    handle.request_close(1011, "write_failed");
                    break 'run;
                }
                Err(requested) => {
                    send_close(&mut sink, requested, &close_rx).await;
                    break 'run;
                }
            }
            batch.clear();
        }
    }
    outbox.close();
    let _ = tokio::time::timeout(Duration::from_secs(1), sink.flush()).await;
}

/// Sends the requested close frame, giving up after a second (the peer may not read).
async fn send_close(sink: &mut Sink, requested: bool, close_rx: &watch::Receiver<CloseRequest>) {
    let request = close_rx.borrow().clone();
    if let (true, Some((code, reason))) = (requested, request) {
        let frame = CloseFrame {
            code,
            reason: Utf8Bytes::from(reason),
        };
        let _ = tokio::time::timeout(
            Duration::from_secs(1),
            sink.send(Message::Close(Some(frame))),
        )
        .await;
    }
}

type Reason = (DisconnectReason, Option<String>);

/// Why reading the next frame failed, as far as the connection's close code cares.
enum ReadFault {
    /// A frame or message over `max_message_size_bytes` (tungstenite's capacity
    /// error): closed with 1009.
    TooBig,
    /// A text frame that is not UTF-8 (tungstenite's `Utf8`). The connection is still
    /// writable then, so it is closed with 1007.
    InvalidUtf8,
    /// Anything else (reset, protocol violation): the connection is gone.
    Other(String),
}

impl ReadFault {
    /// Classifies the WebSocket layer's error by its type (axum wraps tungstenite's
    /// error; the two share tungstenite 0.29), never by its text.
    fn of(error: axum::Error) -> ReadFault {
        use tokio_tungstenite::tungstenite::Error as WsError;
        match error.into_inner().downcast::<WsError>() {
            Ok(e) => match *e {
                WsError::Capacity(_) => ReadFault::TooBig,
                WsError::Utf8(_) => ReadFault::InvalidUtf8,
                other => ReadFault::Other(other.to_string()),
            },
            Err(other) => ReadFault::Other(other.to_string()),
        }
    }
}

/// What a request task hands back to the reader.
enum Answered {
    /// The task queued its answer itself.
    Sent,
    /// A frame that ran alone: the reader settles the connection's slot, then queues
    /// the answer (so a grant withdrawn for lack of a client slot is never heard of).
    Alone(dispatch::Outcome),
}

/// Queues `outcome`'s response, then starts its follow-ups; `false` once the
/// connection is gone.
async fn deliver(handle: &ClientHandle, outcome: dispatch::Outcome) -> bool {
    if let Some(response) = outcome.response {
        if !handle.push(Utf8Bytes::from(response)).await {
            return false;
        }
    }
    for work in outcome.after {
        tokio::spawn(tracing::Instrument::in_current_span(work));
    }
    true
}

/// The task of one frame: answers as soon as it is done (JSON-RPC matches answers by
/// id), or hands a frame that ran alone back to the reader.
fn job(gw: &Arc<Shared>, client: &Arc<Client>, frame: dispatch::Prepared) -> Job<Answered> {
    let (gw, client) = (gw.clone(), client.clone());
    let (weight, alone) = (frame.weight, frame.alone);
    let work = async move {
        let outcome = dispatch::run(gw, client.clone(), frame).await;
        if alone {
            return Answered::Alone(outcome);
        }
        deliver(&client.handle, outcome).await;
        Answered::Sent
    };
    Job {
        weight,
        alone,
        work: Box::pin(work),
    }
}

/// How long a shutting-down connection lets its running requests finish (and answer)
/// before it closes and cancels the rest.
const SHUTDOWN_DRAIN: Duration = Duration::from_secs(1);

/// Reads frames and starts each as a task in the connection's [`InFlight`] set until
/// the connection ends; returning drops the set, which cancels what still runs
/// (ERR-012).
async fn read_loop(
    gw: &Arc<Shared>,
    client: &Arc<Client>,
    slot: &mut Slot,
    stream: &mut Source,
    close_rx: watch::Receiver<CloseRequest>,
) -> Reason {
    match read_frames(gw, client, slot, stream, close_rx).await {
        Ok(never) => match never {},
        Err(reason) => reason,
    }
}

/// The reader of [`read_loop`]; ends with the reason the connection ends.
async fn read_frames(
    gw: &Arc<Shared>,
    client: &Arc<Client>,
    slot: &mut Slot,
    stream: &mut Source,
    mut close_rx: watch::Receiver<CloseRequest>,
) -> Result<std::convert::Infallible, Reason> {
    let handle = client.handle.clone();
    let mut shutdown = gw.shutdown.subscribe();
    let auth_deadline = tokio::time::Instant::now() + gw.config.auth_grace;
    let mut heartbeat = Heartbeat::new(&gw.config);
    let max = gw.config.max_message_size_bytes;
    let mut inflight: InFlight<Answered> =
        InFlight::new(gw.config.max_in_flight_per_connection, gw.metrics.clone());
    let closing = |code: u16, reason: &str, why: DisconnectReason| -> Reason {
        handle.request_close(code, reason);
        (why, Some(reason.to_owned()))
    };
    loop {
        while let Some(finished) = inflight.try_next() {
            settle(gw, client, slot, finished).await?;
        }
        let authenticated = client.scope().is_some();
        // Back-pressure: while the bound is reached (or a frame runs alone) the socket
        // is not read, so the client's writes wait in TCP.
        let reading = inflight.accepting();
        tokio::select! {
            msg = stream.next(), if reading => {
                let msg = match msg {
                    None => return Err((DisconnectReason::CleanClose, None)),
                    Some(Ok(m)) => m,
                    Some(Err(e)) => match ReadFault::of(e) {
                        ReadFault::TooBig => {
                            return Err(closing(CLOSE_TOO_BIG, "message_too_big", DisconnectReason::Error));
                        }
                        ReadFault::InvalidUtf8 => {
                            gw.metrics.messages_received.inc();
                            return Err(closing(CLOSE_INVALID_PAYLOAD, "invalid_utf8", DisconnectReason::Error));
                        }
                        ReadFault::Other(text) => return Err((DisconnectReason::Error, Some(text))),
                    },
                };
                heartbeat.activity();
                client.lock().last_activity = Utc::now();
                match msg {
                    Message::Text(text) => {
                        gw.metrics.messages_received.inc();
                        if text.len() > max {
                            return Err(closing(CLOSE_TOO_BIG, "message_too_big", DisconnectReason::Error));
                        }
                        let frame = dispatch::prepare(gw, client, text.as_str());
                        if let Some(done) = inflight.submit(job(gw, client, frame)) {
                            settle(gw, client, slot, Finished::Done(done)).await?;
                        }
                    }
                    Message::Binary(_) => {
                        gw.metrics.messages_received.inc();
                        return Err(closing(CLOSE_UNSUPPORTED, "binary_frames_not_supported", DisconnectReason::Error));
                    }
                    Message::Close(_) => return Err((DisconnectReason::CleanClose, None)),
                    Message::Ping(_) | Message::Pong(_) => {}
                }
            }
            // Waited on only while not reading; otherwise finished tasks are reaped
            // above, after each frame, so they need not wake the reader.
            finished = inflight.next(), if inflight.is_running() && !reading => {
                settle(gw, client, slot, finished).await?;
            }
            // An authentication under way may finish past the deadline (as it always
            // could): the deadline applies once nothing runs.
            _ = tokio::time::sleep_until(auth_deadline), if !authenticated && inflight.is_empty() => {
                return Err(closing(CLOSE_POLICY, "authentication_timeout", DisconnectReason::Timeout));
            }
            _ = close_rx.changed() => {
                let request = close_rx.borrow().clone();
                let detail = request.map(|(_, r)| r);
                return Err((DisconnectReason::Error, detail));
            }
            _ = shutdown.changed() => {
                // What runs may finish and answer before the close frame goes out.
                let _ = tokio::time::timeout(SHUTDOWN_DRAIN, async {
                    while inflight.is_running() {
                        let finished = inflight.next().await;
                        if settle(gw, client, slot, finished).await.is_err() {
                            break;
                        }
                    }
                })
                .await;
                return Err(closing(CLOSE_GOING_AWAY, "server_shutdown", DisconnectReason::ServerShutdown));
            }
            _ = tokio::time::sleep_until(heartbeat.deadline()) => {
                if !reading {
                    // Pongs wait unread in the socket while we apply back-pressure:
                    // the silence is ours, not the client's.
                    heartbeat.activity();
                }
                match heartbeat.wake(tokio::time::Instant::now()) {
                    Beat::Ping => {
                        handle.try_ping();
                        presence::on_ping(gw, client);
                    }
                    Beat::Wait => {}
                    Beat::TimedOut(misses) => {
                        presence::timed_out(gw, client, misses).await;
                        return Err(closing(CLOSE_GOING_AWAY, "heartbeat_timeout", DisconnectReason::Timeout));
                    }
                }
            }
        }
    }
}

/// Finishes what a request task left: a frame that ran alone has the connection's
/// slot settled (an authentication takes a client slot, or the connection closes with
/// 1013 `max_clients` and the grant is withdrawn before the client hears of it), then
/// its answer queued. `Err` ends the connection.
async fn settle(
    gw: &Arc<Shared>,
    client: &Arc<Client>,
    slot: &mut Slot,
    finished: Finished<Answered>,
) -> Result<(), Reason> {
    let handle = &client.handle;
    match finished {
        Finished::Done(Answered::Sent) => Ok(()),
        Finished::Done(Answered::Alone(outcome)) => {
            if let Some(principal) = client.principal() {
                if let Err(reason) = slot.promote(&gw.config, &principal.name) {
                    client.lock().auth = None;
                    tracing::warn!(
                        max_clients = gw.config.max_clients,
                        principal = %principal.name,
                        reason,
                        "authenticated client refused"
                    );
                    handle.request_close(CLOSE_TRY_LATER, reason);
                    return Err((DisconnectReason::Error, Some(reason.into())));
                }
            }
            if deliver(handle, outcome).await {
                Ok(())
            } else {
                Err((
                    DisconnectReason::Error,
                    Some("outbound queue closed".into()),
                ))
            }
        }
        Finished::Panicked(error) => {
            tracing::error!(client = %handle.id, %error, "a request task panicked; closing the connection");
            handle.request_close(CLOSE_INTERNAL, "internal_error");
            Err((DisconnectReason::Error, Some("internal_error".into())))
        }
    }
}

pub use super::slots::{Slot, SlotCounts, Slots};
