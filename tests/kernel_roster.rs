//! The standard roster as the kernel registers it: the operator Volk `U:GW` joins a
//! roster registered before it existed, once. Real sled log.

mod kernel_common;

use kernel_common::{config, events};
use orchestrata_schemas::events::Stream;

// ISSUE-14: a log whose roster predates the operator Volk gets U:GW at its next start,
// once; a log with Volks of its own (not the standard roster) gets nothing.
#[tokio::test]
async fn a_roster_from_before_the_operator_volk_gets_it_once() {
    use orchestrata::kernel::{roster, Kernel, TokioClock};
    use std::sync::Arc;
    let dir = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&orchestrata::config::LogConfig::sled(dir.path()))
        .await
        .expect("open sled log");
    let old: Vec<_> = roster::roster_records(chrono::Utc::now())
        .into_iter()
        .filter(|r| r.key != roster::OPERATOR_VOLK)
        .collect();
    for r in &old {
        log.append(r).await.expect("append");
    }
    let clock = || Arc::new(TokioClock::new());
    for _ in 0..2 {
        let (k, report) = Kernel::start(log.clone(), config(), clock())
            .await
            .expect("start");
        assert_eq!(report.volks, 9);
        k.stop().await;
    }
    let lifecycle = events(&log, Stream::VolkLifecycle).await;
    assert_eq!(lifecycle.len(), 9, "U:GW registered once");
    assert_eq!(lifecycle[8].record.key, roster::OPERATOR_VOLK);

    let other = tempfile::tempdir().expect("temp dir");
    let log = orchestrata::log::open(&orchestrata::config::LogConfig::sled(other.path()))
        .await
        .expect("open sled log");
    log.append(&old[0]).await.expect("append U:Ox alone");
    let (k, report) = Kernel::start(log.clone(), config(), clock())
        .await
        .expect("start");
    assert_eq!(report.volks, 1, "not the standard roster: left alone");
    k.stop().await;
}
