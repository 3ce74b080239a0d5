//! The standard roster of spec 005: the Volks every Orchestrata starts with.

use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::volk_lifecycle::VolkRegistered;
use orchestrata_schemas::events::EventRecord;

use chrono::{DateTime, Utc};

/// (alias, role, capabilities). `U:Ox` heads the hierarchy; every other Volk reports to it.
pub const STANDARD_ROSTER: [(&str, &str, &[&str]); 8] = [
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
];

/// The `volk.lifecycle` `registered` records of the standard roster, stamped `at`.
pub fn roster_records(at: DateTime<Utc>) -> Vec<EventRecord> {
    STANDARD_ROSTER
        .iter()
        .map(|(alias, role, caps)| {
            let event = VolkRegistered {
                alias: (*alias).to_owned(),
                capabilities: caps.iter().map(|c| (*c).to_owned()).collect(),
                parent: (*alias != "U:Ox").then(|| "U:Ox".to_owned()),
                protocols: vec!["cxp/1.0".into()],
                session_id: None,
                metadata: Json(serde_json::json!({ "role": role, "roster": "standard" })),
            };
            EventRecord::new("kernel", *alias, event, at)
        })
        .collect()
}
