//! The roles `orchestrata up --role` runs: the same components as the embedded mode,
//! split over processes that share a Kafka log.
//!
//! | role        | runs                                                             |
//! |-------------|------------------------------------------------------------------|
//! | `all`       | kernel + projector + gateway in one process (default; embedded)  |
//! | `kernel`    | the kernel: executes the `commands` stream, Postman, roster       |
//! | `gateway`   | the WebSocket gateway: topics/replay from the log, commands to    |
//! |             | the `commands` stream, reads from views it folds in memory        |
//! | `projector` | the projection runner: folds the log into the view store         |
//!
//! In a split deployment the processes talk only through the log: a gateway appends
//! commands to `commands`, the one kernel turns them into events, every gateway tails the
//! event streams for its subscribers, the projector folds them into views. Exactly one
//! kernel may run per log (it is the single writer of the aggregate); gateways and
//! projectors scale out.

use clap::ValueEnum;

/// Which part of the system a process runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum Role {
    /// Kernel, projector and gateway in one process: the embedded mode.
    #[default]
    All,
    /// Only the kernel (one per log).
    Kernel,
    /// Only the gateway (any number, each with its own listen address).
    Gateway,
    /// Only the projection runner.
    Projector,
}

impl Role {
    /// The role's name as written on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::All => "all",
            Role::Kernel => "kernel",
            Role::Gateway => "gateway",
            Role::Projector => "projector",
        }
    }

    /// Whether this role runs the kernel (and records kernel started/stopped).
    pub fn runs_kernel(self) -> bool {
        matches!(self, Role::All | Role::Kernel)
    }

    /// Whether this role serves the WebSocket gateway.
    pub fn runs_gateway(self) -> bool {
        matches!(self, Role::All | Role::Gateway)
    }

    /// Whether this role runs the projection runner of record (views on disk).
    pub fn runs_projector(self) -> bool {
        matches!(self, Role::All | Role::Projector)
    }
}
