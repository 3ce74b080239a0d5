//! The standard roster of spec 005: the Volks every Orchestrata starts with.

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::EventRecord;

use chrono::{DateTime, Utc};

/// (alias, role, capabilities). `U:Ox` heads the hierarchy; every other agent Volk
/// reports to it. `U:GW`, the gateway's operator Volk, is a second root: the operator
/// (`orchestrata up`'s token) acts as it, and the default policy lets it address every
/// Volk (`operator_volk/1` in `policies/default/cxp.pl`).
pub const STANDARD_ROSTER: [(&str, &str, &[&str]); 9] = [
    (
        "U:Ox",
        "Orchestrator",
        &["orchestrate", "delegate", "escalation"],
    ),
    ("U:PS", "Postman", &["deliver", "queue", "retry"]),
    ("U:Vz", "VizInt", &["generate_code", "apply_fixes"]),
    ("U:Qa", "QA", &["review_code", "test"]),
    ("U:Ar", "Architect", &["design", "decide"]),
    ("U:Ux", "UX", &["design_ui", "usability"]),
    ("U:PM", "PM", &["plan", "track"]),
    ("U:Cx", "Concierge", &["intake", "user_contact"]),
    ("U:GW", "Operator", &["operate", "observe"]),
];

/// The operator Volk: the gateway's operator (the `orchestrata up` token) acts as it.
pub const OPERATOR_VOLK: &str = "U:GW";

/// Whether `alias` is a root of the standard roster (reports to no other Volk).
fn is_root(alias: &str) -> bool {
    alias == "U:Ox" || alias == OPERATOR_VOLK
}

/// The `volk.lifecycle` `registered` records of the standard roster, stamped `at`.
pub fn roster_records(at: DateTime<Utc>) -> Vec<EventRecord> {
    missing_records(at, |_| false)
}

/// The `registered` records of the roster Volks `known` does not know, stamped `at`:
/// a log from before a Volk joined the roster (the operator Volk `U:GW`) gets it at
/// its next start.
pub fn missing_records(at: DateTime<Utc>, known: impl Fn(&str) -> bool) -> Vec<EventRecord> {
    STANDARD_ROSTER
        .iter()
        .filter(|(alias, _, _)| !known(alias))
        .map(|(alias, role, caps)| {
            let event = VolkRegistered {
                alias: (*alias).to_owned(),
                capabilities: caps.iter().map(|c| (*c).to_owned()).collect(),
                parent: (!is_root(alias)).then(|| "U:Ox".to_owned()),
                protocols: vec!["cxp/1.0".into()],
                session_id: None,
                metadata: Json(serde_json::json!({ "role": role, "roster": "standard" })),
            };
            EventRecord::new("kernel", *alias, event, at)
        })
        .collect()
}
