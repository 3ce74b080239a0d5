//! The junior runtimes behind [`crate::agents::driver::Driver`].

pub mod api;
pub mod browser;
pub mod cdp;
pub mod cli;
pub mod quota;
