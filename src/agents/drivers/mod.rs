//! The junior runtimes behind [`crate::agents::driver::Driver`].

pub mod api;
pub mod cli;
