//! Helpers shared by the kernel tests: a real sled log in a temp dir, a kernel on it,
//! and views of what the log holds. Nothing is mocked.
#![allow(dead_code)]

use std::sync::Arc;
use std::time::Duration;

use orchestrata::config::LogConfig;
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use orchestrata::log::{self, EventLog};
use orchestrata_schemas::events::{Envelope, Stream};

/// A kernel on a fresh sled log. Keep the `TempDir` alive as long as the log.
pub struct Harness {
    pub dir: tempfile::TempDir,
    pub log: Arc<dyn EventLog>,
    pub kernel: Kernel,
}

/// Test settings: small mailbox, 3 retries, 1 s base backoff (use paused time).
pub fn config() -> KernelConfig {
    KernelConfig {
        inbox_capacity: 100,
        max_retries: 3,
        backoff_base: Duration::from_secs(1),
        backoff_max: Duration::from_secs(60),
        ..KernelConfig::default()
    }
}

/// Opens the sled log in `dir`.
pub async fn open_sled(dir: &std::path::Path) -> Arc<dyn EventLog> {
    log::open(&LogConfig::sled(dir))
        .await
        .expect("open sled log")
}

/// A fresh sled log with a started kernel (standard roster registered).
pub async fn harness(config: KernelConfig) -> Harness {
    let dir = tempfile::tempdir().expect("temp dir");
    let log = open_sled(dir.path()).await;
    let (kernel, _) = Kernel::start(log.clone(), config, Arc::new(TokioClock::new()))
        .await
        .expect("kernel starts");
    Harness { dir, log, kernel }
}

/// The last sequence of every stream: equal before and after means nothing was appended.
impl Harness {
    /// Sends a new packet with an empty JSON payload as `from` and returns it; panics
    /// (failing the test) if the kernel refuses it.
    pub async fn send_new(
        &self,
        from: &str,
        to: &str,
        subject: &str,
    ) -> orchestrata_schemas::events::types::Packet {
        let packet = orchestrata::kernel::cmd::packet(from, to, subject, serde_json::json!({}));
        self.kernel
            .execute(orchestrata::kernel::cmd::send(from, packet.clone()))
            .await
            .expect("the kernel accepts the packet");
        packet
    }
}

pub async fn positions(log: &Arc<dyn EventLog>) -> Vec<Option<u64>> {
    let mut out = Vec::new();
    for stream in Stream::ALL {
        out.push(log.last_sequence(stream).await.expect("bounds"));
    }
    out
}

/// Every event of `stream`, oldest first.
pub async fn events(log: &Arc<dyn EventLog>, stream: Stream) -> Vec<Envelope> {
    log.read(stream, 0, None, usize::MAX).await.expect("read")
}

/// The event types of `stream`, oldest first.
pub async fn types(log: &Arc<dyn EventLog>, stream: Stream) -> Vec<String> {
    events(log, stream)
        .await
        .iter()
        .map(|e| e.record.event_type().to_owned())
        .collect()
}
