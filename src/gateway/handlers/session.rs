//! `session.list`, `session.get`, `session.portfolio.stats` (read the sessions view) and
//! `session.open`, `session.close` (read_write kernel commands, answered once the
//! sessions view has applied them) (REQ-014-051..055, REQ-014-061..068, REQ-014-070).
//!
//! A session's state is what `session.events` says: the kernel appends `opened` and
//! `closed` (closing also archives the session's resolved packets and carries its
//! unresolved packets and active threads over), `session.open` records a given
//! `context` as `context_updated`, and the sessions view folds them. Portfolio
//! statistics are folded here from the same states, so a time range can narrow them.

use chrono::{DateTime, Utc};
use orchestrata_projections::session::{SessionState, SessionStatus};
use orchestrata_projections::PageRequest;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::{CommandKind, Stream};
use serde::Deserialize;
use serde_json::{json, Map, Value};
use uuid::Uuid;

use crate::gateway::backends::{self, Views};
use crate::gateway::error::RpcError;
use crate::gateway::idempotency::IdempotencyKey;
use crate::gateway::methods::RpcResult;
use crate::gateway::owner;
use crate::gateway::state::Call;
use crate::kernel::cmd;

/// Page size of `session.list` when the caller gives no `limit`.
pub const DEFAULT_LIMIT: usize = 50;

/// The portfolio of a session opened without one.
pub const DEFAULT_PORTFOLIO: &str = "default";

/// Every page of the view at once: list filters beyond status are applied here.
const ALL: PageRequest = PageRequest {
    after: None,
    limit: usize::MAX,
};

/// Milliseconds as fractional seconds.
fn seconds(ms: i64) -> f64 {
    ms as f64 / 1000.0
}

/// Time spent open: the closed periods the view summed, plus the current open period
/// up to `now` (the view counts an open period only once it closes).
fn open_ms(s: &SessionState, now: DateTime<Utc>) -> i64 {
    let current = match s.status {
        SessionStatus::Closed => 0,
        SessionStatus::Open => s
            .status_history
            .iter()
            .rev()
            .find(|t| t.status == SessionStatus::Open)
            .map_or(0, |t| (now - t.at).num_milliseconds().max(0)),
    };
    s.duration_ms + current
}

/// The entry of `session.list`: id, portfolio, status, times, goals (REQ-014-052).
fn summary_json(s: &SessionState) -> Value {
    json!({
        "session_id": s.session_id,
        "portfolio_id": s.portfolio_id,
        "status": s.status,
        "opened_at": s.opened_at,
        "closed_at": s.closed_at,
        "opened_by": s.opened_by,
        "goals": s.goals,
    })
}

/// The full state of `session.get` (REQ-014-054): the view's state plus the contract's
/// names `carryover_tasks` and `duration_seconds` (live for an open session).
fn state_json(s: &SessionState, now: DateTime<Utc>) -> RpcResult {
    let mut value =
        serde_json::to_value(s).map_err(|e| RpcError::internal("encoding_failed", e))?;
    if let Value::Object(map) = &mut value {
        map.insert("carryover_tasks".into(), json!(s.carryover));
        map.insert("duration_seconds".into(), json!(seconds(open_ms(s, now))));
    }
    Ok(value)
}

/// The context key a `session.close` `status` is recorded under.
pub const CLOSE_STATUS: &str = "close_status";

/// Ok when the caller owns session `id` (it opened it) or is an admin; -32001
/// `not_owner` otherwise; an unknown session is left to the kernel (and governance)
/// to refuse as before. Waits until the sessions view has folded the log's end, so a
/// session opened just before counts.
pub(super) async fn owned(call: &Call, views: &Views, id: &str) -> Result<(), RpcError> {
    views
        .catch_up(&views.sessions, Stream::SessionEvents)
        .await?;
    let owner = match views.sessions.read().session(id) {
        Some(s) => s.owner.clone(),
        None => return Ok(()),
    };
    owner::require(call, &format!("session {id}"), owner.as_deref())
}

/// The session `id`, or -32602 `unknown_session` naming the field.
pub(super) fn find<'v>(
    sessions: &'v orchestrata_projections::SessionView,
    id: &str,
) -> Result<&'v SessionState, RpcError> {
    sessions.session(id).ok_or_else(|| {
        RpcError::invalid_params("unknown_session", format!("no session `{id}`"))
            .with("field", "session_id")
    })
}

#[derive(Deserialize)]
struct ListParams {
    portfolio_id: Option<String>,
    status: Option<SessionStatus>,
    opened_by: Option<String>,
    #[serde(default)]
    offset: usize,
    limit: Option<usize>,
}

/// Sessions in the order they were opened, filtered by `portfolio_id`, `status` and
/// `opened_by` (AND), `offset`/`limit` paginated, with `total` matches.
pub async fn list(call: Call) -> RpcResult {
    let p: ListParams = call.parse()?;
    let views = backends::views(&call)?;
    let limit = p.limit.unwrap_or(DEFAULT_LIMIT);
    let sessions = views.sessions.read();
    let matching: Vec<&SessionState> = sessions
        .sessions(p.status, &ALL)
        .items
        .into_iter()
        .filter(|s| {
            p.portfolio_id
                .as_ref()
                .is_none_or(|id| *id == s.portfolio_id)
        })
        .filter(|s| p.opened_by.as_ref().is_none_or(|by| *by == s.opened_by))
        .collect();
    let total = matching.len();
    let page: Vec<Value> = matching
        .into_iter()
        .skip(p.offset)
        .take(limit)
        .map(summary_json)
        .collect();
    Ok(json!({
        "sessions": page,
        "total": total,
        "offset": p.offset,
        "limit": limit,
        "has_more": p.offset.saturating_add(limit) < total,
    }))
}

/// One session's full state; an unknown id is -32602 `unknown_session`.
pub async fn get(call: Call) -> RpcResult {
    let id = call.params["session_id"].as_str().unwrap_or_default();
    let views = backends::views(&call)?;
    let sessions = views.sessions.read();
    state_json(find(&sessions, id)?, Utc::now())
}

#[derive(Deserialize)]
struct OpenParams {
    session_id: Option<String>,
    portfolio: Option<String>,
    #[serde(default)]
    goals: Vec<String>,
    context: Option<Map<String, Value>>,
}

/// Opens a session through the kernel (issued by the calling client, so governed and on
/// the log); answers once the sessions view holds it.
///
/// A non-empty `context` (the spec's `session.open` param) becomes the session's first
/// `context_updated` event (a JSON merge patch of the empty context): the gateway issues
/// the kernel's `update_session_context` right after `open_session`, by the same
/// principal, and answers once the sessions view folded it (`session.get` shows it). The
/// kernel appends it, as every event of the streams it folds, in a split deployment too.
/// With an `idempotency_key` the update's command id derives from the key, so a repeat
/// records the context once — also when the first attempt stopped between the two.
pub async fn open(call: Call) -> RpcResult {
    let p: OpenParams = call.parse()?;
    let views = backends::views(&call)?;
    let key = IdempotencyKey::of(&call)?;
    let session_id = p.session_id.unwrap_or_else(|| {
        key.map_or_else(Uuid::new_v4, |k| k.derive("session_id"))
            .to_string()
    });
    let portfolio_id = p.portfolio.unwrap_or_else(|| DEFAULT_PORTFOLIO.to_owned());
    let command = cmd::command(
        &call.client_id(),
        CommandKind::OpenSession {
            session_id: session_id.clone(),
            portfolio_id,
            goals: p.goals,
        },
    );
    let outcome = backends::execute(&call, command).await?;
    views
        .settle(&views.sessions, &outcome, Stream::SessionEvents)
        .await?;
    let mut last = outcome.last_sequence(Stream::SessionEvents);
    if let Some(context) = p.context.filter(|c| !c.is_empty()) {
        let mut update = cmd::command(
            &call.client_id(),
            CommandKind::UpdateSessionContext {
                session_id: session_id.clone(),
                patch: Json(Value::Object(context)),
            },
        );
        if let Some(key) = key {
            update.id = key.derive("session_context");
        }
        let updated = backends::execute_as(&call, update).await?;
        views
            .settle(&views.sessions, &updated, Stream::SessionEvents)
            .await?;
        last = updated.last_sequence(Stream::SessionEvents).or(last);
    }
    tracing::info!(%session_id, "session opened");
    let sessions = views.sessions.read();
    let s = find(&sessions, &session_id)?;
    Ok(json!({
        "session_id": s.session_id,
        "status": s.status,
        "opened_at": s.opened_at,
        "portfolio_id": s.portfolio_id,
        "goals": s.goals,
        "context": s.context,
        "sequence": last,
    }))
}

#[derive(Deserialize)]
struct CloseParams {
    session_id: String,
    status: Option<String>,
    summary: Option<String>,
    #[serde(default)]
    carryover_tasks: Vec<String>,
}

/// Closes a session through the kernel; answers its status, duration, close time,
/// summary and the tasks carried over (the caller's, then the kernel's
/// `packet:<id>` / `thread:<id>` entries). Unknown: `unknown_session`; already closed:
/// `session_closed` (both -32602); another principal's session: -32001 `not_owner`.
/// A `status` the caller gives is recorded first as the context's `close_status`.
pub async fn close(call: Call) -> RpcResult {
    let p: CloseParams = call.parse()?;
    let views = backends::views(&call)?;
    owned(&call, &views, &p.session_id).await?;
    let open = views
        .sessions
        .read()
        .session(&p.session_id)
        .is_some_and(|s| s.status == SessionStatus::Open);
    // An unknown or closed session is refused by the close itself, as before.
    if let Some(status) = p.status.filter(|s| open && s != "closed") {
        let mut record = cmd::command(
            &call.client_id(),
            CommandKind::UpdateSessionContext {
                session_id: p.session_id.clone(),
                patch: Json(json!({ CLOSE_STATUS: status })),
            },
        );
        if let Some(key) = IdempotencyKey::of(&call)? {
            record.id = key.derive("close_status");
        }
        backends::execute_as(&call, record).await?;
    }
    let command = cmd::command(
        &call.client_id(),
        CommandKind::CloseSession {
            session_id: p.session_id.clone(),
            summary: p.summary.unwrap_or_default(),
            carryover: p.carryover_tasks,
        },
    );
    let outcome = backends::execute(&call, command).await?;
    views
        .settle(&views.sessions, &outcome, Stream::SessionEvents)
        .await?;
    tracing::info!(session_id = %p.session_id, "session closed");
    let sessions = views.sessions.read();
    let s = find(&sessions, &p.session_id)?;
    Ok(json!({
        "session_id": s.session_id,
        "status": s.status,
        "duration_seconds": seconds(s.duration_ms),
        "closed_at": s.closed_at,
        "summary": s.summary,
        "carryover_tasks": s.carryover,
        "sequence": outcome.last_sequence(Stream::SessionEvents),
    }))
}

/// Statistics of a set of sessions (REQ-014-067): a *completed* session is a closed
/// one that carried nothing over; `completion_rate` = completed / closed (0 when none
/// closed); durations count closed open-periods only, as the view does, so the figures
/// do not move with the wall clock.
#[derive(Default)]
struct Stats {
    total: u64,
    active: u64,
    closed: u64,
    completed: u64,
    duration_ms: i64,
}

impl Stats {
    fn add(&mut self, s: &SessionState) {
        self.total += 1;
        self.duration_ms += s.duration_ms;
        match s.status {
            SessionStatus::Open => self.active += 1,
            SessionStatus::Closed => {
                self.closed += 1;
                if s.carryover.is_empty() {
                    self.completed += 1;
                }
            }
        }
    }

    fn to_json(&self) -> Value {
        let (rate, mean_ms) = if self.closed == 0 {
            (0.0, 0)
        } else {
            (
                self.completed as f64 / self.closed as f64,
                self.duration_ms / self.closed as i64,
            )
        };
        json!({
            "total_sessions": self.total,
            "active_count": self.active,
            "closed_count": self.closed,
            "completed_count": self.completed,
            "completion_rate": rate,
            "total_duration_seconds": seconds(self.duration_ms),
            "mean_duration_seconds": seconds(mean_ms),
        })
    }
}

#[derive(Deserialize)]
struct StatsParams {
    portfolio_id: Option<String>,
    date_from: Option<DateTime<Utc>>,
    date_to: Option<DateTime<Utc>>,
}

/// Portfolio statistics over sessions opened in `[date_from, date_to)`: one portfolio
/// (an unknown one is -32602 `unknown_portfolio`), or all of them with a
/// `by_portfolio` breakdown. Computed from the live view on every call.
pub async fn portfolio_stats(call: Call) -> RpcResult {
    let p: StatsParams = call.parse()?;
    if let (Some(from), Some(to)) = (p.date_from, p.date_to) {
        if from > to {
            return Err(RpcError::invalid_params(
                "invalid_range",
                format!("date_from {from} is after date_to {to}"),
            )
            .with("field", "date_from"));
        }
    }
    let views: Views = backends::views(&call)?;
    let sessions = views.sessions.read();
    if let Some(id) = &p.portfolio_id {
        if sessions.portfolio(id).is_none() {
            return Err(RpcError::invalid_params(
                "unknown_portfolio",
                format!("no session was ever opened in portfolio `{id}`"),
            )
            .with("field", "portfolio_id"));
        }
    }
    let mut overall = Stats::default();
    let mut by_portfolio: std::collections::BTreeMap<&str, Stats> = Default::default();
    for s in sessions.sessions(None, &ALL).items {
        let selected = p
            .portfolio_id
            .as_ref()
            .is_none_or(|id| *id == s.portfolio_id)
            && p.date_from.is_none_or(|from| s.opened_at >= from)
            && p.date_to.is_none_or(|to| s.opened_at < to);
        if selected {
            overall.add(s);
            by_portfolio.entry(&s.portfolio_id).or_default().add(s);
        }
    }
    let mut answer = overall.to_json();
    if let Value::Object(map) = &mut answer {
        map.insert("portfolio_id".into(), json!(p.portfolio_id));
        map.insert("date_from".into(), json!(p.date_from));
        map.insert("date_to".into(), json!(p.date_to));
        if p.portfolio_id.is_none() {
            let breakdown: Map<String, Value> = by_portfolio
                .iter()
                .map(|(id, stats)| ((*id).to_owned(), stats.to_json()))
                .collect();
            map.insert("by_portfolio".into(), Value::Object(breakdown));
        }
    }
    Ok(answer)
}
