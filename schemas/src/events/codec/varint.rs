//! Avro's variable-length zig-zag encoding of `int` and `long`.

use super::AvroError;

/// Appends `v` zig-zag encoded as a base-128 varint (at most 10 bytes).
#[inline]
pub(crate) fn write_long(out: &mut Vec<u8>, v: i64) {
    let mut n = ((v << 1) ^ (v >> 63)) as u64;
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Reads one zig-zag varint from the front of `input`, advancing it.
#[inline]
pub(crate) fn read_long(input: &mut &[u8]) -> Result<i64, AvroError> {
    let mut n: u64 = 0;
    let mut shift = 0u32;
    loop {
        let (&byte, rest) = input
            .split_first()
            .ok_or_else(|| AvroError::new("truncated: input ended inside a varint"))?;
        *input = rest;
        if shift == 63 && byte > 1 {
            return Err(AvroError::new("varint overflows a 64-bit long"));
        }
        n |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Ok(((n >> 1) as i64) ^ -((n & 1) as i64));
        }
        shift += 7;
        if shift > 63 {
            return Err(AvroError::new("varint longer than 10 bytes"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zigzag_round_trips_edges() {
        for v in [
            0,
            1,
            -1,
            63,
            -64,
            64,
            i64::from(i32::MAX),
            i64::MAX,
            i64::MIN,
        ] {
            let mut buf = Vec::new();
            write_long(&mut buf, v);
            let mut slice = buf.as_slice();
            assert_eq!(read_long(&mut slice).unwrap(), v);
            assert!(slice.is_empty());
        }
        let mut buf = Vec::new();
        write_long(&mut buf, -1);
        assert_eq!(buf, [0x01]);
        let mut garbage: &[u8] = &[0xff; 11];
        assert!(read_long(&mut garbage).is_err());
    }
}
