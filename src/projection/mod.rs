//! The projection runner: keeps the views of `orchestrata-projections` folded from the
//! log, stored, and readable.
//!
//! - [`ViewStore`]: a redb file of its own (`<data dir>/views/views.redb` with the
//!   embedded log; a local directory with Kafka) holding each view together with its checkpoint
//!   and the log epochs it was folded from, written in **one atomic write**. A crash
//!   therefore loses only events not yet committed, which are re-read on restart; the
//!   view's per-stream checkpoint makes re-applying any of them a no-op.
//! - [`spawn_view`] / [`Projections::start`]: restore each view from the store, tail
//!   its streams from the checkpoint, apply events as they come, and commit every
//!   `batch_events` events or `batch_interval`, whichever first.
//! - [`ViewHandle`]: cheap shared reads of the live view ([`ViewHandle::read`]) and
//!   read-your-write ([`ViewHandle::wait_for`]: resolves once the view has applied a
//!   given sequence, or fails with a typed timeout).
//! - [`rebuild`] / [`catch_up`]: fold from the log in pages, optionally only up to a
//!   sequence (time travel); [`rebuild_into_store`] replaces a stored view.
//!
//! ```no_run
//! # async fn demo(log: std::sync::Arc<dyn orchestrata::log::EventLog>) -> anyhow::Result<()> {
//! use std::time::Duration;
//! use orchestrata::projection::{Projections, RunnerConfig, ViewStore};
//! use orchestrata_schemas::events::Stream;
//!
//! let store = ViewStore::open("data/views")?;
//! let views = Projections::start(log.clone(), store, RunnerConfig::default()).await?;
//! // ... the kernel appends a packet at sequence `seq` of cxp.traffic ...
//! # let seq = 0;
//! views.threads().wait_for(Stream::CxpTraffic, seq, Duration::from_secs(2)).await?;
//! let count = views.threads().read().thread_count();
//! # let _ = count;
//! views.stop().await?;
//! # Ok(()) }
//! ```

mod chunks;
mod commit;
mod decisions;
mod error;
mod handle;
pub mod neo4j;
mod offline;
mod rebuild;
mod rebuild_store;
mod runner;
mod store;

pub use decisions::find_decision;
pub use error::ProjectionError;
pub use handle::ViewHandle;
pub use offline::{open_view, open_view_as_of};
pub use rebuild::{catch_up, rebuild, stream_epochs, Progress};
pub use rebuild_store::{rebuild_into_store, rebuild_into_store_with, RebuildBounds};
pub use runner::{spawn_view, Projections, RunnerConfig, RunningView, DEFAULT_HOT_ENTRIES};
pub use store::{views_dir, Epochs, Loaded, StoreUsage, StoredCheckpoint, ViewStore, PART_BYTES};
