use proptest::prelude::*;

use super::*;

/// The layout written before blocks: one entry per value.
fn encode_single(stored_at_ms: i64, key: &str, value: &[u8]) -> Vec<u8> {
    let mut out = stored_at_ms.to_be_bytes().to_vec();
    out.extend_from_slice(&(key.len() as u32).to_be_bytes());
    out.extend_from_slice(key.as_bytes());
    out.extend_from_slice(value);
    out
}

fn entries(n: usize, value_len: usize) -> Vec<(String, Vec<u8>)> {
    (0..n)
        .map(|i| (format!("key-{i}"), vec![i as u8; value_len]))
        .collect()
}

fn encode(stored_at_ms: i64, entries: &[(String, Vec<u8>)]) -> Vec<u8> {
    encode_block(
        stored_at_ms,
        entries.iter().map(|(k, v)| (k.as_str(), v.as_slice())),
    )
}

#[test]
fn a_block_decodes_to_its_entries_at_consecutive_sequences() {
    let written = entries(5, 10);
    let raw = encode(1_700_000_000_000, &written);
    let read = decode_value(Stream::CxpTraffic, 40, &raw).expect("block");
    assert_eq!(read.len(), 5);
    for (i, (entry, (key, value))) in read.iter().zip(&written).enumerate() {
        assert_eq!(entry.sequence, 40 + i as u64);
        assert_eq!((entry.key, entry.value), (key.as_str(), value.as_slice()));
        assert_eq!(entry.stored_at_ms, 1_700_000_000_000);
    }
    assert_eq!(entry_count(Stream::CxpTraffic, 40, &raw).expect("count"), 5);
}

#[test]
fn a_value_of_the_earlier_layout_is_one_entry() {
    for at in [0, 1_700_000_000_000, -5] {
        let raw = encode_single(at, "thread-1", b"payload");
        let read = decode_value(Stream::CxpTraffic, 7, &raw).expect("single");
        assert_eq!(read.len(), 1, "stored at {at}");
        assert_eq!(
            (
                read[0].sequence,
                read[0].key,
                read[0].value,
                read[0].stored_at_ms
            ),
            (7, "thread-1", &b"payload"[..], at)
        );
        assert_eq!(entry_count(Stream::CxpTraffic, 7, &raw).expect("count"), 1);
    }
}

#[test]
fn blocks_close_at_their_entry_or_byte_bound() {
    // Small entries: cut by count.
    assert_eq!(block_sizes(&entries(130, 1)), vec![64, 64, 2]);
    // 1 KiB entries: a block passes BLOCK_BYTES at its fourth entry.
    assert_eq!(block_sizes(&entries(9, 1024)), vec![4, 4, 1]);
    // One entry larger than a block still gets one.
    assert_eq!(block_sizes(&entries(2, 100_000)), vec![1, 1]);
    assert!(block_sizes(&[]).is_empty());
}

#[test]
fn damaged_blocks_are_corrupt_not_a_panic() {
    let raw = encode(1, &entries(3, 8));
    for cut in 1..raw.len() {
        let err = decode_value(Stream::CxpTraffic, 0, &raw[..cut]).expect_err("cut block");
        assert!(
            matches!(err, LogError::Corrupt { .. }),
            "cut at {cut}: {err}"
        );
    }
    let mut longer = raw.clone();
    longer.push(0);
    assert!(decode_value(Stream::CxpTraffic, 0, &longer).is_err());
    assert!(entry_count(Stream::CxpTraffic, 0, &[BLOCK, 0, 0]).is_err());
}

proptest! {
    // Whatever bytes sled hands back, decoding answers without panicking.
    #[test]
    fn any_bytes_decode_or_fail_cleanly(raw in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = decode_value(Stream::CxpTraffic, 3, &raw);
        let _ = entry_count(Stream::CxpTraffic, 3, &raw);
    }

    #[test]
    fn blocks_round_trip(values in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 1..100)) {
        let written: Vec<(String, Vec<u8>)> =
            values.into_iter().enumerate().map(|(i, v)| (format!("k{i}"), v)).collect();
        let mut at = 0;
        for size in block_sizes(&written) {
            prop_assert!((1..=BLOCK_ENTRIES).contains(&size));
            let raw = encode(9, &written[at..at + size]);
            let read = decode_value(Stream::CxpTraffic, at as u64, &raw).expect("decode");
            prop_assert_eq!(read.len(), size);
            for (entry, (key, value)) in read.iter().zip(&written[at..at + size]) {
                prop_assert_eq!(entry.key, key.as_str());
                prop_assert_eq!(entry.value, value.as_slice());
            }
            at += size;
        }
        prop_assert_eq!(at, written.len());
    }
}
