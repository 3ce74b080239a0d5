//! The server process allocates through jemalloc with its background threads on
//! (`src/main.rs`, the `jemalloc` module): the real binary is started as
//! `orchestrata up` on a temp data dir and a free loopback port, and its threads are
//! read from `/proc/<pid>/task`. Background threads are how freed pages go back to
//! the system while the server is idle; a build that lost the compile-time options
//! (or the allocator) has none.

mod support;

use support::up::Up;

/// The names of process `pid`'s threads.
fn thread_names(pid: i32) -> Vec<String> {
    let tasks = std::fs::read_dir(format!("/proc/{pid}/task")).expect("list the threads");
    tasks
        .map(|t| {
            let path = t.expect("a thread entry").path().join("comm");
            std::fs::read_to_string(path)
                .expect("read a thread's name")
                .trim()
                .to_owned()
        })
        .collect()
}

/// How many of an `up` started with `env` are jemalloc's background threads.
fn background_threads_of_up(env: &[(&str, &str)]) -> usize {
    let names = Up::observe(env, thread_names);
    names.iter().filter(|n| *n == "jemalloc_bg_thd").count()
}

// ISSUE-15
#[test]
fn up_returns_freed_pages_on_jemalloc_background_threads() {
    assert!(
        background_threads_of_up(&[]) > 0,
        "no jemalloc background thread: the binary's allocator options are not in effect"
    );
}

// ISSUE-15: the environment still overrides the compiled-in options.
#[test]
fn rjem_malloc_conf_can_turn_them_off() {
    assert_eq!(
        background_threads_of_up(&[("_RJEM_MALLOC_CONF", "background_thread:false")]),
        0,
        "_RJEM_MALLOC_CONF=background_thread:false was not honoured"
    );
}
