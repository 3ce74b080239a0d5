//! The kernel's write-side aggregate: just enough state to validate commands.
//!
//! [`KernelState`] is rebuilt at start by folding the log and then kept current by
//! folding every event the kernel appends — through the same [`KernelState::apply`],
//! so the state after a restart cannot differ from the state before it. Time comes only
//! from event timestamps. The fold trusts the log: an event that no longer fits (it
//! cannot happen for events the kernel validated) is skipped with a warning rather than
//! stopping the kernel.
//!
//! What it holds:
//! - every packet as a [`CxpPacket`] (the CXP crate's state machines run on it), with
//!   its session;
//! - threads (status, session, participants), sessions (status, packets, carryover),
//!   the Volk registry;
//! - the Postman's per-recipient queues (keys in the CXP `PriorityQueue` order:
//!   priority desc, then time asc) and mailboxes (queued + delivered-unacknowledged);
//! - the ids of the commands already executed (at-least-once consumption).
//!
//! Packets and threads live in `spill::SpillTable`s: with a [`SpillConfig`] only the
//! most recently changed stay in memory and the rest wait in an unlinked scratch file
//! (read back on demand; never an input to a restart).

mod digest;
mod fold;
mod mailbox;
mod participants;
mod providers;
mod spill;
mod spilled;

pub use digest::StateDigest;
pub use participants::Participants;
pub use providers::ProviderUsage;
pub use spill::SpillConfig;

use std::borrow::Cow;

use spill::SpillTable;

use std::collections::{BTreeSet, HashMap, HashSet};

use chrono::{DateTime, Utc};
use orchestrata_schemas::cxp::{CxpPacket, Priority, VolkAlias};
use orchestrata_schemas::events::types::Health;
use serde::Serialize;
use uuid::Uuid;

/// Where a thread stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ThreadStatus {
    /// Takes new packets.
    Active,
    /// Its work is done; reopen to continue.
    Closed,
    /// Closed for good.
    Archived,
}

impl ThreadStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            ThreadStatus::Active => "active",
            ThreadStatus::Closed => "closed",
            ThreadStatus::Archived => "archived",
        }
    }
}

/// One conversation.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ThreadState {
    /// Its status.
    pub status: ThreadStatus,
    /// The session it currently belongs to (the last packet's session).
    pub session: Option<String>,
    /// Every sender and recipient so far, sorted, each once.
    pub participants: Participants,
    /// Its packets, in the order they were sent.
    pub packets: Vec<Uuid>,
    /// When its first packet (or `thread_opened`) was recorded.
    pub opened_at: DateTime<Utc>,
    /// Time of its latest event.
    pub last_activity: DateTime<Utc>,
}

/// Whether a session takes packets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    /// Open (or resumed).
    Open,
    /// Closed; resume to continue.
    Closed,
}

/// One work session (Articles I and III).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionState {
    /// Its status.
    pub status: SessionStatus,
    /// The portfolio it works on.
    pub portfolio_id: String,
    /// What it should achieve.
    pub goals: Vec<String>,
    /// Packets sent in it, in order.
    pub packets: Vec<Uuid>,
    /// Threads that had packets in it.
    pub threads: BTreeSet<String>,
    /// What the last close carried over (`packet:<id>`, `thread:<id>`, and the closer's
    /// own tasks); resuming restores exactly these.
    pub carryover: Vec<String>,
    /// The last close's summary.
    pub summary: Option<String>,
    /// When it was opened.
    pub opened_at: DateTime<Utc>,
    /// When it was last closed.
    pub closed_at: Option<DateTime<Utc>>,
}

/// One Volk in the registry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct VolkState {
    /// False after deregistration (the alias stays known: packets to it fail and retry).
    pub registered: bool,
    /// Its last reported health.
    pub health: Health,
    /// The Volk it reports to.
    pub parent: Option<String>,
    /// What it can do.
    pub capabilities: Vec<String>,
}

impl VolkState {
    /// Whether the Postman can hand it packets now; `Err` says why not.
    pub fn availability(&self) -> Result<(), String> {
        if !self.registered {
            return Err("deregistered".into());
        }
        match self.health {
            Health::Healthy | Health::Degraded | Health::Unknown => Ok(()),
            Health::Unhealthy => Err("unhealthy".into()),
        }
    }
}

/// Where a workflow run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowStatus {
    /// Started or resumed.
    Running,
    /// Paused.
    Paused,
    /// Cancelled, completed or failed.
    Finished,
}

impl WorkflowStatus {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowStatus::Running => "running",
            WorkflowStatus::Paused => "paused",
            WorkflowStatus::Finished => "finished",
        }
    }
}

/// One packet and the bookkeeping around it.
#[derive(Debug, Clone, PartialEq)]
pub struct PacketState {
    /// The packet, with its statuses and histories.
    pub packet: CxpPacket,
    /// Its session (from metadata `session_id`).
    pub session: Option<String>,
    /// The packet it answers.
    pub in_reply_to: Option<Uuid>,
    /// When it last entered `queued` (serving order within a priority).
    pub queued_at: DateTime<Utc>,
}

/// The aggregate; see the module docs.
#[derive(Debug)]
pub struct KernelState {
    max_retries: u32,
    volks: HashMap<String, VolkState>,
    /// Every packet; the least recently changed ones in the spill file once there
    /// are more than the configured hot ones (a packet's state is large in memory).
    packets: SpillTable<Uuid, PacketState>,
    /// Every thread, spilled like the packets.
    threads: SpillTable<String, ThreadState>,
    sessions: HashMap<String, SessionState>,
    workflows: HashMap<String, WorkflowStatus>,
    agents: orchestrata_projections::agents::AgentTree,
    /// Every executed command id, spilled like the packets: the ids follow the history
    /// (16 bytes each in memory as sorted runs, 16 bytes a `cxp.send` for as long as
    /// the server ran; now ~2-4 bytes of Bloom filter for each cold one).
    executed: SpillTable<Uuid, ()>,
    /// Failed packets that may still be retried: what a restart reschedules, without
    /// reading every packet back from the spill file.
    retryable: HashSet<Uuid>,
    /// `(time, priority)` of each queued packet's live queue entry: which entries of
    /// `queues` are current, known without reading the packet (it may be spilled).
    queue_entries: HashMap<Uuid, (DateTime<Utc>, Priority)>,
    queues: HashMap<VolkAlias, std::collections::BinaryHeap<mailbox::QueueKey>>,
    queued: HashMap<VolkAlias, usize>,
    delivered: HashMap<VolkAlias, BTreeSet<Uuid>>,
    providers: HashMap<String, ProviderUsage>,
    applied: u64,
}

impl KernelState {
    /// An empty state held wholly in memory; packets folded into it get a retry budget
    /// of `max_retries`.
    pub fn new(max_retries: u32) -> Self {
        Self::with_spill(max_retries, None)
    }

    /// An empty state keeping at most `spill.hot` packets and threads in memory (the
    /// rest in an unlinked file under `spill.dir`; see [`SpillConfig`]); `None`: all in
    /// memory. Which entries are in memory never changes an answer.
    pub fn with_spill(max_retries: u32, spill: Option<SpillConfig>) -> Self {
        KernelState {
            max_retries,
            volks: HashMap::new(),
            packets: SpillTable::new(spill.clone()),
            threads: SpillTable::new(spill.clone()),
            executed: SpillTable::new(spill),
            sessions: HashMap::new(),
            workflows: HashMap::new(),
            agents: orchestrata_projections::agents::AgentTree::new(),
            retryable: HashSet::new(),
            queue_entries: HashMap::new(),
            queues: HashMap::new(),
            queued: HashMap::new(),
            delivered: HashMap::new(),
            providers: HashMap::new(),
            applied: 0,
        }
    }

    /// The retry budget given to packets.
    pub fn max_retries(&self) -> u32 {
        self.max_retries
    }

    /// How many events were folded.
    pub fn applied(&self) -> u64 {
        self.applied
    }

    /// A packet by message id (read back from the spill file if it is cold).
    pub fn packet(&self, id: &Uuid) -> Option<Cow<'_, PacketState>> {
        self.packets.get(id)
    }

    /// Whether a packet with this message id exists (no read of the spill file).
    pub fn has_packet(&self, id: &Uuid) -> bool {
        self.packets.contains_key(id)
    }

    /// Every packet (no order; cold ones are read back one by one).
    pub fn packets(&self) -> impl Iterator<Item = Cow<'_, PacketState>> {
        self.packets.iter().map(|(_, p)| p)
    }

    /// Failed packets that may still be retried (no order).
    pub fn retryable(&self) -> impl Iterator<Item = Cow<'_, PacketState>> {
        self.retryable.iter().filter_map(|id| self.packets.get(id))
    }

    /// Packets and threads held in memory now (the rest are spilled).
    pub fn hot_counts(&self) -> (usize, usize) {
        (self.packets.hot_len(), self.threads.hot_len())
    }

    /// `(kind, held, count)` of packets and threads, all and in memory: the
    /// `orchestrata_kernel_entries` gauge.
    pub fn entry_counts(&self) -> [(&'static str, &'static str, usize); 4] {
        [
            ("packets", "all", self.packets.len()),
            ("packets", "memory", self.packets.hot_len()),
            ("threads", "all", self.threads.len()),
            ("threads", "memory", self.threads.hot_len()),
        ]
    }

    /// `(kind, bytes)` of the scratch files of packets and threads: the
    /// `orchestrata_kernel_scratch_bytes` gauge.
    pub fn scratch_bytes(&self) -> [(&'static str, u64); 2] {
        [
            ("packets", self.packets.scratch_bytes()),
            ("threads", self.threads.scratch_bytes()),
        ]
    }

    /// A thread by id (read back from the spill file if it is cold).
    pub fn thread(&self, id: &str) -> Option<Cow<'_, ThreadState>> {
        self.threads.get(id)
    }

    /// How many threads exist.
    pub fn thread_count(&self) -> usize {
        self.threads.len()
    }

    /// A session by id.
    pub fn session(&self, id: &str) -> Option<&SessionState> {
        self.sessions.get(id)
    }

    /// A workflow run's status.
    pub fn workflow(&self, id: &str) -> Option<WorkflowStatus> {
        self.workflows.get(id).copied()
    }

    /// Runs still running or paused, sorted: after a restart, the runs no runner
    /// carries on.
    pub fn open_workflows(&self) -> Vec<String> {
        let mut open: Vec<String> = self
            .workflows
            .iter()
            .filter(|(_, s)| **s != WorkflowStatus::Finished)
            .map(|(id, _)| id.clone())
            .collect();
        open.sort();
        open
    }

    /// The agent hierarchy (spec 005): parents, juniors, lifespans, the human queue.
    pub fn agents(&self) -> &orchestrata_projections::agents::AgentTree {
        &self.agents
    }

    /// A Volk by alias (registered or not).
    pub fn volk(&self, alias: &str) -> Option<&VolkState> {
        self.volks.get(alias)
    }

    /// Every known Volk alias, sorted.
    pub fn volk_aliases(&self) -> Vec<String> {
        let mut v: Vec<String> = self.volks.keys().cloned().collect();
        v.sort();
        v
    }

    /// Whether a command with this id has already produced events.
    pub fn is_executed(&self, command_id: &Uuid) -> bool {
        self.executed.contains_key(command_id)
    }
}
