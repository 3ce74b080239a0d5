//! Safe defaults at the gateway's front door (issue 14, "Safe defaults"): per-client
//! HMAC secrets, origins checked against the allow-list only, client slots counted
//! after authentication, 1007 for text frames that are not UTF-8, checked arithmetic
//! on client numbers, and one topic-scope check for replay and subscribe.
//!
//! Real gateways on loopback over sled logs in temp dirs, real WebSocket clients
//! (tokio-tungstenite) and, where a client library would refuse to misbehave, raw
//! frames written by hand over a TCP socket.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use chrono::Utc;
use orchestrata::gateway::auth_hmac::sign;
use orchestrata::gateway::config::{HmacClient, HmacConfig};
use orchestrata::gateway::{self, GatewayConfig, RunningGateway, Scope, Services};
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, READ_ONLY_TOKEN, TOKEN, WAIT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

fn reason(error: &Value) -> &str {
    error["data"]["reason"].as_str().unwrap_or("")
}

fn hmac_params(secret: &str, client_id: &str, nonce: &str) -> Value {
    let ts = Utc::now().to_rfc3339();
    json!({"strategy": "hmac", "client_id": client_id, "timestamp": ts, "nonce": nonce,
           "signature": sign(secret, &ts, nonce, client_id)})
}

// REQ-014-096 REQ-014-099 REQ-014-100 ISSUE-14: cross-client HMAC signing
#[tokio::test]
async fn a_read_only_clients_secret_cannot_sign_as_the_admin_client() {
    let hmac = HmacConfig::new(Vec::<String>::new())
        .with_hmac_client(
            "viewer-bot",
            HmacClient::new(Scope::ReadOnly).with_secrets(["viewer-secret"]),
        )
        .with_hmac_client(
            "ops-bot",
            HmacClient::new(Scope::Admin)
                .with_secrets(["ops-secret-new", "ops-secret-old"])
                .acting_as(["U:Cx"]),
        );
    let config = ws::test_config().with_hmac(hmac).expect("valid hmac");
    let gw = TestGateway::sled(config).await;
    let mut c = gw.connect().await;
    let e = c
        .err(
            "auth.authenticate",
            hmac_params("viewer-secret", "ops-bot", "n-1"),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), reason(&e)),
        (Some(-32001), "invalid_signature")
    );
    let e = c
        .err(
            "auth.authenticate",
            hmac_params("viewer-secret", "nobody", "n-2"),
        )
        .await;
    assert_eq!(reason(&e), "unknown_client");
    // Still unauthenticated: an admin method is refused.
    let e = c.err("gateway.clients", json!({})).await;
    assert_eq!(e["code"], -32001, "{e}");
    let r = c
        .ok(
            "auth.authenticate",
            hmac_params("viewer-secret", "viewer-bot", "n-3"),
        )
        .await;
    assert_eq!(r["scope"], "read_only");
    // Both of the admin client's secrets (rotation) sign for it.
    for (i, secret) in ["ops-secret-new", "ops-secret-old"].iter().enumerate() {
        let mut admin = gw.connect().await;
        let r = admin
            .ok(
                "auth.authenticate",
                hmac_params(secret, "ops-bot", &format!("n-ops-{i}")),
            )
            .await;
        assert_eq!(r["scope"], "admin");
    }
}

// REQ-014-096 REQ-014-100
#[test]
fn hmac_clients_parse_in_both_forms_and_a_client_without_a_secret_is_refused() {
    let c = GatewayConfig::from_yaml(
        "gateway:\n  hmac:\n    clients:\n      billing-bot:\n        scope: read_write\n        secrets: [new, old]\n        acts_as: [\"U:Cx\"]\n        default_volk: \"U:Cx\"\n",
    )
    .expect("per-client form");
    let h = c.hmac.expect("hmac");
    let bot = h.clients.get("billing-bot").expect("client");
    assert_eq!(
        (bot.scope, bot.secrets.len(), bot.default_volk.as_deref()),
        (Scope::ReadWrite, 2, Some("U:Cx"))
    );
    assert!(h.shared_secret_warning().is_none());
    assert!(
        !format!("{h:?}").contains("old"),
        "secrets redacted in Debug"
    );
    // The spec's single shared secret keeps working, with a warning.
    let c = GatewayConfig::from_yaml(
        "gateway:\n  hmac:\n    secrets: [shared]\n    clients: {billing-bot: read_write}\n",
    )
    .expect("legacy form");
    let warning = c.hmac.and_then(|h| h.shared_secret_warning());
    assert!(warning.is_some_and(|w| w.contains("billing-bot")));
    let e = GatewayConfig::from_yaml(
        "gateway:\n  hmac:\n    secrets: []\n    clients:\n      a: {scope: admin, secrets: [s]}\n      b: read_only\n",
    )
    .expect_err("b has no secret");
    assert!(
        e.to_string().contains("gateway.hmac.clients.b.secrets"),
        "{e}"
    );
    let e = GatewayConfig::from_yaml(
        "gateway:\n  hmac:\n    clients:\n      a: {scope: read_write, secrets: [s], acts_as: [\"U:Cx\"], default_volk: \"U:Vz\"}\n",
    )
    .expect_err("default outside acts_as");
    assert!(e.to_string().contains("default_volk"), "{e}");
}

/// Sends a WebSocket upgrade by hand with `Host: host` and `Origin: origin`; returns
/// the HTTP status.
async fn upgrade_status(addr: SocketAddr, host: &str, origin: &str) -> u16 {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\
         Origin: {origin}\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("write");
    let head = read_head(&mut s).await;
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status code")
}

/// Reads an HTTP response head (up to the blank line).
async fn read_head(s: &mut TcpStream) -> String {
    let mut buf = Vec::new();
    while !buf.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(WAIT, s.read(&mut byte))
            .await
            .expect("answer in time")
            .expect("read");
        assert!(n == 1, "closed mid-head: {}", String::from_utf8_lossy(&buf));
        buf.push(byte[0]);
    }
    String::from_utf8_lossy(&buf).into_owned()
}

// REQ-014-188 ISSUE-14: DNS rebinding (foreign Origin with a matching Host)
#[tokio::test]
async fn a_foreign_origin_with_a_matching_host_is_refused_at_the_upgrade() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let addr = gw.addr();
    let port = addr.port();
    // A rebinding page: its own name in Origin and Host, resolving to 127.0.0.1.
    let rebound = format!("evil.example:{port}");
    assert_eq!(
        upgrade_status(addr, &rebound, &format!("http://{rebound}")).await,
        403
    );
    // The console served by this loopback gateway keeps working.
    for origin in [
        format!("http://127.0.0.1:{port}"),
        format!("http://localhost:{port}"),
    ] {
        assert_eq!(upgrade_status(addr, &addr.to_string(), &origin).await, 101);
    }
}

// REQ-014-188 ISSUE-14: loopback origins on a non-loopback listener
#[tokio::test]
async fn a_non_loopback_listener_admits_only_listed_origins() {
    let mut config = ws::test_config();
    config.listen = "0.0.0.0:0".parse().expect("address");
    let gw = TestGateway::sled(config).await;
    let port = gw.addr().port();
    let addr: SocketAddr = format!("127.0.0.1:{port}").parse().expect("address");
    let own = format!("http://127.0.0.1:{port}");
    assert_eq!(upgrade_status(addr, &addr.to_string(), &own).await, 403);
    drop(gw);
    let mut config = ws::test_config();
    let port = support::free_port();
    config.listen = format!("0.0.0.0:{port}").parse().expect("address");
    let console = format!("http://127.0.0.1:{port}");
    config.allowed_origins = vec![console.clone()];
    let gw = TestGateway::sled(config).await;
    let addr: SocketAddr = format!("127.0.0.1:{}", gw.addr().port())
        .parse()
        .expect("address");
    assert_eq!(upgrade_status(addr, &addr.to_string(), &console).await, 101);
}

// REQ-014-167 ERR-015 ISSUE-14: slot exhaustion by unauthenticated sockets
#[tokio::test]
async fn idle_unauthenticated_sockets_cannot_lock_authenticated_clients_out() {
    let mut config = ws::test_config();
    config.max_clients = 2;
    config.max_pending_auth = 4;
    config.auth_grace = Duration::from_secs(60);
    let gw = TestGateway::sled(config).await;
    // An attacker opens more idle sockets than max_clients (and reopens them forever).
    let mut idle = Vec::new();
    for _ in 0..3 {
        idle.push(gw.connect().await);
    }
    // Authenticated clients still get in, up to max_clients.
    let mut a = gw.client(TOKEN).await;
    assert!(a.ok("gateway.ping", json!({})).await.is_object());
    let mut b = gw.client(READ_ONLY_TOKEN).await;
    assert!(b.ok("gateway.ping", json!({})).await.is_object());
    // The gateway is full of authenticated clients: a new socket is refused at once.
    let mut c = gw.connect().await;
    assert_eq!(
        c.closed().await,
        support::ws::Closed {
            code: 1013,
            reason: "max_clients".into()
        }
    );
    drop(b);
    tokio::time::sleep(Duration::from_millis(200)).await;
    // One more idle socket fills the pending budget (4); the next is refused at once.
    idle.push(gw.connect().await);
    let mut over = gw.connect().await;
    assert_eq!(
        over.closed().await,
        support::ws::Closed {
            code: 1013,
            reason: "max_pending_auth".into()
        }
    );
    // An idle socket that goes away frees its pending slot for a real client.
    let gone = idle.pop().expect("idle socket");
    gone.close().await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let mut d = gw.client(TOKEN).await;
    assert!(d.ok("gateway.ping", json!({})).await.is_object());
    assert!(a.ok("gateway.ping", json!({})).await.is_object());
}

// REQ-014-167 ERR-015
#[tokio::test]
async fn a_client_authenticating_into_a_full_gateway_is_closed_with_1013() {
    let mut config = ws::test_config();
    config.max_clients = 1;
    let gw = TestGateway::sled(config).await;
    // Connected (pending) before the gateway filled up.
    let mut late = gw.connect().await;
    let mut first = gw.client(TOKEN).await;
    late.send_text(
        &json!({"jsonrpc": "2.0", "id": 1, "method": "auth.authenticate",
                "params": {"strategy": "static_token", "token": TOKEN}})
        .to_string(),
    )
    .await;
    let closed = late.closed().await;
    assert_eq!((closed.code, closed.reason.as_str()), (1013, "max_clients"));
    assert!(first.ok("gateway.ping", json!({})).await.is_object());
}

/// A masked client frame (RFC 6455 5.2) with FIN set, `opcode` and `payload`.
fn client_frame(opcode: u8, payload: &[u8]) -> Vec<u8> {
    assert!(payload.len() < 126, "short frames only");
    let mask = [0x37u8, 0xfa, 0x21, 0x3d];
    let mut frame = vec![0x80 | opcode, 0x80 | payload.len() as u8];
    frame.extend_from_slice(&mask);
    frame.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
    frame
}

// ISSUE-14: invalid UTF-8 in a text frame (RFC 6455 section 8.1, close code 1007)
#[tokio::test]
async fn a_text_frame_that_is_not_utf8_is_closed_with_1007() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let addr = gw.addr();
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("write");
    let head = read_head(&mut s).await;
    assert!(head.starts_with("HTTP/1.1 101"), "{head}");
    // `{"a": "\xff\xfe"}`: a text frame whose payload is not UTF-8.
    s.write_all(&client_frame(0x1, b"{\"a\": \"\xff\xfe\"}"))
        .await
        .expect("write frame");
    // Server frames are unmasked; skip anything but the close frame.
    loop {
        let mut header = [0u8; 2];
        tokio::time::timeout(WAIT, s.read_exact(&mut header))
            .await
            .expect("a frame in time")
            .expect("a frame before the socket closes");
        let len = usize::from(header[1] & 0x7f);
        assert!(len < 126, "short server frame expected");
        let mut payload = vec![0u8; len];
        s.read_exact(&mut payload).await.expect("payload");
        if header[0] & 0x0f == 0x8 {
            let code = u16::from_be_bytes([payload[0], payload[1]]);
            assert_eq!(code, 1007, "{}", String::from_utf8_lossy(&payload[2..]));
            assert_eq!(&payload[2..], b"invalid_utf8");
            break;
        }
    }
}

/// A gateway with kernel and live views over one sled log.
struct Stack {
    running: RunningGateway,
    _core: support::stack::Core,
}

impl Stack {
    async fn start() -> Stack {
        let core = support::stack::Core::start().await;
        let services =
            Services::new(core.log.clone()).with_kernel(core.kernel.clone(), core.views());
        let running = gateway::start(ws::test_config(), services)
            .await
            .expect("gateway starts");
        Stack {
            running,
            _core: core,
        }
    }

    async fn client(&self, token: &str) -> Ws {
        let mut ws = Ws::connect(&format!("ws://{}/", self.running.local_addr())).await;
        ws.auth(token).await;
        ws
    }
}

// ISSUE-14: volk.list offset overflow (2^64 - 1)
#[tokio::test]
async fn volk_list_with_huge_offsets_answers_an_empty_page() {
    let stack = Stack::start().await;
    let mut c = stack.client(READ_ONLY_TOKEN).await;
    let total = c.ok("volk.list", json!({})).await["total"]
        .as_u64()
        .expect("total");
    for offset in [u64::MAX, u64::MAX - 1, 1 << 63, total] {
        let r = c
            .ok("volk.list", json!({"offset": offset, "limit": 100}))
            .await;
        assert_eq!(r["volks"], json!([]), "{offset}");
        assert_eq!(r["has_more"], false, "{offset}");
        assert_eq!(r["offset"], offset, "{offset}");
    }
    // Beyond u64: a clear -32602, not a panic.
    c.send_text(
        r#"{"jsonrpc": "2.0", "id": 99, "method": "volk.list", "params": {"offset": 18446744073709551616}}"#,
    )
    .await;
    let r = c.response(json!(99)).await;
    assert_eq!(r["error"]["code"], -32602, "{r}");
    assert!(c.ok("gateway.ping", json!({})).await.is_object());
}

// ISSUE-14: sequence arithmetic in replay and resume
#[tokio::test]
async fn replay_and_resume_with_extreme_sequences_never_overflow() {
    let gw = TestGateway::sled(ws::test_config()).await;
    gw.log
        .append(&ws::volk_registered("U:Cx"))
        .await
        .expect("append");
    let mut c = gw.client(TOKEN).await;
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "volk.lifecycle", "sequence_from": 0, "sequence_to": u64::MAX}),
        )
        .await;
    assert_eq!(r["events"].as_array().map(Vec::len), Some(1), "{r}");
    let r = c
        .ok(
            "gateway.replay",
            json!({"topic": "volk.lifecycle", "sequence_from": u64::MAX, "sequence_to": u64::MAX}),
        )
        .await;
    assert_eq!(r["events"], json!([]));
    let epoch = r["epoch"].clone();
    let e = c
        .err(
            "gateway.subscribe",
            json!({"topic": "volk.lifecycle", "since": {"epoch": epoch, "sequence": u64::MAX}}),
        )
        .await;
    assert_eq!(
        (e["code"].as_i64(), reason(&e)),
        (Some(-32602), "position_ahead")
    );
    assert!(c.ok("gateway.ping", json!({})).await.is_object());
}

// ISSUE-14: replay of a topic outside the scope (contract event_topics)
#[tokio::test]
async fn replay_checks_the_topic_scope_like_subscribe() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut viewer = gw.client(READ_ONLY_TOKEN).await;
    for method in ["gateway.replay", "gateway.subscribe"] {
        let e = viewer
            .err(method, json!({"topic": "governance.decisions"}))
            .await;
        assert_eq!(
            (e["code"].as_i64(), reason(&e)),
            (Some(-32001), "insufficient_scope"),
            "{method}: {e}"
        );
    }
    // Both denials are recorded the same way on governance.decisions.
    let mut writer = gw.client(TOKEN).await;
    let r = writer
        .ok(
            "gateway.replay",
            json!({"topic": "governance.decisions", "count": 100}),
        )
        .await;
    let denials: Vec<&Value> = r["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| {
            e["payload"]["action"] == "subscribe:governance.decisions"
                && e["payload"]["result"]
                    .as_str()
                    .is_some_and(|r| r.eq_ignore_ascii_case("deny"))
        })
        .collect();
    assert_eq!(denials.len(), 2, "{r}");
    // read_only topics stay readable.
    viewer
        .ok("gateway.replay", json!({"topic": "volk.lifecycle"}))
        .await;
}
