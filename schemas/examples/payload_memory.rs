//! Heap held by a CXP packet's 1 KB JSON payload, kept as text (`JsonPayload`) versus as
//! a `serde_json::Value` tree, and by a whole decoded packet. A counting global
//! allocator measures the bytes still allocated after building each one.
//!
//! Run: `cargo run -p orchestrata-schemas --release --example payload_memory` (docs/performance.md, CXP section).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicIsize, AtomicUsize, Ordering};

use chrono::{TimeZone, Utc};
use orchestrata_schemas::cxp::{CxpPacket, JsonPayload, VolkAlias};
use serde_json::{json, Value};

/// The system allocator, counting live bytes and allocations.
struct Counting;

static LIVE_BYTES: AtomicIsize = AtomicIsize::new(0);
static ALLOCATIONS: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE_BYTES.fetch_add(layout.size() as isize, Ordering::Relaxed);
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: forwarded unchanged to the system allocator.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE_BYTES.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE_BYTES.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: `ptr` came from this allocator with `layout`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Live heap bytes and allocations made while `build` runs, keeping its result alive.
fn measure<T>(build: impl FnOnce() -> T) -> (T, isize, usize) {
    let bytes = LIVE_BYTES.load(Ordering::Relaxed);
    let allocs = ALLOCATIONS.load(Ordering::Relaxed);
    let value = build();
    (
        value,
        LIVE_BYTES.load(Ordering::Relaxed) - bytes,
        ALLOCATIONS.load(Ordering::Relaxed) - allocs,
    )
}

/// The payload of `benches/cxp.rs`: a task object listing files, about `bytes` long.
fn payload(bytes: usize) -> Value {
    let mut files = Vec::new();
    let mut size = 0;
    let mut i = 0;
    while size < bytes {
        let entry =
            json!({"path": format!("src/module_{i}/file.rs"), "lines": 120 + i, "ok": i % 2 == 0});
        size += entry.to_string().len() + 1;
        files.push(entry);
        i += 1;
    }
    json!({"task": "review", "language": "Rust", "files": files})
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let text = payload(1024).to_string();
    let (tree, tree_bytes, tree_allocs) =
        measure(|| serde_json::from_str::<Value>(&text).map_err(|e| e.to_string()));
    let (raw, raw_bytes, raw_allocs) = measure(|| JsonPayload::parse(&text));
    println!("payload text: {} bytes", text.len());
    println!("as serde_json::Value: {tree_bytes} heap bytes in {tree_allocs} allocations");
    println!("as JsonPayload (text): {raw_bytes} heap bytes in {raw_allocs} allocations");
    drop((tree?, raw?));

    let at = Utc
        .timestamp_opt(1_768_473_000, 0)
        .single()
        .ok_or("time out of range")?;
    let packet = CxpPacket::new_at(
        VolkAlias::parse("U:Ox")?,
        VolkAlias::parse("U:Vz")?,
        "Review the module",
        payload(1024),
        at,
    )?
    .with_thread_id("thread-001")?;
    let wire = packet.to_json()?;
    let (decoded, packet_bytes, packet_allocs) = measure(|| CxpPacket::from_json(&wire));
    let decoded = decoded?;
    println!(
        "decoded packet: {} bytes inline + {packet_bytes} heap bytes in {packet_allocs} allocations \
         (memory_without_payload: {} bytes)",
        std::mem::size_of::<CxpPacket>(),
        decoded.memory_without_payload()
    );
    Ok(())
}
