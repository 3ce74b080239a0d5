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
    #[serde(with = "exact_time")]
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
    #[serde(with = "exact_time")]
    opened_at: DateTime<Utc>,
    #[serde(with = "exact_time")]
    last_activity: DateTime<Utc>,
}

/// A time as seconds and nanoseconds since the Unix epoch: exact, and two integers
/// where chrono's own form is an RFC 3339 string formatted and parsed at every spill
/// (1 % of a server's CPU under pipelined sends).
mod exact_time {
    use chrono::{DateTime, Utc};
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(t: &DateTime<Utc>, s: S) -> Result<S::Ok, S::Error> {
        (t.timestamp(), t.timestamp_subsec_nanos()).serialize(s)
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<DateTime<Utc>, D::Error> {
        let (secs, nanos) = <(i64, u32)>::deserialize(d)?;
        DateTime::from_timestamp(secs, nanos).ok_or_else(|| {
            serde::de::Error::custom(format!("time {secs} s + {nanos} ns is out of range"))
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    // ISSUE-15: a spilled thread comes back equal, its times to the nanosecond
    #[test]
    fn a_thread_comes_back_from_the_spill_file_exactly() {
        let mut participants = Participants::default();
        participants.insert("U:Ox");
        participants.insert("U:Vz");
        let at = |secs, nanos| DateTime::from_timestamp(secs, nanos).expect("in range");
        let thread = ThreadState {
            status: ThreadStatus::Closed,
            session: Some("s-1".into()),
            participants,
            packets: vec![Uuid::now_v7(), Uuid::now_v7()],
            opened_at: at(1_780_000_000, 123_456_789),
            last_activity: at(-5, 999_999_999),
        };
        let back = ThreadState::decode(&thread.encode().expect("encode")).expect("decode");
        assert_eq!(back, thread);
        assert!(ThreadState::decode(b"\x93\x01").is_err(), "truncated bytes");
    }
}
