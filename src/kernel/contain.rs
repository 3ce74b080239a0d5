//! One command's panic stays that command's failure.
//!
//! The writer decides and folds every command on its one task; a panic there (a bug, an
//! arithmetic overflow on a number a client chose) would end the task and with it the
//! kernel for every client. [`contained`] runs the deciding and folding of one command
//! and turns a panic into [`KernelError::Failed`] naming the command; the writer then
//! drops that command's events, appends the rest of its batch and reloads its state
//! from the log, so the state is again what the log says.

use std::any::Any;
use std::panic::{catch_unwind, AssertUnwindSafe};

use orchestrata_schemas::events::Command;

use super::KernelError;

/// `Ok(what f answered)`, or `Err(Failed)` naming `command` when `f` panicked.
pub(crate) fn contained<T>(
    command: &Command,
    f: impl FnOnce() -> Result<T, KernelError>,
) -> Result<Result<T, KernelError>, KernelError> {
    catch_unwind(AssertUnwindSafe(f)).map_err(|panic| {
        let failed = KernelError::Failed {
            command: kind_name(command),
            command_id: command.id,
            reason: panic_message(panic.as_ref()),
        };
        tracing::error!(command_id = %command.id, issuer = %command.issuer, error = %failed, "a command panicked in the kernel; refused, state reloaded from the log");
        failed
    })
}

/// The command's kind as it is serialized (`spawn_volk`, `send_packet`, ...).
pub(crate) fn kind_name(command: &Command) -> String {
    match serde_json::to_value(&command.action) {
        Ok(serde_json::Value::Object(o)) => o.keys().next().cloned(),
        Ok(serde_json::Value::String(s)) => Some(s),
        _ => None,
    }
    .unwrap_or_else(|| "command".to_owned())
}

fn panic_message(panic: &(dyn Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::cmd;

    // ISSUE-60: a panic while deciding becomes a typed refusal naming the command.
    #[test]
    fn a_panic_becomes_a_failure_naming_the_command() {
        let command = cmd::acknowledge("U:Vz", uuid::Uuid::nil());
        let caught = contained::<()>(&command, || panic!("overflow at the fold"));
        let err = caught.err().expect("the panic is caught");
        assert_eq!(err.code(), "command_failed");
        let text = err.to_string();
        assert!(
            text.contains("acknowledge") && text.contains("overflow at the fold"),
            "{text}"
        );
        let fine = contained(&command, || Ok::<_, KernelError>(7));
        assert_eq!(fine.ok().and_then(Result::ok), Some(7));
    }
}
