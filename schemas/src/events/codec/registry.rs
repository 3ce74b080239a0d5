//! The schema table: every embedded `.avsc`, parsed once, indexed by fingerprint.
//!
//! Each event type is known under two fingerprints: its current schema's, which
//! [`super::encode`] writes, and the fingerprint of the same schema without the
//! envelope field `principal` ([`Layout::BeforePrincipal`]), the layout every record
//! written before attribution has. The older schema is derived from the embedded
//! `.avsc` (the field removed), so the two cannot drift apart. Decoding such a record
//! yields `principal = None`.

use std::sync::LazyLock;

use apache_avro::Schema;

use super::{CodecError, HEADER_LEN, MAGIC};
use crate::events::EventKind;

/// The envelope layout a fingerprint names.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Layout {
    /// The current schema: the envelope ends with `command_id`, `principal`.
    Current,
    /// Before attribution: the envelope ends with `command_id` (no `principal`).
    BeforePrincipal,
}

/// Name of the envelope field that [`Layout::BeforePrincipal`] lacks.
pub const PRINCIPAL_FIELD: &str = "principal";

struct Registry {
    /// Parsed schema per kind, in [`EventKind::ALL`] order.
    schemas: Vec<Schema>,
    /// Fingerprint bytes (as written in the header) per kind.
    fingerprints: Vec<[u8; 8]>,
    /// Fingerprint bytes of the layout before `principal`, per kind.
    legacy_fingerprints: Vec<[u8; 8]>,
    /// (fingerprint as little-endian u64, kind, layout), sorted for binary search.
    by_fingerprint: Vec<(u64, EventKind, Layout)>,
}

static REGISTRY: LazyLock<Result<Registry, CodecError>> = LazyLock::new(build);

fn build() -> Result<Registry, CodecError> {
    let mut schemas = Vec::with_capacity(EventKind::ALL.len());
    let mut fingerprints = Vec::with_capacity(EventKind::ALL.len());
    let mut legacy_fingerprints = Vec::with_capacity(EventKind::ALL.len());
    let mut by_fingerprint = Vec::with_capacity(2 * EventKind::ALL.len());
    for info in EventKind::ALL {
        let bad = |reason: String| CodecError::Schema {
            file: info.avro_file,
            reason,
        };
        let schema = Schema::parse_str(info.avro_schema).map_err(|e| bad(e.to_string()))?;
        let fp = rabin(canonical_form(&schema).as_bytes()).to_le_bytes();
        by_fingerprint.push((u64::from_le_bytes(fp), info.kind, Layout::Current));
        fingerprints.push(fp);
        schemas.push(schema);
        let legacy = Schema::parse_str(&schema_before_principal(info.avro_schema).map_err(bad)?)
            .map_err(|e| bad(format!("without `principal`: {e}")))?;
        let fp = rabin(canonical_form(&legacy).as_bytes()).to_le_bytes();
        by_fingerprint.push((u64::from_le_bytes(fp), info.kind, Layout::BeforePrincipal));
        legacy_fingerprints.push(fp);
    }
    by_fingerprint.sort_unstable();
    if let Some(w) = by_fingerprint.windows(2).find(|w| w[0].0 == w[1].0) {
        return Err(CodecError::Schema {
            file: w[1].1.info().avro_file,
            reason: format!("same fingerprint as {}", w[0].1.info().avro_file),
        });
    }
    Ok(Registry {
        schemas,
        fingerprints,
        legacy_fingerprints,
        by_fingerprint,
    })
}

/// The schema text `avsc` as it was before attribution: the same JSON with the
/// top-level field `principal` removed. Refuses a schema that has no such field (every
/// current schema has it, right after `command_id`).
pub fn schema_before_principal(avsc: &str) -> Result<String, String> {
    let mut json: serde_json::Value =
        serde_json::from_str(avsc).map_err(|e| format!("not JSON: {e}"))?;
    let fields = json
        .get_mut("fields")
        .and_then(serde_json::Value::as_array_mut)
        .ok_or("no `fields` array")?;
    let before = fields.len();
    fields.retain(|f| f.get("name").and_then(serde_json::Value::as_str) != Some(PRINCIPAL_FIELD));
    if fields.len() == before {
        return Err(format!("no envelope field `{PRINCIPAL_FIELD}`"));
    }
    Ok(json.to_string())
}

fn registry() -> Result<&'static Registry, CodecError> {
    REGISTRY.as_ref().map_err(Clone::clone)
}

/// The 8 fingerprint bytes (CRC-64-AVRO of the canonical form, little-endian) that
/// open records of `kind` after the `C3 01` marker.
pub fn fingerprint(kind: EventKind) -> Result<[u8; 8], CodecError> {
    Ok(registry()?.fingerprints[kind as usize])
}

/// The fingerprint bytes of `kind`'s schema before attribution (no envelope
/// `principal`): records written before it carry these; [`super::decode`] reads them.
pub fn legacy_fingerprint(kind: EventKind) -> Result<[u8; 8], CodecError> {
    Ok(registry()?.legacy_fingerprints[kind as usize])
}

/// The parsed writer schema of `kind` (for apache-avro readers, schema evolution).
pub fn schema(kind: EventKind) -> Result<&'static Schema, CodecError> {
    Ok(&registry()?.schemas[kind as usize])
}

/// Which event type the single-object header of `bytes` names.
pub fn kind_of(bytes: &[u8]) -> Result<EventKind, CodecError> {
    layout_of(bytes).map(|(kind, _)| kind)
}

/// Which event type and envelope layout the single-object header of `bytes` names.
pub fn layout_of(bytes: &[u8]) -> Result<(EventKind, Layout), CodecError> {
    if bytes.len() < HEADER_LEN {
        return Err(CodecError::TooShort { len: bytes.len() });
    }
    if bytes[..2] != MAGIC {
        return Err(CodecError::BadMagic {
            found: [bytes[0], bytes[1]],
        });
    }
    let mut fp = [0u8; 8];
    fp.copy_from_slice(&bytes[2..HEADER_LEN]);
    let fp = u64::from_le_bytes(fp);
    let table = &registry()?.by_fingerprint;
    table
        .binary_search_by_key(&fp, |(f, _, _)| *f)
        .map(|i| (table[i].1, table[i].2))
        .map_err(|_| CodecError::UnknownFingerprint { fingerprint: fp })
}

/// The schema's Parsing Canonical Form as the Avro specification defines it.
///
/// apache-avro 0.22 writes a primitive that carries a logical type as
/// `{"type":"long"}` where the specification (and Java, fastavro, ...) write `"long"`,
/// which changes the fingerprint. Canonical form has no other object whose only key is
/// `type`, so collapsing those objects restores the specification's form.
pub fn canonical_form(schema: &Schema) -> String {
    const PRIMITIVES: [&str; 8] = [
        "null", "boolean", "int", "long", "float", "double", "bytes", "string",
    ];
    let mut form = schema.canonical_form();
    for primitive in PRIMITIVES {
        form = form.replace(
            &format!("{{\"type\":\"{primitive}\"}}"),
            &format!("\"{primitive}\""),
        );
    }
    form
}

/// CRC-64-AVRO (Rabin) fingerprint, as specified in "Schema Fingerprints".
pub fn rabin(data: &[u8]) -> u64 {
    const EMPTY: u64 = 0xc15d_213a_a4d7_a795;
    static TABLE: LazyLock<[u64; 256]> = LazyLock::new(|| {
        let mut table = [0u64; 256];
        for (i, slot) in table.iter_mut().enumerate() {
            let mut fp = i as u64;
            for _ in 0..8 {
                fp = (fp >> 1) ^ (EMPTY & 0u64.wrapping_sub(fp & 1));
            }
            *slot = fp;
        }
        table
    });
    data.iter().fold(EMPTY, |fp, &b| {
        (fp >> 8) ^ TABLE[((fp ^ u64::from(b)) & 0xff) as usize]
    })
}
