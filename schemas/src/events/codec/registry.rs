//! The schema table: every embedded `.avsc`, parsed once, indexed by fingerprint.

use std::sync::LazyLock;

use apache_avro::Schema;

use super::{CodecError, HEADER_LEN, MAGIC};
use crate::events::EventKind;

struct Registry {
    /// Parsed schema per kind, in [`EventKind::ALL`] order.
    schemas: Vec<Schema>,
    /// Fingerprint bytes (as written in the header) per kind.
    fingerprints: Vec<[u8; 8]>,
    /// (fingerprint as little-endian u64, kind), sorted for binary search.
    by_fingerprint: Vec<(u64, EventKind)>,
}

static REGISTRY: LazyLock<Result<Registry, CodecError>> = LazyLock::new(build);

fn build() -> Result<Registry, CodecError> {
    let mut schemas = Vec::with_capacity(EventKind::ALL.len());
    let mut fingerprints = Vec::with_capacity(EventKind::ALL.len());
    let mut by_fingerprint = Vec::with_capacity(EventKind::ALL.len());
    for info in EventKind::ALL {
        let schema = Schema::parse_str(info.avro_schema).map_err(|e| CodecError::Schema {
            file: info.avro_file,
            reason: e.to_string(),
        })?;
        let fp = rabin(canonical_form(&schema).as_bytes()).to_le_bytes();
        by_fingerprint.push((u64::from_le_bytes(fp), info.kind));
        fingerprints.push(fp);
        schemas.push(schema);
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
        by_fingerprint,
    })
}

fn registry() -> Result<&'static Registry, CodecError> {
    REGISTRY.as_ref().map_err(Clone::clone)
}

/// The 8 fingerprint bytes (CRC-64-AVRO of the canonical form, little-endian) that
/// open records of `kind` after the `C3 01` marker.
pub fn fingerprint(kind: EventKind) -> Result<[u8; 8], CodecError> {
    Ok(registry()?.fingerprints[kind as usize])
}

/// The parsed writer schema of `kind` (for apache-avro readers, schema evolution).
pub fn schema(kind: EventKind) -> Result<&'static Schema, CodecError> {
    Ok(&registry()?.schemas[kind as usize])
}

/// Which event type the single-object header of `bytes` names.
pub fn kind_of(bytes: &[u8]) -> Result<EventKind, CodecError> {
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
        .binary_search_by_key(&fp, |(f, _)| *f)
        .map(|i| table[i].1)
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
