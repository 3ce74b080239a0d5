//! Orchestrata's side: WebSocket JSON-RPC 2.0 clients of a running gateway.
//!
//! Every client authenticates with `auth.authenticate` (`static_token`); the operator
//! token (`GATEWAY_TOKEN`) acts as `U:GW`, so `cxp.send` carries no `from`, in the shape
//! of the spec's example:
//!
//! ```json
//! {"jsonrpc":"2.0","id":7,"method":"cxp.send",
//!  "params":{"target":"U:Vz","subject":"generate_component","payload":{…},"priority":7}}
//! ```

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures::{SinkExt, StreamExt};
use memchr::memmem;
use serde_json::Value;
use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};
use tokio_tungstenite::tungstenite::protocol::WebSocketConfig;
use tokio_tungstenite::tungstenite::Message;
use tokio_tungstenite::{MaybeTlsStream, WebSocketStream};

use crate::fanout::{self, FanoutArgs, Pacer, Progress};
use crate::stats::{ms, percentile, stamp, Clock, Report, Tally};

/// A client connection.
pub type Ws = WebSocketStream<MaybeTlsStream<TcpStream>>;

/// The padding every fan-out packet carries (the same bytes on both servers).
pub const PAD: usize = 200;

/// The spec's `cxp.send` example, with request id `id`.
pub fn send_request(id: u64) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"cxp.send","params":{{"target":"U:Vz","subject":"generate_component","payload":{{"component":"UserService","language":"python","framework":"fastapi"}},"priority":7}}}}"#
    )
}

/// What `pipe` keeps in flight.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Piped {
    /// The spec's `cxp.send` example ([`send_request`]).
    Send,
    /// `gateway.ping`: answered by the gateway itself, no command behind it.
    Ping,
}

impl Piped {
    /// The name `--method` takes for it, as clap derives it (the report prints it).
    pub fn name(self) -> String {
        clap::ValueEnum::to_possible_value(&self)
            .map(|v| v.get_name().to_owned())
            .unwrap_or_default()
    }

    /// The request with id `id`.
    pub fn request(self, id: u64) -> String {
        match self {
            Piped::Send => send_request(id),
            Piped::Ping => format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"gateway.ping"}}"#),
        }
    }
}

/// A fan-out packet: `cxp.send` whose payload carries the stamp and the padding.
pub fn stamped_request(id: u64, stamp: &str, pad: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"cxp.send","params":{{"target":"U:Vz","subject":"wsload","payload":{{"stamp":"{stamp}","pad":"{pad}"}},"priority":7}}}}"#
    )
}

/// The answer a frame carries: its id and `Ok` or the error's text; `None` for a
/// notification (no `id`) or a frame that is not JSON.
pub fn answer(text: &str) -> Option<(Value, Result<(), String>)> {
    let v: Value = serde_json::from_str(text).ok()?;
    let id = v.get("id")?.clone();
    match v.get("error") {
        Some(e) => Some((id, Err(e.to_string()))),
        None => Some((id, Ok(()))),
    }
}

/// Bytes a connection reads from its socket at most per read.
///
/// tungstenite zero-fills its read buffer up to this size before every read; at its
/// default (128 KiB) a subscriber that reads one small frame per wake-up spent more time
/// in that `memset` than in anything else. 16 KiB still takes a backlog of frames per
/// read. Both protocols' connections use it, so neither server pays for the other's
/// client.
pub const READ_BUFFER: usize = 16 * 1024;

/// The client settings of every connection wsload opens (see [`READ_BUFFER`]).
pub fn ws_config() -> WebSocketConfig {
    WebSocketConfig::default().read_buffer_size(READ_BUFFER)
}

/// Whether `text` is a `gateway.gap` notice (a SIMD search: subscribers check every
/// frame, and the search must not cost more than the frame did).
fn is_gap(text: &str) -> bool {
    static GAP: LazyLock<memmem::Finder<'static>> =
        LazyLock::new(|| memmem::Finder::new(r#""method":"gateway.gap""#));
    GAP.find(text.as_bytes()).is_some()
}

/// Opens a connection to `url` and authenticates with `token`.
pub async fn connect(url: &str, token: &str) -> anyhow::Result<Ws> {
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(ws_config()), false)
        .await
        .with_context(|| format!("connecting to {url}"))?;
    let auth = serde_json::json!({"jsonrpc":"2.0","id":"auth","method":"auth.authenticate",
        "params":{"strategy":"static_token","token":token}});
    if let Err(e) = call(&mut ws, "auth", auth.to_string()).await? {
        bail!("authentication refused: {e}");
    }
    Ok(ws)
}

/// Sends `request` and reads frames until the answer with `id` arrives.
async fn call(
    ws: &mut Ws,
    id: impl Into<Value>,
    request: String,
) -> anyhow::Result<Result<(), String>> {
    let id = id.into();
    ws.send(Message::Text(request.into())).await?;
    loop {
        match ws.next().await {
            Some(Ok(Message::Text(t))) => match answer(&t) {
                Some((got, outcome)) if got == id => return Ok(outcome),
                _ => continue,
            },
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
            None => bail!("the server closed the connection"),
        }
    }
}

/// Round trips one at a time on one connection, `gateway.ping` and `cxp.send`
/// alternating (so both meet the same server state): p50/p99 of each, and the
/// send's p99.9 and maximum (the tail a stall leaves), in ms.
pub async fn rtt(url: &str, token: &str, count: usize) -> anyhow::Result<Report> {
    let mut ws = connect(url, token).await?;
    let (mut ping, mut send) = (Trips::default(), Trips::default());
    let warmup = 20.min(count);
    for i in 0..(warmup + count) as u64 {
        let measured = i >= warmup as u64;
        ping.time(&mut ws, i, Piped::Ping.request(i), measured)
            .await?;
        send.time(&mut ws, i, Piped::Send.request(i), measured)
            .await?;
    }
    let (ping_p50, send_p50) = (ping.percentile(0.5), send.percentile(0.5));
    let mut r = Report::default();
    r.put("count", count)
        .put("ping_p50_ms", ms(ping_p50))
        .put("ping_p99_ms", ms(ping.percentile(0.99)))
        .put("send_p50_ms", ms(send_p50))
        .put("send_p99_ms", ms(send.percentile(0.99)))
        .put("send_p999_ms", ms(send.percentile(0.999)))
        .put("send_max_ms", ms(send.percentile(1.0)))
        .put(
            "send_over_ping_p50",
            format!("{:.2}", send_p50 as f64 / ping_p50.max(1) as f64),
        )
        .put("errors", ping.errors + send.errors);
    if let Some(e) = ping.first_error.or(send.first_error) {
        r.put("first_error", e);
    }
    Ok(r)
}

/// Round trips of one method with `params`, one at a time on one connection (after
/// five unmeasured): p50/p99/max in ms. For reads whose cost may follow the history,
/// such as `governance.query` over millions of decisions.
pub async fn calls(
    url: &str,
    token: &str,
    method: &str,
    params: &Value,
    count: usize,
) -> anyhow::Result<Report> {
    let mut ws = connect(url, token).await?;
    let mut trips = Trips::default();
    let warmup = 5.min(count);
    for i in 0..(warmup + count) as u64 {
        let request = serde_json::json!({"jsonrpc":"2.0","id":i,"method":method,"params":params});
        trips
            .time(&mut ws, i, request.to_string(), i >= warmup as u64)
            .await?;
    }
    let mut r = Report::default();
    r.put("method", method)
        .put("count", count)
        .put("p50_ms", ms(trips.percentile(0.5)))
        .put("p99_ms", ms(trips.percentile(0.99)))
        .put("max_ms", ms(trips.percentile(1.0)))
        .put("errors", trips.errors);
    if let Some(e) = trips.first_error {
        r.put("first_error", e);
    }
    Ok(r)
}

/// Round trips of one kind of request: latencies (µs) of the measured ones, and the
/// errors answered.
#[derive(Default)]
struct Trips {
    lat: Vec<u64>,
    errors: u64,
    first_error: Option<String>,
}

impl Trips {
    /// Sends `request` (id `id`) and waits for its answer; its latency counts when
    /// `measured`.
    async fn time(
        &mut self,
        ws: &mut Ws,
        id: u64,
        request: String,
        measured: bool,
    ) -> anyhow::Result<()> {
        let t = Instant::now();
        let outcome = call(ws, id, request).await?;
        let us = t.elapsed().as_micros() as u64;
        if let Err(e) = outcome {
            self.errors += 1;
            self.first_error.get_or_insert(e);
        }
        if measured {
            self.lat.push(us);
        }
        Ok(())
    }

    /// The `q` quantile of the measured latencies (1.0: the largest).
    fn percentile(&mut self, q: f64) -> u64 {
        self.lat.sort_unstable();
        percentile(&self.lat, q)
    }
}

/// `conns` connections each keep up to `window` requests of `method` in flight for
/// `secs` seconds (after `warmup` seconds); reports acknowledged requests per second.
pub async fn pipe(
    url: &str,
    token: &str,
    conns: usize,
    secs: u64,
    window: usize,
    warmup: u64,
    method: Piped,
) -> anyhow::Result<Report> {
    let acked = Arc::new(AtomicU64::new(0));
    let errors = Arc::new(AtomicU64::new(0));
    let first_error = Arc::new(std::sync::Mutex::new(None::<String>));
    let (stop_tx, stop_rx) = watch::channel(false);
    let mut tasks = Vec::new();
    for c in 0..conns {
        let ws = connect(url, token).await?;
        let (acked, errors, first_error) = (acked.clone(), errors.clone(), first_error.clone());
        let mut stop = stop_rx.clone();
        tasks.push(tokio::spawn(async move {
            let (mut sink, mut stream) = ws.split();
            let slots = Arc::new(Semaphore::new(window));
            let freed = slots.clone();
            let reader = tokio::spawn(async move {
                while let Some(Ok(m)) = stream.next().await {
                    let Message::Text(t) = m else { continue };
                    match answer(&t) {
                        Some((_, Ok(()))) => acked.fetch_add(1, Ordering::Relaxed),
                        Some((_, Err(e))) => {
                            if let Ok(mut f) = first_error.lock() {
                                f.get_or_insert(e);
                            }
                            errors.fetch_add(1, Ordering::Relaxed)
                        }
                        None => continue,
                    };
                    freed.add_permits(1);
                }
            });
            let mut id = (c as u64) << 40;
            while !*stop.borrow() {
                // write what the window allows, flush, then wait for a free slot
                while let Ok(p) = slots.try_acquire() {
                    p.forget();
                    sink.feed(Message::Text(method.request(id).into())).await?;
                    id += 1;
                }
                sink.flush().await?;
                tokio::select! {
                    p = slots.acquire() => p?.forget(),
                    _ = stop.changed() => break,
                }
                sink.feed(Message::Text(method.request(id).into())).await?;
                id += 1;
            }
            sink.flush().await?;
            tokio::time::sleep(Duration::from_secs(1)).await;
            reader.abort();
            anyhow::Ok(())
        }));
    }
    tokio::time::sleep(Duration::from_secs(warmup)).await;
    let (a0, t0) = (acked.load(Ordering::Relaxed), Instant::now());
    tokio::time::sleep(Duration::from_secs(secs)).await;
    let (a1, elapsed) = (acked.load(Ordering::Relaxed), t0.elapsed().as_secs_f64());
    let _ = stop_tx.send(true);
    for t in tasks {
        t.await??;
    }
    let mut r = Report::default();
    r.put("conns", conns)
        .put("method", method.name())
        .put("window", window)
        .put("secs", secs)
        .put("acked", a1 - a0)
        .put("acked_per_s", format!("{:.0}", (a1 - a0) as f64 / elapsed))
        .put("errors", errors.load(Ordering::Relaxed));
    if let Some(e) = first_error.lock().ok().and_then(|e| e.clone()) {
        r.put("first_error", e);
    }
    Ok(r)
}

/// One subscriber (already subscribed): every frame tallied until stop.
async fn subscriber(
    mut ws: Ws,
    clock: Clock,
    progress: Arc<Progress>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<Tally> {
    let mut tally = Tally::default();
    // One wait for the stop signal for the whole run, not a new one per message.
    let stopped = stop.changed();
    tokio::pin!(stopped);
    loop {
        let frame = tokio::select! {
            biased;
            _ = &mut stopped => break,
            f = ws.next() => f,
        };
        match frame {
            Some(Ok(Message::Text(t))) => {
                if tally.frame(&t, clock.now_ns()) {
                    progress.delivered.fetch_add(1, Ordering::Relaxed);
                } else if is_gap(&t) {
                    tally.gaps += 1;
                }
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) | None => break,
        }
    }
    Ok(tally)
}

/// One publisher at `args.rate` `cxp.send`/s on `publish_url`, `args.subs`
/// `cxp.subscribe` subscribers on `url` (the same gateway, or another one on the same
/// log), each subscribed with `filters` (`{}`: every `cxp.traffic` event — a new
/// thread's `thread_opened`, `packet_sent`, the later transitions; `{"event_type":
/// "packet_sent"}`: one frame per packet, as a NATS subscriber gets).
pub async fn fanout(
    url: &str,
    publish_url: &str,
    token: &str,
    args: &FanoutArgs,
    filters: &serde_json::Value,
) -> anyhow::Result<Report> {
    let clock = Clock::start();
    let (progress, stop_tx, stop_rx) = fanout::shared();
    let mut subs = Vec::new();
    let sub = serde_json::json!({
        "jsonrpc": "2.0", "id": "sub", "method": "cxp.subscribe",
        "params": {"filters": filters},
    })
    .to_string();
    for _ in 0..args.subs {
        let mut ws = connect(url, token).await?;
        if let Err(e) = call(&mut ws, "sub", sub.clone()).await? {
            bail!("cxp.subscribe refused: {e}");
        }
        subs.push(tokio::spawn(subscriber(
            ws,
            clock,
            progress.clone(),
            stop_rx.clone(),
        )));
    }
    let (mut sink, mut stream) = connect(publish_url, token).await?.split();
    let slots = Arc::new(Semaphore::new(args.window));
    let (freed, answers) = (slots.clone(), progress.clone());
    let reader = tokio::spawn(async move {
        while let Some(Ok(m)) = stream.next().await {
            let Message::Text(t) = m else { continue };
            if let Some((id, outcome)) = answer(&t) {
                answers.answer(id.as_u64().unwrap_or(u64::MAX), outcome);
                freed.add_permits(1);
            }
        }
    });
    let pad = "x".repeat(PAD);
    let pacer = Pacer::new(&clock, args);
    let mut seq = 0u64;
    while let Some(due) = pacer.due(clock.now_ns()) {
        while seq < due {
            let permit = match slots.try_acquire() {
                Ok(p) => p,
                Err(_) => {
                    sink.flush().await?;
                    slots.acquire().await?
                }
            };
            permit.forget();
            let frame = stamped_request(seq, &stamp(seq, clock.now_ns()), &pad);
            sink.feed(Message::Text(frame.into())).await?;
            progress.sent.fetch_add(1, Ordering::Relaxed);
            seq += 1;
        }
        sink.flush().await?;
        tokio::time::sleep(Duration::from_micros(500)).await;
    }
    let window_secs = (clock.now_ns() - pacer.start_ns()) as f64 / 1e9;
    let accepted_in_window = progress.acked.load(Ordering::Relaxed);
    fanout::drain(&progress, args).await;
    reader.abort();
    let tallies = fanout::collect(stop_tx, subs).await?;
    Ok(fanout::summarize(
        "orchestrata",
        args,
        &pacer,
        window_secs,
        accepted_in_window,
        &progress,
        &tallies,
    ))
}
