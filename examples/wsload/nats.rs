//! The peer: NATS JetStream through its WebSocket listener, in the same fan-out shape.
//!
//! The NATS client protocol is text lines over the WebSocket (one WebSocket message may
//! hold several protocol messages, or part of one): the server greets with `INFO {…}`,
//! the client answers `CONNECT {…}`; `SUB <subject> <sid>` subscribes; `PUB <subject>
//! [reply] <n>\r\n<n bytes>\r\n` publishes; the server delivers `MSG <subject> <sid>
//! [reply] <n>\r\n<n bytes>\r\n` and pings (`PING`, answered `PONG`).
//!
//! JetStream is driven through its request subjects: `$JS.API.STREAM.CREATE.<name>` makes
//! a stream with file storage over the subject `wsload.data`; a publish to that subject
//! with a reply subject is answered by a PubAck (`{"stream":…,"seq":…}`) once stored;
//! each subscriber creates a push consumer (`$JS.API.CONSUMER.CREATE.<name>`, deliver
//! policy `new`, no acks) delivering to an inbox of its own, so what it receives comes
//! out of the stream, as Orchestrata's subscribers receive what the log holds.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use futures::{SinkExt, Stream, StreamExt};
use serde_json::{json, Value};
use tokio::sync::{watch, Semaphore};
use tokio_tungstenite::tungstenite::{self, Message};

use crate::fanout::{self, FanoutArgs, Pacer, Progress};
use crate::orch::{ws_config, Ws, PAD};
use crate::stats::{ms, percentile, stamp, Clock, Report, Tally};

const STREAM: &str = "WSLOAD";
const SUBJECT: &str = "wsload.data";

/// One protocol message from the server.
#[derive(Debug)]
pub enum Op {
    /// A delivered message.
    Msg {
        /// Its subject.
        subject: String,
        /// Its body.
        payload: Vec<u8>,
    },
    /// The server's keep-alive; answer `PONG`.
    Ping,
    /// The answer to our `PING`.
    Pong,
    /// `-ERR '…'`.
    Err(String),
    /// `INFO`, `+OK` and anything else not needed here.
    Other,
}

/// Splits the byte stream into protocol messages.
#[derive(Debug, Default)]
pub struct Parser {
    buf: Vec<u8>,
    pos: usize,
}

impl Parser {
    /// Appends bytes as they arrived.
    pub fn push(&mut self, bytes: &[u8]) {
        if self.pos > 0 && self.pos * 2 >= self.buf.len() {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The next complete message, if the buffer holds one.
    pub fn next(&mut self) -> Option<Op> {
        let rest = &self.buf[self.pos..];
        let eol = rest.windows(2).position(|w| w == b"\r\n")?;
        let line = std::str::from_utf8(&rest[..eol]).unwrap_or("");
        let mut words = line.split_ascii_whitespace();
        let op = match words.next().unwrap_or("").to_ascii_uppercase().as_str() {
            "MSG" => {
                let args: Vec<&str> = words.collect();
                let n: usize = args.last().and_then(|n| n.parse().ok()).unwrap_or(0);
                let body = eol + 2;
                if rest.len() < body + n + 2 {
                    return None;
                }
                let op = Op::Msg {
                    subject: args.first().unwrap_or(&"").to_string(),
                    payload: rest[body..body + n].to_vec(),
                };
                self.pos += body + n + 2;
                return Some(op);
            }
            "PING" => Op::Ping,
            "PONG" => Op::Pong,
            "-ERR" => Op::Err(line.to_string()),
            _ => Op::Other,
        };
        self.pos += eol + 2;
        Some(op)
    }
}

/// Reads the next protocol message from `stream`.
async fn next_op<S>(stream: &mut S, parser: &mut Parser) -> anyhow::Result<Op>
where
    S: Stream<Item = Result<Message, tungstenite::Error>> + Unpin,
{
    loop {
        if let Some(op) = parser.next() {
            return Ok(op);
        }
        match stream.next().await {
            Some(Ok(Message::Binary(b))) => parser.push(&b),
            Some(Ok(Message::Text(t))) => parser.push(t.as_bytes()),
            Some(Ok(_)) => continue,
            Some(Err(e)) => return Err(e.into()),
            None => bail!("nats-server closed the connection"),
        }
    }
}

/// `PUB subject [reply] n\r\nbody\r\n` as one WebSocket message.
fn publish(subject: &str, reply: &str, body: &str) -> Message {
    Message::Binary(
        format!("PUB {subject} {reply} {}\r\n{body}\r\n", body.len())
            .into_bytes()
            .into(),
    )
}

fn line(text: String) -> Message {
    Message::Binary(text.into_bytes().into())
}

/// A connection past the handshake (`INFO`, `CONNECT`, `PING`/`PONG`).
pub async fn connect(url: &str) -> anyhow::Result<(Ws, Parser)> {
    let (mut ws, _) = tokio_tungstenite::connect_async_with_config(url, Some(ws_config()), false)
        .await
        .with_context(|| format!("connecting to nats-server at {url}"))?;
    let connect = r#"CONNECT {"verbose":false,"pedantic":false,"name":"wsload"}"#;
    ws.send(line(format!("{connect}\r\nPING\r\n"))).await?;
    let mut parser = Parser::default();
    loop {
        match next_op(&mut ws, &mut parser).await? {
            Op::Pong => return Ok((ws, parser)),
            Op::Err(e) => bail!("nats-server refused the connection: {e}"),
            _ => continue,
        }
    }
}

/// A JetStream API request on `ws` (already subscribed to `inbox` as sid 99): the JSON
/// answer, or the API's error.
async fn api(
    ws: &mut Ws,
    parser: &mut Parser,
    inbox: &str,
    subject: &str,
    body: Value,
) -> anyhow::Result<Value> {
    ws.send(publish(subject, inbox, &body.to_string())).await?;
    loop {
        match next_op(ws, parser).await? {
            Op::Msg { subject, payload } if subject == inbox => {
                let v: Value = serde_json::from_slice(&payload)?;
                if let Some(e) = v.get("error") {
                    bail!("{subject}: {e}");
                }
                return Ok(v);
            }
            Op::Ping => ws.send(line("PONG\r\n".into())).await?,
            Op::Err(e) => bail!("{e}"),
            _ => continue,
        }
    }
}

/// A subscriber's connection with its own push consumer on the stream.
async fn subscribe(url: &str, index: u64) -> anyhow::Result<(Ws, Parser)> {
    let (mut ws, mut parser) = connect(url).await?;
    let (deliver, inbox) = (
        format!("_INBOX.wsl.d.{index}"),
        format!("_INBOX.wsl.r.{index}"),
    );
    ws.send(line(format!("SUB {deliver} 1\r\nSUB {inbox} 99\r\n")))
        .await?;
    let consumer = json!({"stream_name": STREAM, "config": {"deliver_subject": deliver,
        "deliver_policy": "new", "ack_policy": "none", "replay_policy": "instant"}});
    api(
        &mut ws,
        &mut parser,
        &inbox,
        &format!("$JS.API.CONSUMER.CREATE.{STREAM}"),
        consumer,
    )
    .await?;
    Ok((ws, parser))
}

/// Tallies every message a subscriber receives until `stop`.
async fn tally(
    mut ws: Ws,
    mut parser: Parser,
    clock: Clock,
    progress: Arc<Progress>,
    mut stop: watch::Receiver<bool>,
) -> anyhow::Result<Tally> {
    let mut tally = Tally::default();
    // One wait for the stop signal for the whole run, not a new one per message.
    let stopped = stop.changed();
    tokio::pin!(stopped);
    loop {
        let op = tokio::select! {
            biased;
            _ = &mut stopped => break,
            op = next_op(&mut ws, &mut parser) => op,
        };
        match op {
            Ok(Op::Msg { payload, .. }) => {
                let text = std::str::from_utf8(&payload).unwrap_or("");
                if tally.frame(text, clock.now_ns()) {
                    progress.delivered.fetch_add(1, Ordering::Relaxed);
                }
            }
            Ok(Op::Ping) => ws.send(line("PONG\r\n".into())).await?,
            Ok(_) => continue,
            Err(_) => break,
        }
    }
    Ok(tally)
}

/// A fresh stream: the one an earlier run left is removed ("not found" is the usual
/// answer), then created with file storage over [`SUBJECT`].
async fn fresh_stream(ws: &mut Ws, parser: &mut Parser, inbox: &str) -> anyhow::Result<()> {
    let _ = api(
        ws,
        parser,
        inbox,
        &format!("$JS.API.STREAM.DELETE.{STREAM}"),
        json!({}),
    )
    .await;
    let stream = json!({"name": STREAM, "subjects": [SUBJECT], "storage": "file",
        "retention": "limits", "discard": "old", "num_replicas": 1});
    api(
        ws,
        parser,
        inbox,
        &format!("$JS.API.STREAM.CREATE.{STREAM}"),
        stream,
    )
    .await
    .context("creating the JetStream stream")?;
    Ok(())
}

/// Publishes to the stream one at a time, each waiting for its PubAck (after 20
/// unmeasured): the peer of `rtt`'s lone `cxp.send`, with the spec's example send as the
/// body. p50/p99/max in ms.
pub async fn js_rtt(url: &str, count: usize) -> anyhow::Result<Report> {
    let (mut ws, mut parser) = connect(url).await?;
    let inbox = "_INBOX.wsl.rtt";
    ws.send(line(format!("SUB {inbox} 99\r\n"))).await?;
    fresh_stream(&mut ws, &mut parser, inbox).await?;
    let body = json!({"target": "U:Vz", "subject": "generate_component", "payload":
        {"component": "UserService", "language": "python", "framework": "fastapi"},
        "priority": 7});
    let (warmup, mut lat, mut errors, mut first_error) = (20.min(count), Vec::new(), 0u64, None);
    for i in 0..warmup + count {
        let t = Instant::now();
        let outcome = api(&mut ws, &mut parser, inbox, SUBJECT, body.clone()).await;
        let us = t.elapsed().as_micros() as u64;
        match outcome {
            Ok(ack) if ack.get("seq").is_some() => {}
            Ok(other) => {
                errors += 1;
                first_error.get_or_insert(other.to_string());
            }
            Err(e) => {
                errors += 1;
                first_error.get_or_insert(e.to_string());
            }
        }
        if i >= warmup {
            lat.push(us);
        }
    }
    lat.sort_unstable();
    let mut r = Report::default();
    r.put("server", "nats-jetstream")
        .put("count", count)
        .put("publish_p50_ms", ms(percentile(&lat, 0.5)))
        .put("publish_p99_ms", ms(percentile(&lat, 0.99)))
        .put("publish_max_ms", ms(percentile(&lat, 1.0)))
        .put("errors", errors);
    if let Some(e) = first_error {
        r.put("first_error", e.replace('\n', " "));
    }
    Ok(r)
}

/// The fan-out shape against JetStream at `url` (its WebSocket listener).
pub async fn js_fanout(url: &str, args: &FanoutArgs) -> anyhow::Result<Report> {
    let clock = Clock::start();
    let (progress, stop_tx, stop_rx) = fanout::shared();
    let (mut ctl, mut parser) = connect(url).await?;
    let inbox = "_INBOX.wsl.ctl";
    ctl.send(line(format!("SUB {inbox} 99\r\n"))).await?;
    fresh_stream(&mut ctl, &mut parser, inbox).await?;
    let mut subs = Vec::new();
    for i in 0..args.subs {
        let (ws, p) = subscribe(url, i).await?;
        subs.push(tokio::spawn(tally(
            ws,
            p,
            clock,
            progress.clone(),
            stop_rx.clone(),
        )));
    }
    let (pub_ws, mut pub_parser) = connect(url).await?;
    let (mut sink, mut stream) = pub_ws.split();
    sink.send(line("SUB _INBOX.wsl.ack.* 1\r\n".into())).await?;
    let slots = Arc::new(Semaphore::new(args.window));
    let (freed, answers) = (slots.clone(), progress.clone());
    let reader = tokio::spawn(async move {
        while let Ok(op) = next_op(&mut stream, &mut pub_parser).await {
            let Op::Msg { subject, payload } = op else {
                continue;
            };
            let Some(seq) = subject.rsplit('.').next().and_then(|s| s.parse().ok()) else {
                continue;
            };
            let ack: Value = serde_json::from_slice(&payload).unwrap_or(Value::Null);
            let outcome = match ack.get("error") {
                Some(e) => Err(e.to_string()),
                None if ack.get("seq").is_some() => Ok(()),
                None => Err(String::from_utf8_lossy(&payload).into_owned()),
            };
            answers.answer(seq, outcome);
            freed.add_permits(1);
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
            let body = format!(
                r#"{{"stamp":"{}","pad":"{pad}"}}"#,
                stamp(seq, clock.now_ns())
            );
            sink.feed(publish(SUBJECT, &format!("_INBOX.wsl.ack.{seq}"), &body))
                .await?;
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
    let _ = api(
        &mut ctl,
        &mut parser,
        inbox,
        &format!("$JS.API.STREAM.DELETE.{STREAM}"),
        json!({}),
    )
    .await;
    Ok(fanout::summarize(
        "nats-jetstream",
        args,
        &pacer,
        window_secs,
        accepted_in_window,
        &progress,
        &tallies,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_split_across_and_within_frames() {
        let mut p = Parser::default();
        p.push(b"INFO {}\r\nMSG a.b 1 _R 5\r\nhel");
        assert!(matches!(p.next(), Some(Op::Other)));
        assert!(p.next().is_none());
        p.push(b"lo\r\nPING\r\n");
        assert!(
            matches!(p.next(), Some(Op::Msg { ref subject, ref payload }) if subject == "a.b" && payload == b"hello")
        );
        assert!(matches!(p.next(), Some(Op::Ping)));
        assert!(p.next().is_none());
    }
}
