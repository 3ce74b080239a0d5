//! The `orchestrata` command line.
