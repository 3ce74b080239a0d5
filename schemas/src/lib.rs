//! Orchestrata's contracts: everything that crosses a process boundary.
//!
//! - [`cxp`]: the CXP packet (spec 004), its validation, status machines and codecs.
//! - [`events`]: the event envelope and every event type appended to the log, with
//!   their Avro single-object encoding (`schemas/avro/*.avsc`).
//!
//! This crate is pure: no I/O, no async, no clock reads in folds.

pub mod cxp;
pub mod events;
