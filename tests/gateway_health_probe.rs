//! `/ready` and `/metrics` on the Kafka backend open no broker connection per request
//! (issue 14, "Safe defaults": unauthenticated health endpoints must not be a way to
//! make the gateway open consumers), whether or not the probe is cached (issue 15: the
//! log's reads are served by one follower consumer per process).
//!
//! A real gateway over a Kafka log on a private Apache Kafka broker (so only this test talks
//! to that port), real HTTP requests over one keep-alive TCP connection, and the
//! kernel's own socket table (`/proc/net/tcp`, `/proc/net/tcp6`): every connection to
//! the broker's port, in any state (closed ones linger in TIME_WAIT), is counted.

mod support;

use std::net::SocketAddr;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, RunningGateway, Services};
use support::ws::{self, WAIT};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// Sockets (any state) whose remote port is `port`, from the kernel's tables.
fn sockets_to(port: u16) -> usize {
    let hex = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|path| std::fs::read_to_string(path).ok())
        .flat_map(|table| {
            table
                .lines()
                .skip(1)
                .filter(|line| {
                    line.split_whitespace()
                        .nth(2)
                        .is_some_and(|remote| remote.ends_with(&hex))
                })
                .map(str::to_owned)
                .collect::<Vec<_>>()
        })
        .count()
}

/// GETs `path` on an open keep-alive connection; returns the status.
async fn get(s: &mut TcpStream, addr: SocketAddr, path: &str) -> u16 {
    s.write_all(format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await
        .expect("write request");
    let mut head = Vec::new();
    while !head.ends_with(b"\r\n\r\n") {
        let mut byte = [0u8; 1];
        let n = tokio::time::timeout(WAIT, s.read(&mut byte))
            .await
            .expect("answer in time")
            .expect("read");
        assert_eq!(n, 1, "connection closed mid-answer");
        head.push(byte[0]);
    }
    let head = String::from_utf8_lossy(&head).into_owned();
    let length: usize = head
        .lines()
        .find_map(|l| {
            let (k, v) = l.split_once(':')?;
            k.eq_ignore_ascii_case("content-length")
                .then(|| v.trim().parse().ok())?
        })
        .expect("content-length");
    let mut body = vec![0u8; length];
    s.read_exact(&mut body).await.expect("body");
    head.split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .expect("status")
}

async fn gateway_on(broker: &str, health_cache: Duration) -> RunningGateway {
    let mut log_config = LogConfig::kafka(broker.to_owned());
    log_config.topic_prefix = support::unique_prefix();
    let log = orchestrata::log::open(&log_config)
        .await
        .expect("open kafka log");
    let mut config = ws::test_config();
    config.health_cache = health_cache;
    gateway::start(config, Services::new(log))
        .await
        .expect("gateway starts")
}

/// Broker sockets opened by `n` rounds of `/ready` + `/metrics`.
async fn sockets_opened_by_health_requests(gw: &RunningGateway, port: u16, n: usize) -> isize {
    let addr = gw.local_addr();
    let mut http = TcpStream::connect(addr).await.expect("connect");
    // Warm up: the first probe (and the tailers' own connections) happen here.
    get(&mut http, addr, "/ready").await;
    get(&mut http, addr, "/metrics").await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let before = sockets_to(port);
    for _ in 0..n {
        assert_eq!(get(&mut http, addr, "/ready").await, 200);
        assert_eq!(get(&mut http, addr, "/metrics").await, 200);
    }
    sockets_to(port) as isize - before as isize
}

/// Broker sockets opened by opening `n` logs on the broker and reading each one's
/// bounds: what a connection per request would look like in the socket table.
async fn sockets_opened_by_new_clients(broker: &str, port: u16, n: usize) -> isize {
    let before = sockets_to(port);
    for _ in 0..n {
        let mut config = LogConfig::kafka(broker.to_owned());
        config.topic_prefix = support::unique_prefix();
        let log = orchestrata::log::open(&config)
            .await
            .expect("open kafka log");
        log.bounds(orchestrata_schemas::events::Stream::CxpTraffic)
            .await
            .expect("bounds");
    }
    sockets_to(port) as isize - before as isize
}

// ISSUE-14: unauthenticated /ready and /metrics opening Kafka consumers per request
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_requests_on_kafka_open_no_broker_connections() {
    let kafka = support::spawn_private_kafka();
    let port: u16 = kafka
        .address
        .rsplit(':')
        .next()
        .and_then(|p| p.parse().ok())
        .expect("broker port");
    let n = 10;
    // Control: new broker clients show up in the socket table (closed ones linger in
    // TIME_WAIT), so the measurements below would see a connection per request.
    let opened = sockets_opened_by_new_clients(&kafka.address, port, 3).await;
    assert!(
        opened >= 3,
        "new clients must be visible: {opened} sockets for 3 clients"
    );
    // Probing the log on every request: the log's reads are served by its one
    // follower, so even then no request opens a broker connection.
    let uncached = gateway_on(&kafka.address, Duration::ZERO).await;
    let opened = sockets_opened_by_health_requests(&uncached, port, n).await;
    assert!(
        opened <= 2,
        "{n} uncached rounds of /ready + /metrics opened {opened} broker sockets"
    );
    uncached.shutdown().await.expect("shutdown");
    // The gateway as configured: one probe serves every request of its period.
    let gw = gateway_on(&kafka.address, Duration::from_secs(3600)).await;
    let opened = sockets_opened_by_health_requests(&gw, port, n).await;
    assert!(
        opened <= 2,
        "{n} rounds of /ready + /metrics opened {opened} broker sockets"
    );
    gw.shutdown().await.expect("shutdown");
}
