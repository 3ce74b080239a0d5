//! Origin allow-list and TLS of the gateway (issue 7, "Back-pressure and limits"):
//! real gateways on loopback over sled logs in temp dirs, real WebSocket clients
//! (tokio-tungstenite, over rustls for `wss://`), raw HTTP upgrade requests, and a real
//! `orchestrata up` process serving TLS from files a test generated with rcgen.

mod support;

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::{SinkExt, StreamExt};
use orchestrata::gateway::tls::TlsConfig;
use orchestrata::gateway::{self, GatewayConfig, GatewayError, Services};
use serde_json::{json, Value};
use support::ws::{self, TestGateway, Ws, TOKEN, WAIT};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio_rustls::rustls::pki_types::{CertificateDer, ServerName};
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_tungstenite::tungstenite::client::IntoClientRequest;
use tokio_tungstenite::tungstenite::http::HeaderValue;
use tokio_tungstenite::tungstenite::{self as tungstenite, Message};
use tokio_tungstenite::{Connector, WebSocketStream};

/// A gateway whose `gateway.allowed_origins` comes from `yaml_list` (YAML flow list).
async fn gateway_allowing(yaml_list: &str) -> TestGateway {
    let parsed = GatewayConfig::from_yaml(&format!("gateway:\n  allowed_origins: {yaml_list}\n"))
        .expect("valid allow-list");
    let mut config = ws::test_config();
    config.allowed_origins = parsed.allowed_origins;
    TestGateway::sled(config).await
}

/// Sends a WebSocket upgrade request by hand (with `origin`, if any) and returns the
/// status and body of the answer.
async fn raw_upgrade(addr: SocketAddr, origin: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).await.expect("connect");
    let origin = origin.map_or(String::new(), |o| format!("Origin: {o}\r\n"));
    let request = format!(
        "GET / HTTP/1.1\r\nHost: {addr}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n{origin}\r\n"
    );
    s.write_all(request.as_bytes()).await.expect("write");
    let mut buf = Vec::new();
    let deadline = Instant::now() + WAIT;
    loop {
        let text = String::from_utf8_lossy(&buf).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let status: u16 = head
                .split_whitespace()
                .nth(1)
                .and_then(|s| s.parse().ok())
                .expect("status code");
            let length: usize = head
                .lines()
                .find_map(|l| {
                    let (k, v) = l.split_once(':')?;
                    k.eq_ignore_ascii_case("content-length")
                        .then(|| v.trim().parse().ok())?
                })
                .unwrap_or(0);
            if body.len() >= length {
                return (status, body.to_owned());
            }
        }
        let mut chunk = [0u8; 4096];
        let left = deadline.saturating_duration_since(Instant::now());
        let n = tokio::time::timeout(left, s.read(&mut chunk))
            .await
            .expect("an answer in time")
            .expect("read");
        assert!(n > 0, "connection closed mid-answer: {text}");
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Opens a WebSocket to `gw` sending `Origin: origin`; `Err` carries the HTTP status
/// and body of a refused handshake.
async fn connect_from(gw: &TestGateway, origin: &str) -> Result<(), (u16, Value)> {
    let mut request = gw.url().into_client_request().expect("request");
    request.headers_mut().insert(
        "origin",
        HeaderValue::from_str(origin).expect("header value"),
    );
    let attempt = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(request))
        .await
        .expect("handshake in time");
    match attempt {
        Ok((mut socket, _)) => {
            let pong = rpc(&mut socket, 1, "gateway.ping", json!({})).await;
            // Before authentication the gateway answers, and answers Unauthorized.
            assert_eq!(pong["error"]["code"], -32001, "{pong}");
            Ok(())
        }
        Err(tungstenite::Error::Http(response)) => {
            let body = response.body().clone().unwrap_or_default();
            let body = serde_json::from_slice(&body).expect("JSON body");
            Err((response.status().as_u16(), body))
        }
        Err(e) => panic!("unexpected handshake failure: {e}"),
    }
}

/// One JSON-RPC call over any WebSocket (plain or TLS); returns the response.
async fn rpc<S>(socket: &mut WebSocketStream<S>, id: u64, method: &str, params: Value) -> Value
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let frame = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
    socket
        .send(Message::Text(frame.to_string().into()))
        .await
        .expect("send");
    loop {
        let msg = tokio::time::timeout(WAIT, socket.next())
            .await
            .expect("a frame in time")
            .expect("open connection")
            .expect("frame");
        if let Message::Text(t) = msg {
            let v: Value = serde_json::from_str(&t).expect("JSON frame");
            if v["id"] == json!(id) {
                return v;
            }
        }
    }
}

// REQ-014-188
#[tokio::test]
async fn a_foreign_origin_is_refused_with_403_before_upgrading_and_counted() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let (status, body) = raw_upgrade(gw.addr(), Some("https://evil.example")).await;
    assert_eq!(status, 403, "{body}");
    let body: Value = serde_json::from_str(&body).expect("JSON body");
    assert_eq!(
        body,
        json!({"error": "origin_not_allowed", "origin": "https://evil.example"})
    );
    // The same request without an Origin is upgraded.
    let (status, _) = raw_upgrade(gw.addr(), None).await;
    assert_eq!(status, 101);
    let (_, metrics) = gw.http_get("/metrics").await;
    assert!(
        metrics.contains("orchestrata_gateway_origin_refused_total 1"),
        "{metrics}"
    );
}

// REQ-014-188
#[tokio::test]
async fn clients_without_an_origin_connect_even_under_a_strict_list() {
    let gw = gateway_allowing("[https://ops.example.com]").await;
    let mut c = gw.client(TOKEN).await;
    assert!(c.ok("gateway.ping", json!({})).await["server_timestamp"].is_string());
}

// REQ-014-188
#[tokio::test]
async fn the_gateways_own_origin_is_allowed_by_default_and_others_are_not() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let own = format!("http://{}", gw.addr());
    connect_from(&gw, &own).await.expect("same origin allowed");
    // A loopback listener admits loopback origins (its console, any port) ...
    let local = format!("http://localhost:{}", gw.addr().port());
    connect_from(&gw, &local)
        .await
        .expect("loopback origin allowed");
    // ... and nothing else, even with the page's own name in Host (ISSUE-14).
    let other = format!("http://evil.example:{}", gw.addr().port());
    let (status, body) = connect_from(&gw, &other).await.expect_err("refused");
    assert_eq!(status, 403);
    assert_eq!(body["error"], "origin_not_allowed");
    assert_eq!(body["origin"], other.as_str());
}

// REQ-014-188
#[tokio::test]
async fn listed_origins_connect_and_unlisted_ones_are_refused() {
    let gw = gateway_allowing("[https://ops.example.com, 'http://localhost:3000']").await;
    connect_from(&gw, "https://ops.example.com")
        .await
        .expect("listed origin");
    connect_from(&gw, "http://localhost:3000")
        .await
        .expect("listed origin with port");
    for refused in [
        "http://ops.example.com",
        "https://ops.example.com.evil.io",
        "https://ops.example.com:8443",
        "null",
    ] {
        let (status, body) = connect_from(&gw, refused).await.expect_err(refused);
        assert_eq!(status, 403, "{refused}");
        assert_eq!(body["origin"], refused);
    }
}

// REQ-014-188
#[tokio::test]
async fn star_allows_every_origin() {
    let gw = gateway_allowing("['*']").await;
    for origin in ["https://anything.example", "http://10.1.2.3:8080", "null"] {
        connect_from(&gw, origin).await.expect(origin);
    }
}

// REQ-014-188
#[test]
fn malformed_allow_list_entries_are_config_errors_naming_the_entry() {
    let e = GatewayConfig::from_yaml(
        "gateway:\n  allowed_origins: [https://ok.example, ops.example.com]\n",
    )
    .expect_err("no scheme");
    let text = e.to_string();
    assert!(text.contains("gateway.allowed_origins[1]"), "{text}");
    assert!(text.contains("`ops.example.com`"), "{text}");
    let e = GatewayConfig::from_yaml("gateway:\n  allowed_origins: ['https://a.example/app']\n")
        .expect_err("path");
    assert!(e.to_string().contains("gateway.allowed_origins[0]"), "{e}");
}

/// A self-signed certificate for 127.0.0.1 and localhost, written as PEM files.
struct Pki {
    dir: tempfile::TempDir,
    cert: CertificateDer<'static>,
}

impl Pki {
    fn new() -> Pki {
        let dir = tempfile::tempdir().expect("temp dir");
        let generated =
            rcgen::generate_simple_self_signed(vec!["127.0.0.1".into(), "localhost".into()])
                .expect("self-signed certificate");
        std::fs::write(dir.path().join("gw.crt"), generated.cert.pem()).expect("write cert");
        std::fs::write(
            dir.path().join("gw.key"),
            generated.signing_key.serialize_pem(),
        )
        .expect("write key");
        Pki {
            cert: generated.cert.der().clone(),
            dir,
        }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn config(&self) -> TlsConfig {
        TlsConfig::new(self.path("gw.crt"), self.path("gw.key"))
    }

    /// A client configuration trusting only this certificate.
    fn client(&self) -> Arc<ClientConfig> {
        let mut roots = RootCertStore::empty();
        roots.add(self.cert.clone()).expect("trust the test cert");
        let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
        Arc::new(
            ClientConfig::builder_with_provider(provider)
                .with_safe_default_protocol_versions()
                .expect("protocol versions")
                .with_root_certificates(roots)
                .with_no_client_auth(),
        )
    }
}

async fn tls_gateway(pki: &Pki) -> TestGateway {
    let yaml = format!(
        "gateway:\n  tls:\n    cert_path: {}\n    key_path: {}\n",
        pki.path("gw.crt").display(),
        pki.path("gw.key").display()
    );
    let parsed = GatewayConfig::from_yaml(&yaml).expect("tls config");
    assert_eq!(parsed.tls, Some(pki.config()));
    let mut config = ws::test_config();
    config.tls = parsed.tls;
    TestGateway::sled(config).await
}

/// GET `path` over HTTPS; returns the whole answer.
async fn https_get(addr: SocketAddr, client: Arc<ClientConfig>, path: &str) -> String {
    let tcp = TcpStream::connect(addr).await.expect("connect");
    let name = ServerName::try_from("127.0.0.1").expect("server name");
    let mut tls = tokio_rustls::TlsConnector::from(client)
        .connect(name, tcp)
        .await
        .expect("TLS handshake");
    tls.write_all(
        format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").as_bytes(),
    )
    .await
    .expect("write");
    let mut buf = Vec::new();
    // A peer may end TLS without close_notify; what arrived before is the answer.
    let _ = tokio::time::timeout(WAIT, tls.read_to_end(&mut buf)).await;
    String::from_utf8_lossy(&buf).into_owned()
}

// REQ-014-169
#[tokio::test]
async fn with_cert_and_key_the_gateway_serves_wss_and_https() {
    let pki = Pki::new();
    let gw = tls_gateway(&pki).await;
    assert!(gw.running.as_ref().expect("running").uses_tls());
    let url = format!("wss://127.0.0.1:{}/", gw.addr().port());
    let (mut socket, _) = tokio::time::timeout(
        WAIT,
        tokio_tungstenite::connect_async_tls_with_config(
            url,
            None,
            false,
            Some(Connector::Rustls(pki.client())),
        ),
    )
    .await
    .expect("handshake in time")
    .expect("wss handshake");
    let auth = rpc(
        &mut socket,
        1,
        "auth.authenticate",
        json!({"strategy": "static_token", "token": TOKEN}),
    )
    .await;
    assert_eq!(auth["result"]["authenticated"], true, "{auth}");
    let pong = rpc(&mut socket, 2, "gateway.ping", json!({})).await;
    assert!(pong["result"]["server_timestamp"].is_string(), "{pong}");
    let health = https_get(gw.addr(), pki.client(), "/health").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
    assert!(health.contains("\"status\":\"ok\""), "{health}");
}

// REQ-014-169
#[tokio::test]
async fn plain_ws_and_untrusted_clients_get_nothing_from_the_tls_port() {
    let pki = Pki::new();
    let gw = tls_gateway(&pki).await;
    let plain = tokio::time::timeout(WAIT, tokio_tungstenite::connect_async(gw.url()))
        .await
        .expect("an answer in time");
    assert!(plain.is_err(), "plain ws:// must not reach a TLS gateway");
    // A client trusting another certificate refuses the gateway's.
    let stranger = Pki::new();
    let url = format!("wss://127.0.0.1:{}/", gw.addr().port());
    let attempt = tokio::time::timeout(
        WAIT,
        tokio_tungstenite::connect_async_tls_with_config(
            url,
            None,
            false,
            Some(Connector::Rustls(stranger.client())),
        ),
    )
    .await
    .expect("an answer in time");
    assert!(attempt.is_err(), "an untrusted certificate must fail");
    // The failed handshakes hold nothing up: a proper client still gets through.
    let health = https_get(gw.addr(), pki.client(), "/health").await;
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
}

async fn start_error(tls: TlsConfig) -> GatewayError {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&orchestrata::config::LogConfig::sled(dir.path()))
        .await
        .expect("open sled log");
    let mut config = ws::test_config();
    config.tls = Some(tls);
    match gateway::start(config, Services::new(log)).await {
        Ok(running) => {
            let _ = running.shutdown().await;
            panic!("the gateway must not start with unusable TLS files")
        }
        Err(e) => e,
    }
}

// REQ-014-169
#[tokio::test]
async fn unusable_tls_files_stop_the_start_naming_the_key_and_file() {
    let pki = Pki::new();
    let missing = pki.path("nowhere.key");
    let e = start_error(TlsConfig::new(pki.path("gw.crt"), &missing)).await;
    let text = e.to_string();
    assert!(text.contains("gateway.tls.key_path"), "{text}");
    assert!(text.contains(&missing.display().to_string()), "{text}");
    // The certificate file given as the key: no private key in it.
    let e = start_error(TlsConfig::new(pki.path("gw.crt"), pki.path("gw.crt"))).await;
    let text = e.to_string();
    assert!(
        text.contains("gateway.tls.key_path") && text.contains("private key"),
        "{text}"
    );
    // The key given as the certificate: no certificate in it.
    let e = start_error(TlsConfig::new(pki.path("gw.key"), pki.path("gw.key"))).await;
    assert!(e.to_string().contains("gateway.tls.cert_path"), "{e}");
    // A key that belongs to another certificate.
    let other = Pki::new();
    let e = start_error(TlsConfig::new(pki.path("gw.crt"), other.path("gw.key"))).await;
    let text = e.to_string();
    assert!(text.starts_with("gateway.tls: certificate"), "{text}");
}

// REQ-014-169
#[test]
fn a_tls_section_with_one_path_is_a_config_error() {
    let e = GatewayConfig::from_yaml("gateway:\n  tls: {cert_path: /etc/gw.crt}\n")
        .expect_err("no key");
    assert!(e.to_string().contains("gateway.tls.key_path"), "{e}");
    let plain = GatewayConfig::from_yaml(
        "gateway:\n  tls: {enabled: false, cert_path: null, key_path: null}\n",
    )
    .expect("disabled tls");
    assert_eq!(plain.tls, None);
}

/// Runs `orchestrata up` on a free port with TLS from the environment; returns the
/// process and the first stdout line naming where the gateway listens.
fn up_with_tls(data: &Path, cert: &Path, key: &Path) -> (std::process::Child, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ORCHESTRATA_") || k == "RUST_LOG" {
            cmd.env_remove(k);
        }
    }
    let mut child = cmd
        .args(["up", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(data)
        .env("GATEWAY_TOKEN", TOKEN)
        .env("ORCHESTRATA_GATEWAY__TLS__CERT_PATH", cert)
        .env("ORCHESTRATA_GATEWAY__TLS__KEY_PATH", key)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start orchestrata up");
    let stdout = child.stdout.take().expect("stdout");
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match rx.recv_timeout(left) {
            Ok(line) if line.contains("gateway listening on") => return (child, line),
            Ok(_) => continue,
            // stdout closed (the process exited) or the deadline passed.
            Err(_) => return (child, String::new()),
        }
    }
}

// REQ-014-169
#[tokio::test]
async fn up_prints_wss_and_serves_tls_configured_from_the_environment() {
    let pki = Pki::new();
    let data = tempfile::tempdir().expect("data dir");
    let (mut child, banner) = up_with_tls(data.path(), &pki.path("gw.crt"), &pki.path("gw.key"));
    let addr: SocketAddr = banner
        .split("wss://")
        .nth(1)
        .and_then(|rest| rest.split('/').next())
        .and_then(|a| a.parse().ok())
        .unwrap_or_else(|| panic!("banner without a wss:// address: {banner:?}"));
    assert!(banner.contains("HTTPS /health"), "{banner}");
    let health = https_get(addr, pki.client(), "/health").await;
    let _ = child.kill();
    let _ = child.wait();
    assert!(health.starts_with("HTTP/1.1 200"), "{health}");
}

// REQ-014-169
#[test]
fn up_with_a_missing_key_file_exits_naming_it() {
    let pki = Pki::new();
    let data = tempfile::tempdir().expect("data dir");
    let missing = pki.path("absent.key");
    let (mut child, banner) = up_with_tls(data.path(), &pki.path("gw.crt"), &missing);
    assert!(banner.is_empty(), "must not listen: {banner}");
    let status = child.wait().expect("exit status");
    let mut stderr = String::new();
    std::io::Read::read_to_string(child.stderr.as_mut().expect("stderr"), &mut stderr)
        .expect("read stderr");
    assert!(!status.success(), "{stderr}");
    assert!(stderr.contains("gateway.tls.key_path"), "{stderr}");
    assert!(stderr.contains("absent.key"), "{stderr}");
}

// REQ-014-188
#[tokio::test]
async fn a_refused_origin_leaves_other_clients_untouched() {
    let gw = TestGateway::sled(ws::test_config()).await;
    let mut c = Ws::connect(&gw.url()).await;
    c.auth(TOKEN).await;
    let (status, _) = raw_upgrade(gw.addr(), Some("https://evil.example")).await;
    assert_eq!(status, 403);
    assert!(c.ok("gateway.ping", json!({})).await["server_timestamp"].is_string());
}
