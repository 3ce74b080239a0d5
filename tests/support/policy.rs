//! Test policies: the shipped default policy plus the principals a site would register
//! for the `prolog_policy` strategy (`tests/fixtures/policy/clients.pl`). The shipped
//! policy registers none, so tests of policy-admitted clients load one of these.

use orchestrata::governance::{Policy, PolicyFile};

/// The test principals: `ops-admin` (admin), `operator` (read_write, acts as U:Cx),
/// `dashboard` (read_only), `suspended-operator`.
pub const CLIENTS_PL: &str = include_str!("../fixtures/policy/clients.pl");

/// The default policy plus `clients.pl`.
pub fn with_clients() -> Policy {
    edited(|_| {})
}

/// The default policy plus `clients.pl`, after `edit` changed the files (`clients.pl`
/// is the last one).
pub fn edited(edit: impl FnOnce(&mut Vec<PolicyFile>)) -> Policy {
    let mut files = Policy::default_policy().files().to_vec();
    files.push(PolicyFile {
        name: "clients.pl".into(),
        text: CLIENTS_PL.into(),
    });
    edit(&mut files);
    Policy::from_files("test:clients", files)
}
