//! [`KernelPort`]: where a gateway sends its commands — a kernel in this process, or
//! the one kernel of a split deployment through the `commands` stream.
//!
//! Handlers never see the difference: both answer an [`Outcome`] whose sequences the
//! caller waits on to read its own write, and a refusal with the kernel's stable code.

use orchestrata_schemas::events::{Command, EventRecord};

use crate::kernel::{Kernel, KernelError, Outcome, RemoteKernel};

/// The kernel behind a gateway.
#[derive(Clone, Debug)]
pub enum KernelPort {
    /// In-process (`--role all`): the call goes straight to the kernel's writer.
    Local(Kernel),
    /// Another process (`--role gateway`): the command is appended to `commands` and
    /// the answer read back from the log, bounded by the client's timeout.
    Remote(RemoteKernel),
}

impl KernelPort {
    /// Executes `command` (see [`Kernel::execute`] and [`RemoteKernel::execute`]).
    pub async fn execute(&self, command: Command) -> Result<Outcome, KernelError> {
        match self {
            KernelPort::Local(kernel) => kernel.execute(command).await,
            KernelPort::Remote(remote) => remote.execute(command).await,
        }
    }

    /// [`KernelPort::execute`], recording `preface` (the call's audit) with it: in the
    /// command's append batch in-process; appended before the command when the
    /// command travels through the log.
    pub async fn execute_with(
        &self,
        command: Command,
        preface: Vec<EventRecord>,
    ) -> Result<Outcome, KernelError> {
        match self {
            KernelPort::Local(kernel) => kernel.execute_with(command, preface).await,
            KernelPort::Remote(remote) => {
                for record in &preface {
                    remote.log().append(record).await?;
                }
                remote.execute(command).await
            }
        }
    }

    /// `local` for an in-process kernel, `log` when commands travel through the log.
    pub fn mode(&self) -> &'static str {
        match self {
            KernelPort::Local(_) => "local",
            KernelPort::Remote(_) => "log",
        }
    }
}

impl From<Kernel> for KernelPort {
    fn from(kernel: Kernel) -> Self {
        KernelPort::Local(kernel)
    }
}

impl From<RemoteKernel> for KernelPort {
    fn from(remote: RemoteKernel) -> Self {
        KernelPort::Remote(remote)
    }
}
