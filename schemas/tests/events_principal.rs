//! Attribution in the envelope (issue 14, item 2): every record can name the principal
//! whose command caused it, records written before that field existed still decode
//! (principal = None), and a command's principal travels in its record's envelope.

use apache_avro::types::Value;
use apache_avro::Schema;
use chrono::{TimeZone, Utc};
use orchestrata_schemas::events::command::{Command, CommandKind};
use orchestrata_schemas::events::kernel::KernelStopped;
use orchestrata_schemas::events::{
    codec, decode, encode, CodecError, Envelope, Event, EventKind, EventRecord, Stream,
};
use uuid::Uuid;

fn stopped() -> EventRecord {
    EventRecord::new(
        "kernel",
        "node-1",
        KernelStopped {
            node: "node-1".into(),
            reason: "shutdown".into(),
            clean: true,
        },
        Utc.timestamp_micros(1_768_473_000_000_000).unwrap(),
    )
    .caused_by(Uuid::from_u128(7))
}

/// The schema of `kind` before attribution, derived here independently of the codec:
/// the `.avsc` JSON with the envelope field `principal` removed.
fn old_schema(kind: EventKind) -> Schema {
    let mut json: serde_json::Value = serde_json::from_str(kind.info().avro_schema).unwrap();
    let fields = json["fields"].as_array_mut().unwrap();
    assert_eq!(fields[5]["name"], "principal");
    assert_eq!(fields[5]["default"], serde_json::Value::Null);
    fields.remove(5);
    Schema::parse_str(&json.to_string()).unwrap()
}

fn old_fingerprint(kind: EventKind) -> [u8; 8] {
    codec::rabin(codec::canonical_form(&old_schema(kind)).as_bytes()).to_le_bytes()
}

/// `record` as a writer before attribution wrote it: apache-avro's generic writer, the
/// old schema, the old fingerprint in the header.
fn old_bytes(kind: EventKind, fields: Vec<(&str, Value)>) -> Vec<u8> {
    let schema = old_schema(kind);
    let value = Value::Record(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect());
    #[allow(deprecated)]
    let body = apache_avro::to_avro_datum(&schema, value).unwrap();
    let mut bytes = vec![0xC3, 0x01];
    bytes.extend_from_slice(&old_fingerprint(kind));
    bytes.extend_from_slice(&body);
    bytes
}

// ISSUE-14: attribution — a record written before the principal field existed still
// decodes, with no principal
#[test]
fn a_record_in_the_old_layout_decodes_with_no_principal() {
    let expected = stopped();
    let bytes = old_bytes(
        EventKind::KernelStopped,
        vec![
            ("event_id", Value::Uuid(expected.event_id)),
            (
                "timestamp",
                Value::TimestampMicros(expected.timestamp.timestamp_micros()),
            ),
            ("source", Value::String("kernel".into())),
            ("key", Value::String("node-1".into())),
            (
                "command_id",
                Value::Union(1, Box::new(Value::Uuid(Uuid::from_u128(7)))),
            ),
            ("node", Value::String("node-1".into())),
            ("reason", Value::String("shutdown".into())),
            ("clean", Value::Boolean(true)),
        ],
    );
    assert_eq!(
        codec::legacy_fingerprint(EventKind::KernelStopped).unwrap(),
        old_fingerprint(EventKind::KernelStopped)
    );
    assert_ne!(
        codec::legacy_fingerprint(EventKind::KernelStopped).unwrap(),
        codec::fingerprint(EventKind::KernelStopped).unwrap()
    );
    assert_eq!(
        codec::layout_of(&bytes).unwrap(),
        (EventKind::KernelStopped, codec::Layout::BeforePrincipal)
    );
    let back = decode(&bytes).unwrap();
    assert_eq!(back, expected);
    assert_eq!(back.principal, None);
}

// ISSUE-14: attribution — every event type's old fingerprint is registered: the
// codec derives it from the embedded .avsc and agrees with an independent derivation
#[test]
fn every_event_type_keeps_its_old_fingerprint() {
    for info in EventKind::ALL {
        let old = old_fingerprint(info.kind);
        assert_eq!(
            codec::legacy_fingerprint(info.kind).unwrap(),
            old,
            "{}",
            info.avro_file
        );
        let mut header = vec![0xC3, 0x01];
        header.extend_from_slice(&old);
        assert_eq!(
            codec::layout_of(&header).unwrap(),
            (info.kind, codec::Layout::BeforePrincipal)
        );
    }
    // The derivation refuses a schema that has no principal to remove.
    let old_text = old_schema(EventKind::KernelStopped).canonical_form();
    assert!(codec::schema_before_principal(&old_text).is_err());
    assert!(codec::schema_before_principal("not json").is_err());
}

// ISSUE-14: attribution — the principal round-trips through Avro and JSON, present or not
#[test]
fn the_principal_round_trips_with_and_without_a_value() {
    for principal in [None, Some("operator"), Some(""), Some("client ✓ \u{a0}'\"")] {
        let record = stopped().by(principal.map(str::to_owned));
        let back = decode(&encode(&record).unwrap()).unwrap();
        assert_eq!(back, record);
        assert_eq!(back.principal.as_deref(), principal);
        let envelope = Envelope {
            stream: Stream::KernelEvents,
            sequence: 3,
            epoch: "e".into(),
            record,
        };
        let json = serde_json::to_value(&envelope).unwrap();
        assert_eq!(json["principal"], serde_json::json!(principal));
        assert_eq!(serde_json::from_value::<Envelope>(json).unwrap(), envelope);
    }
    // A JSON envelope from before attribution (no `principal` key) still parses.
    let mut json = serde_json::to_value(Envelope {
        stream: Stream::KernelEvents,
        sequence: 1,
        epoch: "e".into(),
        record: stopped(),
    })
    .unwrap();
    json.as_object_mut().unwrap().remove("principal");
    let back: Envelope = serde_json::from_value(json).unwrap();
    assert_eq!(back.record.principal, None);
}

// ISSUE-14: attribution — apache-avro reads the principal our codec writes, by the .avsc alone
#[test]
fn apache_avro_reads_the_principal_from_the_avsc() {
    let record = stopped().by(Some("dashboard".into()));
    let bytes = encode(&record).unwrap();
    let schema = codec::schema(EventKind::KernelStopped).unwrap();
    let mut body = &bytes[codec::HEADER_LEN..];
    #[allow(deprecated)]
    let value = apache_avro::from_avro_datum(schema, &mut body, None).unwrap();
    let Value::Record(fields) = value else {
        panic!("not a record")
    };
    assert_eq!(
        fields[5],
        (
            "principal".to_owned(),
            Value::Union(1, Box::new(Value::String("dashboard".into())))
        )
    );
}

// ISSUE-14: attribution — a command's principal travels in its record's envelope and
// comes back on the command
#[test]
fn a_command_principal_travels_in_the_envelope() {
    let command = Command {
        id: Uuid::from_u128(9),
        issuer: "U:GW".into(),
        action: CommandKind::Retry {
            message_id: Uuid::from_u128(1),
        },
        principal: None,
    }
    .with_principal("operator");
    let record = EventRecord::new(
        "gateway",
        "gw-1",
        command.clone(),
        Utc.timestamp_micros(0).unwrap(),
    )
    .caused_by(command.id);
    assert_eq!(record.principal.as_deref(), Some("operator"));
    let back = decode(&encode(&record).unwrap()).unwrap();
    assert_eq!(back.principal.as_deref(), Some("operator"));
    let Event::Command(read) = &back.event else {
        panic!("not a command")
    };
    assert_eq!(read, &command);
    // Through the flat JSON envelope too.
    let envelope = Envelope {
        stream: Stream::Commands,
        sequence: 0,
        epoch: "e".into(),
        record: back,
    };
    let json = serde_json::to_value(&envelope).unwrap();
    assert_eq!(json["principal"], "operator");
    assert!(json["payload"].get("principal").is_none());
    let again: Envelope = serde_json::from_value(json).unwrap();
    assert_eq!(again, envelope);
    // `by` re-attributes record and command together.
    let unattributed = envelope.record.by(None);
    let Event::Command(c) = &unattributed.event else {
        panic!("not a command")
    };
    assert_eq!(c.principal, None);
}

// ISSUE-14: attribution — a malformed principal is a typed error naming the field
#[test]
fn a_malformed_principal_is_a_field_error() {
    let bytes = encode(&stopped().by(Some("operator".into()))).unwrap();
    // The principal union index sits right after the command id (1 + 36 bytes + tag).
    let at = bytes
        .windows(10)
        .position(|w| w == b"\x02\x10operator")
        .expect("principal bytes");
    let mut bad = bytes.clone();
    bad[at] = 0x04; // union branch 2
    match decode(&bad) {
        Err(CodecError::Field { field, .. }) => assert_eq!(field, "principal"),
        other => panic!("expected a principal field error, got {other:?}"),
    }
    let truncated = &bytes[..at + 4];
    match decode(truncated) {
        Err(CodecError::Field { field, .. }) => assert_eq!(field, "principal"),
        other => panic!("expected a principal field error, got {other:?}"),
    }
}
