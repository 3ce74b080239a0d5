//! A real WebSocket JSON-RPC client (tokio-tungstenite) and gateways on loopback for the
//! gateway tests: a gateway bound to 127.0.0.1:0 over a sled log in a temp dir, or over
//! the Kafka-protocol broker.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use chrono::Utc;
use futures::{SinkExt, StreamExt};
use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, GatewayConfig, RunningGateway, Scope, Services, TokenGrant};
use orchestrata::log::EventLog;
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::EventRecord;
use serde_json::{json, Value};
use tokio::net::TcpStream;
use tokio_tungstenite::tungstenite::protocol::frame::coding::CloseCode;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};
use uuid::Uuid;

/// The read_write token of test gateways.
pub const TOKEN: &str = "test-token-read-write";
/// The admin token of test gateways.
pub const ADMIN_TOKEN: &str = "test-token-admin";
/// The read_only token of test gateways.
pub const READ_ONLY_TOKEN: &str = "test-token-read-only";

/// How long a test waits for any one frame.
pub const WAIT: Duration = Duration::from_secs(10);

/// Test gateway settings: three tokens, port 0.
///
/// `TOKEN` is a read_write principal `tester` that acts as every Volk of the standard
/// roster (sending as `U:GW` when a call names no `from`), so tests can speak for any
/// roster Volk; the operator's own token (acting as `U:GW` only) is tested on its own.
pub fn test_config() -> GatewayConfig {
    let roster = orchestrata::kernel::roster::STANDARD_ROSTER
        .iter()
        .map(|(a, _, _)| *a);
    let acting = std::iter::once("U:GW").chain(roster.filter(|a| *a != "U:GW"));
    let mut c = GatewayConfig::default()
        .with_token_grant(TokenGrant::new(TOKEN, Scope::ReadWrite, "tester").acting_as(acting))
        .with_grant(ADMIN_TOKEN, Scope::Admin, "admin")
        .with_grant(READ_ONLY_TOKEN, Scope::ReadOnly, "viewer");
    c.listen = "127.0.0.1:0".parse().expect("loopback address");
    c
}

/// Which log a test gateway runs on.
pub enum Backend {
    /// sled in a temp dir.
    Sled(tempfile::TempDir),
    /// Kafka-protocol broker with a unique topic prefix.
    Kafka(super::Brokers, LogConfig),
}

/// A running gateway with its log.
pub struct TestGateway {
    /// The gateway.
    pub running: Option<RunningGateway>,
    /// Its log.
    pub log: Arc<dyn EventLog>,
    /// Keeps the storage alive.
    pub backend: Backend,
}

impl TestGateway {
    /// A gateway over a fresh sled log.
    pub async fn sled(config: GatewayConfig) -> TestGateway {
        let dir = tempfile::tempdir().expect("temp dir");
        let log = orchestrata::log::open(&LogConfig::sled(dir.path()))
            .await
            .expect("open sled log");
        Self::start(config, log, Backend::Sled(dir)).await
    }

    /// A gateway over a Kafka log with a unique prefix.
    pub async fn kafka(config: GatewayConfig) -> TestGateway {
        let brokers = super::kafka_brokers();
        let mut log_config = LogConfig::kafka(brokers.address.clone());
        log_config.topic_prefix = super::unique_prefix();
        let log = orchestrata::log::open(&log_config)
            .await
            .expect("open kafka log");
        Self::start(config, log, Backend::Kafka(brokers, log_config)).await
    }

    async fn start(config: GatewayConfig, log: Arc<dyn EventLog>, backend: Backend) -> Self {
        let services = Services::new(log.clone()).with_config_view(json!({
            "gateway": {"max_clients": config.max_clients, "static_token": TOKEN},
            "log": {"backend": "test"},
        }));
        let running = gateway::start(config, services)
            .await
            .expect("gateway starts");
        TestGateway {
            running: Some(running),
            log,
            backend,
        }
    }

    /// The gateway's address.
    pub fn addr(&self) -> SocketAddr {
        self.running.as_ref().expect("running").local_addr()
    }

    /// `ws://…/`.
    pub fn url(&self) -> String {
        format!("ws://{}/", self.addr())
    }

    /// A connected, unauthenticated client.
    pub async fn connect(&self) -> Ws {
        Ws::connect(&self.url()).await
    }

    /// A client authenticated with `token`.
    pub async fn client(&self, token: &str) -> Ws {
        let mut ws = self.connect().await;
        ws.auth(token).await;
        ws
    }

    /// Stops the gateway.
    pub async fn stop(&mut self) {
        if let Some(r) = self.running.take() {
            r.shutdown().await.expect("clean shutdown");
        }
    }

    /// GET `path` over plain HTTP; returns (status, body).
    pub async fn http_get(&self, path: &str) -> (u16, String) {
        http_get(self.addr(), path).await
    }
}

/// A minimal HTTP/1.1 GET over a real TCP socket.
pub async fn http_get(addr: SocketAddr, path: &str) -> (u16, String) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = TcpStream::connect(addr).await.expect("connect");
    s.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write request");
    let mut buf = Vec::new();
    tokio::time::timeout(WAIT, s.read_to_end(&mut buf))
        .await
        .expect("http answer in time")
        .expect("read answer");
    let text = String::from_utf8_lossy(&buf).into_owned();
    let status = text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("status code");
    let body = text.split("\r\n\r\n").nth(1).unwrap_or("").to_owned();
    (status, body)
}

type Socket = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// A JSON-RPC client over a real WebSocket.
pub struct Ws {
    socket: Socket,
    next_id: u64,
    /// Notifications received while waiting for responses.
    pub notifications: VecDeque<Value>,
}

/// How a connection ended.
#[derive(Debug, PartialEq, Eq)]
pub struct Closed {
    /// Close code.
    pub code: u16,
    /// Close reason.
    pub reason: String,
}

impl Ws {
    /// Connects to `url`.
    pub async fn connect(url: &str) -> Ws {
        Ws::connect_within(url, WAIT).await
    }

    /// Connects to `url`, allowing `within` for the handshake: for a server in another
    /// process that has only just said it is listening, on a loaded machine.
    pub async fn connect_within(url: &str, within: Duration) -> Ws {
        let (socket, _) = tokio::time::timeout(within, tokio_tungstenite::connect_async(url))
            .await
            .expect("connect in time")
            .expect("websocket handshake");
        Ws {
            socket,
            next_id: 1,
            notifications: VecDeque::new(),
        }
    }

    /// Sends a raw text frame.
    pub async fn send_text(&mut self, text: &str) {
        self.socket
            .send(Message::Text(text.into()))
            .await
            .expect("send text frame");
    }

    /// Sends a raw binary frame.
    pub async fn send_binary(&mut self, bytes: Vec<u8>) {
        self.socket
            .send(Message::Binary(bytes.into()))
            .await
            .expect("send binary frame");
    }

    /// The next text frame as JSON (`None` if the connection closed).
    pub async fn next_json(&mut self) -> Option<Value> {
        loop {
            let msg = tokio::time::timeout(WAIT, self.socket.next())
                .await
                .expect("a frame in time")?;
            match msg {
                Ok(Message::Text(t)) => return Some(serde_json::from_str(&t).expect("JSON frame")),
                Ok(Message::Close(_)) | Err(_) => return None,
                Ok(_) => continue,
            }
        }
    }

    /// Sends a request and returns its whole response; notifications that arrive first
    /// are kept in [`Ws::notifications`].
    pub async fn call(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        self.send_text(&frame.to_string()).await;
        self.response(json!(id)).await
    }

    /// Waits for the response with `id`.
    pub async fn response(&mut self, id: Value) -> Value {
        loop {
            let v = self.next_json().await.expect("response before close");
            if v.get("id") == Some(&id) {
                return v;
            }
            if v.get("id").is_none() {
                self.notifications.push_back(v);
            }
        }
    }

    /// The `result` of a call that must succeed.
    pub async fn ok(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params).await;
        assert!(r.get("error").is_none(), "{method} failed: {r}");
        r["result"].clone()
    }

    /// The `error` of a call that must fail.
    pub async fn err(&mut self, method: &str, params: Value) -> Value {
        let r = self.call(method, params).await;
        assert!(r.get("result").is_none(), "{method} should fail: {r}");
        r["error"].clone()
    }

    /// Authenticates with a static token.
    pub async fn auth(&mut self, token: &str) -> Value {
        self.ok(
            "auth.authenticate",
            json!({"strategy": "static_token", "token": token,
                   "client_metadata": {"client_name": "gateway-tests", "client_version": "1", "purpose": "test"}}),
        )
        .await
    }

    /// The next notification (buffered or read), within `WAIT`.
    pub async fn notification(&mut self) -> Value {
        if let Some(n) = self.notifications.pop_front() {
            return n;
        }
        loop {
            let v = self.next_json().await.expect("notification before close");
            if v.get("id").is_none() {
                return v;
            }
        }
    }

    /// `n` notifications.
    pub async fn notifications(&mut self, n: usize) -> Vec<Value> {
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.notification().await);
        }
        out
    }

    /// Asserts nothing arrives within `quiet`.
    pub async fn assert_silent(&mut self, quiet: Duration) {
        assert!(
            self.notifications.is_empty(),
            "unexpected: {:?}",
            self.notifications
        );
        if let Ok(Some(msg)) = tokio::time::timeout(quiet, self.socket.next()).await {
            panic!("expected silence, got {msg:?}");
        }
    }

    /// Reads until the server closes; returns its close frame.
    pub async fn closed(&mut self) -> Closed {
        loop {
            let msg = tokio::time::timeout(WAIT, self.socket.next())
                .await
                .expect("close in time");
            match msg {
                Some(Ok(Message::Close(Some(f)))) => {
                    return Closed {
                        code: u16::from(f.code),
                        reason: f.reason.to_string(),
                    }
                }
                Some(Ok(Message::Close(None))) => {
                    return Closed {
                        code: u16::from(CloseCode::Status),
                        reason: String::new(),
                    }
                }
                Some(Ok(_)) => continue,
                Some(Err(e)) => panic!("connection failed instead of closing: {e}"),
                None => panic!("connection dropped without a close frame"),
            }
        }
    }

    /// Closes from the client side.
    pub async fn close(mut self) {
        let _ = self.socket.close(None).await;
    }
}

/// A `packet_sent` event from `from` to `to`.
pub fn packet_sent(from: &str, to: &str, subject: &str, thread: &str) -> EventRecord {
    let packet = Packet {
        message_id: Uuid::new_v4(),
        from_agent: from.into(),
        to_agent: to.into(),
        thread_id: thread.into(),
        subject: subject.into(),
        payload: PacketPayload::Json(json!({"text": format!("{subject} from {from}")}).into()),
        created_at: Utc::now(),
        priority: 5,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json(json!({})),
    };
    EventRecord::new("kernel.postman", thread, PacketSent { packet }, Utc::now())
}

/// A `registered` event on volk.lifecycle.
pub fn volk_registered(alias: &str) -> EventRecord {
    EventRecord::new(
        "kernel",
        alias,
        VolkRegistered {
            alias: alias.into(),
            capabilities: vec!["code".into()],
            parent: None,
            protocols: vec!["cxp/1.0".into()],
            session_id: None,
            metadata: Json(json!({})),
        },
        Utc::now(),
    )
}
