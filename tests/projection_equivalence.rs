//! Property: for random command sequences run through the kernel, the views the
//! projection runner builds incrementally *while the commands run* equal the views
//! rebuilt from scratch from the log afterwards — byte for byte (both serialized to
//! JSON and compared). On the sled log and on a real Kafka-protocol broker.

mod support;

use std::sync::Arc;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::kernel::{cmd, Kernel, KernelConfig, TokioClock};
use orchestrata::log::{self, EventLog};
use orchestrata::projection::{rebuild, Projections, RunnerConfig, ViewHandle, ViewStore};
use orchestrata_projections::{ThreadView, View};
use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::{Command, Stream};
use proptest::prelude::*;

const VOLKS: [&str; 5] = ["U:Ox", "U:Vz", "U:Qa", "U:Cx", "U:Ar"];

/// One random step; indexes are taken modulo what exists when it runs.
#[derive(Debug, Clone)]
enum Op {
    Send {
        from: usize,
        to: usize,
        priority: i32,
        reply: Option<usize>,
    },
    Inbox(usize),
    Ack(usize),
    Fail(usize),
    Work(usize, usize),
    Priority(usize, i32),
    Thread(usize, usize),
    Session(usize, usize),
    Volk(usize, bool),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..5usize, 0..5usize, 0..=10i32, proptest::option::of(0..20usize))
            .prop_map(|(from, to, priority, reply)| Op::Send { from, to, priority, reply }),
        2 => (0..5usize).prop_map(Op::Inbox),
        2 => (0..20usize).prop_map(Op::Ack),
        1 => (0..20usize).prop_map(Op::Fail),
        2 => (0..20usize, 0..4usize).prop_map(|(p, s)| Op::Work(p, s)),
        1 => (0..20usize, 0..=10i32).prop_map(|(p, v)| Op::Priority(p, v)),
        1 => (0..20usize, 0..3usize).prop_map(|(p, k)| Op::Thread(p, k)),
        1 => (0..3usize, 0..3usize).prop_map(|(s, k)| Op::Session(s, k)),
        1 => (1..5usize, any::<bool>()).prop_map(|(v, up)| Op::Volk(v, up)),
    ]
}

/// Runs `ops` through the kernel; refusals are part of the sequence and ignored.
async fn run(kernel: &Kernel, ops: &[Op]) {
    let mut sent: Vec<orchestrata_schemas::events::types::Packet> = Vec::new();
    let pick = |sent: &Vec<_>, i: usize| -> Option<uuid::Uuid> {
        let v: &Vec<orchestrata_schemas::events::types::Packet> = sent;
        (!v.is_empty()).then(|| v[i % v.len()].message_id)
    };
    for op in ops {
        let command: Option<Command> = match op {
            Op::Send {
                from,
                to,
                priority,
                reply,
            } => {
                let mut p = cmd::packet(
                    VOLKS[*from],
                    VOLKS[*to],
                    "task",
                    serde_json::json!({"p": priority}),
                );
                p.priority = *priority;
                if let Some(r) = reply.filter(|_| !sent.is_empty()) {
                    let parent = &sent[r % sent.len()];
                    p = cmd::reply(parent, "reply", serde_json::json!({}));
                }
                p = cmd::in_session(p, "s-0");
                sent.push(p.clone());
                let issuer = p.from_agent.clone();
                Some(cmd::send(&issuer, p))
            }
            Op::Inbox(v) => {
                let _ = kernel.inbox(VOLKS[*v], 3).await;
                None
            }
            Op::Ack(i) => pick(&sent, *i).and_then(|id| {
                sent.iter()
                    .find(|p| p.message_id == id)
                    .map(|p| cmd::acknowledge(&p.to_agent, id))
            }),
            Op::Fail(i) => pick(&sent, *i).map(|id| cmd::fail("U:PS", id, "lost")),
            Op::Work(i, s) => pick(&sent, *i).map(|id| {
                let status = [
                    WorkStatus::InProgress,
                    WorkStatus::Resolved,
                    WorkStatus::Pending,
                    WorkStatus::Archived,
                ][*s];
                cmd::work("U:Ox", id, status)
            }),
            Op::Priority(i, v) => pick(&sent, *i).map(|id| cmd::priority("U:Ox", id, *v)),
            Op::Thread(i, k) => match pick(&sent, *i) {
                Some(id) => match kernel.packet(id).await {
                    Ok(p) => {
                        let f = [cmd::close_thread, cmd::reopen_thread, cmd::archive_thread][*k];
                        Some(cmd::thread("U:Ox", f, p.thread_id()))
                    }
                    Err(_) => None,
                },
                None => None,
            },
            Op::Session(s, k) => {
                let id = format!("s-{s}");
                Some(match k {
                    0 => cmd::open_session("U:Cx", &id, "p-1"),
                    1 => cmd::close_session("U:Cx", &id, "done"),
                    _ => cmd::resume_session("U:Cx", &id),
                })
            }
            Op::Volk(v, up) => Some(if *up {
                cmd::register("U:Ox", VOLKS[*v], Some("U:Ox"))
            } else {
                cmd::deregister("U:Ox", VOLKS[*v], "random")
            }),
        };
        if let Some(c) = command {
            let _ = kernel.execute(c).await;
        }
    }
}

async fn settle<V: View>(log: &Arc<dyn EventLog>, handle: &ViewHandle<V>) {
    for stream in V::STREAMS {
        if let Some(last) = log.last_sequence(*stream).await.expect("bounds") {
            handle
                .wait_for(*stream, last, Duration::from_secs(30))
                .await
                .expect("the runner catches up");
        }
    }
}

async fn same<V: View>(log: &Arc<dyn EventLog>, handle: &ViewHandle<V>) {
    settle(log, handle).await;
    let live = serde_json::to_vec(&*handle.read()).expect("serialize live view");
    let rebuilt: V = rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    let scratch = serde_json::to_vec(&rebuilt).expect("serialize rebuilt view");
    assert!(
        live == scratch,
        "view {:?} differs between live and rebuilt",
        V::NAME
    );
}

/// The thread view as a runner keeping 2 entries hot answers it — every packet and
/// thread read through the handle, most of them from the store — and as its store
/// holds it after the runner stopped: both equal the rebuild.
async fn same_threads(log: &Arc<dyn EventLog>, views: Projections, store: &ViewStore) {
    let handle = views.threads().clone();
    settle(log, &handle).await;
    let rebuilt: ThreadView = rebuild(log.as_ref(), None, &mut |_| {})
        .await
        .expect("rebuild");
    assert_eq!(handle.read().packet_count(), rebuilt.packet_count());
    assert_eq!(handle.read().thread_count(), rebuilt.thread_count());
    let whole = serde_json::to_value(&rebuilt).expect("serialize rebuilt view");
    let threads = whole["threads"].as_object().expect("threads").clone();
    for (id, thread) in &threads {
        let (live, packets) = handle
            .thread_state(id)
            .expect("readable")
            .expect("thread found");
        assert_eq!(&serde_json::to_value(&live).expect("thread"), thread);
        for p in packets {
            let id = p.packet.message_id;
            assert_eq!(Some(&p), rebuilt.packet(&id), "packet {id}");
            assert_eq!(
                handle.packet_state(&id).expect("readable").as_ref(),
                Some(&p)
            );
        }
    }
    views.stop().await.expect("stop views");
    // A runner that folded no traffic has committed nothing.
    let stored = store
        .load::<ThreadView>()
        .expect("load")
        .map_or_else(ThreadView::default, |(view, _)| view);
    assert!(
        stored == rebuilt,
        "the stored thread view equals the rebuild"
    );
}

async fn check(log: Arc<dyn EventLog>, ops: Vec<Op>) {
    let views_dir = tempfile::tempdir().expect("temp dir");
    let store = ViewStore::open(views_dir.path()).expect("view store");
    // Two hot entries: most events about packets and threads read them back first.
    let runner = RunnerConfig {
        batch_events: 7,
        batch_interval: Duration::from_millis(20),
        hot_entries: 2,
    };
    let mut views = Projections::start(log.clone(), store.clone(), runner)
        .await
        .expect("runner");
    let config = KernelConfig {
        inbox_capacity: 4,
        backoff_base: Duration::from_millis(5),
        backoff_max: Duration::from_millis(20),
        ..KernelConfig::default()
    };
    let (kernel, _) = Kernel::start(log.clone(), config, Arc::new(TokioClock::new()))
        .await
        .expect("kernel");
    kernel
        .execute(cmd::open_session("U:Cx", "s-0", "p-0"))
        .await
        .expect("session");
    let (first, second) = ops.split_at(ops.len() / 2);
    run(&kernel, first).await;
    // A restart in between: the runner resumes from what it stored.
    views.stop().await.expect("stop views");
    views = Projections::start(log.clone(), store.clone(), runner)
        .await
        .expect("runner restarts");
    run(&kernel, second).await;
    tokio::time::sleep(Duration::from_millis(100)).await; // let pending retries fire
    kernel.stop().await;
    same(&log, views.sessions()).await;
    same(&log, views.volks()).await;
    same_threads(&log, views, &store).await;
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime")
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 4, failure_persistence: None, ..ProptestConfig::default() })]

    // REQ-004-US-004-013 REQ-004-US-005-013 REQ-004-US-004-019 REQ-004-US-005-019
    #[test]
    fn incremental_views_equal_a_rebuild_on_sled(ops in proptest::collection::vec(op(), 5..40)) {
        runtime().block_on(async {
            let dir = tempfile::tempdir().expect("temp dir");
            let log = log::open(&LogConfig::sled(dir.path())).await.expect("sled");
            check(log, ops).await;
        });
    }

    // REQ-004-US-004-013 REQ-004-US-005-013 REQ-004-US-004-019 REQ-004-US-005-019
    #[test]
    fn incremental_views_equal_a_rebuild_on_kafka(ops in proptest::collection::vec(op(), 5..40)) {
        runtime().block_on(async {
            let brokers = support::kafka_brokers();
            let mut config = LogConfig::kafka(brokers.address.clone());
            config.topic_prefix = support::unique_prefix();
            let log = log::open(&config).await.expect("kafka");
            check(log, ops).await;
        });
    }
}

// REQ-004-US-004-013
#[test]
fn stream_list_covers_what_the_views_fold() {
    // The kernel folds the streams the thread, session and Volk views read.
    for s in [
        Stream::CxpTraffic,
        Stream::SessionEvents,
        Stream::VolkLifecycle,
    ] {
        assert!(orchestrata::kernel::FOLDED.contains(&s));
    }
}
