//! PackStream, the value encoding of Bolt messages: just enough to decode a message,
//! change a structure, and encode it again byte for byte as the server would.
//!
//! Markers (PackStream v1, the same in Bolt 4 and 5): `C0` null, `C2`/`C3` false/true,
//! tiny ints `-16..=127` in one byte, `C8..CB` int8..int64, `C1` float64, `CC..CE` bytes,
//! `8x`/`D0..D2` strings, `9x`/`D4..D6` lists, `Ax`/`D8..DA` maps, `Bx` + tag structures
//! (`x` = field count). Lengths are big-endian.

use std::fmt;

/// A PackStream value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// `C0`.
    Null,
    /// `C2` / `C3`.
    Bool(bool),
    /// Any integer width.
    Int(i64),
    /// `C1`.
    Float(f64),
    /// `CC..CE`.
    Bytes(Vec<u8>),
    /// UTF-8 text.
    String(String),
    /// Ordered values.
    List(Vec<Value>),
    /// Keys in wire order.
    Map(Vec<(String, Value)>),
    /// A tagged structure: Bolt messages, nodes, relationships, temporal values.
    Struct(u8, Vec<Value>),
}

/// Bytes that are not PackStream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub String);

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "packstream: {}", self.0)
    }
}

impl std::error::Error for DecodeError {}

impl Value {
    /// A map from `(key, value)` pairs.
    pub fn map<const N: usize>(pairs: [(&str, Value); N]) -> Value {
        Value::Map(pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
    }

    /// Text value.
    pub fn text(s: &str) -> Value {
        Value::String(s.to_owned())
    }

    /// The value under `key` of a map.
    pub fn get(&self, key: &str) -> Option<&Value> {
        match self {
            Value::Map(pairs) => pairs.iter().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }
}

/// Decodes exactly one value filling `bytes`.
pub fn decode(bytes: &[u8]) -> Result<Value, DecodeError> {
    let mut r = Reader { bytes, at: 0 };
    let v = r.value(0)?;
    if r.at != bytes.len() {
        return Err(DecodeError(format!(
            "{} trailing bytes after the value",
            bytes.len() - r.at
        )));
    }
    Ok(v)
}

/// Encodes `value`.
pub fn encode(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    write(value, &mut out);
    out
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Reader<'_> {
    fn take(&mut self, n: usize) -> Result<&[u8], DecodeError> {
        let end = self.at.checked_add(n).filter(|e| *e <= self.bytes.len());
        let end = end.ok_or_else(|| DecodeError(format!("{n} bytes needed at {}", self.at)))?;
        let s = &self.bytes[self.at..end];
        self.at = end;
        Ok(s)
    }

    fn be(&mut self, n: usize) -> Result<u64, DecodeError> {
        Ok(self
            .take(n)?
            .iter()
            .fold(0, |a, b| (a << 8) | u64::from(*b)))
    }

    fn len(&mut self, n: usize) -> Result<usize, DecodeError> {
        usize::try_from(self.be(n)?).map_err(|e| DecodeError(e.to_string()))
    }

    fn value(&mut self, depth: usize) -> Result<Value, DecodeError> {
        if depth > 64 {
            return Err(DecodeError("nested deeper than 64".into()));
        }
        let marker = self.take(1)?[0];
        let (high, low) = (marker & 0xF0, usize::from(marker & 0x0F));
        Ok(match marker {
            0x00..=0x7F => Value::Int(i64::from(marker)),
            0xF0..=0xFF => Value::Int(i64::from(marker as i8)),
            0xC0 => Value::Null,
            0xC2 => Value::Bool(false),
            0xC3 => Value::Bool(true),
            0xC1 => Value::Float(f64::from_bits(self.be(8)?)),
            0xC8 => Value::Int(i64::from(self.be(1)? as u8 as i8)),
            0xC9 => Value::Int(i64::from(self.be(2)? as u16 as i16)),
            0xCA => Value::Int(i64::from(self.be(4)? as u32 as i32)),
            0xCB => Value::Int(self.be(8)? as i64),
            0xCC..=0xCE => {
                let n = self.len(1 << (marker - 0xCC))?;
                Value::Bytes(self.take(n)?.to_vec())
            }
            _ if high == 0x80 => self.string(low)?,
            0xD0..=0xD2 => {
                let n = self.len(1 << (marker - 0xD0))?;
                self.string(n)?
            }
            _ if high == 0x90 => self.list(low, depth)?,
            0xD4..=0xD6 => {
                let n = self.len(1 << (marker - 0xD4))?;
                self.list(n, depth)?
            }
            _ if high == 0xA0 => self.map(low, depth)?,
            0xD8..=0xDA => {
                let n = self.len(1 << (marker - 0xD8))?;
                self.map(n, depth)?
            }
            _ if high == 0xB0 => {
                let tag = self.take(1)?[0];
                let fields = (0..low)
                    .map(|_| self.value(depth + 1))
                    .collect::<Result<_, _>>()?;
                Value::Struct(tag, fields)
            }
            other => return Err(DecodeError(format!("unknown marker {other:#04x}"))),
        })
    }

    fn string(&mut self, n: usize) -> Result<Value, DecodeError> {
        let s = std::str::from_utf8(self.take(n)?).map_err(|e| DecodeError(e.to_string()))?;
        Ok(Value::String(s.to_owned()))
    }

    fn list(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let items = (0..n)
            .map(|_| self.value(depth + 1))
            .collect::<Result<_, _>>()?;
        Ok(Value::List(items))
    }

    fn map(&mut self, n: usize, depth: usize) -> Result<Value, DecodeError> {
        let mut pairs = Vec::with_capacity(n.min(1024));
        for _ in 0..n {
            let Value::String(k) = self.value(depth + 1)? else {
                return Err(DecodeError("a map key is not a string".into()));
            };
            pairs.push((k, self.value(depth + 1)?));
        }
        Ok(Value::Map(pairs))
    }
}

/// Writes a size header: tiny marker when `n < 16` (if `tiny` is given), else the
/// 8/16/32-bit marker.
fn header(n: usize, tiny: Option<u8>, wide: u8, out: &mut Vec<u8>) {
    match (tiny, n) {
        (Some(t), 0..=15) => out.push(t | n as u8),
        (_, 0..=0xFF) => out.extend([wide, n as u8]),
        (_, 0x100..=0xFFFF) => {
            out.push(wide + 1);
            out.extend((n as u16).to_be_bytes());
        }
        _ => {
            out.push(wide + 2);
            out.extend((n as u32).to_be_bytes());
        }
    }
}

fn write(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Null => out.push(0xC0),
        Value::Bool(b) => out.push(if *b { 0xC3 } else { 0xC2 }),
        Value::Int(i) => match *i {
            -16..=127 => out.push(*i as u8),
            -128..=-17 => out.extend([0xC8, *i as i8 as u8]),
            -32_768..=32_767 => {
                out.push(0xC9);
                out.extend((*i as i16).to_be_bytes());
            }
            -2_147_483_648..=2_147_483_647 => {
                out.push(0xCA);
                out.extend((*i as i32).to_be_bytes());
            }
            _ => {
                out.push(0xCB);
                out.extend(i.to_be_bytes());
            }
        },
        Value::Float(f) => {
            out.push(0xC1);
            out.extend(f.to_bits().to_be_bytes());
        }
        Value::Bytes(b) => {
            header(b.len(), None, 0xCC, out);
            out.extend(b);
        }
        Value::String(s) => {
            header(s.len(), Some(0x80), 0xD0, out);
            out.extend(s.as_bytes());
        }
        Value::List(items) => {
            header(items.len(), Some(0x90), 0xD4, out);
            items.iter().for_each(|v| write(v, out));
        }
        Value::Map(pairs) => {
            header(pairs.len(), Some(0xA0), 0xD8, out);
            for (k, v) in pairs {
                write(&Value::String(k.clone()), out);
                write(v, out);
            }
        }
        Value::Struct(tag, fields) => {
            out.extend([0xB0 | (fields.len() as u8 & 0x0F), *tag]);
            fields.iter().for_each(|v| write(v, out));
        }
    }
}
