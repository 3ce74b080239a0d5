//! The method table: the one declarative list of every gateway method (REQ-014-203).
//!
//! Each row names the method, its handler, the scope it needs, whether it changes state
//! (`mutates`), whether it is exposed to tool generators (`exposed`: streaming methods
//! and `auth.authenticate` are not), and its params schema (a file under
//! `schemas/json/gateway/params/`). Dispatch, scope checks, params validation and the
//! `capabilities` list of `gateway.info` are all derived from this table; adding a
//! method is adding a row.

use futures::future::BoxFuture;
use serde_json::Value;

use super::auth::Scope;
use super::error::RpcError;
use super::handlers;
use super::state::Call;

/// What a handler returns.
pub type RpcResult = Result<Value, RpcError>;

/// A method's implementation.
pub type Handler = fn(Call) -> BoxFuture<'static, RpcResult>;

/// One row of the table.
pub struct Method {
    /// Wire name, e.g. `cxp.send`.
    pub name: &'static str,
    /// The handler.
    pub handler: Handler,
    /// Scope required; `None` for the one method callable before authentication.
    pub scope: Option<Scope>,
    /// Whether the method changes state.
    pub mutates: bool,
    /// Whether tool generators (the MCP server) list it.
    pub exposed: bool,
    /// Params JSON Schema text.
    pub params_schema: &'static str,
    /// One line for humans and tool lists.
    pub summary: &'static str,
}

macro_rules! handler {
    ($path:path) => {{
        fn handle(call: Call) -> BoxFuture<'static, RpcResult> {
            Box::pin($path(call))
        }
        handle as Handler
    }};
}

macro_rules! schema {
    ($name:literal) => {
        include_str!(concat!(
            "../../schemas/json/gateway/params/",
            $name,
            ".schema.json"
        ))
    };
}

macro_rules! methods {
    ($( $name:literal => $path:path, $scope:expr, mutates: $m:literal, exposed: $e:literal, $summary:literal; )*) => {
        /// Every method of the gateway.
        pub static METHODS: &[Method] = &[
            $(Method {
                name: $name,
                handler: handler!($path),
                scope: $scope,
                mutates: $m,
                exposed: $e,
                params_schema: schema!($name),
                summary: $summary,
            },)*
        ];
    };
}

/// Methods whose first effect is one kernel command (through `backends::execute`):
/// their audit record joins that command's append batch instead of an append of its
/// own. A method added here must issue its command before anything else it does.
const VIA_KERNEL: &[&str] = &[
    "cxp.send",
    "cxp.ack",
    "cxp.work",
    "volk.register",
    "volk.deregister",
    "session.open",
    "session.close",
    "session.update_context",
    "session.assert_fact",
    "session.report_error",
    "agents.resolve_escalation",
];

impl Method {
    /// Whether the call acts through one kernel command first (see `VIA_KERNEL`).
    pub fn via_kernel(&self) -> bool {
        VIA_KERNEL.contains(&self.name)
    }
}

const RO: Option<Scope> = Some(Scope::ReadOnly);
const RW: Option<Scope> = Some(Scope::ReadWrite);
const ADMIN: Option<Scope> = Some(Scope::Admin);

methods! {
    "auth.authenticate" => handlers::auth::authenticate, None, mutates: false, exposed: false, "Authenticate this connection (static_token, hmac or prolog_policy).";
    "gateway.info" => handlers::gateway::info, RO, mutates: false, exposed: true, "Version, uptime, capabilities, topics and subscription counts.";
    "gateway.ping" => handlers::gateway::ping, RO, mutates: false, exposed: true, "Server timestamp, for latency measurement.";
    "gateway.clients" => handlers::gateway::clients, RO, mutates: false, exposed: true, "Connected clients with scope, activity and subscriptions.";
    "gateway.replay" => handlers::replay::replay, RO, mutates: false, exposed: true, "Events of a topic from the log by count, time or sequence range.";
    "gateway.subscribe" => handlers::subscribe::subscribe, RO, mutates: false, exposed: false, "Subscribe to a topic, optionally resuming from (epoch, sequence).";
    "gateway.unsubscribe" => handlers::subscribe::unsubscribe, RO, mutates: false, exposed: false, "End a subscription.";
    "cxp.subscribe" => handlers::subscribe::cxp_subscribe, RO, mutates: false, exposed: false, "Subscribe to cxp.traffic with packet filters.";
    "cxp.unsubscribe" => handlers::subscribe::unsubscribe, RO, mutates: false, exposed: false, "End a cxp.traffic subscription.";
    "config.get" => handlers::config::get, RO, mutates: false, exposed: true, "Effective configuration (secrets redacted), or one key path.";
    "cxp.send" => handlers::cxp::send, RW, mutates: true, exposed: true, "Send a CXP packet through the kernel (governed, routed by the Postman).";
    "cxp.status" => handlers::cxp::status, RO, mutates: false, exposed: true, "A thread's packets with delivery and work status and their transitions.";
    "cxp.ack" => handlers::cxp::ack, RW, mutates: true, exposed: true, "Acknowledge a delivered packet on behalf of its recipient.";
    "cxp.work" => handlers::cxp::work, RW, mutates: true, exposed: true, "Move a packet's work status (assignee, resolution, notes).";
    "volk.list" => handlers::volk::list, RO, mutates: false, exposed: true, "Registered Volks, offset/limit paginated.";
    "volk.get" => handlers::volk::get, RO, mutates: false, exposed: true, "One Volk: capabilities, status, parent, protocols, last activity.";
    "volk.register" => handlers::volk::register, ADMIN, mutates: true, exposed: true, "Register a Volk through the kernel (admin).";
    "volk.deregister" => handlers::volk::deregister, ADMIN, mutates: true, exposed: true, "Deregister a Volk through the kernel (admin).";
    "workflow.start" => handlers::workflow::start, RW, mutates: true, exposed: true, "Start a workflow run (built in: pipeline U:Cx -> [U:Ar] -> U:Vz -> U:Qa -> HUMAN).";
    "workflow.pause" => handlers::workflow::pause, RW, mutates: true, exposed: true, "Pause a workflow run between steps.";
    "workflow.resume" => handlers::workflow::resume, RW, mutates: true, exposed: true, "Resume a paused workflow run.";
    "workflow.cancel" => handlers::workflow::cancel, RW, mutates: true, exposed: true, "Cancel a workflow run.";
    "workflow.get" => handlers::workflow::get, RO, mutates: false, exposed: true, "A workflow run's state, folded from workflow.events.";
    "agents.escalations" => handlers::escalations::escalations, RO, mutates: false, exposed: true, "The human escalation queue: escalations beyond the root, with context (status open, resolved or all).";
    "agents.delegate" => handlers::delegate::delegate, RW, mutates: true, exposed: true, "Hand one task to 1-5 juniors on configured agents.drivers profiles (cli, api or browser), for a senior the caller acts as; answers are scored by agents.review.checkers and the best one (synthesis: best) or all in score order (merge) go to the senior's parent.";
    "agents.spawn" => handlers::juniors::spawn, RW, mutates: true, exposed: true, "Spawn a junior under a senior the caller acts as, on a configured agents.drivers profile (cli, api or browser), with an optional first task and a lifespan (task, deadline or session).";
    "agents.assign" => handlers::juniors::assign, RW, mutates: true, exposed: true, "Give a living, idle junior (deadline or session lifespan) its next task; the answer goes to its parent.";
    "agents.terminate" => handlers::juniors::terminate, RW, mutates: true, exposed: true, "Terminate a live agent and its subtree (its task in flight stops), for a caller acting as its parent.";
    "agents.resolve_escalation" => handlers::escalations::resolve, RW, mutates: true, exposed: true, "Record a human's decision on an open entry of the human escalation queue.";
    "session.list" => handlers::session::list, RO, mutates: false, exposed: true, "Sessions in opening order, filtered by portfolio, status and opener, offset/limit paginated.";
    "session.get" => handlers::session::get, RO, mutates: false, exposed: true, "One session's full state: context, facts, carryover tasks, duration, summary.";
    "session.open" => handlers::session::open, RW, mutates: true, exposed: true, "Open a session through the kernel (portfolio, goals).";
    "session.close" => handlers::session::close, RW, mutates: true, exposed: true, "Close a session through the kernel (summary, carryover tasks).";
    "session.update_context" => handlers::session_write::update_context, RW, mutates: true, exposed: true, "Merge a JSON merge patch into an open session's context (our addition).";
    "session.assert_fact" => handlers::session_write::assert_fact, RW, mutates: true, exposed: true, "Record a fact (fact_type, data) in an open session (our addition, REQ-014-060).";
    "session.report_error" => handlers::session_write::report_error, RW, mutates: true, exposed: true, "Record an error (code, message, recoverable) in an open session (our addition).";
    "session.portfolio.stats" => handlers::session::portfolio_stats, RO, mutates: false, exposed: true, "Session statistics per portfolio, optionally over a time range.";
    "governance.query" => handlers::governance::query, RO, mutates: false, exposed: true, "Recorded governance decisions, filtered, newest first, offset/limit paginated.";
    "governance.evaluate" => handlers::governance::evaluate, RW, mutates: false, exposed: true, "Dry-run a governance decision: result, rule trace, articles (recorded as dry_run).";
    "governance.rules" => handlers::governance::rules, ADMIN, mutates: false, exposed: true, "The loaded policy predicates by category, with file and line (admin).";
    "knowledge.nodes" => handlers::knowledge::nodes, RO, mutates: false, exposed: true, "Knowledge-graph nodes by label and property values, offset/limit paginated.";
    "knowledge.relationships" => handlers::knowledge::relationships, RO, mutates: false, exposed: true, "Knowledge-graph relationships by type, source, target and properties, paginated.";
    "knowledge.query" => handlers::knowledge::query, RO, mutates: false, exposed: true, "Read-only Cypher on Neo4j (governed by gateway_can_query_kg; timeout, max_results).";
}

/// The row of `name`.
pub fn find(name: &str) -> Option<&'static Method> {
    METHODS.iter().find(|m| m.name == name)
}

/// The method names, in table order (the `capabilities` of `gateway.info`).
pub fn names() -> Vec<&'static str> {
    METHODS.iter().map(|m| m.name).collect()
}

/// Writes a method's scope as a word (`none` before authentication).
pub fn scope_name(scope: Option<Scope>) -> &'static str {
    scope.map_or("none", Scope::as_str)
}

// Silence "unused" until the admin-scoped rows land with the kernel.
#[allow(dead_code)]
const _ADMIN: Option<Scope> = ADMIN;
#[allow(dead_code)]
const _RW: Option<Scope> = RW;
