//! A Kafka broker frozen with SIGSTOP during appends costs no acknowledged event and
//! duplicates none; appends that cannot complete in time fail with a clear error.

mod support;

use std::collections::HashSet;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::log::{self, LogError};
use orchestrata_schemas::events::kernel::KernelStarted;
use orchestrata_schemas::events::{EventRecord, Stream};

fn record(n: u32) -> EventRecord {
    EventRecord::new(
        "test",
        format!("n-{n}"),
        KernelStarted {
            node: format!("n-{n}"),
            version: "0".into(),
            backend: "kafka".into(),
        },
        chrono::Utc::now(),
    )
}

// REQ-014-131 REQ-014-135
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frozen_broker_loses_and_duplicates_no_acknowledged_event() {
    let kafka = support::spawn_private_kafka();
    let mut config = LogConfig::kafka(kafka.address.clone());
    config.topic_prefix = support::unique_prefix();
    config.delivery_timeout = Duration::from_millis(1500);
    // Reads only need to outlast a just-started JVM broker's first slow answers; the
    // frozen phase is bounded by the delivery timeout.
    config.request_timeout = Duration::from_secs(5);
    let log = log::open(&config).await.expect("open");
    let stream = Stream::KernelEvents;

    let mut acked = Vec::new();
    let mut n = 0;
    for _ in 0..20 {
        let r = record(n);
        n += 1;
        acked.push((
            log.append(&r).await.expect("append before freeze"),
            r.event_id,
        ));
    }

    kafka.freeze();
    let mut timeouts = 0;
    for _ in 0..3 {
        let r = record(n);
        n += 1;
        match log.append(&r).await {
            Ok(seq) => acked.push((seq, r.event_id)),
            Err(e) => {
                assert!(
                    matches!(e, LogError::AppendTimeout { .. }),
                    "expected a timeout, got {e}"
                );
                assert!(
                    e.to_string().contains("not acknowledged within 1500 ms"),
                    "{e}"
                );
                timeouts += 1;
            }
        }
    }
    assert!(timeouts > 0, "appends to a frozen broker must fail in time");
    kafka.resume();

    // After the broker is back, appends succeed again (retry while the client reconnects).
    let mut resumed = 0;
    for _ in 0..60 {
        let r = record(n);
        n += 1;
        match log.append(&r).await {
            Ok(seq) => {
                acked.push((seq, r.event_id));
                resumed += 1;
                if resumed == 20 {
                    break;
                }
            }
            Err(e) => assert!(matches!(e, LogError::AppendTimeout { .. }), "{e}"),
        }
    }
    assert_eq!(resumed, 20, "appends succeed after SIGCONT");

    let stored = log
        .read(stream, 0, None, usize::MAX)
        .await
        .expect("read back");
    let sequences: Vec<u64> = stored.iter().map(|e| e.sequence).collect();
    assert_eq!(
        sequences,
        (0..stored.len() as u64).collect::<Vec<_>>(),
        "no gaps"
    );
    let ids: Vec<_> = stored.iter().map(|e| e.record.event_id).collect();
    let unique: HashSet<_> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "no event stored twice");
    for (seq, id) in &acked {
        let at = stored
            .get(usize::try_from(*seq).expect("fits"))
            .unwrap_or_else(|| panic!("acknowledged sequence {seq} missing"));
        assert_eq!(
            at.record.event_id, *id,
            "acknowledged event at its sequence"
        );
    }
}
