//! The load generator of `examples/wsload` works: its Orchestrata modes, driven against a
//! real gateway on loopback (sled log, governed kernel, live views), report what they
//! measured, with zero errors and every delivery accounted for; and it reports refusals
//! instead of hiding them. The generator's modules are compiled into this test as they
//! are (`#[path]`), so the test runs the very code `cargo run --example wsload` runs.

mod support;

#[allow(dead_code)]
#[path = "../examples/wsload/fanout.rs"]
mod fanout;
#[allow(dead_code)]
#[path = "../examples/wsload/nats.rs"]
mod nats;
#[allow(dead_code)]
#[path = "../examples/wsload/orch.rs"]
mod orch;
#[allow(dead_code)]
#[path = "../examples/wsload/stats.rs"]
mod stats;

use orchestrata::governance::GovernanceConfig;
use support::stack::Governed;
use support::ws::{test_config, READ_ONLY_TOKEN, TOKEN};

/// A governed gateway whose rate limit does not refuse the load.
async fn gateway() -> (Governed, String) {
    let mut config = test_config();
    config.rate_limit_per_second = 1_000_000;
    let stack = Governed::start(config, GovernanceConfig::default()).await;
    let url = format!("ws://{}/", stack.running.local_addr());
    (stack, url)
}

/// Stops the stack in order, as `orchestrata up` does on SIGTERM: the gateway, then the
/// kernel's writer, then the views (which commit what they applied). Dropping it instead
/// leaves a view's commit on the blocking pool while the runtime shuts down.
async fn stop(stack: Governed) {
    let Governed {
        running,
        kernel,
        projections,
        ..
    } = stack;
    running.shutdown().await.expect("the gateway stops");
    kernel.stop().await;
    projections.stop().await.expect("the views commit and stop");
}

fn number(report: &stats::Report, key: &str) -> f64 {
    report
        .get(key)
        .unwrap_or_else(|| panic!("no {key} in\n{report}"))
        .parse()
        .unwrap_or_else(|e| panic!("{key} is not a number ({e}) in\n{report}"))
}

// ISSUE-15: the load generator's rtt, pipe and fanout modes run through the public API
// and report their figures with zero errors and no missing delivery.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_mode_reports_its_figures_with_no_errors() {
    let (stack, url) = gateway().await;

    let rtt = orch::rtt(&url, TOKEN, 50).await.expect("rtt runs");
    assert_eq!(rtt.get("errors"), Some("0"), "{rtt}");
    for key in ["ping_p50_ms", "ping_p99_ms", "send_p50_ms", "send_p99_ms"] {
        assert!(number(&rtt, key) > 0.0, "{key} in\n{rtt}");
    }
    // The tail is ordered: p99 <= p99.9 <= max (`benches/ab.sh` MODE=beside reads them).
    let tail = ["send_p99_ms", "send_p999_ms", "send_max_ms"].map(|k| number(&rtt, k));
    assert!(tail[0] <= tail[1] && tail[1] <= tail[2], "{rtt}");

    for (method, name) in [(orch::Piped::Send, "send"), (orch::Piped::Ping, "ping")] {
        let pipe = orch::pipe(&url, TOKEN, 2, 1, 16, 0, method)
            .await
            .expect("pipe runs");
        assert_eq!(pipe.get("errors"), Some("0"), "{pipe}");
        assert!(number(&pipe, "acked") > 0.0, "{pipe}");
        // The report names the method as `--method` spells it.
        assert_eq!(pipe.get("method"), Some(name), "{pipe}");
    }

    let load = fanout::FanoutArgs {
        subs: 3,
        rate: 200,
        secs: 1,
        window: 64,
        drain_secs: 30,
    };
    let fan = orch::fanout(&url, &url, TOKEN, &load, &serde_json::json!({}))
        .await
        .expect("fanout runs");
    assert_eq!(fan.get("errors"), Some("0"), "{fan}");
    assert_eq!(fan.get("missing"), Some("0"), "{fan}");
    assert!(number(&fan, "accepted") > 0.0, "{fan}");
    assert_eq!(fan.get("deliveries"), fan.get("expected"), "{fan}");
    assert!(number(&fan, "delivery_p99_ms") >= number(&fan, "delivery_p50_ms"));
    // Unfiltered, each packet comes with its thread's `thread_opened` (a new thread
    // per send) and later transitions: more frames than packets.
    assert!(number(&fan, "frames") > number(&fan, "deliveries"), "{fan}");

    // Filtered to `packet_sent`, one frame per packet, like a NATS subscriber's.
    let packets = serde_json::json!({"event_type": "packet_sent"});
    let fan = orch::fanout(&url, &url, TOKEN, &load, &packets)
        .await
        .expect("filtered fanout runs");
    assert_eq!(fan.get("missing"), Some("0"), "{fan}");
    assert_eq!(fan.get("deliveries"), fan.get("expected"), "{fan}");
    assert_eq!(fan.get("frames"), fan.get("deliveries"), "{fan}");
    stop(stack).await;
}

// ISSUE-15: refusals are counted and shown, not taken for acknowledgements: a read-only
// principal's cxp.send is answered with an error on every call; a wrong token fails the
// run at authentication.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_sends_and_tokens_are_reported() {
    let (stack, url) = gateway().await;

    let rtt = orch::rtt(&url, READ_ONLY_TOKEN, 5).await.expect("rtt runs");
    // 5 measured and 5 warm-up sends, every one refused; the pings are answered
    assert_eq!(rtt.get("errors"), Some("10"), "{rtt}");
    assert!(rtt.get("first_error").is_some(), "{rtt}");

    let refused = orch::rtt(&url, "not-a-token", 5).await;
    let err = refused.expect_err("a wrong token fails the run");
    assert!(err.to_string().contains("authentication refused"), "{err}");
    stop(stack).await;
}
