//! The `PacketSent` record carries the packet's JSON payload as text (`JsonPayload`): the
//! Avro form is unchanged (a string of JSON text), decoding checks that text without
//! building a tree, and the JSON envelope shows the payload as a value.

use chrono::{TimeZone, Utc};
use orchestrata_schemas::cxp::{CxpPacket, DeliveryStatus, JsonPayload, VolkAlias, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::PacketSent;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{decode, encode, CodecError, Event, EventRecord};
use serde_json::json;
use uuid::Uuid;

fn record(payload: PacketPayload) -> EventRecord {
    let at = Utc.timestamp_micros(1_768_473_000_000_000).unwrap();
    let packet = Packet {
        message_id: Uuid::from_u128(7),
        from_agent: "U:Ox".into(),
        to_agent: "U:Vz".into(),
        thread_id: "thread-001".into(),
        subject: "Generate UserService".into(),
        payload,
        created_at: at,
        priority: 8,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json(json!({})),
    };
    EventRecord::new("kernel", "thread-001", PacketSent { packet }, at)
}

fn payload_of(record: &EventRecord) -> &PacketPayload {
    match &record.event {
        Event::PacketSent(sent) => &sent.packet.payload,
        other => panic!("not a PacketSent: {other:?}"),
    }
}

// REQ-004-US-003-016 REQ-004-US-006-022 REQ-004-US-004-012
#[test]
fn packet_sent_keeps_the_payload_text_through_avro() {
    let text = r#"{"task":"generate_code","n":[1,2.5,null],"u":"Grüße 🦀"}"#;
    let rec = record(PacketPayload::Json(JsonPayload::parse(text).unwrap()));
    let bytes = encode(&rec).unwrap();
    // The Avro string holds the JSON text itself.
    assert!(
        bytes.windows(text.len()).any(|w| w == text.as_bytes()),
        "payload text not found verbatim"
    );
    let back = decode(&bytes).unwrap();
    assert_eq!(back, rec);
    let PacketPayload::Json(j) = payload_of(&back) else {
        panic!("not JSON")
    };
    assert_eq!(j.as_str(), text);
    assert_eq!(
        j.to_value().unwrap(),
        json!({"task": "generate_code", "n": [1, 2.5, null], "u": "Grüße 🦀"})
    );
}

// REQ-004-US-003-005 REQ-004-US-003-016
#[test]
fn a_record_whose_payload_text_is_not_json_is_a_typed_error() {
    let rec = record(PacketPayload::Json(json!({"kk": "vvvv"}).into()));
    let mut bytes = encode(&rec).unwrap();
    let at = bytes
        .windows(5)
        .position(|w| w == b"\"kk\":")
        .expect("payload text in the record");
    // Same length, so the Avro framing stays intact and only the JSON is broken.
    bytes[at + 4] = b';';
    match decode(&bytes) {
        Err(CodecError::Field { .. }) | Err(CodecError::Body { .. }) => {}
        other => panic!("expected a typed field error, got {other:?}"),
    }
}

// REQ-004-US-006-009 REQ-004-US-006-010
#[test]
fn the_json_envelope_shows_the_payload_as_a_value_and_reads_it_back() {
    let rec = record(PacketPayload::Json(
        json!({"b": [1, 2], "a": {"x": true}}).into(),
    ));
    let value = serde_json::to_value(&rec.event).unwrap();
    assert_eq!(
        value["packet"]["payload"]["json"],
        json!({"a": {"x": true}, "b": [1, 2]})
    );
    let Event::PacketSent(sent) = &rec.event else {
        panic!("not a PacketSent")
    };
    // From text and from a Value (a generic deserializer), the packet comes back equal.
    let text = serde_json::to_string(&sent.packet).unwrap();
    assert!(
        text.contains(r#""json":{"a":{"x":true},"b":[1,2]}"#),
        "{text}"
    );
    assert_eq!(serde_json::from_str::<Packet>(&text).unwrap(), sent.packet);
    let value = serde_json::to_value(&sent.packet).unwrap();
    assert_eq!(
        serde_json::from_value::<Packet>(value).unwrap(),
        sent.packet
    );
    // A scalar where the JSON payload belongs is still JSON text to the record type;
    // the kernel refuses it when it turns the record into a packet.
    let scalar: Packet =
        serde_json::from_str(&text.replace(r#"{"a":{"x":true},"b":[1,2]}"#, "7")).unwrap();
    assert!(matches!(&scalar.payload, PacketPayload::Json(j) if j.json_type() == "integer"));
}

// REQ-004-US-003-001 REQ-004-US-006-022
#[test]
fn a_decoded_packet_hands_its_payload_text_to_the_log_unchanged() {
    let p = CxpPacket::new_at(
        VolkAlias::parse("U:Ox").unwrap(),
        VolkAlias::parse("U:Vz").unwrap(),
        "s",
        json!({"z": 1, "a": "x"}),
        Utc.timestamp_micros(1_768_473_000_000_000).unwrap(),
    )
    .unwrap();
    let q = CxpPacket::from_json(&p.to_json().unwrap()).unwrap();
    let text = q.payload().as_json().unwrap().clone();
    let rec = record(PacketPayload::Json(text.clone()));
    let back = decode(&encode(&rec).unwrap()).unwrap();
    let PacketPayload::Json(j) = payload_of(&back) else {
        panic!("not JSON")
    };
    assert_eq!(j.as_str(), text.as_str());
    assert_eq!(j.as_str(), r#"{"a":"x","z":1}"#);
}
