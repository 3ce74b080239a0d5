//! The MCP server's WebSocket JSON-RPC connection to the gateway.
//!
//! One connection at a time, authenticated once with `GATEWAY_TOKEN` right after the
//! handshake. A task owns the socket: it writes requests, routes each response to its
//! caller by `id`, and answers the gateway's heartbeat pings even while no tool is being
//! called. When the connection drops (gateway restart, heartbeat timeout, network) the
//! task ends, and the next call connects and authenticates again.
//!
//! A call whose connection dropped **after** the request was written may or may not
//! have taken effect. Read-only calls are then retried once on a fresh connection;
//! state-changing calls are not (that could act twice): they report
//! [`GatewayError::Lost`] and leave the decision to the caller.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures::{SinkExt, StreamExt};
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio::sync::{mpsc, oneshot, Mutex};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use super::settings::GatewaySettings;

/// How long to wait for the TCP + WebSocket handshake.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long to wait for the answer to one call.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Why a call got no answer from the gateway.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum GatewayError {
    /// No connection could be made.
    #[error("gateway at {url} is unreachable: {detail}")]
    Unreachable {
        /// `ws://HOST:PORT/`.
        url: String,
        /// What failed.
        detail: String,
    },
    /// The gateway refused `GATEWAY_TOKEN`.
    #[error("gateway at {url} refused GATEWAY_TOKEN: {reason}")]
    AuthRefused {
        /// `ws://HOST:PORT/`.
        url: String,
        /// The gateway's `data.reason` (e.g. `invalid_token`).
        reason: String,
    },
    /// The connection dropped after the request was sent; the outcome is unknown.
    #[error("the connection to the gateway dropped before it answered `{method}`; the call may or may not have taken effect")]
    Lost {
        /// The method called.
        method: String,
    },
    /// No answer in time.
    #[error("the gateway did not answer `{method}` within {}s", CALL_TIMEOUT.as_secs())]
    Timeout {
        /// The method called.
        method: String,
    },
    /// The answer is not a JSON-RPC response.
    #[error("the gateway's answer to `{method}` is not a JSON-RPC response: {answer}")]
    BadAnswer {
        /// The method called.
        method: String,
        /// The frame received.
        answer: String,
    },
}

impl GatewayError {
    /// A stable word for ledgers.
    pub fn reason(&self) -> &'static str {
        match self {
            GatewayError::Unreachable { .. } => "gateway_unreachable",
            GatewayError::AuthRefused { .. } => "gateway_auth_refused",
            GatewayError::Lost { .. } => "gateway_connection_lost",
            GatewayError::Timeout { .. } => "gateway_timeout",
            GatewayError::BadAnswer { .. } => "gateway_bad_answer",
        }
    }
}

/// The gateway's answer: its `result`, or its JSON-RPC `error` object.
pub type Answer = Result<Value, Value>;

/// One request handed to the socket task.
struct Pending {
    id: u64,
    frame: String,
    reply: oneshot::Sender<Value>,
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A client of one gateway that connects on demand.
pub struct GatewayClient {
    settings: GatewaySettings,
    link: Mutex<Option<mpsc::Sender<Pending>>>,
    next_id: AtomicU64,
}

impl GatewayClient {
    /// A client that connects at its first call (or at [`GatewayClient::connect`]).
    pub fn new(settings: GatewaySettings) -> Self {
        GatewayClient {
            settings,
            link: Mutex::new(None),
            next_id: AtomicU64::new(1),
        }
    }

    /// `ws://HOST:PORT/`.
    pub fn url(&self) -> String {
        self.settings.url()
    }

    /// Connects and authenticates now unless already connected.
    pub async fn connect(&self) -> Result<(), GatewayError> {
        self.link().await.map(drop)
    }

    /// Calls `method` with `params`. `retry_safe` (a read-only method) allows one retry
    /// on a fresh connection when the connection drops mid-call.
    pub async fn call(
        &self,
        method: &str,
        params: Value,
        retry_safe: bool,
    ) -> Result<Answer, GatewayError> {
        let mut attempts = 0;
        loop {
            attempts += 1;
            let link = self.link().await?;
            match self.exchange(&link, method, &params).await {
                Exchange::Answered(answer) => return answer,
                // Never written: always safe to send on a fresh connection.
                Exchange::NotSent if attempts < 3 => continue,
                Exchange::Dropped if retry_safe && attempts < 2 => continue,
                Exchange::NotSent | Exchange::Dropped => {
                    return Err(GatewayError::Lost {
                        method: method.to_owned(),
                    })
                }
            }
        }
    }

    async fn exchange(
        &self,
        link: &mpsc::Sender<Pending>,
        method: &str,
        params: &Value,
    ) -> Exchange {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let frame =
            json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string();
        let (reply, answer) = oneshot::channel();
        if link.send(Pending { id, frame, reply }).await.is_err() {
            return Exchange::NotSent;
        }
        match tokio::time::timeout(CALL_TIMEOUT, answer).await {
            Err(_) => Exchange::Answered(Err(GatewayError::Timeout {
                method: method.to_owned(),
            })),
            Ok(Err(_)) => Exchange::Dropped,
            Ok(Ok(frame)) => Exchange::Answered(read_answer(method, frame)),
        }
    }

    /// The live connection, connecting and authenticating if there is none.
    async fn link(&self) -> Result<mpsc::Sender<Pending>, GatewayError> {
        let mut slot = self.link.lock().await;
        if let Some(link) = slot.as_ref().filter(|l| !l.is_closed()) {
            return Ok(link.clone());
        }
        *slot = None;
        let url = self.url();
        let unreachable = |detail: String| GatewayError::Unreachable {
            url: url.clone(),
            detail,
        };
        let (socket, _) =
            tokio::time::timeout(CONNECT_TIMEOUT, tokio_tungstenite::connect_async(&url))
                .await
                .map_err(|_| {
                    unreachable(format!(
                        "no handshake within {}s",
                        CONNECT_TIMEOUT.as_secs()
                    ))
                })?
                .map_err(|e| unreachable(e.to_string()))?;
        let (tx, rx) = mpsc::channel(64);
        tokio::spawn(drive(socket, rx));
        let auth = json!({
            "strategy": "static_token",
            "token": self.settings.token,
            "client_metadata": {"client_name": "orchestrata-mcp", "client_version": env!("CARGO_PKG_VERSION"), "purpose": "mcp"},
        });
        match self.exchange(&tx, "auth.authenticate", &auth).await {
            Exchange::Answered(Ok(Ok(_))) => {}
            Exchange::Answered(Ok(Err(error))) => {
                return Err(GatewayError::AuthRefused {
                    url,
                    reason: error["data"]["reason"]
                        .as_str()
                        .or(error["message"].as_str())
                        .unwrap_or("refused")
                        .to_owned(),
                })
            }
            Exchange::Answered(Err(e)) => return Err(e),
            Exchange::NotSent | Exchange::Dropped => {
                return Err(unreachable(
                    "connection closed during authentication".into(),
                ))
            }
        }
        *slot = Some(tx.clone());
        Ok(tx)
    }
}

enum Exchange {
    Answered(Result<Answer, GatewayError>),
    NotSent,
    Dropped,
}

fn read_answer(method: &str, frame: Value) -> Result<Answer, GatewayError> {
    if let Some(error) = frame.get("error") {
        return Ok(Err(error.clone()));
    }
    match frame.get("result") {
        Some(result) => Ok(Ok(result.clone())),
        None => Err(GatewayError::BadAnswer {
            method: method.to_owned(),
            answer: frame.to_string(),
        }),
    }
}

/// Owns the socket until it closes: writes requests, routes answers by id, keeps the
/// heartbeat answered. Pending callers see their reply sender dropped when it ends.
async fn drive(mut socket: Socket, mut requests: mpsc::Receiver<Pending>) {
    let mut pending: HashMap<u64, oneshot::Sender<Value>> = HashMap::new();
    loop {
        tokio::select! {
            request = requests.recv() => {
                let Some(request) = request else {
                    let _ = socket.close(None).await;
                    return;
                };
                if socket.send(Message::Text(request.frame.into())).await.is_err() {
                    return;
                }
                pending.insert(request.id, request.reply);
            }
            message = socket.next() => match message {
                Some(Ok(Message::Text(text))) => {
                    let Ok(frame) = serde_json::from_str::<Value>(&text) else { continue };
                    let id = frame.get("id").and_then(Value::as_u64);
                    if let Some(reply) = id.and_then(|id| pending.remove(&id)) {
                        let _ = reply.send(frame);
                    }
                }
                Some(Ok(Message::Ping(_))) => {
                    // tungstenite queued the pong; push it out now.
                    if socket.flush().await.is_err() {
                        return;
                    }
                }
                Some(Ok(Message::Close(_))) | Some(Err(_)) | None => return,
                Some(Ok(_)) => {}
            },
        }
        // Forget callers that gave up (timed out).
        pending.retain(|_, reply| !reply.is_closed());
    }
}
