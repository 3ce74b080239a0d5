//! Orchestrata: the event-sourced control plane for multi-agent systems.
//!
//! - [`log`]: the persistent event log (sled or Kafka) every state change is appended to.
//! - [`config`]: configuration of the log (backend, durability, retention).
//! - [`cli`]: the `orchestrata` command line.

pub mod cli;
pub mod config;
pub mod log;
