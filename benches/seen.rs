//! The Bloom filters of let-go ids ([`Seen`]) as a long-running server asks them:
//! "was this new id ever let go?" (a miss, the answer for nearly every new packet,
//! thread and command id) against a filter that grew in layers over a million ids.
//! Their cost grows with the filter's layers, so a long-running server asks them on
//! every send at its largest.

use std::hint::black_box;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use orchestrata_projections::seen::Seen;

fn filled(keys: u128) -> Seen {
    let mut seen = Seen::default();
    for k in 0..keys {
        seen.insert(&k.to_le_bytes());
    }
    seen
}

fn misses(c: &mut Criterion) {
    let mut group = c.benchmark_group("seen");
    group.throughput(Throughput::Elements(1));
    for keys in [50_000u128, 1_100_000] {
        let seen = filled(keys);
        let mut probe = 1u128 << 100;
        group.bench_function(format!("miss_after_{keys}_keys"), |b| {
            b.iter(|| {
                probe += 1;
                black_box(seen.may_hold(&probe.to_le_bytes()))
            })
        });
    }
    group.finish();
}

criterion_group!(benches, misses);
criterion_main!(benches);
