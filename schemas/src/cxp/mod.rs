//! The CXP packet (spec 004).
