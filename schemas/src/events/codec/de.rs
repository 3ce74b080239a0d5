//! A serde deserializer that reads the Avro binary encoding written by
//! [`super::ser::AvroSerializer`]; the type being read drives the decoding, exactly
//! mirroring the serializer's mapping. Every read is bounds-checked: truncated or
//! garbage input yields an [`AvroError`], never a panic or an unbounded allocation.

use serde::de::{self, DeserializeSeed, IntoDeserializer, Visitor};

use super::varint::read_long;
use super::AvroError;

/// Reads Avro binary from the front of a byte slice.
pub(crate) struct AvroDeserializer<'de> {
    pub(crate) input: &'de [u8],
}

impl<'de> AvroDeserializer<'de> {
    pub(crate) fn new(input: &'de [u8]) -> Self {
        AvroDeserializer { input }
    }

    pub(crate) fn long(&mut self) -> Result<i64, AvroError> {
        read_long(&mut self.input)
    }

    fn take(&mut self, n: usize) -> Result<&'de [u8], AvroError> {
        if n > self.input.len() {
            return Err(AvroError::new(format!(
                "truncated: needs {n} bytes, {} left",
                self.input.len()
            )));
        }
        let (head, rest) = self.input.split_at(n);
        self.input = rest;
        Ok(head)
    }

    pub(crate) fn bytes(&mut self) -> Result<&'de [u8], AvroError> {
        let len = self.long()?;
        let len =
            usize::try_from(len).map_err(|_| AvroError::new(format!("negative length {len}")))?;
        self.take(len)
    }

    pub(crate) fn str(&mut self) -> Result<&'de str, AvroError> {
        let bytes = self.bytes()?;
        std::str::from_utf8(bytes).map_err(|e| AvroError::new(format!("invalid UTF-8: {e}")))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], AvroError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    /// Reads the count of the next array/map block (a negative count is followed by
    /// the block's size in bytes, which we do not need).
    fn block_len(&mut self) -> Result<usize, AvroError> {
        let count = self.long()?;
        if count < 0 {
            self.long()?;
        }
        let count = count.unsigned_abs();
        // Every item takes at least one byte... except zero-sized ones, which we
        // never use; the bound keeps garbage from promising billions of items.
        if count > self.input.len() as u64 {
            return Err(AvroError::new(format!(
                "block claims {count} items but only {} bytes are left",
                self.input.len()
            )));
        }
        Ok(count as usize)
    }
}

macro_rules! int {
    ($method:ident, $visit:ident, $ty:ty) => {
        fn $method<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
            let v = self.long()?;
            let v = <$ty>::try_from(v)
                .map_err(|_| AvroError::new(format!("{v} out of range for {}", stringify!($ty))))?;
            visitor.$visit(v)
        }
    };
}

impl<'de> de::Deserializer<'de> for &mut AvroDeserializer<'de> {
    type Error = AvroError;

    fn is_human_readable(&self) -> bool {
        false
    }
    fn deserialize_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, AvroError> {
        Err(AvroError::new("Avro binary is not self-describing"))
    }
    fn deserialize_bool<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        match self.take(1)?[0] {
            0 => visitor.visit_bool(false),
            1 => visitor.visit_bool(true),
            b => Err(AvroError::new(format!("invalid boolean byte {b}"))),
        }
    }
    int!(deserialize_i8, visit_i8, i8);
    int!(deserialize_i16, visit_i16, i16);
    int!(deserialize_i32, visit_i32, i32);
    int!(deserialize_i64, visit_i64, i64);
    int!(deserialize_u8, visit_u8, u8);
    int!(deserialize_u16, visit_u16, u16);
    int!(deserialize_u32, visit_u32, u32);
    int!(deserialize_u64, visit_u64, u64);
    fn deserialize_f32<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        visitor.visit_f32(f32::from_le_bytes(self.array()?))
    }
    fn deserialize_f64<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        visitor.visit_f64(f64::from_le_bytes(self.array()?))
    }
    fn deserialize_char<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        self.deserialize_str(visitor)
    }
    fn deserialize_str<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        visitor.visit_borrowed_str(self.str()?)
    }
    fn deserialize_string<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        self.deserialize_str(visitor)
    }
    fn deserialize_bytes<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        visitor.visit_borrowed_bytes(self.bytes()?)
    }
    fn deserialize_byte_buf<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        self.deserialize_bytes(visitor)
    }
    fn deserialize_option<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        match self.long()? {
            0 => visitor.visit_none(),
            1 => visitor.visit_some(self),
            n => Err(AvroError::new(format!(
                "union branch {n} of an optional field (expected 0 = null or 1 = value)"
            ))),
        }
    }
    fn deserialize_unit<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        visitor.visit_unit()
    }
    fn deserialize_unit_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        visitor.visit_unit()
    }
    fn deserialize_newtype_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        visitor.visit_newtype_struct(self)
    }
    fn deserialize_seq<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        let left = self.block_len()?;
        visitor.visit_seq(Blocks {
            de: self,
            left,
            done: left == 0,
        })
    }
    fn deserialize_tuple<V: Visitor<'de>>(
        self,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        visitor.visit_seq(Fields {
            de: self,
            left: len,
        })
    }
    fn deserialize_tuple_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        len: usize,
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        self.deserialize_tuple(len, visitor)
    }
    fn deserialize_map<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        let left = self.block_len()?;
        visitor.visit_map(Blocks {
            de: self,
            left,
            done: left == 0,
        })
    }
    fn deserialize_struct<V: Visitor<'de>>(
        self,
        _name: &'static str,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        self.deserialize_tuple(fields.len(), visitor)
    }
    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        let index = self.long()?;
        match u32::try_from(index) {
            Ok(i) if (i as usize) < variants.len() => {
                visitor.visit_enum(Variant { de: self, index: i })
            }
            _ => Err(AvroError::new(format!(
                "enum/union index {index} out of range (0..{})",
                variants.len()
            ))),
        }
    }
    fn deserialize_identifier<V: Visitor<'de>>(self, visitor: V) -> Result<V::Value, AvroError> {
        self.deserialize_str(visitor)
    }
    fn deserialize_ignored_any<V: Visitor<'de>>(self, _visitor: V) -> Result<V::Value, AvroError> {
        Err(AvroError::new("cannot skip a value without its schema"))
    }
}

/// A record's fields or a tuple: a fixed number of values one after another.
struct Fields<'a, 'de> {
    de: &'a mut AvroDeserializer<'de>,
    left: usize,
}

impl<'de> de::SeqAccess<'de> for Fields<'_, 'de> {
    type Error = AvroError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, AvroError> {
        if self.left == 0 {
            return Ok(None);
        }
        self.left -= 1;
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn size_hint(&self) -> Option<usize> {
        Some(self.left)
    }
}

/// Array items or map entries, read block by block until the `0` terminator.
struct Blocks<'a, 'de> {
    de: &'a mut AvroDeserializer<'de>,
    /// Items left in the current block.
    left: usize,
    /// The `0` terminator has been read.
    done: bool,
}

impl Blocks<'_, '_> {
    /// True when another item follows (reading the next block header if needed).
    fn more(&mut self) -> Result<bool, AvroError> {
        if self.done {
            return Ok(false);
        }
        if self.left == 0 {
            self.left = self.de.block_len()?;
        }
        if self.left == 0 {
            self.done = true;
            return Ok(false);
        }
        self.left -= 1;
        Ok(true)
    }
}

impl<'de> de::SeqAccess<'de> for Blocks<'_, 'de> {
    type Error = AvroError;
    fn next_element_seed<T: DeserializeSeed<'de>>(
        &mut self,
        seed: T,
    ) -> Result<Option<T::Value>, AvroError> {
        if !self.more()? {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
}

impl<'de> de::MapAccess<'de> for Blocks<'_, 'de> {
    type Error = AvroError;
    fn next_key_seed<K: DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, AvroError> {
        if !self.more()? {
            return Ok(None);
        }
        seed.deserialize(&mut *self.de).map(Some)
    }
    fn next_value_seed<V: DeserializeSeed<'de>>(&mut self, seed: V) -> Result<V::Value, AvroError> {
        seed.deserialize(&mut *self.de)
    }
}

/// An enum symbol or union branch whose index was already read.
struct Variant<'a, 'de> {
    de: &'a mut AvroDeserializer<'de>,
    index: u32,
}

impl<'a, 'de> de::EnumAccess<'de> for Variant<'a, 'de> {
    type Error = AvroError;
    type Variant = Self;
    fn variant_seed<S: DeserializeSeed<'de>>(self, seed: S) -> Result<(S::Value, Self), AvroError> {
        let value = seed.deserialize(self.index.into_deserializer())?;
        Ok((value, self))
    }
}

impl<'de> de::VariantAccess<'de> for Variant<'_, 'de> {
    type Error = AvroError;
    fn unit_variant(self) -> Result<(), AvroError> {
        Ok(())
    }
    fn newtype_variant_seed<T: DeserializeSeed<'de>>(self, seed: T) -> Result<T::Value, AvroError> {
        seed.deserialize(&mut *self.de)
    }
    fn tuple_variant<V: Visitor<'de>>(self, len: usize, visitor: V) -> Result<V::Value, AvroError> {
        de::Deserializer::deserialize_tuple(&mut *self.de, len, visitor)
    }
    fn struct_variant<V: Visitor<'de>>(
        self,
        fields: &'static [&'static str],
        visitor: V,
    ) -> Result<V::Value, AvroError> {
        de::Deserializer::deserialize_tuple(&mut *self.de, fields.len(), visitor)
    }
}
