//! A view's head (or, for views stored whole, the view) in the store: cut by content
//! into chunks of at most 4 KiB (see [`chunks`](super::super::chunks)), each under
//! `<name>.c.<id>` (`id`: its hash), the list of chunk ids (the manifest) in pages under
//! `<name>.m.<i>`, their count in `<name>.manifest`. Writing a body writes only the
//! chunks not stored yet and removes those it no longer has.

use std::collections::HashSet;

use orchestrata_projections::ViewName;

use super::super::chunks::{self, ChunkId};
use super::{ViewStore, PART_BYTES};
use crate::projection::ProjectionError;

/// A stored body's chunk ids, in order, and how many pages hold them.
#[derive(Default)]
pub(super) struct Manifest {
    pub(super) ids: Vec<ChunkId>,
    pub(super) pages: u32,
}

pub(super) fn page_key(name: &str, index: u32) -> String {
    format!("{name}.m.{index:08}")
}

pub(super) fn chunk_key(name: &str, id: &ChunkId) -> String {
    format!("{name}.c.{}", hex(id))
}

pub(super) fn manifest_key(name: &str) -> String {
    format!("{name}.manifest")
}

fn hex(id: &ChunkId) -> String {
    id.iter().map(|b| format!("{b:02x}")).collect()
}

impl ViewStore {
    /// Adds to `batch` what writing `body` as view `name`'s body takes, given the body
    /// stored now (`old`; `None` when the batch removes it, or there is none).
    pub(super) fn stage_body(
        &self,
        name: ViewName,
        body: &[u8],
        old: Option<Manifest>,
        batch: &mut super::kv::Batch,
    ) {
        let name = name.as_str();
        let ranges = chunks::cut(body);
        let ids: Vec<ChunkId> = ranges
            .iter()
            .map(|r| chunks::id(&body[r.clone()]))
            .collect();
        let old = old.unwrap_or_default();
        let stored: HashSet<ChunkId> = old.ids.into_iter().collect();
        let kept: HashSet<ChunkId> = ids.iter().copied().collect();
        let mut written = HashSet::new();
        for (range, id) in ranges.into_iter().zip(&ids) {
            if !stored.contains(id) && written.insert(*id) {
                batch.insert(chunk_key(name, id).as_bytes(), &body[range]);
            }
        }
        for gone in stored.difference(&kept) {
            batch.remove(chunk_key(name, gone).as_bytes());
        }
        let manifest: Vec<u8> = ids.concat();
        let mut pages = 0u32;
        for page in manifest.chunks(PART_BYTES) {
            batch.insert(page_key(name, pages).as_bytes(), page);
            pages += 1;
        }
        for gone in pages..old.pages {
            batch.remove(page_key(name, gone).as_bytes());
        }
        batch.insert(manifest_key(name).as_bytes(), pages.to_be_bytes());
    }

    /// View `name`'s stored body, if it has one.
    pub(super) fn read_body(&self, name: ViewName) -> Result<Option<Vec<u8>>, ProjectionError> {
        let Some(manifest) = self.manifest(name)? else {
            return Ok(None);
        };
        let mut body = Vec::with_capacity(manifest.ids.len() * 2048);
        for id in &manifest.ids {
            let chunk = self
                .get(chunk_key(name.as_str(), id).as_bytes())?
                .ok_or_else(|| self.corrupt(name, format!("chunk {} is missing", hex(id))))?;
            body.extend_from_slice(&chunk);
        }
        Ok(Some(body))
    }

    /// The manifest of view `name`'s body; `None` when it has none.
    pub(super) fn manifest(&self, name: ViewName) -> Result<Option<Manifest>, ProjectionError> {
        let Some(bytes) = self.get(manifest_key(name.as_str()).as_bytes())? else {
            return Ok(None);
        };
        let count: [u8; 4] = bytes.as_slice().try_into().map_err(|_| {
            self.corrupt(
                name,
                format!("its manifest count holds {} bytes", bytes.len()),
            )
        })?;
        let pages = u32::from_be_bytes(count);
        let mut ids = Vec::new();
        for i in 0..pages {
            let page = self
                .get(page_key(name.as_str(), i).as_bytes())?
                .ok_or_else(|| {
                    self.corrupt(name, format!("manifest page {i} of {pages} is missing"))
                })?;
            ids.extend_from_slice(&page);
        }
        let (chunk_ids, rest) = ids.as_chunks::<16>();
        if !rest.is_empty() {
            return Err(self.corrupt(name, format!("a manifest of {} bytes", ids.len())));
        }
        Ok(Some(Manifest {
            ids: chunk_ids.to_vec(),
            pages,
        }))
    }
}
