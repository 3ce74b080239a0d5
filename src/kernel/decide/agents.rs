//! Agent commands (spec 005): spawn a junior, terminate a subtree, escalate.
//!
//! The hierarchy lives in [`orchestrata_projections::agents::AgentTree`] (folded with the rest of the
//! state); these functions only validate and say which events follow. Governance has
//! already been asked (`volk.register` with `kind = junior`, `volk.deregister`,
//! `cxp.escalate`) when the kernel runs with it.

use orchestrata_schemas::cxp::{CxpPacket, Priority, VolkAlias};
use orchestrata_schemas::events::cxp_traffic::{PacketSent, ThreadOpened};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::volk_lifecycle::{
    HumanEscalationQueued, HumanEscalationResolved, VolkEscalated, VolkRegistered, VolkSpawned,
    VolkTerminated,
};
use orchestrata_schemas::events::EventRecord;

use super::{non_empty, Ctx};
use crate::kernel::convert::{self, SESSION_KEY};
use crate::kernel::postman::POSTMAN;
use crate::kernel::state::{SessionStatus, ThreadStatus};
use crate::kernel::KernelError;
use orchestrata_projections::agents::limits::{
    deadline, DRIVERS, ESCALATION_SUBJECT, HUMAN, MAX_DEPTH, MAX_JUNIORS, MAX_LIFESPAN_MS,
    TERMINATED_SUBJECT,
};
use orchestrata_projections::agents::{AgentKind, JUNIOR};

/// What `spawn_volk` asks for.
pub(super) struct Spawn<'a> {
    pub alias: &'a str,
    pub parent: &'a str,
    pub driver: &'a str,
    pub purpose: &'a str,
    pub scope: &'a [String],
    pub lifespan_ms: Option<i64>,
    pub task_id: Option<&'a str>,
    pub session_id: Option<&'a str>,
}

/// `spawn_volk`: a junior under a live senior, within depth, junior and scope limits.
pub(super) fn spawn(cx: &Ctx<'_>, s: Spawn<'_>) -> Result<Vec<EventRecord>, KernelError> {
    VolkAlias::parse_field(s.alias, "alias")
        .map_err(|e| KernelError::invalid("alias", e.to_string()))?;
    non_empty("purpose", s.purpose)?;
    if !DRIVERS.contains(&s.driver) {
        return Err(KernelError::invalid(
            "driver",
            format!("`{}` is not one of cli, api, browser", s.driver),
        ));
    }
    if cx.state.volk(s.alias).is_some_and(|v| v.registered) {
        return Err(KernelError::VolkExists {
            alias: s.alias.to_owned(),
        });
    }
    let tree = cx.state.agents();
    let parent = tree
        .live(s.parent)
        .ok_or_else(|| KernelError::UnknownVolk {
            field: "parent",
            alias: s.parent.to_owned(),
        })?;
    if parent.kind == AgentKind::Junior {
        return Err(KernelError::invalid(
            "parent",
            format!(
                "`{}` is a junior Volk and cannot spawn (005 Article XII)",
                s.parent
            ),
        ));
    }
    if tree.depth(s.parent) + 1 > MAX_DEPTH {
        return Err(KernelError::invalid(
            "parent",
            format!(
                "a child of `{}` would exceed the depth limit {MAX_DEPTH} (005 Article VI)",
                s.parent
            ),
        ));
    }
    if tree.live_juniors_of(s.parent) >= MAX_JUNIORS {
        return Err(KernelError::invalid(
            "parent",
            format!(
                "`{}` already has {MAX_JUNIORS} live juniors (005 Article XII)",
                s.parent
            ),
        ));
    }
    if let Some(outside) = s.scope.iter().find(|c| !parent.scope.contains(*c)) {
        return Err(KernelError::invalid(
            "scope",
            format!(
                "capability `{outside}` is outside the scope of `{}` (005 Article II)",
                s.parent
            ),
        ));
    }
    let bindings = [
        s.lifespan_ms.is_some(),
        s.task_id.is_some(),
        s.session_id.is_some(),
    ];
    if bindings.iter().filter(|b| **b).count() != 1 {
        return Err(KernelError::invalid(
            "lifespan_ms",
            "exactly one of lifespan_ms, task_id, session_id binds the junior's lifespan",
        ));
    }
    if let Some(ms) = s.lifespan_ms {
        if ms <= 0 {
            return Err(KernelError::invalid("lifespan_ms", "must be positive"));
        }
        if ms > MAX_LIFESPAN_MS || deadline(cx.now, ms).is_none() {
            return Err(KernelError::invalid(
                "lifespan_ms",
                format!("at most {MAX_LIFESPAN_MS} ms (365 days)"),
            ));
        }
    }
    if let Some(task) = s.task_id {
        non_empty("task_id", task)?;
    }
    if let Some(session) = s.session_id {
        match cx.state.session(session) {
            Some(st) if st.status == SessionStatus::Open => {}
            Some(_) => {
                return Err(KernelError::SessionClosed {
                    session_id: session.to_owned(),
                })
            }
            None => {
                return Err(KernelError::UnknownSession {
                    session_id: session.to_owned(),
                })
            }
        }
    }
    let metadata = serde_json::json!({
        "kind": JUNIOR,
        "driver": s.driver,
        "purpose": s.purpose,
        "task_id": s.task_id,
        "session_id": s.session_id,
    });
    let registered = VolkRegistered {
        alias: s.alias.to_owned(),
        capabilities: s.scope.to_vec(),
        parent: Some(s.parent.to_owned()),
        protocols: vec!["cxp/1.0".into()],
        session_id: s.session_id.map(str::to_owned),
        metadata: Json(metadata),
    };
    let spawned = VolkSpawned {
        alias: s.alias.to_owned(),
        parent: s.parent.to_owned(),
        driver: s.driver.to_owned(),
        purpose: s.purpose.to_owned(),
        lifespan_ms: s.lifespan_ms,
    };
    Ok(vec![
        cx.record(s.alias, registered),
        cx.record(s.alias, spawned),
    ])
}

/// `terminate_volk`: the Volk and its live subtree (deepest first); its parent, if
/// live, gets a `volk_terminated` packet from the Postman.
pub(super) fn terminate(
    cx: &Ctx<'_>,
    alias: &str,
    reason: &str,
) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("reason", reason)?;
    let tree = cx.state.agents();
    let node = tree.live(alias).ok_or_else(|| KernelError::UnknownVolk {
        field: "alias",
        alias: alias.to_owned(),
    })?;
    let mut records = Vec::new();
    for child in tree.subtree(alias) {
        let parent = tree
            .node(&child)
            .and_then(|n| n.parent.clone())
            .unwrap_or_else(|| "none".into());
        records.push(cx.record(
            &child,
            VolkTerminated {
                alias: child.clone(),
                parent,
                reason: format!("parent_terminated: {alias}"),
            },
        ));
    }
    let parent = node.parent.clone();
    records.push(cx.record(
        alias,
        VolkTerminated {
            alias: alias.to_owned(),
            parent: parent.clone().unwrap_or_else(|| "none".into()),
            reason: reason.to_owned(),
        },
    ));
    if let Some(parent) = parent.filter(|p| tree.live(p).is_some() && p != POSTMAN) {
        let body = serde_json::json!({ "alias": alias, "reason": reason });
        records.extend(notice(
            cx,
            POSTMAN,
            &parent,
            TERMINATED_SUBJECT,
            body,
            None,
        )?);
    }
    Ok(records)
}

/// What `escalate_volk` asks for.
pub(super) struct Escalate<'a> {
    pub alias: &'a str,
    pub to: &'a str,
    pub path: &'a [String],
    pub reason: &'a str,
    pub thread_id: Option<&'a str>,
    pub context: &'a Json,
}

/// `escalate_volk`: one hop up. The target must be the next live ancestor on the path
/// (or `human` beyond a root); a Volk target gets the context in an `escalation`
/// packet, the human gets a queue entry.
pub(super) fn escalate(cx: &Ctx<'_>, e: Escalate<'_>) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("reason", e.reason)?;
    let tree = cx.state.agents();
    let node = tree.live(e.alias).ok_or_else(|| KernelError::UnknownVolk {
        field: "alias",
        alias: e.alias.to_owned(),
    })?;
    if !matches!(
        e.context.0,
        serde_json::Value::Object(_) | serde_json::Value::Null
    ) {
        return Err(KernelError::invalid("context", "must be a JSON object"));
    }
    if e.path.last().map(String::as_str) != Some(e.to) || !e.path.iter().any(|p| p == e.alias) {
        return Err(KernelError::invalid(
            "path",
            "must contain the escalating Volk and end with the target",
        ));
    }
    let live_parent = node.parent.as_deref().filter(|p| tree.live(p).is_some());
    if e.to == HUMAN {
        if let Some(p) = live_parent {
            return Err(KernelError::invalid(
                "to",
                format!(
                    "`{}` has a live parent `{p}`: escalate to it first",
                    e.alias
                ),
            ));
        }
    } else if !tree.ancestors(e.alias).iter().any(|a| a == e.to) || tree.live(e.to).is_none() {
        return Err(KernelError::invalid(
            "to",
            format!(
                "`{}` is not a live ancestor of `{}` (005 Article IX)",
                e.to, e.alias
            ),
        ));
    }
    let mut records = vec![cx.record(
        e.alias,
        VolkEscalated {
            alias: e.alias.to_owned(),
            escalated_to: e.to.to_owned(),
            path: e.path.to_vec(),
            reason: e.reason.to_owned(),
            thread_id: e.thread_id.map(str::to_owned),
        },
    )];
    if e.to == HUMAN {
        let id = cx.command_id.unwrap_or_else(uuid::Uuid::new_v4).to_string();
        records.push(cx.record(
            e.alias,
            HumanEscalationQueued {
                escalation_id: id,
                alias: e.alias.to_owned(),
                path: e.path.to_vec(),
                reason: e.reason.to_owned(),
                thread_id: e.thread_id.map(str::to_owned),
                context: e.context.clone(),
            },
        ));
    } else {
        let body = serde_json::json!({
            "reason": e.reason,
            "path": e.path,
            "context": e.context.0,
            "thread_id": e.thread_id,
        });
        records.extend(notice(
            cx,
            e.alias,
            e.to,
            ESCALATION_SUBJECT,
            body,
            e.thread_id,
        )?);
    }
    Ok(records)
}

/// A high-priority packet `from` -> `to`, on `thread` if it is active (keeping its
/// session) or on a new thread.
fn notice(
    cx: &Ctx<'_>,
    from: &str,
    to: &str,
    subject: &str,
    body: serde_json::Value,
    thread: Option<&str>,
) -> Result<Vec<EventRecord>, KernelError> {
    let alias = |a: &str, f: &'static str| {
        VolkAlias::parse_field(a, f).map_err(|e| KernelError::invalid(f, e.to_string()))
    };
    let mut packet = CxpPacket::new_at(
        alias(from, "alias")?,
        alias(to, "to")?,
        subject,
        body,
        cx.now,
    )
    .map_err(|e| KernelError::invalid("context", e.to_string()))?
    .with_priority(Priority::HIGH);
    let existing = thread
        .and_then(|t| cx.state.thread(t).map(|s| (t, s)))
        .filter(|(_, s)| s.status == ThreadStatus::Active);
    let mut records = Vec::with_capacity(2);
    match existing {
        Some((t, state)) => {
            packet = packet
                .with_thread_id(t)
                .map_err(|e| KernelError::invalid("thread_id", e.to_string()))?;
            if let Some(session) = &state.session {
                packet.metadata_mut().insert(
                    SESSION_KEY.into(),
                    serde_json::Value::String(session.clone()),
                );
            }
        }
        None => records.push(cx.record(
            packet.thread_id(),
            ThreadOpened {
                thread_id: packet.thread_id().to_owned(),
                subject: subject.to_owned(),
                opened_by: from.to_owned(),
                participants: vec![from.to_owned(), to.to_owned()],
            },
        )),
    }
    let key = packet.thread_id().to_owned();
    records.push(cx.record(
        &key,
        PacketSent {
            packet: convert::to_record(&packet, None),
        },
    ));
    Ok(records)
}

/// `resolve_escalation`: a human decides an open entry of the human queue; the
/// record is keyed by the Volk that escalated (its lifecycle).
pub(super) fn resolve(
    cx: &Ctx<'_>,
    escalation_id: &str,
    decision: &str,
    notes: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("decision", decision)?;
    let entry = cx.state.agents().escalation(escalation_id).ok_or_else(|| {
        KernelError::invalid(
            "escalation_id",
            format!("no escalation `{escalation_id}` in the human queue"),
        )
    })?;
    if entry.resolution.is_some() {
        return Err(KernelError::InvalidTransition {
            entity: format!("escalation {escalation_id}"),
            field: "status",
            from: "resolved".into(),
            to: "resolved".into(),
        });
    }
    let event = HumanEscalationResolved {
        escalation_id: escalation_id.to_owned(),
        resolved_by: cx.issuer.to_owned(),
        decision: decision.to_owned(),
        notes,
    };
    Ok(vec![cx.record(&entry.alias, event)])
}
