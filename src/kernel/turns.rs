//! Per-subject turns: a governed command is decided and applied before the next governed
//! command of the same subject is decided.
//!
//! Governance decides from facts folded out of the log (`sync_before_decide` catches
//! the facts up first). Without turns, two sends of one Volk racing through the kernel
//! would both be decided before either was appended, so a traffic rule such as the send
//! budget ("deny the 101st send of a Volk in a session") would see 99 sends twice and
//! allow both. With turns the second decision waits until the first command's events
//! are on the log, sees them, and is recorded with fact positions that include them, so
//! `orchestrata audit verify` re-evaluates it to the same answer.
//!
//! Turns are per subject (`volk:U:Ox`, `client:ops`), so different Volks still decide
//! and append concurrently and the writer still groups their appends. The cost lands on
//! one subject that pipelines many governed commands: each waits for the previous one's
//! append (one group commit). Rules that read *another* subject's traffic are not
//! serialized by this; policies should key traffic rules on the deciding subject.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use tokio::sync::{Mutex as AsyncMutex, OwnedMutexGuard};

/// The table of subjects that currently hold or wait for a turn. Entries disappear when
/// the last holder releases, so the table stays as small as the number of subjects with
/// commands in flight.
#[derive(Debug, Default, Clone)]
pub(crate) struct Turns {
    table: Arc<Mutex<HashMap<String, Arc<AsyncMutex<()>>>>>,
}

/// A subject's turn; dropping it lets the subject's next command be decided.
pub(crate) struct Turn {
    guard: Option<OwnedMutexGuard<()>>,
    key: String,
    table: Arc<Mutex<HashMap<String, Arc<AsyncMutex<()>>>>>,
}

impl Turns {
    /// Waits for `subject`'s turn (FIFO among waiters: tokio's mutex is fair).
    pub(crate) async fn take(&self, subject: String) -> Turn {
        let lock = {
            let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
            table.entry(subject.clone()).or_default().clone()
        };
        let guard = lock.lock_owned().await;
        Turn {
            guard: Some(guard),
            key: subject,
            table: self.table.clone(),
        }
    }

    /// Subjects with a command in flight or waiting (for tests and metrics).
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.table.lock().map(|t| t.len()).unwrap_or(0)
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        let mut table = self.table.lock().unwrap_or_else(|p| p.into_inner());
        drop(self.guard.take());
        // The table's own Arc plus ours would be 2; once only the table holds the lock
        // and nobody waits for it, forget the subject.
        if let Some(lock) = table.get(&self.key) {
            if Arc::strong_count(lock) == 1 {
                table.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test]
    async fn one_subject_waits_for_its_turn_while_others_proceed() {
        let turns = Turns::default();
        let first = turns.take("volk:U:Ox".into()).await;
        // Another subject is not blocked.
        let other = tokio::time::timeout(Duration::from_secs(1), turns.take("volk:U:Vz".into()))
            .await
            .expect("another subject takes its turn at once");
        // The same subject waits until the first turn ends.
        let waiting = tokio::spawn({
            let turns = turns.clone();
            async move { turns.take("volk:U:Ox".into()).await }
        });
        let early = tokio::time::timeout(Duration::from_millis(50), turns.take("volk:U:Ox".into()));
        assert!(
            early.await.is_err(),
            "a second holder got the turn while the first held it"
        );
        drop(first);
        let second = tokio::time::timeout(Duration::from_secs(1), waiting)
            .await
            .expect("the waiter gets the turn once it is released")
            .expect("waiter task");
        drop(second);
        drop(other);
        assert_eq!(turns.len(), 0, "released subjects are forgotten");
    }
}
