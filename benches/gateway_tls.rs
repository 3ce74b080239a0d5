//! What the origin check and TLS cost a gateway connection: the pure `origin_allowed`
//! decision, and a whole new connection (TCP connect, WebSocket handshake, one JSON-RPC
//! round trip, close) to a real gateway on loopback over sled in a temp dir, over plain
//! `ws://` and over `wss://` with a self-signed certificate made by rcgen.
//!
//! Run: `cargo bench --bench gateway_tls`.

use std::sync::Arc;

use criterion::{criterion_group, criterion_main, Criterion};
use futures::{SinkExt, StreamExt};
use orchestrata::config::LogConfig;
use orchestrata::gateway::origin::{normalize_entry, origin_allowed};
use orchestrata::gateway::tls::TlsConfig;
use orchestrata::gateway::{self, GatewayConfig, RunningGateway, Services};
use tokio::runtime::Runtime;
use tokio_rustls::rustls::{self, ClientConfig, RootCertStore};
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::Connector;

fn origin_check(c: &mut Criterion) {
    let allowed: Vec<String> = [
        "https://ops.example.com",
        "https://grafana.example.com",
        "http://localhost:3000",
    ]
    .iter()
    .map(|e| normalize_entry(e).expect("valid entry"))
    .collect();
    c.bench_function("gateway_tls/origin_allowed_third_of_three", |b| {
        b.iter(|| {
            origin_allowed(
                Some(std::hint::black_box("http://localhost:3000")),
                &allowed,
                false,
            )
        })
    });
    c.bench_function("gateway_tls/origin_refused_of_three", |b| {
        b.iter(|| {
            origin_allowed(
                Some(std::hint::black_box("https://evil.example")),
                &allowed,
                false,
            )
        })
    });
}

async fn start(tls: Option<TlsConfig>, dir: &std::path::Path) -> RunningGateway {
    let log = orchestrata::log::open(&LogConfig::sled(dir))
        .await
        .expect("open sled log");
    let mut config = GatewayConfig::default().with_static_token("bench-token");
    config.listen = "127.0.0.1:0".parse().expect("address");
    config.tls = tls;
    gateway::start(config, Services::new(log))
        .await
        .expect("gateway starts")
}

/// Connects, sends one request, waits for its answer and closes.
async fn round_trip(url: &str, connector: Option<Connector>) {
    let (mut ws, _) = tokio_tungstenite::connect_async_tls_with_config(url, None, false, connector)
        .await
        .expect("handshake");
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"gateway.ping","params":{}}"#;
    ws.send(Message::Text(ping.into())).await.expect("send");
    while let Some(frame) = ws.next().await {
        if matches!(frame.expect("frame"), Message::Text(_)) {
            break;
        }
    }
    let _ = ws.close(None).await;
}

fn connections(c: &mut Criterion) {
    let rt = Runtime::new().expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let generated = rcgen::generate_simple_self_signed(vec!["127.0.0.1".into()])
        .expect("self-signed certificate");
    let (cert, key) = (dir.path().join("gw.crt"), dir.path().join("gw.key"));
    std::fs::write(&cert, generated.cert.pem()).expect("write cert");
    std::fs::write(&key, generated.signing_key.serialize_pem()).expect("write key");
    let mut roots = RootCertStore::empty();
    roots
        .add(generated.cert.der().clone())
        .expect("trust the cert");
    let client = Arc::new(
        ClientConfig::builder_with_provider(
            Arc::new(rustls::crypto::aws_lc_rs::default_provider()),
        )
        .with_safe_default_protocol_versions()
        .expect("protocol versions")
        .with_root_certificates(roots)
        .with_no_client_auth(),
    );
    let plain = rt.block_on(start(None, &dir.path().join("plain")));
    let tls = rt.block_on(start(
        Some(TlsConfig::new(&cert, &key)),
        &dir.path().join("tls"),
    ));
    let ws_url = format!("ws://{}/", plain.local_addr());
    let wss_url = format!("wss://{}/", tls.local_addr());
    c.bench_function("gateway_tls/connect_request_close_ws", |b| {
        b.iter(|| rt.block_on(round_trip(&ws_url, None)))
    });
    c.bench_function("gateway_tls/connect_request_close_wss", |b| {
        b.iter(|| {
            rt.block_on(round_trip(
                &wss_url,
                Some(Connector::Rustls(client.clone())),
            ))
        })
    });
    rt.block_on(async {
        let _ = plain.shutdown().await;
        let _ = tls.shutdown().await;
    });
}

criterion_group!(benches, origin_check, connections);
criterion_main!(benches);
