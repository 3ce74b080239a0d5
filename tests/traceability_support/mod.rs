//! The pieces of the traceability generator (`tests/traceability.rs`).
pub mod render;
pub mod scan;
pub mod specs;
