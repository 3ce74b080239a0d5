//! The `orchestrata` binary. See [`orchestrata::cli`].
//!
//! Logs go to stderr through `tracing`: human-readable when stderr is a terminal, JSON
//! lines otherwise (or as `logging.format` says). Levels: `RUST_LOG` when set, else
//! `ORCHESTRATA_LOG`, else `logging.level` and `logging.modules` of the config file.

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::Parser;
use orchestrata::cli::{run, Cli};
use orchestrata::config::{LogFormat, LoggingConfig, SystemConfig};
use tracing_subscriber::EnvFilter;

/// jemalloc instead of glibc's malloc. A server that commits for hours allocates from
/// many threads (tokio workers, the log writer, the governance engine, the projection
/// runners); glibc gives each its own arena and returns little of it, so resident
/// memory climbs with the history served well beyond the live heap. Why jemalloc and
/// not mimalloc: most of a `cxp.send`'s blocks are freed by another thread than the
/// one that made them (an event decoded by one view's runner and dropped by another's,
/// a request parsed on a connection and answered from a job). mimalloc spends much of
/// its time collecting such frees; jemalloc takes them into the freeing thread's cache
/// and returns them to their arena in batches.
///
/// Blocks are freed without their size ([`jemalloc::Unsized`]). The `system-alloc`
/// feature leaves jemalloc out, for heap profilers that follow glibc's malloc; the
/// `heap-profile` feature builds it with sampled profiling, off unless
/// `_RJEM_MALLOC_CONF` turns it on (docs/operations.md, "Heap profiles of a live
/// server").
#[cfg(not(feature = "system-alloc"))]
#[global_allocator]
static GLOBAL: jemalloc::Unsized = jemalloc::Unsized;

#[cfg(not(feature = "system-alloc"))]
mod jemalloc {
    use std::alloc::{GlobalAlloc, Layout};
    use std::ffi::c_char;

    /// The options jemalloc reads before `main` (`_RJEM_MALLOC_CONF` in the environment
    /// is read after them, so an operator can still add or override any). Background
    /// threads return freed pages to the system on their own schedule, not in the
    /// middle of a request's allocation, and also while the server is idle.
    #[allow(non_upper_case_globals)]
    #[export_name = "_rjem_malloc_conf"]
    pub static malloc_conf: Option<&'static c_char> =
        // SAFETY: a C string literal lives for the whole program; its first byte is a
        // valid `c_char` to point at.
        Some(unsafe { &*c"background_thread:true".as_ptr() });

    /// jemalloc, freeing without the size. Its sized free trusts the layout given back;
    /// the Prolog engine hands some blocks back with another size than they were
    /// allocated with, which the other allocators forgive and sized free turns into a
    /// corrupt heap (a failed 8-byte allocation while a policy loads).
    pub struct Unsized;

    // SAFETY: every call forwards to jemalloc's own GlobalAlloc, except that `dealloc`
    // uses `free`, which accepts any pointer jemalloc returned.
    unsafe impl GlobalAlloc for Unsized {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            // SAFETY: the caller's contract is passed on unchanged.
            unsafe { tikv_jemallocator::Jemalloc.alloc(layout) }
        }
        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            // SAFETY: as above.
            unsafe { tikv_jemallocator::Jemalloc.alloc_zeroed(layout) }
        }
        unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
            // SAFETY: `ptr` came from this allocator, i.e. from jemalloc.
            unsafe { tikv_jemalloc_sys::free(ptr.cast()) }
        }
        unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            // SAFETY: as above.
            unsafe { tikv_jemallocator::Jemalloc.realloc(ptr, layout, new_size) }
        }
    }
}

/// Turns transparent huge pages off for this process, unless `ORCHESTRATA_ALLOW_THP`
/// says otherwise. The allocator's arenas are large mappings, which a kernel with
/// huge pages enabled backs with 2 MiB pages; a huge page
/// stays resident whole while any of it is in use, and a server whose heap is many
/// small long-lived entries (index ids, cached packets) keeps most of them partly used,
/// so huge pages raise resident memory without raising throughput.
/// `ORCHESTRATA_ALLOW_THP=1` keeps them.
fn no_transparent_huge_pages() {
    if std::env::var_os("ORCHESTRATA_ALLOW_THP").is_some() {
        return;
    }
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE takes plain integers and touches no memory of ours;
    // on a kernel without it the call fails with EINVAL and nothing changes.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
}

/// The `--config FILE` of the command line, else `ORCHESTRATA_CONFIG`.
fn config_path() -> Option<PathBuf> {
    let mut args = std::env::args_os().skip(1);
    while let Some(arg) = args.next() {
        if arg == "--config" {
            return args.next().map(PathBuf::from);
        }
        if let Some(value) = arg.to_str().and_then(|a| a.strip_prefix("--config=")) {
            return Some(PathBuf::from(value));
        }
    }
    std::env::var_os("ORCHESTRATA_CONFIG").map(PathBuf::from)
}

/// Installs the subscriber. A config that does not load leaves the defaults here; the
/// command itself reports the error.
fn init_tracing() {
    let logging = SystemConfig::load(config_path().as_deref())
        .map(|c| c.logging)
        .unwrap_or_else(|_| LoggingConfig {
            level: "warn".into(),
            ..LoggingConfig::default()
        });
    let filter = EnvFilter::try_from_env("RUST_LOG")
        .or_else(|_| EnvFilter::try_from_env("ORCHESTRATA_LOG"))
        .unwrap_or_else(|_| EnvFilter::new(logging.directive()));
    let json = match logging.format {
        LogFormat::Json => true,
        LogFormat::Text => false,
        LogFormat::Auto => !std::io::stderr().is_terminal(),
    };
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr);
    if json {
        builder.json().flatten_event(true).init();
    } else {
        builder.init();
    }
}

/// Whether `error` comes from writing to an output its reader closed.
fn output_closed(error: &anyhow::Error) -> bool {
    let broken = Some(std::io::ErrorKind::BrokenPipe);
    error.chain().any(|cause| {
        cause.downcast_ref::<std::io::Error>().map(|e| e.kind()) == broken
            // `show` writes its JSON through serde_json.
            || cause
                .downcast_ref::<serde_json::Error>()
                .and_then(|e| e.io_error_kind())
                == broken
    })
}

fn main() -> std::process::ExitCode {
    no_transparent_huge_pages();
    init_tracing();
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("error: cannot start the async runtime: {e}");
            return std::process::ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli)) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The reader of the output went away (`orchestrata replay ... | head`): what it
        // wanted was written; end quietly, as `cat` would.
        Err(e) if output_closed(&e) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            tracing::debug!(error = %format!("{e:#}"), "command failed");
            eprintln!("error: {e:#}");
            std::process::ExitCode::FAILURE
        }
    }
}
