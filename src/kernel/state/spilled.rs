//! How the aggregate's packets, threads and executed command ids are written to the
//! spill file ([`super::spill`]) and read back: MessagePack, the packet in its own
//! binary codec; a command id is its key alone.
//!
//! These bytes never leave the process (the spill file is unlinked scratch space), so
//! the forms carry no version; they only have to give back an equal value.

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::CxpPacket;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::spill::Spillable;
use super::{PacketState, Participants, ThreadState, ThreadStatus};

/// An executed command id: the key is all there is.
impl Spillable for () {
    fn encode(&self) -> Result<Vec<u8>, String> {
        Ok(Vec::new())
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        match bytes {
            [] => Ok(()),
            _ => Err(format!(
                "an executed command id holds {} bytes",
                bytes.len()
            )),
        }
    }
}

#[derive(Serialize, Deserialize)]
struct StoredPacket {
    #[serde(with = "serde_bytes")]
    packet: Vec<u8>,
    session: Option<String>,
    in_reply_to: Option<Uuid>,
    queued_at: DateTime<Utc>,
}

impl Spillable for PacketState {
    fn encode(&self) -> Result<Vec<u8>, String> {
        let stored = StoredPacket {
            packet: self.packet.to_bytes().map_err(|e| e.to_string())?,
            session: self.session.clone(),
            in_reply_to: self.in_reply_to,
            queued_at: self.queued_at,
        };
        rmp_serde::to_vec(&stored).map_err(|e| e.to_string())
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let stored: StoredPacket = rmp_serde::from_slice(bytes).map_err(|e| e.to_string())?;
        Ok(PacketState {
            packet: CxpPacket::from_bytes(&stored.packet).map_err(|e| e.to_string())?,
            session: stored.session,
            in_reply_to: stored.in_reply_to,
            queued_at: stored.queued_at,
        })
    }
}

#[derive(Serialize, Deserialize)]
struct StoredThread {
    status: u8,
    session: Option<String>,
    participants: Vec<String>,
    packets: Vec<Uuid>,
    opened_at: DateTime<Utc>,
    last_activity: DateTime<Utc>,
}

const STATUSES: [ThreadStatus; 3] = [
    ThreadStatus::Active,
    ThreadStatus::Closed,
    ThreadStatus::Archived,
];

impl Spillable for ThreadState {
    fn encode(&self) -> Result<Vec<u8>, String> {
        let stored = StoredThread {
            status: STATUSES
                .iter()
                .position(|s| *s == self.status)
                .unwrap_or_default() as u8,
            session: self.session.clone(),
            participants: self.participants.iter().map(str::to_owned).collect(),
            packets: self.packets.clone(),
            opened_at: self.opened_at,
            last_activity: self.last_activity,
        };
        rmp_serde::to_vec(&stored).map_err(|e| e.to_string())
    }

    fn decode(bytes: &[u8]) -> Result<Self, String> {
        let stored: StoredThread = rmp_serde::from_slice(bytes).map_err(|e| e.to_string())?;
        let status = STATUSES
            .get(usize::from(stored.status))
            .copied()
            .ok_or_else(|| format!("unknown thread status {}", stored.status))?;
        let mut participants = Participants::default();
        for p in &stored.participants {
            participants.insert(p);
        }
        Ok(ThreadState {
            status,
            session: stored.session,
            participants,
            packets: stored.packets,
            opened_at: stored.opened_at,
            last_activity: stored.last_activity,
        })
    }
}
