//! The server process runs without transparent huge pages unless told otherwise
//! (`src/main.rs`, `no_transparent_huge_pages`): the real binary is started as
//! `orchestrata up` on a temp data dir and a free loopback port, and the kernel's own
//! account of the process (`THP_enabled` in `/proc/<pid>/status`) is read.

mod support;

use support::up::Up;

/// `THP_enabled` of process `pid`: 0 once it called `prctl(PR_SET_THP_DISABLE)`.
fn thp_enabled(pid: i32) -> u8 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("read status");
    let line = status
        .lines()
        .find(|l| l.starts_with("THP_enabled:"))
        .expect("the kernel reports THP_enabled (Linux 5.0 or later)");
    line["THP_enabled:".len()..]
        .trim()
        .parse()
        .expect("THP_enabled is a number")
}

/// `THP_enabled` of an `up` started with `env`, read while it runs.
fn thp_enabled_of_up(env: &[(&str, &str)]) -> u8 {
    Up::observe(env, thp_enabled)
}

#[test]
fn up_turns_transparent_huge_pages_off_by_default() {
    assert_eq!(thp_enabled_of_up(&[]), 0, "huge pages still on");
}

#[test]
fn orchestrata_allow_thp_keeps_them() {
    assert_eq!(
        thp_enabled_of_up(&[("ORCHESTRATA_ALLOW_THP", "1")]),
        1,
        "ORCHESTRATA_ALLOW_THP=1 was not honoured"
    );
}
