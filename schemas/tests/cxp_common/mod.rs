//! Shared fixtures for the CXP integration tests.
#![allow(dead_code)]

use chrono::{DateTime, TimeZone, Utc};
use orchestrata_schemas::cxp::{CxpPacket, VolkAlias};
use serde_json::json;

/// The example packet of spec 004, verbatim.
pub const SPEC_EXAMPLE: &str = r#"{
  "message_id": "550e8400-e29b-41d4-a716-446655440000",
  "from_agent": "U:Ox",
  "to_agent": "U:Vz",
  "thread_id": "thread-001",
  "subject": "Generate UserService Implementation",
  "payload": {
    "task": "generate_code",
    "spec": "UserService with CRUD operations",
    "language": "Python"
  },
  "timestamp": "2026-01-15T10:30:00Z",
  "priority": 8,
  "delivery_status": "delivered",
  "work_status": "in_progress",
  "protocol_version": "1.0.0"
}"#;

pub fn alias(s: &str) -> VolkAlias {
    VolkAlias::parse(s).expect("test alias is valid")
}

pub fn t(secs: i64) -> DateTime<Utc> {
    Utc.timestamp_opt(1_768_473_000 + secs, 0)
        .single()
        .expect("valid time")
}

pub fn packet() -> CxpPacket {
    CxpPacket::new_at(
        alias("U:Ox"),
        alias("U:Vz"),
        "Generate UserService",
        json!({"task": "generate_code"}),
        t(0),
    )
    .expect("valid packet")
}

/// The spec example as a JSON value, with `f` applied.
pub fn example_with(f: impl FnOnce(&mut serde_json::Map<String, serde_json::Value>)) -> String {
    let mut v: serde_json::Value = serde_json::from_str(SPEC_EXAMPLE).expect("example parses");
    f(v.as_object_mut().expect("object"));
    v.to_string()
}

/// A MessagePack payload frame written by hand (`k` kind, `z` lz4, `n` raw length, `d`
/// bytes), to build wire input the encoder would never produce.
#[derive(serde::Serialize)]
pub struct Frame {
    pub k: u8,
    pub z: bool,
    pub n: u64,
    #[serde(with = "serde_bytes")]
    pub d: Vec<u8>,
}
