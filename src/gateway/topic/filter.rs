//! Subscription and replay filters: every given field must match (AND).
//!
//! `volk_id` (or `volk_alias`) matches an event about that Volk (sender or recipient
//! of a packet); `subject` is a glob (`*`, `?`, `[abc]`) over the packet subject;
//! `thread_id`, `delivery_status`, `event_type`, `key` and `session_id` match exactly.

use globset::{Glob, GlobMatcher};
use serde_json::{Map, Value};

use super::facts::Facts;
use crate::gateway::error::RpcError;

/// A parsed filter set.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    volk: Option<String>,
    thread_id: Option<String>,
    subject: Option<(String, GlobMatcher)>,
    delivery_status: Option<String>,
    event_type: Option<String>,
    key: Option<String>,
    session_id: Option<String>,
    given: Map<String, Value>,
}

fn text(map: &Map<String, Value>, field: &str) -> Result<Option<String>, RpcError> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(RpcError::invalid_params(
            "invalid_filter",
            format!("filters.{field} must be a string"),
        )
        .with("field", format!("filters.{field}"))),
    }
}

impl Filter {
    /// Parses `filters` (absent or `null`: match everything). The params schema has
    /// already checked shapes; this compiles the glob and merges `volk_alias`.
    pub fn parse(filters: Option<&Value>) -> Result<Filter, RpcError> {
        let map = match filters {
            None | Some(Value::Null) => return Ok(Filter::default()),
            Some(Value::Object(map)) => map.clone(),
            Some(_) => {
                return Err(
                    RpcError::invalid_params("invalid_filter", "filters must be an object")
                        .with("field", "filters"),
                )
            }
        };
        let volk = match (text(&map, "volk_id")?, text(&map, "volk_alias")?) {
            (Some(a), Some(b)) if a != b => {
                return Err(RpcError::invalid_params(
                    "invalid_filter",
                    "filters.volk_id and filters.volk_alias disagree",
                )
                .with("field", "filters.volk_alias"))
            }
            (a, b) => a.or(b),
        };
        let subject = match text(&map, "subject")? {
            None => None,
            Some(pattern) => {
                let glob = Glob::new(&pattern).map_err(|e| {
                    RpcError::invalid_params(
                        "invalid_filter",
                        format!("filters.subject `{pattern}` is not a glob: {e}"),
                    )
                    .with("field", "filters.subject")
                })?;
                Some((pattern, glob.compile_matcher()))
            }
        };
        Ok(Filter {
            volk,
            thread_id: text(&map, "thread_id")?,
            subject,
            delivery_status: text(&map, "delivery_status")?,
            event_type: text(&map, "event_type")?,
            key: text(&map, "key")?,
            session_id: text(&map, "session_id")?,
            given: map,
        })
    }

    /// Whether an event with `facts` passes every filter.
    pub fn matches(&self, facts: &Facts) -> bool {
        if let Some(v) = &self.volk {
            if !facts.volks.iter().any(|x| x == v) {
                return false;
            }
        }
        if let Some(t) = &self.thread_id {
            if facts.thread_id.as_deref() != Some(t.as_str()) {
                return false;
            }
        }
        if let Some((_, glob)) = &self.subject {
            match &facts.subject {
                Some(s) if glob.is_match(s) => {}
                _ => return false,
            }
        }
        if let Some(d) = &self.delivery_status {
            if facts.delivery_status != Some(d.as_str()) {
                return false;
            }
        }
        if let Some(e) = &self.event_type {
            if facts.event_type != e {
                return false;
            }
        }
        if let Some(k) = &self.key {
            if &facts.key != k {
                return false;
            }
        }
        if let Some(s) = &self.session_id {
            if facts.session_id.as_deref() != Some(s.as_str()) {
                return false;
            }
        }
        true
    }

    /// Whether nothing is filtered.
    pub fn is_empty(&self) -> bool {
        self.given.is_empty()
    }

    /// The filters as given (the "active filter summary" of a subscription).
    pub fn summary(&self) -> Value {
        Value::Object(self.given.clone())
    }

    /// A canonical text of the filters, equal for equal filter sets (keys sorted).
    pub fn canonical(&self) -> String {
        let sorted: std::collections::BTreeMap<_, _> = self.given.iter().collect();
        serde_json::to_string(&sorted).unwrap_or_default()
    }
}
