//! Gateway authentication and shared-state benchmarks: HMAC verification (signature,
//! drift, client map; two secrets configured), and a nonce claim in memory and in a
//! real Redis (`ORCHESTRATA_TEST_REDIS`, else a private `redis-server` on a free port;
//! skipped when neither is available).
//!
//! Run: `cargo bench --bench gateway_auth`.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use chrono::Utc;
use criterion::{criterion_group, criterion_main, Criterion};
use orchestrata::gateway::auth_hmac::{sign, verify};
use orchestrata::gateway::config::HmacConfig;
use orchestrata::gateway::shared::{MemoryState, RedisState, SharedState};
use orchestrata::gateway::Scope;
use serde_json::json;

struct Redis {
    url: String,
    _child: Option<KillOnDrop>,
}

struct KillOnDrop(Child);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn redis() -> Option<Redis> {
    if let Ok(url) = std::env::var("ORCHESTRATA_TEST_REDIS") {
        return Some(Redis { url, _child: None });
    }
    let port = TcpListener::bind("127.0.0.1:0")
        .ok()?
        .local_addr()
        .ok()?
        .port();
    let child = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let child = KillOnDrop(child);
    let deadline = Instant::now() + Duration::from_secs(5);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    Some(Redis {
        url: format!("redis://127.0.0.1:{port}/"),
        _child: Some(child),
    })
}

fn hmac_verify(c: &mut Criterion) {
    let cfg = HmacConfig::new(["current-secret", "previous-secret"])
        .with_client("billing-bot", Scope::ReadWrite);
    let ts = Utc::now().to_rfc3339();
    let params = json!({"strategy": "hmac", "client_id": "billing-bot", "timestamp": ts,
        "nonce": "0123456789abcdef", "signature": sign("previous-secret", &ts, "0123456789abcdef", "billing-bot")});
    c.bench_function("gateway_auth/hmac_verify_two_secrets", |b| {
        b.iter(|| verify(&cfg, &params, Utc::now()).map(|v| v.scope))
    });
}

fn nonce_claims(c: &mut Criterion) {
    let rt = tokio::runtime::Runtime::new().expect("runtime");
    let memory = MemoryState::new("bench");
    let mut n = 0u64;
    c.bench_function("gateway_auth/nonce_claim_memory", |b| {
        b.iter(|| {
            n += 1;
            rt.block_on(memory.claim_nonce(&format!("n-{n}"), Duration::from_secs(120)))
        })
    });
    let Some(server) = redis() else {
        eprintln!("gateway_auth/nonce_claim_redis skipped: no redis-server");
        return;
    };
    let state = rt
        .block_on(RedisState::connect(&server.url, "bench"))
        .expect("redis url");
    let prefix = uuid::Uuid::new_v4().simple().to_string();
    let mut n = 0u64;
    c.bench_function("gateway_auth/nonce_claim_redis", |b| {
        b.iter(|| {
            n += 1;
            rt.block_on(state.claim_nonce(&format!("{prefix}-{n}"), Duration::from_secs(120)))
        })
    });
}

criterion_group!(benches, hmac_verify, nonce_claims);
criterion_main!(benches);
