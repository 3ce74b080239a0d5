//! wsload: the write path as clients meet it. Real WebSocket clients, in their own
//! process, against a server that is already running.
//!
//! ```text
//! cargo run --release --example wsload -- rtt       ws://127.0.0.1:18790/ --count 1000
//! cargo run --release --example wsload -- pipe      ws://127.0.0.1:18790/ --conns 10 --secs 5
//! cargo run --release --example wsload -- fanout    ws://127.0.0.1:18790/ --subs 100 --rate 10000
//! cargo run --release --example wsload -- js-fanout ws://127.0.0.1:18791   --subs 100 --rate 10000
//! cargo run --release --example wsload -- js-rtt    ws://127.0.0.1:18791   --count 1000
//! cargo run --release --example wsload -- call      ws://127.0.0.1:18790/ governance.query '{"volk_id":"U:GW"}'
//! ```
//!
//! The Orchestrata modes authenticate with `--token` (or `GATEWAY_TOKEN`), the operator
//! token of `orchestrata up`, which acts as `U:GW`; `cxp.send` goes to `U:Vz` in the
//! shape of the spec's example. The server's per-client rate limit (500 requests/s by
//! default) caps `pipe` and `fanout`: raise it for load runs
//! (`ORCHESTRATA_GATEWAY__RATE_LIMIT_PER_SECOND`), and `max_clients` for 100 subscribers.
//!
//! - `rtt`: `gateway.ping` and `cxp.send` round trips, one at a time, alternating on one
//!   connection; p50/p99 of each.
//! - `pipe`: `--conns` connections, each keeping `--window` `cxp.send` in flight;
//!   acknowledged sends per second. `--method ping` pipelines `gateway.ping` instead:
//!   what the gateway alone costs a request.
//! - `fanout`: one publisher offering `--rate` `cxp.send`/s, `--subs` `cxp.subscribe`
//!   subscribers; deliveries/s, missing deliveries, delivery latency from the send
//!   instant (carried in the payload) to arrival, on the process's one clock.
//! - `js-fanout`: the same shape against NATS JetStream's WebSocket listener (file
//!   storage, acked publishes, one push consumer per subscriber).
//! - `js-rtt`: JetStream publishes one at a time, each awaiting its PubAck (the peer of
//!   `rtt`'s lone `cxp.send`); p50/p99.
//! - `call`: one method with the given params, one request at a time; p50/p99/max.
//!
//! Output: `key=value` lines (see [`fanout`] for the fan-out keys). The exit status is 1
//! when any request was answered with an error or a delivery is missing.

mod fanout;
mod nats;
mod orch;
mod stats;

use clap::{Parser, Subcommand};

use fanout::FanoutArgs;

#[derive(Debug, Parser)]
#[command(about = "Load generator through the public WebSocket API")]
struct Cli {
    #[command(subcommand)]
    mode: Mode,
}

#[derive(Debug, Subcommand)]
enum Mode {
    /// gateway.ping and cxp.send round trips, one at a time.
    Rtt {
        /// The gateway's WebSocket URL.
        url: String,
        /// The operator token.
        #[arg(long, env = "GATEWAY_TOKEN", hide_env_values = true)]
        token: String,
        /// Round trips of each method (after 20 unmeasured).
        #[arg(long, default_value_t = 1000)]
        count: usize,
    },
    /// cxp.send pipelined on one or more connections.
    Pipe {
        /// The gateway's WebSocket URL.
        url: String,
        /// The operator token.
        #[arg(long, env = "GATEWAY_TOKEN", hide_env_values = true)]
        token: String,
        /// Connections.
        #[arg(long, default_value_t = 1)]
        conns: usize,
        /// Seconds measured.
        #[arg(long, default_value_t = 5)]
        secs: u64,
        /// Requests in flight per connection.
        #[arg(long, default_value_t = 256)]
        window: usize,
        /// Seconds of load before measuring.
        #[arg(long, default_value_t = 1)]
        warmup: u64,
        /// What is pipelined: the spec's `cxp.send`, or `gateway.ping` (the
        /// gateway's own cost per request, with no command behind it).
        #[arg(long, value_enum, default_value_t = orch::Piped::Send)]
        method: orch::Piped,
    },
    /// One publisher, many cxp.subscribe subscribers.
    Fanout {
        /// The gateway's WebSocket URL (the subscribers', and the publisher's unless
        /// `--publish-url` names another).
        url: String,
        /// Another gateway for the publisher (split roles: send through gateway A,
        /// subscribe on gateway B, both on one Kafka log).
        #[arg(long)]
        publish_url: Option<String>,
        /// The operator token.
        #[arg(long, env = "GATEWAY_TOKEN", hide_env_values = true)]
        token: String,
        /// The subscribers' `cxp.subscribe` filters, a JSON object. `{}` (the spec's
        /// shape) delivers every `cxp.traffic` event, several per packet;
        /// `{"event_type":"packet_sent"}` one per packet.
        #[arg(long, default_value = "{}", value_parser = json_object)]
        filters: serde_json::Value,
        #[command(flatten)]
        load: FanoutArgs,
    },
    /// One method's round trips, one at a time.
    Call {
        /// The gateway's WebSocket URL.
        url: String,
        /// The method, e.g. `governance.query`.
        method: String,
        /// Its params, as JSON.
        #[arg(default_value = "{}")]
        params: String,
        /// The operator token.
        #[arg(long, env = "GATEWAY_TOKEN", hide_env_values = true)]
        token: String,
        /// Round trips measured (after 5 unmeasured).
        #[arg(long, default_value_t = 50)]
        count: usize,
    },
    /// JetStream publishes one at a time, each awaiting its PubAck.
    JsRtt {
        /// nats-server's WebSocket URL.
        url: String,
        /// Publishes measured (after 20 unmeasured).
        #[arg(long, default_value_t = 1000)]
        count: usize,
    },
    /// The same fan-out against NATS JetStream over its WebSocket listener.
    JsFanout {
        /// nats-server's WebSocket URL.
        url: String,
        #[command(flatten)]
        load: FanoutArgs,
    },
}

/// A command-line JSON object (`--filters`).
fn json_object(text: &str) -> Result<serde_json::Value, String> {
    match serde_json::from_str(text) {
        Ok(v @ serde_json::Value::Object(_)) => Ok(v),
        Ok(_) => Err("must be a JSON object, e.g. {\"event_type\":\"packet_sent\"}".into()),
        Err(e) => Err(format!("not JSON: {e}")),
    }
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let (name, report) = match Cli::parse().mode {
        Mode::Rtt { url, token, count } => ("rtt", orch::rtt(&url, &token, count).await?),
        Mode::Pipe {
            url,
            token,
            conns,
            secs,
            window,
            warmup,
            method,
        } => (
            "pipe",
            orch::pipe(&url, &token, conns, secs, window, warmup, method).await?,
        ),
        Mode::Call {
            url,
            method,
            params,
            token,
            count,
        } => {
            let params: serde_json::Value = serde_json::from_str(&params)
                .map_err(|e| anyhow::anyhow!("params are not JSON: {e}"))?;
            (
                "call",
                orch::calls(&url, &token, &method, &params, count).await?,
            )
        }
        Mode::Fanout {
            url,
            publish_url,
            token,
            filters,
            load,
        } => {
            let publisher = publish_url.as_deref().unwrap_or(&url);
            (
                "fanout",
                orch::fanout(&url, publisher, &token, &load, &filters).await?,
            )
        }
        Mode::JsRtt { url, count } => ("js-rtt", nats::js_rtt(&url, count).await?),
        Mode::JsFanout { url, load } => ("js-fanout", nats::js_fanout(&url, &load).await?),
    };
    print!("mode={name}\n{report}");
    let failed = |k: &str| report.get(k).is_some_and(|v| v != "0");
    if failed("errors") || failed("missing") {
        std::process::exit(1);
    }
    Ok(())
}
