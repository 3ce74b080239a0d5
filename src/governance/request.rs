//! What governance is asked and what it answers.

use std::collections::BTreeMap;
use std::time::Duration;

use orchestrata_schemas::events::types::{DecisionResult, SubjectKind};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

use super::term::{self, json_to_term, PlTerm};
use super::GovernanceError;

/// Actions whose resource is a message id (see [`Request::resource_term`]).
pub const MESSAGE_ID_ACTIONS: &[&str] = &["cxp.priority"];

/// May `subject` do `action` on `resource`?
///
/// The action names what is asked (`cxp.send`, `volk.register`, `gateway.execute`...),
/// the resource what it is asked on (a recipient alias, a method, a session id). The
/// context carries anything else the policy needs (`session`, `subject`, `priority`,
/// `parent`, `kind`); it becomes a Prolog list of `Key-Value` pairs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Request {
    /// Client or Volk.
    pub subject_kind: SubjectKind,
    /// Client id or Volk alias.
    pub subject: String,
    /// What is asked.
    pub action: String,
    /// What it is asked on.
    pub resource: String,
    /// Further facts of the request.
    #[serde(default)]
    pub context: BTreeMap<String, serde_json::Value>,
    /// Who is acting: the authenticated principal whose call or command this request
    /// judges. Not part of the goal (the policy decides on subject, action, resource
    /// and context; the cache key ignores it): it is recorded on the `decision recorded`
    /// event's envelope, so decisions can be searched by principal. Never read from
    /// client JSON (`serde(skip)`): only the gateway's authentication sets it.
    #[serde(skip)]
    pub principal: Option<String>,
}

impl Request {
    /// A request by a Volk.
    pub fn volk(alias: &str, action: &str, resource: &str) -> Self {
        Request::new(SubjectKind::Volk, alias, action, resource)
    }

    /// A request by a gateway client.
    pub fn client(id: &str, action: &str, resource: &str) -> Self {
        Request::new(SubjectKind::Client, id, action, resource)
    }

    fn new(kind: SubjectKind, subject: &str, action: &str, resource: &str) -> Self {
        Request {
            subject_kind: kind,
            subject: subject.to_owned(),
            action: action.to_owned(),
            resource: resource.to_owned(),
            context: BTreeMap::new(),
            principal: None,
        }
    }

    /// The same request, asked on behalf of principal `principal` (`None`: no principal).
    pub fn by(mut self, principal: Option<String>) -> Self {
        self.principal = principal;
        self
    }

    /// The same request with one more context entry.
    pub fn with(mut self, key: &str, value: impl Into<serde_json::Value>) -> Self {
        self.context.insert(key.to_owned(), value.into());
        self
    }

    /// Refuses empty subjects or actions and oversized fields.
    pub fn validate(&self) -> Result<(), GovernanceError> {
        for (field, value) in [
            ("subject", &self.subject),
            ("action", &self.action),
            ("resource", &self.resource),
        ] {
            if value.len() > 4096 {
                return Err(GovernanceError::InvalidRequest {
                    field,
                    reason: format!("{} bytes, at most 4096", value.len()),
                });
            }
        }
        if self.subject.is_empty() {
            return Err(GovernanceError::InvalidRequest {
                field: "subject",
                reason: "empty".into(),
            });
        }
        if self.action.is_empty() {
            return Err(GovernanceError::InvalidRequest {
                field: "action",
                reason: "empty".into(),
            });
        }
        Ok(())
    }

    /// The resource as the policy sees it: an atom, except a message id (the resource of
    /// `cxp.priority`), written as the packet facts write it ([`PlTerm::message_id`]).
    pub fn resource_term(&self) -> PlTerm {
        if MESSAGE_ID_ACTIONS.contains(&self.action.as_str()) {
            PlTerm::message_id(&self.resource)
        } else {
            PlTerm::atom(self.resource.clone())
        }
    }

    /// The subject as the policy sees it: `client(Id)` or `volk(Alias)`.
    pub fn subject_term(&self) -> PlTerm {
        let functor = match self.subject_kind {
            SubjectKind::Client => "client",
            SubjectKind::Volk => "volk",
        };
        PlTerm::compound(functor, vec![PlTerm::atom(self.subject.clone())])
    }

    /// The context as a Prolog list of `Key-Value` pairs (sorted by key).
    pub fn context_term(&self) -> PlTerm {
        PlTerm::List(
            self.context
                .iter()
                .map(|(k, v)| match as_string(k, v) {
                    Some(t) => PlTerm::pair(k.clone(), PlTerm::string(t)),
                    None => PlTerm::pair(k.clone(), json_to_term(v)),
                })
                .collect(),
        )
    }

    /// The goal as a term, `decide(Subject, Action, Resource, Context, Result)`. Its
    /// text is what [`goal_text`](Self::goal_text) writes without building it: the
    /// reference the written text is held to (the tests below, `benches/governance`).
    pub fn goal_term(&self) -> PlTerm {
        PlTerm::compound(
            "decide",
            vec![
                self.subject_term(),
                PlTerm::atom(self.action.clone()),
                self.resource_term(),
                self.context_term(),
                PlTerm::Var("Result".into()),
            ],
        )
    }

    /// The goal as recorded and shown to auditors, e.g.
    /// `decide(volk('U:Ox'),'cxp.send','U:Vz',[],Result)`.
    pub fn goal_text(&self) -> String {
        let mut goal = String::with_capacity(96);
        goal.push_str("decide(");
        self.write_args(&mut goal);
        goal.push_str(",Result)");
        goal
    }

    /// Appends the four arguments every goal about this request starts with —
    /// [`subject_term`](Self::subject_term), the action, [`resource_term`](Self::resource_term)
    /// and [`context_term`](Self::context_term), comma-separated — written straight
    /// into `out` instead of built as terms first: every decision writes them for the
    /// engine and again for its record (the same text, `tests` below).
    pub fn write_args(&self, out: &mut String) {
        let functor = match self.subject_kind {
            SubjectKind::Client => "client(",
            SubjectKind::Volk => "volk(",
        };
        out.push_str(functor);
        term::push_atom(out, &self.subject);
        out.push_str("),");
        term::push_atom(out, &self.action);
        out.push(',');
        if MESSAGE_ID_ACTIONS.contains(&self.action.as_str()) {
            PlTerm::message_id(&self.resource).write_to(out);
        } else {
            term::push_atom(out, &self.resource);
        }
        out.push_str(",[");
        for (i, (k, v)) in self.context.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            // `'-'(Key,Value)`: PlTerm::pair as written.
            out.push_str("'-'(");
            term::push_atom(out, k);
            out.push(',');
            match as_string(k, v) {
                Some(t) => term::push_string(out, t),
                None => term::push_json(out, v),
            }
            out.push(')');
        }
        out.push(']');
    }
}

/// A context value the policy gets as a Prolog string, not an atom: text that differs
/// per packet or thread. scryer keeps every atom in one table shared by all its
/// machines, which a renewal cannot free (the successor is built while the old machine
/// lives), so an atom per thread or per free-text subject would grow with the history
/// for good. Policies read the subject through `ctx_subject/2` (the default policy's
/// `cxp.pl`), which names it by its route without making an atom of it.
fn as_string<'a>(key: &str, value: &'a serde_json::Value) -> Option<&'a str> {
    match (key, value) {
        ("thread" | "subject", serde_json::Value::String(t)) => Some(t),
        _ => None,
    }
}

/// What the policy answered, before it is recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// allow, deny or escalate.
    pub result: DecisionResult,
    /// Rules on the decision path, in order.
    pub trace: Vec<String>,
    /// Constitutional articles applied.
    pub articles: Vec<String>,
    /// Whether the policy declared the action `cacheable/1`.
    pub cacheable: bool,
    /// The context keys the decision depends on, when the policy declared the action
    /// `cacheable_with/2` and the decision read no traffic fact: it may then be reused
    /// for the same subject, resource and values of these keys until a roster fact
    /// changes (`roster_cache.rs`). `None`: not reusable that way.
    pub roster_keys: Option<std::sync::Arc<[String]>>,
}

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Decision {
    /// Its id (also in the `decision recorded` event).
    pub decision_id: Uuid,
    /// allow, deny or escalate.
    pub result: DecisionResult,
    /// Rules on the decision path (`fail_closed` when the engine failed).
    pub trace: Vec<String>,
    /// Constitutional articles applied.
    pub articles: Vec<String>,
    /// Hash of the policy that decided.
    pub policy_hash: String,
    /// Evaluation time.
    pub latency: Duration,
    /// True when the answer came from the decision cache.
    pub cached: bool,
    /// The Prolog or engine error behind a fail-closed deny (ERR-011, ERR-016).
    pub error: Option<String>,
    /// Sequence of the `decision recorded` event in `governance.decisions`.
    pub sequence: u64,
}

impl Decision {
    /// True when the action may proceed.
    pub fn allowed(&self) -> bool {
        self.result == DecisionResult::Allow
    }
}

/// The `query` field of a `decision recorded` event: everything an auditor needs to
/// evaluate the decision again (JSON text in the event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RecordedQuery {
    /// The Prolog goal, for people.
    pub goal: String,
    /// Client or Volk.
    pub subject_kind: SubjectKind,
    /// The request context.
    #[serde(default)]
    pub context: BTreeMap<String, serde_json::Value>,
    /// Per fact stream, how many events the facts view had folded.
    #[serde(default)]
    pub facts_at: BTreeMap<String, u64>,
    /// The packet window the facts view kept (absent: every packet, as before windows
    /// existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fact_window: Option<u64>,
    /// Set when the engine failed: `prolog` (deterministic, re-evaluable) or `engine`
    /// (unavailable or timed out; not re-evaluable).
    #[serde(default)]
    pub error_kind: Option<String>,
    /// The action the policy was asked, when the decision names another: the gateway
    /// records the method it authorized and asks `gateway.execute` (or
    /// `gateway.subscribe`) about it. Absent: the decision's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_action: Option<String>,
    /// The resource asked with [`asked_action`](Self::asked_action).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub asked_resource: Option<String>,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::{json, Value};

    use super::*;

    /// The goal as it was built before `write_args`: terms first, then their text.
    fn built(request: &Request) -> String {
        request.goal_term().to_string()
    }

    fn value() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|i| json!(i)),
            any::<f64>().prop_map(|f| json!(f)),
            ".{0,12}".prop_map(Value::String),
        ];
        leaf.prop_recursive(2, 8, 3, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..3).prop_map(Value::Array),
                proptest::collection::btree_map(".{0,6}", inner, 0..3)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    fn key() -> impl Strategy<Value = String> {
        prop_oneof![
            Just("thread".to_owned()),
            Just("subject".to_owned()),
            ".{0,8}"
        ]
    }

    // ISSUE-15: goals written straight into text say exactly what the terms said
    #[test]
    fn written_goals_equal_built_ones() {
        let mut r = Request::volk("U:Ox", "cxp.send", "U:Vz")
            .with("thread", "t-1")
            .with("subject", "it's \u{2028}")
            .with("scope", "read_write")
            .with("n", -3);
        assert_eq!(r.goal_text(), built(&r));
        r.action = "cxp.priority".into();
        r.resource = "0199a0b2-7c1d-7e3f-8a9b-0c1d2e3f4a5b".into();
        assert_eq!(r.goal_text(), built(&r));
        assert!(r.goal_text().contains("id("), "{}", r.goal_text());
    }

    proptest! {
        // ISSUE-15: any subject, action, resource or context (any Unicode, nested
        // JSON) is written as the terms were
        #[test]
        fn any_request_is_written_as_its_terms(
            client in any::<bool>(),
            subject in ".{0,12}",
            action in prop_oneof![Just("cxp.priority".to_owned()), ".{0,10}"],
            resource in ".{0,40}",
            context in proptest::collection::btree_map(key(), value(), 0..4),
        ) {
            let mut r = if client {
                Request::client(&subject, &action, &resource)
            } else {
                Request::volk(&subject, &action, &resource)
            };
            r.context = context;
            prop_assert_eq!(r.goal_text(), built(&r));
        }
    }
}
