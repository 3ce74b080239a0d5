//! The runner's typed errors.

use orchestrata_projections::ViewName;
use orchestrata_schemas::events::Stream;

use crate::log::LogError;

/// What can go wrong keeping views up to date or reading them.
#[derive(Debug, thiserror::Error)]
pub enum ProjectionError {
    /// A read-your-write wait ran out of time.
    #[error("view {view} did not reach sequence {sequence} of stream {stream} within {timeout_ms} ms (it has applied up to {reached})")]
    WaitTimeout {
        /// The view waited on.
        view: ViewName,
        /// The stream.
        stream: Stream,
        /// The sequence asked for.
        sequence: u64,
        /// How far the view had got (`none` if nothing applied on that stream).
        reached: String,
        /// The timeout.
        timeout_ms: u64,
    },
    /// A wait on a stream the view does not fold would never resolve.
    #[error("view {view} does not fold stream {stream}; it folds {folds}")]
    NotFolded {
        /// The view.
        view: ViewName,
        /// The stream asked for.
        stream: Stream,
        /// The streams it does fold.
        folds: String,
    },
    /// The view's runner stopped (shut down, or failed: see its `stop` result).
    #[error("the runner of view {view} has stopped; it will apply no more events")]
    Stopped {
        /// The view.
        view: ViewName,
    },
    /// Reading the log failed.
    #[error("view {view}: reading the log: {source}")]
    Log {
        /// The view being folded.
        view: ViewName,
        /// What the log said.
        #[source]
        source: LogError,
    },
    /// The view store failed.
    #[error("view store at {path}: {reason}")]
    Store {
        /// The store's directory.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A stored view could not be read back (corrupt or from an incompatible version;
    /// `orchestrata projections rebuild` replaces it).
    #[error("view store at {path}: stored view {view} cannot be read ({reason}); run `orchestrata projections rebuild --view {view}`")]
    Corrupt {
        /// The store's directory.
        path: String,
        /// The view.
        view: ViewName,
        /// Why it cannot be decoded.
        reason: String,
    },
    /// A background task panicked or was cancelled.
    #[error("view {view}: background task failed: {reason}")]
    Task {
        /// The view.
        view: ViewName,
        /// What happened.
        reason: String,
    },
}
