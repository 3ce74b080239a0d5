//! The `.avsc` files: they parse, their fingerprints open our records, and they evolve
//! (issue 3).

use std::path::Path;

use apache_avro::types::Value;
use apache_avro::Schema;
use chrono::{TimeZone, Utc};
use orchestrata_schemas::events::session::SessionOpened;
use orchestrata_schemas::events::{codec, encode, EventKind, EventRecord};

/// CRC-64-AVRO, written from the Avro specification (independent of apache-avro).
fn rabin(data: &[u8]) -> u64 {
    const EMPTY: u64 = 0xc15d_213a_a4d7_a795;
    let mut table = [0u64; 256];
    for (i, slot) in table.iter_mut().enumerate() {
        let mut fp = i as u64;
        for _ in 0..8 {
            fp = (fp >> 1) ^ (EMPTY & (0u64.wrapping_sub(fp & 1)));
        }
        *slot = fp;
    }
    let mut fp = EMPTY;
    for &b in data {
        fp = (fp >> 8) ^ table[((fp ^ u64::from(b)) & 0xff) as usize];
    }
    fp
}

fn avro_dir() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("avro")
}

// issue 3: every .avsc parses, and every file on disk is an event type the code knows
#[test]
fn every_avsc_parses_and_is_registered() {
    let mut on_disk = Vec::new();
    for entry in std::fs::read_dir(avro_dir()).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "avsc") {
            let text = std::fs::read_to_string(&path).unwrap();
            Schema::parse_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            on_disk.push(path.file_name().unwrap().to_string_lossy().into_owned());
        }
    }
    on_disk.sort();
    let mut known: Vec<String> = EventKind::ALL
        .iter()
        .map(|i| i.avro_file.to_owned())
        .collect();
    known.sort();
    assert_eq!(on_disk, known);
    for info in EventKind::ALL {
        let schema = codec::schema(info.kind).unwrap();
        let Schema::Record(record) = schema else {
            panic!("{} is not a record", info.avro_file)
        };
        let names: Vec<&str> = record
            .fields
            .iter()
            .take(6)
            .map(|f| f.name.as_str())
            .collect();
        assert_eq!(
            names,
            [
                "event_id",
                "timestamp",
                "source",
                "key",
                "command_id",
                "principal"
            ],
            "{}",
            info.avro_file
        );
        assert_eq!(
            record.name.namespace(),
            Some(format!("orchestrata.{}", info.stream).as_str())
        );
    }
}

// issue 3: the single-object header is C3 01 + the little-endian CRC-64-AVRO of the canonical form
#[test]
fn single_object_header_bytes_are_correct() {
    for info in EventKind::ALL {
        let canonical = codec::canonical_form(codec::schema(info.kind).unwrap());
        assert!(
            !canonical.contains(r#"{"type":"string"}"#)
                && !canonical.contains(r#"{"type":"long"}"#)
        );
        let expected = rabin(canonical.as_bytes()).to_le_bytes();
        assert_eq!(
            codec::fingerprint(info.kind).unwrap(),
            expected,
            "{}",
            info.avro_file
        );
    }
    let record = EventRecord::new(
        "kernel",
        "s1",
        SessionOpened {
            session_id: "s1".into(),
            portfolio_id: "p".into(),
            goals: vec![],
            opened_by: "cli".into(),
        },
        Utc.timestamp_micros(0).unwrap(),
    );
    let bytes = encode(&record).unwrap();
    assert_eq!(&bytes[..2], &[0xC3, 0x01]);
    // The specification's canonical form: logical types dropped, primitives collapsed.
    let canonical = r#"{"name":"orchestrata.session.events.SessionOpened","type":"record","fields":[{"name":"event_id","type":"string"},{"name":"timestamp","type":"long"},{"name":"source","type":"string"},{"name":"key","type":"string"},{"name":"command_id","type":["null","string"]},{"name":"principal","type":["null","string"]},{"name":"session_id","type":"string"},{"name":"portfolio_id","type":"string"},{"name":"goals","type":{"type":"array","items":"string"}},{"name":"opened_by","type":"string"}]}"#;
    assert_eq!(
        codec::canonical_form(codec::schema(EventKind::SessionOpened).unwrap()),
        canonical
    );
    assert_eq!(&bytes[2..10], &rabin(canonical.as_bytes()).to_le_bytes());
    assert_eq!(
        codec::rabin(canonical.as_bytes()),
        rabin(canonical.as_bytes())
    );
    // The known test vector of the specification's fingerprint: the empty string.
    assert_eq!(rabin(b""), 0xc15d_213a_a4d7_a795);
}

// issue 3: a record written with today's schema is read with a reader schema that adds a field with a default
#[test]
fn reader_schema_with_an_added_defaulted_field_reads_old_records() {
    let record = EventRecord::new(
        "kernel",
        "s1",
        SessionOpened {
            session_id: "s1".into(),
            portfolio_id: "p1".into(),
            goals: vec!["ship".into()],
            opened_by: "cli".into(),
        },
        Utc.timestamp_micros(1_768_473_000_000_000).unwrap(),
    );
    let bytes = encode(&record).unwrap();
    let writer = codec::schema(EventKind::SessionOpened).unwrap();
    let mut json: serde_json::Value =
        serde_json::from_str(EventKind::SessionOpened.info().avro_schema).unwrap();
    json["fields"].as_array_mut().unwrap().push(serde_json::json!({
        "name": "budget_tokens", "type": "long", "default": 1000, "doc": "added in a later version"
    }));
    json["fields"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({
            "name": "owner", "type": ["null", "string"], "default": null
        }));
    let reader = Schema::parse_str(&json.to_string()).unwrap();
    let mut body = &bytes[codec::HEADER_LEN..];
    #[allow(deprecated)]
    let value = apache_avro::from_avro_datum(writer, &mut body, Some(&reader)).unwrap();
    let Value::Record(fields) = value else {
        panic!("not a record")
    };
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.clone())
    };
    assert_eq!(get("budget_tokens"), Some(Value::Long(1000)));
    assert_eq!(get("owner"), Some(Value::Union(0, Box::new(Value::Null))));
    assert_eq!(get("portfolio_id"), Some(Value::String("p1".into())));
    assert_eq!(get("key"), Some(Value::String("s1".into())));
    // A reader that adds a field WITHOUT a default cannot read old records: the rule holds.
    json["fields"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"name": "strict", "type": "long"}));
    let strict = Schema::parse_str(&json.to_string()).unwrap();
    let mut body = &bytes[codec::HEADER_LEN..];
    #[allow(deprecated)]
    let result = apache_avro::from_avro_datum(writer, &mut body, Some(&strict));
    assert!(result.is_err());
}

// issue 3: a Python consumer (fastavro) finds every record's schema by our header fingerprint and decodes it
#[test]
fn fastavro_computes_the_same_fingerprints_and_decodes_our_bytes() {
    let record = EventRecord::new(
        "kernel",
        "s1",
        SessionOpened {
            session_id: "s1".into(),
            portfolio_id: "p1".into(),
            goals: vec!["ship".into()],
            opened_by: "cli".into(),
        },
        Utc.timestamp_micros(1_768_473_000_000_000).unwrap(),
    )
    .by(Some("operator".into()));
    let hex: String = encode(&record)
        .unwrap()
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let script = r#"
import glob, json, sys
from io import BytesIO
from fastavro import parse_schema, schemaless_reader
from fastavro.schema import fingerprint, to_parsing_canonical_form
out = {}
before = {}
schemas = {}
for path in glob.glob(sys.argv[1] + '/*.avsc'):
    schema = parse_schema(json.load(open(path)))
    fp = bytes.fromhex(fingerprint(to_parsing_canonical_form(schema), 'CRC-64-AVRO'))
    schemas[fp] = schema
    out[path.rsplit('/', 1)[1]] = fp.hex()
    raw = json.load(open(path))
    raw['fields'] = [f for f in raw['fields'] if f['name'] != 'principal']
    old = to_parsing_canonical_form(parse_schema(raw))
    before[path.rsplit('/', 1)[1]] = bytes.fromhex(fingerprint(old, 'CRC-64-AVRO')).hex()
value = bytes.fromhex(sys.argv[2])
rec = schemaless_reader(BytesIO(value[10:]), schemas[value[2:10]])
print(json.dumps({"fingerprints": out, "before_principal": before, "record": {k: str(v) for k, v in rec.items()}}))
"#;
    let output = std::process::Command::new("python3")
        .args(["-c", script, avro_dir().to_str().unwrap(), &hex])
        .output()
        .expect("python3 runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let result: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for info in EventKind::ALL {
        let ours: String = codec::fingerprint(info.kind)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            result["fingerprints"][info.avro_file], ours,
            "{}",
            info.avro_file
        );
        // ISSUE-14: attribution — the layout before `principal`, derived the same way
        // by fastavro, has the fingerprint our registry accepts for old records.
        let before: String = codec::legacy_fingerprint(info.kind)
            .unwrap()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(
            result["before_principal"][info.avro_file], before,
            "{}",
            info.avro_file
        );
    }
    assert_eq!(result["record"]["portfolio_id"], "p1");
    assert_eq!(result["record"]["key"], "s1");
    assert_eq!(result["record"]["event_id"], record.event_id.to_string());
    assert_eq!(result["record"]["goals"], "['ship']");
    // ISSUE-14: attribution — fastavro reads the principal from the envelope.
    assert_eq!(result["record"]["principal"], "operator");
}
