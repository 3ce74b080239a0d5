//! `orchestrata mcp`: what the MCP layer adds on top of a gateway call.
//!
//! `cargo bench --bench mcp`. The server is driven in-process through
//! [`McpServer::handle_line`] (the code the stdio loop runs for each line, minus the
//! pipe): `tools/list` generation, the approval book, the arguments hash, a refused call
//! (one fsync'd ledger row, nothing sent) and a `gateway_ping` round trip through a real
//! gateway on loopback over a sled log in a temp dir (WebSocket + one ledger row).

use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion};
use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, GatewayConfig, Services};
use orchestrata::mcp::approval::ApprovalBook;
use orchestrata::mcp::tools::{arguments_hash, Catalog};
use orchestrata::mcp::{GatewayClient, GatewaySettings, Ledger, McpServer};
use serde_json::{json, Map, Value};

const TOKEN: &str = "bench-token";

fn send_args() -> Map<String, Value> {
    serde_json::from_value(
        json!({"from": "U:Cx", "target": "U:Ox", "subject": "build_feature",
                 "payload": {"feature": "login", "files": ["a.rs", "b.rs"]}, "priority": 7}),
    )
    .expect("an object")
}

fn bench(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("tokio runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let log = rt
        .block_on(orchestrata::log::open(&LogConfig::sled(
            dir.path().join("log"),
        )))
        .expect("sled log");
    let mut config = GatewayConfig::default().with_static_token(TOKEN);
    config.listen = "127.0.0.1:0".parse().expect("loopback");
    config.rate_limit_per_second = 1_000_000;
    let running = rt
        .block_on(gateway::start(config, Services::new(log)))
        .expect("gateway starts");
    let settings = GatewaySettings {
        host: "127.0.0.1".into(),
        port: running.local_addr().port(),
        token: TOKEN.into(),
    };
    let ledger = Ledger::open(&dir.path().join("ledger.jsonl")).expect("ledger");
    let server = Arc::new(McpServer::new(ledger, GatewayClient::new(settings)));

    let mut g = c.benchmark_group("mcp");
    g.bench_function("catalog_from_method_table", |b| {
        b.iter(Catalog::from_method_table)
    });
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}).to_string();
    g.bench_function("tools_list", |b| {
        b.iter(|| rt.block_on(server.handle_line(&list)))
    });
    let args = send_args();
    g.bench_function("arguments_hash", |b| b.iter(|| arguments_hash(&args)));
    let mut book = ApprovalBook::new();
    g.bench_function("approve_then_redeem", |b| {
        b.iter(|| {
            let now = Instant::now();
            let issued = book.issue("cxp_send", "h", now);
            book.redeem(&issued.token, "cxp_send", "h", now)
        })
    });
    let refused = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                         "params": {"name": "cxp_send", "arguments": args}})
    .to_string();
    g.bench_function("refused_call_with_ledger_row", |b| {
        b.iter(|| rt.block_on(server.handle_line(&refused)))
    });
    let ping = json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                      "params": {"name": "gateway_ping", "arguments": {}}})
    .to_string();
    let first = rt.block_on(server.handle_line(&ping)).expect("a response");
    assert_eq!(first["result"]["isError"], false, "{first}");
    g.bench_function("gateway_ping_round_trip", |b| {
        b.iter(|| rt.block_on(server.handle_line(&ping)))
    });
    g.finish();
    rt.block_on(running.shutdown()).expect("clean shutdown");
}

criterion_group!(benches, bench);
criterion_main!(benches);
