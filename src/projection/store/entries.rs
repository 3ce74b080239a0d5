//! A keyed view's entries in the store.
//!
//! Entry `key` of view `name` is stored under `<name>.e.` + the key's length (u32,
//! big-endian) + the key + a part number (u16, big-endian). A value is cut into parts
//! of at most [`PART_BYTES`] (see there), part
//! 0 starting with the number of parts (u16, big-endian). The length before the key
//! keeps the parts of one entry next to each other in key order (no other key
//! can sort between them), so a prefix scan reads each entry whole, in turn.

use std::ops::ControlFlow;

use orchestrata_projections::stored::StoredEntry;
use orchestrata_projections::ViewName;

use super::{ViewStore, PART_BYTES};
use crate::projection::ProjectionError;

/// How a value is cut: part 0 carries the count in its first two bytes.
const COUNT: usize = 2;

/// The prefix of every entry key of view `name`.
pub(super) fn prefix(name: &str) -> Vec<u8> {
    format!("{name}.e.").into_bytes()
}

/// The store key of part `part` of entry `key`.
pub(super) fn part_key(name: &str, key: &[u8], part: u16) -> Vec<u8> {
    let mut out = prefix(name);
    let len = u32::try_from(key.len()).unwrap_or(u32::MAX);
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(key);
    out.extend_from_slice(&part.to_be_bytes());
    out
}

/// Cuts `value` into parts; `None` when it needs more than `u16::MAX` parts (256 MiB).
pub(super) fn cut(value: &[u8]) -> Option<Vec<Vec<u8>>> {
    let first = value.len().min(PART_BYTES - COUNT);
    let rest = &value[first..];
    let count = 1 + rest.len().div_ceil(PART_BYTES);
    let count16 = u16::try_from(count).ok()?;
    let mut parts = Vec::with_capacity(count);
    let mut head = Vec::with_capacity(COUNT + first);
    head.extend_from_slice(&count16.to_be_bytes());
    head.extend_from_slice(&value[..first]);
    parts.push(head);
    parts.extend(rest.chunks(PART_BYTES).map(<[u8]>::to_vec));
    Some(parts)
}

/// The number of parts written in part 0's `bytes`.
pub(super) fn count(bytes: &[u8]) -> Option<u16> {
    let count: [u8; COUNT] = bytes.get(..COUNT)?.try_into().ok()?;
    Some(u16::from_be_bytes(count)).filter(|c| *c > 0)
}

/// Reads entry `key` of view `name` whole, one `get` per part; `Ok(None)` when it is not
/// stored, `Err` (what is wrong) when its parts do not add up.
pub(super) fn read<E: From<String>>(
    name: &str,
    key: &[u8],
    get: impl Fn(&[u8]) -> Result<Option<Vec<u8>>, E>,
) -> Result<Option<Vec<u8>>, E> {
    let Some(first) = get(&part_key(name, key, 0))? else {
        return Ok(None);
    };
    let parts = count(&first).ok_or_else(|| format!("entry {key:?}: no part count"))?;
    let mut value = first[COUNT..].to_vec();
    for part in 1..parts {
        let bytes = get(&part_key(name, key, part))?
            .ok_or_else(|| format!("entry {key:?}: {part} of {parts} parts stored"))?;
        value.extend_from_slice(&bytes);
    }
    Ok(Some(value))
}

impl ViewStore {
    /// Hands view `name`'s stored entries to `each` whole, one at a time in key order,
    /// until it answers `Break`: what a restore and a search read, never more than one
    /// entry's bytes at once. A part out of place is reported as a corrupt store.
    pub(super) fn each_entry(
        &self,
        name: ViewName,
        mut each: impl FnMut(StoredEntry) -> Result<ControlFlow<()>, ProjectionError>,
    ) -> Result<(), ProjectionError> {
        let view = name.as_str();
        let mut assembler = Assembler::new(view);
        let mut stopped = false;
        self.kv.scan_prefix(&prefix(view), |key, value| {
            match assembler
                .push(key, value)
                .map_err(|r| self.corrupt(name, r))?
            {
                Some(entry) => {
                    let flow = each(entry)?;
                    stopped = flow.is_break();
                    Ok(flow)
                }
                None => Ok(ControlFlow::Continue(())),
            }
        })?;
        if !stopped {
            if let Some(last) = assembler.finish().map_err(|r| self.corrupt(name, r))? {
                // The last entry: whatever `each` answers, the scan is over.
                let _ = each(last)?;
            }
        }
        Ok(())
    }

    /// The first of view `name`'s stored entries, in key order, that `pick` answers
    /// `Some` for: a search by a field no key holds (a decision by its id), reading one
    /// entry at a time and stopping at the one found. `pick`'s errors (an entry it
    /// cannot decode) are reported as a corrupt store.
    pub fn find_entry<T>(
        &self,
        name: ViewName,
        mut pick: impl FnMut(&[u8], &[u8]) -> Result<Option<T>, String>,
    ) -> Result<Option<T>, ProjectionError> {
        let mut found = None;
        self.each_entry(name, |(key, value)| match pick(&key, &value) {
            Ok(Some(hit)) => {
                found = Some(hit);
                Ok(ControlFlow::Break(()))
            }
            Ok(None) => Ok(ControlFlow::Continue(())),
            Err(reason) => Err(self.corrupt(name, reason)),
        })?;
        Ok(found)
    }
}

/// Reassembles entries from a prefix scan of `(store key, value)` in key order, handing
/// each one out as soon as its last part is read (a load never holds every entry's
/// bytes at once).
pub(super) struct Assembler {
    prefix_len: usize,
    current: Option<Entry>,
}

struct Entry {
    key: Vec<u8>,
    expected: u16,
    next: u16,
    value: Vec<u8>,
}

impl Assembler {
    /// For the entries of view `name`.
    pub(super) fn new(name: &str) -> Self {
        Assembler {
            prefix_len: prefix(name).len(),
            current: None,
        }
    }

    /// Takes the next stored part; answers the entry before it once this part starts
    /// another. Errors name what is wrong with the store.
    pub(super) fn push(
        &mut self,
        store_key: &[u8],
        bytes: &[u8],
    ) -> Result<Option<StoredEntry>, String> {
        let body = store_key
            .get(self.prefix_len..)
            .ok_or_else(|| format!("entry key {store_key:?} is too short"))?;
        let (len, rest) = body
            .split_first_chunk::<4>()
            .ok_or_else(|| format!("entry key {store_key:?} has no length"))?;
        let len = u32::from_be_bytes(*len) as usize;
        if rest.len() != len + 2 {
            return Err(format!("entry key {store_key:?} does not match its length"));
        }
        let (key, part) = rest.split_at(len);
        let part = u16::from_be_bytes([part[0], part[1]]);
        match &mut self.current {
            Some(entry) if entry.key == key => {
                if part != entry.next {
                    return Err(format!("entry {key:?}: part {part} after {}", entry.next));
                }
                entry.value.extend_from_slice(bytes);
                entry.next += 1;
                Ok(None)
            }
            _ => {
                let done = self.take()?;
                if part != 0 {
                    return Err(format!("entry {key:?}: part 0 is missing"));
                }
                let expected =
                    count(bytes).ok_or_else(|| format!("entry {key:?}: no part count"))?;
                self.current = Some(Entry {
                    key: key.to_vec(),
                    expected,
                    next: 1,
                    value: bytes[COUNT..].to_vec(),
                });
                Ok(done)
            }
        }
    }

    /// The entry being read, if complete.
    fn take(&mut self) -> Result<Option<StoredEntry>, String> {
        match self.current.take() {
            None => Ok(None),
            Some(entry) if entry.next != entry.expected => Err(format!(
                "entry {:?}: {} of {} parts stored",
                entry.key, entry.next, entry.expected
            )),
            Some(entry) => Ok(Some((entry.key, entry.value))),
        }
    }

    /// The last entry, once the scan is over.
    pub(super) fn finish(mut self) -> Result<Option<StoredEntry>, String> {
        self.take()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn assemble(stored: &[(Vec<u8>, Vec<u8>)]) -> Result<Vec<StoredEntry>, String> {
        let mut a = Assembler::new("v");
        let mut out = Vec::new();
        for (k, v) in stored {
            out.extend(a.push(k, v)?);
        }
        out.extend(a.finish()?);
        Ok(out)
    }

    #[test]
    fn values_of_any_size_come_back_whole_and_keys_that_prefix_others_stay_apart() {
        let values: Vec<StoredEntry> = vec![
            (b"a".to_vec(), Vec::new()),
            (b"a\0\0".to_vec(), vec![7; PART_BYTES * 3 + 5]),
            (b"a\0".to_vec(), vec![1; PART_BYTES - COUNT]),
            (b"b".to_vec(), vec![2; PART_BYTES - COUNT + 1]),
        ];
        let mut stored = std::collections::BTreeMap::new();
        for (key, value) in &values {
            let parts = cut(value).expect("fits");
            assert!(parts.iter().all(|p| p.len() <= PART_BYTES));
            for (i, part) in parts.into_iter().enumerate() {
                let i = u16::try_from(i).expect("few parts");
                stored.insert(part_key("v", key, i), part);
            }
        }
        let stored: Vec<_> = stored.into_iter().collect();
        let mut back = assemble(&stored).expect("assembles");
        back.sort();
        let mut expected = values.clone();
        expected.sort();
        assert_eq!(back, expected);
        // A missing middle part is reported, not glued over.
        let mut broken = stored.clone();
        broken.retain(|(k, _)| *k != part_key("v", b"a\0\0", 1));
        assert!(assemble(&broken).is_err());
        let mut truncated = stored.clone();
        truncated.retain(|(k, _)| *k != part_key("v", b"a\0\0", 3));
        assert!(assemble(&truncated).is_err());
        // One entry read by its key, whole, as the scan assembles it.
        let map: std::collections::BTreeMap<_, _> = stored.into_iter().collect();
        let get = |k: &[u8]| Ok::<_, String>(map.get(k).cloned());
        for (key, value) in &values {
            assert_eq!(read("v", key, get).expect("reads").as_ref(), Some(value));
        }
        assert_eq!(read("v", b"zz", get), Ok(None));
        let holed = |k: &[u8]| {
            Ok::<_, String>(
                map.get(k)
                    .filter(|_| *k != *part_key("v", b"a\0\0", 2))
                    .cloned(),
            )
        };
        assert!(read("v", b"a\0\0", holed).is_err());
    }
}
