//! Whitespace removal for JSON text that has already been checked.
//!
//! A received payload is stored without the whitespace between its tokens, so that a
//! packet's compact JSON (`to_json`) stays compact whatever its sender wrote, and the
//! log stores the smaller text. Strings are skipped with `memchr`; only the bytes
//! between tokens are looked at one by one.

fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\n' | b'\r' | b'\t')
}

/// `text` without the whitespace between tokens, or `None` when it has none (the common
/// case: no allocation). `text` must be valid JSON: removing whitespace from invalid
/// text could join tokens into a valid one (`tr ue`). Never panics, whatever the input.
pub(crate) fn strip_whitespace(text: &str) -> Option<String> {
    let b = text.as_bytes();
    if !has_whitespace(b) {
        return None;
    }
    let mut out: Option<Vec<u8>> = None;
    // Start of the bytes not yet copied to `out`.
    let mut pending = 0;
    let mut i = 0;
    while let Some(&c) = b.get(i) {
        if c == b'"' {
            i = string_end(b, i + 1);
        } else if is_ws(c) {
            let o = out.get_or_insert_with(|| Vec::with_capacity(b.len()));
            o.extend_from_slice(b.get(pending..i).unwrap_or_default());
            while b.get(i).copied().is_some_and(is_ws) {
                i += 1;
            }
            pending = i;
        } else {
            i += 1;
        }
    }
    let mut o = out?;
    o.extend_from_slice(b.get(pending..).unwrap_or_default());
    // Only ASCII bytes between tokens were removed, so the rest is still UTF-8.
    String::from_utf8(o).ok()
}

/// Whether any whitespace byte occurs at all (inside strings or not). Most payloads
/// have none, and skip the token-by-token scan.
///
/// In valid JSON the only bytes at or below `0x20` are whitespace (control characters
/// must be escaped inside strings), so this is "is the smallest byte <= 0x20". A minimum
/// over a block has no branch per byte and compiles to vector instructions.
fn has_whitespace(b: &[u8]) -> bool {
    b.chunks(256)
        .any(|block| block.iter().fold(u8::MAX, |m, &c| m.min(c)) <= b' ')
}

/// Index just past the closing quote of the string whose content starts at `i`.
fn string_end(b: &[u8], mut i: usize) -> usize {
    loop {
        let Some(rest) = b.get(i..) else {
            return b.len();
        };
        match memchr::memchr2(b'"', b'\\', rest) {
            None => return b.len(),
            Some(off) => {
                i += off;
                if b.get(i) == Some(&b'\\') {
                    // Skip the escaped byte (`\"`, `\\`, or the letter of `\n`, `\u`...).
                    i += 2;
                } else {
                    return i + 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::strip_whitespace;

    // REQ-004-US-006-026
    #[test]
    fn whitespace_between_tokens_goes_and_inside_strings_stays() {
        let text =
            "{ \"a b\" : [ 1 ,\n\t2 ] , \"q\\\" x\" : \"\\\\\" ,\r\n \"e\":\"\u{e9} \\u0020\" }";
        let stripped = strip_whitespace(text).unwrap();
        assert_eq!(
            stripped,
            "{\"a b\":[1,2],\"q\\\" x\":\"\\\\\",\"e\":\"\u{e9} \\u0020\"}"
        );
        let a: serde_json::Value = serde_json::from_str(text).unwrap();
        let b: serde_json::Value = serde_json::from_str(&stripped).unwrap();
        assert_eq!(a, b);
        assert_eq!(strip_whitespace(&stripped), None);
        assert_eq!(strip_whitespace(r#"{"a":"with spaces"}"#), None);
    }

    // REQ-004-US-006-026
    #[test]
    fn whitespace_is_found_in_any_block_and_in_the_tail() {
        let long: String = (0..40).map(|i| format!("[{i}],")).collect();
        let compact = format!("[{}0]", long);
        assert_eq!(strip_whitespace(&compact), None);
        for at in [1, 31, 32, 33, 64, compact.len() - 2] {
            // After a `,` or `[` or before `]`: always between tokens.
            let cut = compact[..at].rfind([',', '[']).map_or(1, |p| p + 1);
            let spaced = format!("{} {}", &compact[..cut], &compact[cut..]);
            assert_eq!(
                strip_whitespace(&spaced).as_deref(),
                Some(compact.as_str()),
                "{at}"
            );
        }
    }

    // REQ-004-US-006-026
    #[test]
    fn truncated_or_odd_text_never_panics() {
        for text in [
            "\"",
            "\"\\",
            "[\"a\\",
            " ",
            "\"abc",
            "[1, \"\\\"",
            "\u{e9} \u{e9}",
        ] {
            let _ = strip_whitespace(text);
        }
        assert_eq!(strip_whitespace(" ").as_deref(), Some(""));
    }
}
