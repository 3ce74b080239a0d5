//! How sled 0.34's resident memory follows the keys a view store writes: inserts at
//! random keys versus increasing keys, optionally with updates of recent keys — the
//! measurement behind keying view entries by the log (`docs/performance.md`, "Views
//! stored entry by entry").
//!
//! ```text
//! cargo run --release --example sled_memory -- random 400000
//! cargo run --release --example sled_memory -- increasing 400000 --updates 4000
//! ```
//!
//! Writes batches of 2,000 600-byte values (plus `--updates` rewrites of keys among the
//! last 20,000) to a sled tree with a 64 MiB cache in a temp dir, flushing each batch,
//! and prints the process's resident memory and sled's size on disk five times.

use std::error::Error;

const BATCH: u64 = 2_000;
const VALUE: usize = 600;

fn rss_mb() -> u64 {
    std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|s| s.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| (pages * 4096) >> 20)
}

fn main() -> Result<(), Box<dyn Error>> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: sled_memory random|increasing KEYS [--updates N]";
    let random = match args.first().map(String::as_str) {
        Some("random") => true,
        Some("increasing") => false,
        _ => return Err(usage.into()),
    };
    let keys: u64 = args.get(1).ok_or(usage)?.parse()?;
    let updates: u64 = match args.get(2).map(String::as_str) {
        Some("--updates") => args.get(3).ok_or(usage)?.parse()?,
        None => 0,
        Some(_) => return Err(usage.into()),
    };
    let dir = tempfile::tempdir()?;
    let db = sled::Config::new()
        .path(dir.path())
        .cache_capacity(64 << 20)
        .flush_every_ms(None)
        .open()?;
    let tree = db.open_tree("views")?;
    let key = |i: u64| {
        let i = if random {
            i.wrapping_mul(0x9E37_79B9_7F4A_7C15)
        } else {
            i
        };
        i.to_be_bytes()
    };
    let (mut written, mut state) = (0u64, 1u64);
    let rounds = keys.div_ceil(BATCH);
    for round in 1..=rounds {
        let mut batch = sled::Batch::default();
        for _ in 0..BATCH {
            written += 1;
            batch.insert(&key(written), vec![7u8; VALUE]);
        }
        for _ in 0..updates {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let back = state % written.min(20_000);
            batch.insert(&key(written - back), vec![8u8; VALUE]);
        }
        tree.apply_batch(batch)?;
        db.flush()?;
        if round % (rounds / 5).max(1) == 0 {
            println!(
                "keys={written} rss_mb={} disk_mb={}",
                rss_mb(),
                db.size_on_disk()? >> 20
            );
        }
    }
    Ok(())
}
