//! The event vocabulary: what the log records about every state change.

pub mod stream;

pub use stream::{Stream, UnknownStream};
