//! [`AgentTree`]: the hierarchy of Volks as a pure fold of `volk.lifecycle`.
//!
//! Agents are lightweight: one [`AgentNode`] per Volk, no process, no task. The tree
//! is rebuilt from the log like any other state and kept current by folding every
//! event the kernel appends, so a replay gives the same hierarchy, the same lifespans
//! and the same human queue. Time comes only from event timestamps.
//!
//! The rules of spec 005 it answers (Articles II and IX):
//! - a Volk may *read* its own facts and those of its ancestors, never a sibling's
//!   ([`AgentTree::may_read_facts`]); it may *write* only its own, and a junior none
//!   ([`AgentTree::may_write_facts`]);
//! - direct communication is parent <-> child only ([`AgentTree::may_talk`]); anything
//!   else goes by escalation.

pub mod limits;

use std::collections::{BTreeMap, HashMap};

use chrono::{DateTime, Utc};
use orchestrata_schemas::events::{Event, EventRecord};
use serde::Serialize;

/// Metadata key of a spawn's `registered` event naming the agent kind.
pub const KIND_KEY: &str = "kind";
/// Metadata value marking a spawned junior Volk.
pub const JUNIOR: &str = "junior";

/// Senior Volks are registered (the roster, or `register_volk`); juniors are spawned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentKind {
    /// A registered Volk: may spawn, escalate, read and write its own facts.
    Senior,
    /// A spawned junior (Article XII): cannot spawn, has no persistent state, talks
    /// only to its parent.
    Junior,
}

/// When an agent dies on its own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Lifespan {
    /// Lives until terminated (seniors).
    Unbounded,
    /// Dies at this time (spawn time + `lifespan_ms`).
    Deadline(DateTime<Utc>),
    /// Dies when this task completes.
    Task(String),
    /// Dies when this session closes.
    Session(String),
}

/// One agent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct AgentNode {
    /// The Volk it reports to (`None` for a root).
    pub parent: Option<String>,
    /// Senior or junior.
    pub kind: AgentKind,
    /// What runs a junior (`cli`, `api`, `browser`).
    pub driver: Option<String>,
    /// What it is for.
    pub purpose: String,
    /// Capabilities it may use (a senior's are its registered capabilities).
    pub scope: Vec<String>,
    /// When it dies on its own.
    pub lifespan: Lifespan,
    /// When it was registered or spawned.
    pub born_at: DateTime<Utc>,
    /// False once terminated or deregistered.
    pub live: bool,
    /// Its live children, in spawn order.
    pub children: Vec<String>,
}

/// One entry of the human escalation queue.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct HumanEscalation {
    /// The queue entry's id.
    pub escalation_id: String,
    /// The Volk that escalated to the human.
    pub alias: String,
    /// The whole path, ending in `human`.
    pub path: Vec<String>,
    /// Why.
    pub reason: String,
    /// The thread concerned.
    pub thread_id: Option<String>,
    /// The context as escalated.
    pub context: serde_json::Value,
    /// When it was queued.
    pub at: DateTime<Utc>,
    /// The human's decision, once there is one.
    pub resolution: Option<EscalationDecision>,
}

/// How a human resolved a queue entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct EscalationDecision {
    /// Who decided.
    pub resolved_by: String,
    /// What was decided.
    pub decision: String,
    /// Anything besides.
    pub notes: Option<String>,
    /// When.
    pub at: DateTime<Utc>,
}

/// The hierarchy; see the module docs.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AgentTree {
    nodes: HashMap<String, AgentNode>,
    human_queue: Vec<HumanEscalation>,
    escalations: u64,
}

impl AgentTree {
    /// An empty tree.
    pub fn new() -> Self {
        Self::default()
    }

    /// Folds one event; events of other kinds are ignored.
    pub fn apply(&mut self, record: &EventRecord) {
        let at = record.timestamp;
        match &record.event {
            Event::VolkRegistered(e) => {
                let meta = &e.metadata.0;
                let junior = meta.get(KIND_KEY).and_then(|v| v.as_str()) == Some(JUNIOR);
                let text = |k: &str| meta.get(k).and_then(|v| v.as_str()).map(str::to_owned);
                let lifespan = match (text("task_id"), text("session_id")) {
                    (Some(t), _) if junior => Lifespan::Task(t),
                    (None, Some(s)) if junior => Lifespan::Session(s),
                    _ => Lifespan::Unbounded,
                };
                let node = AgentNode {
                    parent: e.parent.clone(),
                    kind: if junior {
                        AgentKind::Junior
                    } else {
                        AgentKind::Senior
                    },
                    driver: text("driver"),
                    purpose: text("purpose").unwrap_or_default(),
                    scope: e.capabilities.clone(),
                    lifespan,
                    born_at: at,
                    live: true,
                    children: Vec::new(),
                };
                self.unlink(&e.alias);
                if let Some(parent) = e.parent.as_ref().and_then(|p| self.nodes.get_mut(p)) {
                    parent.children.push(e.alias.clone());
                }
                self.nodes.insert(e.alias.clone(), node);
            }
            Event::VolkSpawned(e) => {
                if let Some(node) = self.nodes.get_mut(&e.alias) {
                    node.kind = AgentKind::Junior;
                    node.driver = Some(e.driver.clone());
                    if let Some(ms) = e.lifespan_ms {
                        // Checked: a fold must never panic on a stored event (the kernel
                        // refuses lifespans past `MAX_LIFESPAN_MS`; an older log may not).
                        let end = limits::deadline(at, ms).unwrap_or(DateTime::<Utc>::MAX_UTC);
                        node.lifespan = Lifespan::Deadline(end);
                    }
                }
            }
            Event::VolkTerminated(e) => self.kill(&e.alias),
            Event::VolkDeregistered(e) => self.kill(&e.alias),
            Event::VolkEscalated(_) => self.escalations += 1,
            Event::HumanEscalationQueued(e) => self.human_queue.push(HumanEscalation {
                escalation_id: e.escalation_id.clone(),
                alias: e.alias.clone(),
                path: e.path.clone(),
                reason: e.reason.clone(),
                thread_id: e.thread_id.clone(),
                context: e.context.0.clone(),
                at,
                resolution: None,
            }),
            Event::HumanEscalationResolved(e) => {
                let entry = self
                    .human_queue
                    .iter_mut()
                    .find(|q| q.escalation_id == e.escalation_id);
                if let Some(entry) = entry {
                    entry.resolution = Some(EscalationDecision {
                        resolved_by: e.resolved_by.clone(),
                        decision: e.decision.clone(),
                        notes: e.notes.clone(),
                        at,
                    });
                }
            }
            _ => {}
        }
    }

    fn kill(&mut self, alias: &str) {
        if let Some(node) = self.nodes.get_mut(alias) {
            node.live = false;
        }
        self.unlink(alias);
    }

    fn unlink(&mut self, alias: &str) {
        let parent = self.nodes.get(alias).and_then(|n| n.parent.clone());
        if let Some(p) = parent.and_then(|p| self.nodes.get_mut(&p)) {
            p.children.retain(|c| c != alias);
        }
    }

    /// An agent, live or not.
    pub fn node(&self, alias: &str) -> Option<&AgentNode> {
        self.nodes.get(alias)
    }

    /// A live agent.
    pub fn live(&self, alias: &str) -> Option<&AgentNode> {
        self.nodes.get(alias).filter(|n| n.live)
    }

    /// How many agents are live.
    pub fn live_count(&self) -> usize {
        self.nodes.values().filter(|n| n.live).count()
    }

    /// Live juniors whose parent is `alias`.
    pub fn live_juniors_of(&self, alias: &str) -> usize {
        self.nodes.get(alias).map_or(0, |n| {
            n.children
                .iter()
                .filter(|c| self.live(c).is_some_and(|c| c.kind == AgentKind::Junior))
                .count()
        })
    }

    /// Depth in the hierarchy: a root is 0. Cycles cannot be folded in (a parent must
    /// exist before its child), but the walk stops after the number of nodes anyway.
    pub fn depth(&self, alias: &str) -> usize {
        self.ancestors(alias).len()
    }

    /// The parent, grandparent, ... up to the root.
    pub fn ancestors(&self, alias: &str) -> Vec<String> {
        let mut out = Vec::new();
        let mut cur = self.nodes.get(alias).and_then(|n| n.parent.clone());
        while let Some(p) = cur {
            if out.len() > self.nodes.len() || out.contains(&p) {
                break;
            }
            cur = self.nodes.get(&p).and_then(|n| n.parent.clone());
            out.push(p);
        }
        out
    }

    /// The live subtree under `alias` (without it), deepest first: the order in which
    /// a cascade terminates it.
    pub fn subtree(&self, alias: &str) -> Vec<String> {
        let mut out = Vec::new();
        self.collect(alias, &mut out, 0);
        out
    }

    fn collect(&self, alias: &str, out: &mut Vec<String>, guard: usize) {
        if guard > self.nodes.len() {
            return;
        }
        if let Some(n) = self.nodes.get(alias) {
            for c in &n.children {
                if self.live(c).is_some() {
                    self.collect(c, out, guard + 1);
                    out.push(c.clone());
                }
            }
        }
    }

    /// Article II: `reader` sees its own facts and its ancestors' (read-only), never a
    /// sibling's or a descendant's.
    pub fn may_read_facts(&self, reader: &str, owner: &str) -> bool {
        reader == owner || self.ancestors(reader).iter().any(|a| a == owner)
    }

    /// Article II/XII: only the owner writes its facts, and a junior has none to write.
    pub fn may_write_facts(&self, writer: &str, owner: &str) -> bool {
        writer == owner
            && self
                .live(writer)
                .is_some_and(|n| n.kind == AgentKind::Senior)
    }

    /// Article IX: direct communication is parent <-> child only.
    pub fn may_talk(&self, from: &str, to: &str) -> bool {
        let parent_of = |a: &str| self.nodes.get(a).and_then(|n| n.parent.as_deref());
        parent_of(from) == Some(to) || parent_of(to) == Some(from)
    }

    /// Live agents whose deadline is at or before `now`, sorted.
    pub fn expired(&self, now: DateTime<Utc>) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.live && matches!(n.lifespan, Lifespan::Deadline(d) if d <= now))
            .map(|(a, _)| a.clone())
            .collect();
        v.sort();
        v
    }

    /// The earliest deadline of a live agent.
    pub fn next_deadline(&self) -> Option<DateTime<Utc>> {
        self.nodes
            .values()
            .filter(|n| n.live)
            .filter_map(|n| match n.lifespan {
                Lifespan::Deadline(d) => Some(d),
                _ => None,
            })
            .min()
    }

    /// Live agents bound to `binding` (a task or a session), sorted.
    pub fn bound_to(&self, binding: &Lifespan) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.live && &n.lifespan == binding)
            .map(|(a, _)| a.clone())
            .collect();
        v.sort();
        v
    }

    /// Live agents bound to a task whose id starts with `prefix` (a workflow run's
    /// tasks are `<run id>/...`), sorted.
    pub fn bound_to_tasks(&self, prefix: &str) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| {
                n.live && matches!(&n.lifespan, Lifespan::Task(t) if t.starts_with(prefix))
            })
            .map(|(a, _)| a.clone())
            .collect();
        v.sort();
        v
    }

    /// Every live junior, sorted.
    pub fn live_juniors(&self) -> Vec<String> {
        let mut v: Vec<String> = self
            .nodes
            .iter()
            .filter(|(_, n)| n.live && n.kind == AgentKind::Junior)
            .map(|(a, _)| a.clone())
            .collect();
        v.sort();
        v
    }

    /// Escalations between Volks so far.
    pub fn escalations(&self) -> u64 {
        self.escalations
    }

    /// Escalations that went beyond the root, oldest first, resolved or not.
    pub fn human_queue(&self) -> &[HumanEscalation] {
        &self.human_queue
    }

    /// The human-queue entry `escalation_id`, resolved or not.
    pub fn escalation(&self, escalation_id: &str) -> Option<&HumanEscalation> {
        self.human_queue
            .iter()
            .find(|q| q.escalation_id == escalation_id)
    }

    /// Every agent, sorted by alias (for views and the gateway).
    pub fn snapshot(&self) -> BTreeMap<String, AgentNode> {
        self.nodes
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    }
}
