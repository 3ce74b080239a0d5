//! A serde serializer that writes the Avro binary encoding of a Rust value.
//!
//! The encoding is driven by the Rust type, not by a schema: it is correct for a
//! value whose shape mirrors its `.avsc` record field by field, which the tests prove
//! for every event type by reading our bytes back with apache-avro's generic reader.
//! Mapping (Rust -> Avro binary):
//!
//! - struct / tuple -> record: the fields one after another, in declaration order;
//! - `bool` -> boolean; integers -> int/long (zig-zag varint); `f32`/`f64` -> float/double;
//! - `str` / `String` -> string; `serialize_bytes` -> bytes;
//! - `Option<T>` -> union `["null", T]` (branch 0 = null, 1 = value);
//! - unit-variant enum -> Avro enum (symbol index = declaration order);
//! - enum with data -> union of records (branch index = declaration order);
//! - `Vec<T>` -> array, map with string keys -> map (one block, then the 0 terminator).
//!
//! The serializer is not human readable, so types with two encodings pick the compact
//! one (see [`super::fields`]).

use serde::ser::{self, Serialize};

use super::varint::write_long;
use super::AvroError;

/// Writes Avro binary into a borrowed buffer.
pub(crate) struct AvroSerializer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> AvroSerializer<'a> {
    pub(crate) fn new(out: &'a mut Vec<u8>) -> Self {
        AvroSerializer { out }
    }

    fn bytes(&mut self, v: &[u8]) {
        write_long(self.out, v.len() as i64);
        self.out.extend_from_slice(v);
    }
}

type Res = Result<(), AvroError>;

impl<'a, 'b> ser::Serializer for &'b mut AvroSerializer<'a> {
    type Ok = ();
    type Error = AvroError;
    type SerializeSeq = Block<'a, 'b>;
    type SerializeTuple = Self;
    type SerializeTupleStruct = Self;
    type SerializeTupleVariant = Self;
    type SerializeMap = Block<'a, 'b>;
    type SerializeStruct = Self;
    type SerializeStructVariant = Self;

    fn is_human_readable(&self) -> bool {
        false
    }
    fn serialize_bool(self, v: bool) -> Res {
        self.out.push(u8::from(v));
        Ok(())
    }
    fn serialize_i8(self, v: i8) -> Res {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i16(self, v: i16) -> Res {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i32(self, v: i32) -> Res {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_i64(self, v: i64) -> Res {
        write_long(self.out, v);
        Ok(())
    }
    fn serialize_u8(self, v: u8) -> Res {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_u16(self, v: u16) -> Res {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_u32(self, v: u32) -> Res {
        self.serialize_i64(i64::from(v))
    }
    fn serialize_u64(self, v: u64) -> Res {
        let v = i64::try_from(v)
            .map_err(|_| AvroError::new(format!("{v} does not fit an Avro long")))?;
        self.serialize_i64(v)
    }
    fn serialize_f32(self, v: f32) -> Res {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_f64(self, v: f64) -> Res {
        self.out.extend_from_slice(&v.to_le_bytes());
        Ok(())
    }
    fn serialize_char(self, v: char) -> Res {
        self.serialize_str(v.encode_utf8(&mut [0; 4]))
    }
    fn serialize_str(self, v: &str) -> Res {
        self.bytes(v.as_bytes());
        Ok(())
    }
    fn serialize_bytes(self, v: &[u8]) -> Res {
        self.bytes(v);
        Ok(())
    }
    fn serialize_none(self) -> Res {
        write_long(self.out, 0);
        Ok(())
    }
    fn serialize_some<T: ?Sized + Serialize>(self, value: &T) -> Res {
        write_long(self.out, 1);
        value.serialize(self)
    }
    fn serialize_unit(self) -> Res {
        Ok(())
    }
    fn serialize_unit_struct(self, _name: &'static str) -> Res {
        Ok(())
    }
    fn serialize_unit_variant(self, _name: &'static str, index: u32, _v: &'static str) -> Res {
        write_long(self.out, i64::from(index));
        Ok(())
    }
    fn serialize_newtype_struct<T: ?Sized + Serialize>(self, _n: &'static str, value: &T) -> Res {
        value.serialize(self)
    }
    fn serialize_newtype_variant<T: ?Sized + Serialize>(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        value: &T,
    ) -> Res {
        write_long(self.out, i64::from(index));
        value.serialize(self)
    }
    fn serialize_seq(self, len: Option<usize>) -> Result<Self::SerializeSeq, AvroError> {
        Block::start(self, len)
    }
    fn serialize_tuple(self, _len: usize) -> Result<Self, AvroError> {
        Ok(self)
    }
    fn serialize_tuple_struct(self, _n: &'static str, _len: usize) -> Result<Self, AvroError> {
        Ok(self)
    }
    fn serialize_tuple_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, AvroError> {
        write_long(self.out, i64::from(index));
        Ok(self)
    }
    fn serialize_map(self, len: Option<usize>) -> Result<Self::SerializeMap, AvroError> {
        Block::start(self, len)
    }
    fn serialize_struct(self, _name: &'static str, _len: usize) -> Result<Self, AvroError> {
        Ok(self)
    }
    fn serialize_struct_variant(
        self,
        _name: &'static str,
        index: u32,
        _variant: &'static str,
        _len: usize,
    ) -> Result<Self, AvroError> {
        write_long(self.out, i64::from(index));
        Ok(self)
    }
}

/// An Avro array or map: one block with its item count, then the `0` terminator.
pub(crate) struct Block<'a, 'b> {
    ser: &'b mut AvroSerializer<'a>,
}

impl<'a, 'b> Block<'a, 'b> {
    fn start(ser: &'b mut AvroSerializer<'a>, len: Option<usize>) -> Result<Self, AvroError> {
        let len = len.ok_or_else(|| AvroError::new("arrays and maps need a known length"))?;
        if len > 0 {
            write_long(ser.out, len as i64);
        }
        Ok(Block { ser })
    }
    fn end(self) -> Res {
        write_long(self.ser.out, 0);
        Ok(())
    }
}

impl ser::SerializeSeq for Block<'_, '_> {
    type Ok = ();
    type Error = AvroError;
    fn serialize_element<T: ?Sized + Serialize>(&mut self, value: &T) -> Res {
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Res {
        Block::end(self)
    }
}

impl ser::SerializeMap for Block<'_, '_> {
    type Ok = ();
    type Error = AvroError;
    fn serialize_key<T: ?Sized + Serialize>(&mut self, key: &T) -> Res {
        key.serialize(&mut *self.ser)
    }
    fn serialize_value<T: ?Sized + Serialize>(&mut self, value: &T) -> Res {
        value.serialize(&mut *self.ser)
    }
    fn end(self) -> Res {
        Block::end(self)
    }
}

macro_rules! record_like {
    ($trait:ident, $method:ident $(, $key:ident)?) => {
        impl ser::$trait for &mut AvroSerializer<'_> {
            type Ok = ();
            type Error = AvroError;
            fn $method<T: ?Sized + Serialize>(
                &mut self,
                $($key: &'static str,)?
                value: &T,
            ) -> Res {
                value.serialize(&mut **self)
            }
            fn end(self) -> Res {
                Ok(())
            }
        }
    };
}

record_like!(SerializeTuple, serialize_element);
record_like!(SerializeTupleStruct, serialize_field);
record_like!(SerializeTupleVariant, serialize_field);
record_like!(SerializeStruct, serialize_field, _key);
record_like!(SerializeStructVariant, serialize_field, _key);
