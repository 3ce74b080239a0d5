//! Reading the facts view: packet queries from Prolog (REQ-004-INTG-002..005), the
//! facts positions, and the checkpoint that keeps the view between runs.

use std::collections::BTreeMap;
use std::path::Path;

use super::facts::{FactsView, FACT_STREAMS};
use super::term::PlTerm;
use super::{Governance, GovernanceError};
use crate::log::EventLog;

/// Which packets [`Governance::packets_where`] selects (REQ-004-INTG-002..005).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PacketField {
    /// By message id.
    MessageId,
    /// By thread id.
    Thread,
    /// By sender alias.
    Sender,
    /// By recipient alias.
    Recipient,
    /// By current delivery status.
    DeliveryStatus,
    /// By current work status.
    WorkStatus,
}

impl Governance {
    /// Writes the facts view and its positions to the configured checkpoint file:
    /// a temporary file, synced, renamed over the checkpoint, and the directory synced,
    /// so a crash leaves the old checkpoint or the new one (and a damaged one is folded
    /// from the log instead, see `load_checkpoint`).
    pub async fn checkpoint(&self) -> Result<(), GovernanceError> {
        let Some(path) = &self.inner.config.checkpoint else {
            return Ok(());
        };
        let facts = self.inner.facts.lock().await;
        let err = |reason: String| GovernanceError::Checkpoint {
            path: path.display().to_string(),
            reason,
        };
        let json = serde_json::to_vec(&*facts).map_err(|e| err(e.to_string()))?;
        let tmp = path.with_extension("tmp");
        write_synced(&tmp, &json).map_err(|e| err(e.to_string()))?;
        std::fs::rename(&tmp, path).map_err(|e| err(e.to_string()))?;
        let dir = match path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| err(e.to_string()))
    }

    /// Per fact stream, how many events the facts view has folded.
    pub async fn facts_positions(&self) -> BTreeMap<String, u64> {
        self.inner.facts.lock().await.positions.clone()
    }

    /// Message ids of the packets whose `field` equals `value`, asked of the Prolog
    /// facts (REQ-004-INTG-002..005). `value` is quoted, never pasted.
    pub async fn packets_where(
        &self,
        field: PacketField,
        value: &str,
    ) -> Result<Vec<String>, GovernanceError> {
        self.sync_facts().await?;
        let v = PlTerm::atom(value).to_string();
        let goal = match field {
            PacketField::MessageId => {
                let m = PlTerm::message_id(value);
                format!("findall(M, (M = {m}, cxp_packet(M,_,_,_,_,_,_,_,_,_,_,_)), Ms)")
            }
            PacketField::Thread => {
                let t = PlTerm::string(value).to_string();
                format!("findall(M, cxp_packet(M,_,_,{t},_,_,_,_,_,_,_,_), Ms)")
            }
            PacketField::Sender => format!("findall(M, cxp_packet(M,{v},_,_,_,_,_,_,_,_,_,_), Ms)"),
            PacketField::Recipient => {
                format!("findall(M, cxp_packet(M,_,{v},_,_,_,_,_,_,_,_,_), Ms)")
            }
            PacketField::DeliveryStatus => format!("findall(M, cxp_delivery_status(M,{v},_), Ms)"),
            PacketField::WorkStatus => format!("findall(M, cxp_work_status(M,{v},_), Ms)"),
        };
        let answer = self.inner.engine.query(goal).await?;
        self.renew_if_due(&*self.inner.facts.lock().await);
        let text = answer
            .and_then(|b| b.get("Ms").cloned())
            .unwrap_or_default();
        Ok(parse_message_ids(&text))
    }
}

/// A list of message ids as rendered by the evaluator (`[id(A, B, C), …]`), back into
/// their texts.
fn parse_message_ids(text: &str) -> Vec<String> {
    let inner = text.trim().trim_start_matches('[').trim_end_matches(']');
    let mut items = Vec::new();
    let (mut depth, mut start) = (0usize, 0usize);
    for (i, c) in inner.char_indices() {
        match c {
            '(' => depth += 1,
            ')' => depth = depth.saturating_sub(1),
            ',' if depth == 0 => {
                items.push(&inner[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items
        .into_iter()
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(super::term::message_id_text)
        .collect()
}

/// Reads the checkpoint at `path`; a missing file, a changed epoch or another packet
/// window gives an empty view with `window` (rebuilt from the log).
pub(super) async fn load_checkpoint(
    path: &Path,
    log: &dyn EventLog,
    window: Option<u64>,
) -> Result<FactsView, GovernanceError> {
    let fresh = || FactsView::with_window(window);
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(fresh()),
        Err(e) => {
            return Err(GovernanceError::Checkpoint {
                path: path.display().to_string(),
                reason: e.to_string(),
            })
        }
    };
    // A checkpoint is derived from the log: one that does not parse (a disk that lost
    // its last write, an edit by hand) is folded from the log instead of keeping the
    // server from starting.
    let view: FactsView = match serde_json::from_slice(&bytes) {
        Ok(view) => view,
        Err(e) => {
            tracing::warn!(path = %path.display(), error = %e, "governance checkpoint unreadable; folding the facts from the log");
            return Ok(fresh());
        }
    };
    // Another window shows other packets: fold again with this one.
    if view.window() != window {
        return Ok(fresh());
    }
    // A changed epoch voids the positions: rebuild from the log.
    for stream in FACT_STREAMS {
        if let Some(epoch) = view.epochs.get(stream.as_str()) {
            if *epoch != log.epoch(stream).await? {
                return Ok(fresh());
            }
        }
    }
    Ok(view)
}

/// Writes `bytes` to a new file at `path` and syncs it before returning.
fn write_synced(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let mut file = std::fs::File::create(path)?;
    file.write_all(bytes)?;
    file.sync_data()
}
