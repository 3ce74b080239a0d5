//! The thread view keeps only recently touched threads and packets in memory (issue
//! 18, bounded memory): a default `orchestrata up` (a separate process: sled log,
//! governance, projections) with `projections.hot_entries` = 4 answers `cxp.status`,
//! `cxp.work` and a repeated `cxp.send` about packets it let go of from the view store,
//! and answers them exactly as a server that holds them in memory does. Its kernel
//! keeps only `kernel.hot_entries` = 4 packets and threads in memory too (the rest in
//! its spill file), and executes the same commands about the others.

mod support;

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use support::checked_ok;
use support::up::Up;
use support::ws::Ws;

const TOKEN: &str = "thread-bodies-test-token";
const VZ_TOKEN: &str = "thread-bodies-vz-token";
const HOT: u64 = 4;

/// `orchestrata_projection_thread_entries{kind, held}` on `/metrics`.
async fn entries(port: u16, kind: &str, held: &str) -> u64 {
    gauge(port, "orchestrata_projection_thread_entries", kind, held).await
}

/// `metric{kind, held}` on `/metrics`.
async fn gauge(port: u16, metric: &str, kind: &str, held: &str) -> u64 {
    labelled(port, metric, &[("kind", kind), ("held", held)]).await
}

/// The value of `metric` with all of `labels` on `/metrics`.
async fn labelled(port: u16, metric: &str, labels: &[(&str, &str)]) -> u64 {
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    let (status, body) = support::ws::http_get(addr, "/metrics").await;
    assert_eq!(status, 200, "{body}");
    let labels: Vec<String> = labels
        .iter()
        .map(|(name, value)| format!("{name}=\"{value}\""))
        .collect();
    body.lines()
        .filter(|l| l.starts_with(&format!("{metric}{{")))
        .find(|l| labels.iter().all(|label| l.contains(label.as_str())))
        .and_then(|l| l.rsplit(' ').next()?.trim().parse().ok())
        .unwrap_or_else(|| panic!("no {metric} {labels:?} in {body}"))
}

/// Waits until the view holds `packets` packets, at most `in_memory` of them (and of
/// its threads) in memory.
async fn settle(port: u16, packets: u64, in_memory: u64) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let all = entries(port, "packets", "all").await;
        let held = entries(port, "packets", "memory").await;
        let threads = entries(port, "threads", "memory").await;
        if all == packets && held <= in_memory && threads <= in_memory {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "thread view at {all} packets, {held} packets and {threads} threads in memory; \
             wanted {packets}, at most {in_memory}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the packet index holds at most `in_memory` packets whole (the others
/// let go: only their ids and store keys stay).
async fn packet_index_settles(port: u16, in_memory: u64) {
    let addr = format!("127.0.0.1:{port}").parse().expect("address");
    let metric = "orchestrata_projection_packet_index_in_memory ";
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = support::ws::http_get(addr, "/metrics").await;
        assert_eq!(status, 200, "{body}");
        let held: u64 = body
            .lines()
            .find_map(|l| l.strip_prefix(metric)?.trim().parse().ok())
            .unwrap_or_else(|| panic!("no {metric}in {body}"));
        if held <= in_memory {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "packet index holds {held} packets, wanted at most {in_memory}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

async fn client(port: u16, token: &str) -> Ws {
    let mut ws = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    ws.auth(token).await;
    ws
}

async fn statuses(ws: &mut Ws, threads: &[String]) -> Vec<Value> {
    let mut all = Vec::new();
    for thread in threads {
        all.push(checked_ok(ws, "cxp.status", json!({"thread_id": thread})).await);
    }
    all
}

// REQ-014-011 REQ-014-015 REQ-004-US-008-005 ISSUE-18: packets and threads that left
// memory (the views' and the kernel's) are answered by cxp.status, cxp.work and a
// repeated cxp.send, exactly as a server holding them in memory answers them
#[tokio::test]
async fn let_go_threads_and_packets_are_answered_from_the_store_as_from_memory() {
    let data = tempfile::tempdir().expect("temp dir");
    let config = data.path().join("orchestrata.yaml");
    std::fs::write(
        &config,
        format!(
            "gateway:\n  tokens:\n    - {{ token: {VZ_TOKEN}, scope: read_write, name: vz, acts_as: [\"U:Vz\"] }}\n"
        ),
    )
    .expect("config written");
    let config = config.to_str().expect("utf-8 path").to_owned();
    let hot = HOT.to_string();
    let env = [
        ("ORCHESTRATA_PROJECTIONS__HOT_ENTRIES", hot.as_str()),
        ("ORCHESTRATA_KERNEL__HOT_ENTRIES", hot.as_str()),
        ("ORCHESTRATA_CONFIG", config.as_str()),
    ];
    let port = support::free_port();
    let mut up = Up::start(data.path(), port, TOKEN, &[], &env);
    let mut ws = client(port, TOKEN).await;

    // Ten threads (the spec's example, verbatim, after one with an idempotency key),
    // then three replies into the first.
    let mut keyed = support::spec_send();
    keyed["idempotency_key"] = json!("thread-bodies-first");
    let first = checked_ok(&mut ws, "cxp.send", keyed.clone()).await;
    let mut threads = vec![first["thread_id"].as_str().expect("thread").to_owned()];
    for _ in 0..9 {
        let sent = checked_ok(&mut ws, "cxp.send", support::spec_send()).await;
        threads.push(sent["thread_id"].as_str().expect("thread").to_owned());
    }
    for _ in 0..3 {
        let mut reply = support::spec_send();
        reply["thread_id"] = json!(threads[0]);
        checked_ok(&mut ws, "cxp.send", reply).await;
    }
    settle(port, 13, HOT).await;
    let kernel = |kind: &'static str, held: &'static str| {
        gauge(port, "orchestrata_kernel_entries", kind, held)
    };
    assert!(kernel("packets", "all").await >= 13);
    assert!(kernel("threads", "all").await >= 10);
    assert!(kernel("packets", "memory").await <= HOT);
    assert!(kernel("threads", "memory").await <= HOT);
    // The cold ones are in the kernel's scratch files, whose size the gauge reports.
    for kind in ["packets", "threads"] {
        let bytes = labelled(port, "orchestrata_kernel_scratch_bytes", &[("kind", kind)]).await;
        assert!(bytes > 0, "no scratch file of {kind} after spilling");
    }

    // The first packet left memory: its recipient works on it (the view reads it back
    // to find the recipient, and the runner reads it back to fold the change).
    let mut vz = client(port, VZ_TOKEN).await;
    let worked = checked_ok(
        &mut vz,
        "cxp.work",
        json!({"message_id": first["message_id"], "status": "in_progress"}),
    )
    .await;
    assert_eq!(worked["work_status"], "in_progress", "{worked}");
    // The same key again: answered from the stored packet, not sent twice.
    let again = checked_ok(&mut ws, "cxp.send", keyed).await;
    assert_eq!(again["duplicate"], json!(true), "{again}");
    assert_eq!(again["message_id"], first["message_id"]);
    settle(port, 13, HOT).await;
    let served_cold = statuses(&mut ws, &threads).await;
    let first_thread = &served_cold[0];
    assert_eq!(first_thread["total"], json!(4), "{first_thread}");
    assert_eq!(first_thread["packets"][0]["work_status"], "in_progress");
    let work: Vec<&Value> = first_thread["transitions"]
        .as_array()
        .expect("transitions")
        .iter()
        .filter(|t| t["kind"] == "work" && t["status"] == "in_progress")
        .collect();
    assert_eq!(work.len(), 1, "{first_thread}");
    // REQ-014-005 ISSUE-18: a subject filter matches the work transition of the first
    // packet, which the packet index let go of: its subject is read from the store.
    packet_index_settles(port, HOT).await;
    let replay = checked_ok(
        &mut ws,
        "gateway.replay",
        json!({"topic": "cxp.traffic", "count": 1000,
               "filters": {"subject": "generate_component"}}),
    )
    .await;
    let worked: Vec<&Value> = replay["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter(|e| e["event_type"] == "work_status_changed")
        .collect();
    assert_eq!(worked.len(), 1, "{replay}");
    drop((ws, vz));
    assert!(up.stop(), "up stops cleanly");

    // Restarted with the default (everything fits in memory): the same answers.
    let up = Up::start(
        data.path(),
        port,
        TOKEN,
        &[],
        &[("ORCHESTRATA_CONFIG", config.as_str())],
    );
    let mut ws = client(port, TOKEN).await;
    settle(port, 13, 13).await;
    assert_eq!(entries(port, "packets", "memory").await, 13);
    let kernel_packets = gauge(port, "orchestrata_kernel_entries", "packets", "all").await;
    assert_eq!(
        gauge(port, "orchestrata_kernel_entries", "packets", "memory").await,
        kernel_packets,
        "by default the kernel keeps every packet of a small history in memory"
    );
    assert_eq!(
        labelled(
            port,
            "orchestrata_kernel_scratch_bytes",
            &[("kind", "packets")]
        )
        .await,
        0,
        "nothing spilled, no scratch file"
    );
    let served_warm = statuses(&mut ws, &threads).await;
    assert_eq!(
        served_warm, served_cold,
        "answers from the store = answers from memory"
    );
    let unknown = ws
        .err("cxp.status", json!({"thread_id": "no-such-thread"}))
        .await;
    assert_eq!(unknown["code"], -32602, "{unknown}");
    drop(up);
}
