//! The Prolog facts view: `cxp.traffic`, `volk.lifecycle` and `session.events` folded
//! into the facts policies reason over (spec 004 Article II, REQ-004-INTG-001..005).
//!
//! | fact | from |
//! |---|---|
//! | `cxp_packet(MessageId, From, To, ThreadId, Subject, TimestampMs, Priority, DeliveryStatus, WorkStatus, ProtocolVersion, PayloadRef, SessionId)` | `packet_sent`, updated by every status / priority change |
//! | `cxp_delivery_status(MessageId, Status, TimestampMs)` | current delivery status |
//! | `cxp_work_status(MessageId, Status, TimestampMs)` | current work status |
//! | `volk(Alias, Parent, Kind, SessionId)` | `registered` (senior) / `spawned` (junior); `Parent`/`SessionId` are `none` when absent |
//! | `volk_capability(Alias, Capability)` | `registered` |
//! | `volk_status(Alias, active\|deregistered\|terminated)` | lifecycle |
//! | `session(SessionId, PortfolioId, open\|closed, OpenedBy)` | session lifecycle |
//! | `cxp_sends(From, SessionId, Count)` | `packet_sent`: how many current `cxp_packet/12` facts have that sender and session (absent when 0) |
//!
//! `PayloadRef` is `'cxp.traffic:<sequence>'`, where the payload lives on the log;
//! `SessionId` of a packet is its `metadata.session_id` (else `none`).
//!
//! `cxp_sends/3` is the count a send budget reads: one fact lookup instead of a scan of
//! every packet ever seen. It always equals
//! `findall(M, cxp_packet(M, From, _, _, _, _, _, _, _, _, _, SessionId), Ms), length(Ms, Count)`
//! (a packet sent again under the same message id replaces the old one, so it moves
//! the count rather than adding to it). The counts are derived from the packets, never
//! stored: a checkpoint holds the packets and the counts are rebuilt when it is read,
//! so a checkpoint written before the counts existed loads with the right ones.
//!
//! A fold is deterministic: the facts as of per-stream positions are a pure function of
//! the log, which is what lets `audit verify` re-evaluate a fact-dependent decision.
//! The view is serializable: with its positions it is the checkpoint.

use std::collections::BTreeMap;

use orchestrata_schemas::events::{Envelope, Event, EventRecord, Stream};
use serde::{Deserialize, Serialize};

use super::term::PlTerm;

/// The streams the facts view folds.
pub const FACT_STREAMS: [Stream; 3] = [
    Stream::CxpTraffic,
    Stream::VolkLifecycle,
    Stream::SessionEvents,
];

/// One Prolog fact.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Fact {
    /// `cxp_packet/12`.
    Packet(PacketFact),
    /// `cxp_delivery_status/3`.
    DeliveryStatus(String, String, i64),
    /// `cxp_work_status/3`.
    WorkStatus(String, String, i64),
    /// `volk/4`: alias, parent, kind, session.
    Volk(String, String, String, String),
    /// `volk_capability/2`.
    VolkCapability(String, String),
    /// `volk_status/2`.
    VolkStatus(String, String),
    /// `session/4`: id, portfolio, status, opened by.
    Session(String, String, String, String),
    /// `cxp_sends/3`: sender, session, number of its packets in that session (> 0).
    Sends(String, String, i64),
}

/// The twelve fields of `cxp_packet/12`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PacketFact {
    /// Message id.
    pub message_id: String,
    /// Sender alias.
    pub from: String,
    /// Recipient alias.
    pub to: String,
    /// Thread id.
    pub thread_id: String,
    /// CXP subject.
    pub subject: String,
    /// Creation time, ms since the epoch.
    pub timestamp_ms: i64,
    /// 0..10.
    pub priority: i64,
    /// Current delivery status.
    pub delivery: String,
    /// Current work status.
    pub work: String,
    /// Protocol version.
    pub protocol_version: String,
    /// `cxp.traffic:<sequence>`.
    pub payload_ref: String,
    /// Session id or `none`.
    pub session: String,
}

impl PacketFact {
    /// `cxp_packet_base/16`: the message id's three parts (see
    /// [`PlTerm::message_id`]), what does not change about the packet, then its delivery
    /// and work status as first stored (`Status`, `TimestampMs` each; later changes are
    /// `cxp_status/6` facts, see `prelude.pl`). `d` and `w` may be variables (a pattern).
    pub(super) fn base_term(&self, d: (PlTerm, PlTerm), w: (PlTerm, PlTerm)) -> PlTerm {
        let a = |s: &String| PlTerm::atom(s.clone());
        PlTerm::compound(
            "cxp_packet_base",
            super::term::message_id_parts(&self.message_id)
                .into_iter()
                .chain([
                    a(&self.from),
                    a(&self.to),
                    PlTerm::string(self.thread_id.clone()),
                    a(&self.subject),
                    PlTerm::Int(self.timestamp_ms),
                    PlTerm::Int(self.priority),
                    a(&self.protocol_version),
                    PlTerm::string(self.payload_ref.clone()),
                    a(&self.session),
                    d.0,
                    d.1,
                    w.0,
                    w.1,
                ])
                .collect(),
        )
    }

    /// The base with its statuses left open: matches the stored base whatever statuses
    /// it was first stored with (to retract it, or to compare two versions of a packet).
    pub(super) fn base_pattern(&self) -> PlTerm {
        let var = |name: &str| PlTerm::Var(name.to_owned());
        self.base_term((var("D0"), var("DT0")), (var("W0"), var("WT0")))
    }
}

impl Fact {
    /// The fact as the engine stores it. A packet is stored as `cxp_packet_base/16`
    /// (what its statuses do not change) and each status as an appended
    /// `cxp_status(A, B, C, d|w, Status, TimestampMs)`; policies read them through the
    /// prelude's `cxp_packet/12`, `cxp_delivery_status/3` and `cxp_work_status/3`
    /// (see `fact_goals.rs` for why).
    pub fn term(&self) -> PlTerm {
        let a = |s: &String| PlTerm::atom(s.clone());
        let status = |m: &String, kind: &str, s: &String, t: i64| {
            PlTerm::compound(
                "cxp_status",
                super::term::message_id_parts(m)
                    .into_iter()
                    .chain([PlTerm::atom(kind), a(s), PlTerm::Int(t)])
                    .collect(),
            )
        };
        match self {
            Fact::Packet(p) => p.base_term(
                (a(&p.delivery), PlTerm::Int(p.timestamp_ms)),
                (a(&p.work), PlTerm::Int(p.timestamp_ms)),
            ),
            Fact::DeliveryStatus(m, s, t) => status(m, "d", s, *t),
            Fact::WorkStatus(m, s, t) => status(m, "w", s, *t),
            Fact::Volk(v, p, k, s) => PlTerm::compound("volk", vec![a(v), a(p), a(k), a(s)]),
            Fact::VolkCapability(v, c) => PlTerm::compound("volk_capability", vec![a(v), a(c)]),
            Fact::VolkStatus(v, s) => PlTerm::compound("volk_status", vec![a(v), a(s)]),
            Fact::Session(i, p, s, o) => PlTerm::compound("session", vec![a(i), a(p), a(s), a(o)]),
            Fact::Sends(v, s, n) => {
                PlTerm::compound("cxp_sends", vec![a(v), a(s), PlTerm::Int(*n)])
            }
        }
    }
}

/// A change to the facts: what the engine asserts or retracts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FactChange {
    /// `assertz(Fact)`.
    Assert(Fact),
    /// `retract(Fact)`.
    Retract(Fact),
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct PacketState {
    packet: PacketFact,
    delivery_ts: i64,
    work_ts: i64,
}

/// The facts view: current facts plus how far each fact stream has been folded.
///
/// Serialized (the checkpoint) without the send counts; reading it back recomputes
/// them from the packets (see [`StoredView`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredView")]
pub struct FactsView {
    /// Per stream name: number of events folded (the next sequence to fold).
    pub positions: BTreeMap<String, u64>,
    /// Per stream name: the epoch the positions belong to.
    pub epochs: BTreeMap<String, String>,
    packets: BTreeMap<String, PacketState>,
    volks: BTreeMap<String, (Fact, Vec<Fact>, String)>,
    sessions: BTreeMap<String, Fact>,
    /// Per (sender, session): its current packets (the `cxp_sends/3` facts).
    #[serde(skip)]
    sends: BTreeMap<(String, String), i64>,
}

/// The serialized form of [`FactsView`]: everything but the derived send counts.
#[derive(Deserialize)]
struct StoredView {
    #[serde(default)]
    positions: BTreeMap<String, u64>,
    #[serde(default)]
    epochs: BTreeMap<String, String>,
    #[serde(default)]
    packets: BTreeMap<String, PacketState>,
    #[serde(default)]
    volks: BTreeMap<String, (Fact, Vec<Fact>, String)>,
    #[serde(default)]
    sessions: BTreeMap<String, Fact>,
}

impl From<StoredView> for FactsView {
    fn from(stored: StoredView) -> Self {
        let mut sends: BTreeMap<(String, String), i64> = BTreeMap::new();
        for state in stored.packets.values() {
            *sends.entry(send_key(&state.packet)).or_default() += 1;
        }
        FactsView {
            positions: stored.positions,
            epochs: stored.epochs,
            packets: stored.packets,
            volks: stored.volks,
            sessions: stored.sessions,
            sends,
        }
    }
}

fn send_key(packet: &PacketFact) -> (String, String) {
    (packet.from.clone(), packet.session.clone())
}

fn name<T: Serialize>(value: &T) -> String {
    match serde_json::to_value(value) {
        Ok(serde_json::Value::String(s)) => s,
        _ => "unknown".into(),
    }
}

impl FactsView {
    /// An empty view at position 0 of every stream.
    pub fn new() -> Self {
        FactsView::default()
    }

    /// Next sequence to fold for `stream`.
    pub fn position(&self, stream: Stream) -> u64 {
        self.positions.get(stream.as_str()).copied().unwrap_or(0)
    }

    /// Every current fact, in a stable order (to load a fresh engine).
    pub fn facts(&self) -> Vec<Fact> {
        let mut out = Vec::new();
        for state in self.packets.values() {
            out.push(Fact::Packet(state.packet.clone()));
            out.push(Fact::DeliveryStatus(
                state.packet.message_id.clone(),
                state.packet.delivery.clone(),
                state.delivery_ts,
            ));
            out.push(Fact::WorkStatus(
                state.packet.message_id.clone(),
                state.packet.work.clone(),
                state.work_ts,
            ));
        }
        for (volk, caps, status) in self.volks.values() {
            out.push(volk.clone());
            out.extend(caps.iter().cloned());
            if let Fact::Volk(alias, ..) = volk {
                out.push(Fact::VolkStatus(alias.clone(), status.clone()));
            }
        }
        out.extend(self.sessions.values().cloned());
        out.extend(
            self.sends
                .iter()
                .map(|((v, s), n)| Fact::Sends(v.clone(), s.clone(), *n)),
        );
        out
    }

    /// The `cxp_sends/3` count of `from` in `session` (0 when it has sent nothing).
    pub fn sends(&self, from: &str, session: &str) -> i64 {
        self.sends
            .get(&(from.to_owned(), session.to_owned()))
            .copied()
            .unwrap_or(0)
    }

    /// Folds one envelope; returns the fact changes, in order. Events of other streams
    /// and events already folded (sequence below the position) change nothing.
    pub fn apply(&mut self, envelope: &Envelope) -> Vec<FactChange> {
        self.apply_at(envelope.stream, envelope.sequence, &envelope.record)
    }

    /// Folds `record` as the event at `sequence` of `stream` ([`FactsView::apply`]
    /// without an envelope: the kernel's writer folds its events at the sequences the
    /// append will give them, before they are appended).
    pub fn apply_at(
        &mut self,
        stream: Stream,
        sequence: u64,
        record: &EventRecord,
    ) -> Vec<FactChange> {
        if !FACT_STREAMS.contains(&stream) || sequence < self.position(stream) {
            return Vec::new();
        }
        self.positions
            .insert(stream.as_str().to_owned(), sequence + 1);
        let ts = record.timestamp.timestamp_millis();
        let mut changes = Vec::new();
        match &record.event {
            Event::PacketSent(e) => {
                let p = &e.packet;
                let session = match &p.metadata.0 {
                    serde_json::Value::Object(m) => m
                        .get("session_id")
                        .and_then(|v| v.as_str())
                        .unwrap_or("none")
                        .to_owned(),
                    _ => "none".to_owned(),
                };
                let packet = PacketFact {
                    message_id: p.message_id.to_string(),
                    from: p.from_agent.clone(),
                    to: p.to_agent.clone(),
                    thread_id: p.thread_id.clone(),
                    subject: p.subject.clone(),
                    timestamp_ms: p.created_at.timestamp_millis(),
                    priority: i64::from(p.priority),
                    delivery: name(&p.delivery_status),
                    work: name(&p.work_status),
                    protocol_version: p.protocol_version.clone(),
                    payload_ref: format!("cxp.traffic:{sequence}"),
                    session,
                };
                let id = packet.message_id.clone();
                let key = send_key(&packet);
                let old_key = self.packets.remove(&id).map(|old| {
                    changes.extend(retract_packet(&old));
                    send_key(&old.packet)
                });
                let state = PacketState {
                    packet,
                    delivery_ts: ts,
                    work_ts: ts,
                };
                changes.extend(assert_packet(&state));
                self.packets.insert(id, state);
                // A packet sent again under its id moves its count (or leaves it).
                if old_key.as_ref() != Some(&key) {
                    if let Some(old_key) = old_key {
                        self.count_send(old_key, -1, &mut changes);
                    }
                    self.count_send(key, 1, &mut changes);
                }
            }
            Event::PacketDelivered(e) => {
                self.update(&e.message_id.to_string(), ts, &mut changes, |p| {
                    p.packet.delivery = "delivered".into();
                    p.delivery_ts = ts;
                })
            }
            Event::PacketAcknowledged(e) => {
                self.update(&e.message_id.to_string(), ts, &mut changes, |p| {
                    p.packet.delivery = "acknowledged".into();
                    p.delivery_ts = ts;
                })
            }
            Event::PacketFailed(e) => {
                self.update(&e.message_id.to_string(), ts, &mut changes, |p| {
                    p.packet.delivery = "failed".into();
                    p.delivery_ts = ts;
                })
            }
            Event::PacketRetried(e) => {
                self.update(&e.message_id.to_string(), ts, &mut changes, |p| {
                    p.packet.delivery = "queued".into();
                    p.delivery_ts = ts;
                })
            }
            Event::WorkStatusChanged(e) => {
                let status = name(&e.new);
                self.update(&e.message_id.to_string(), ts, &mut changes, |p| {
                    p.packet.work = status;
                    p.work_ts = ts;
                })
            }
            Event::PriorityChanged(e) => {
                let priority = i64::from(e.new);
                self.update(&e.message_id.to_string(), ts, &mut changes, |p| {
                    p.packet.priority = priority;
                })
            }
            Event::VolkRegistered(e) => {
                let parent = e.parent.clone().unwrap_or_else(|| "none".into());
                let session = e.session_id.clone().unwrap_or_else(|| "none".into());
                let volk = Fact::Volk(e.alias.clone(), parent, "senior".into(), session);
                let caps = e
                    .capabilities
                    .iter()
                    .map(|c| Fact::VolkCapability(e.alias.clone(), c.clone()))
                    .collect();
                self.replace_volk(&e.alias, volk, caps, &mut changes);
            }
            Event::VolkSpawned(e) => {
                let session = match self.volks.get(&e.parent) {
                    Some((Fact::Volk(_, _, _, s), _, _)) => s.clone(),
                    _ => "none".into(),
                };
                let volk = Fact::Volk(e.alias.clone(), e.parent.clone(), "junior".into(), session);
                self.replace_volk(&e.alias, volk, Vec::new(), &mut changes);
            }
            Event::VolkDeregistered(e) => {
                self.set_volk_status(&e.alias, "deregistered", &mut changes)
            }
            Event::VolkTerminated(e) => self.set_volk_status(&e.alias, "terminated", &mut changes),
            Event::SessionOpened(e) => {
                let fact = Fact::Session(
                    e.session_id.clone(),
                    e.portfolio_id.clone(),
                    "open".into(),
                    e.opened_by.clone(),
                );
                if let Some(old) = self.sessions.insert(e.session_id.clone(), fact.clone()) {
                    changes.push(FactChange::Retract(old));
                }
                changes.push(FactChange::Assert(fact));
            }
            Event::SessionClosed(e) => {
                self.set_session_status(&e.session_id, "closed", &mut changes)
            }
            Event::SessionRecovered(e) => {
                self.set_session_status(&e.session_id, "open", &mut changes)
            }
            _ => {}
        }
        changes
    }

    /// Adds `delta` to the `cxp_sends/3` count of `key`: retracts the old fact, asserts
    /// the new one (none when the count drops to 0).
    fn count_send(&mut self, key: (String, String), delta: i64, changes: &mut Vec<FactChange>) {
        let old = self.sends.get(&key).copied().unwrap_or(0);
        let new = old + delta;
        if old > 0 {
            changes.push(FactChange::Retract(Fact::Sends(
                key.0.clone(),
                key.1.clone(),
                old,
            )));
        }
        if new > 0 {
            changes.push(FactChange::Assert(Fact::Sends(
                key.0.clone(),
                key.1.clone(),
                new,
            )));
            self.sends.insert(key, new);
        } else {
            self.sends.remove(&key);
        }
    }

    fn update(
        &mut self,
        id: &str,
        _ts: i64,
        changes: &mut Vec<FactChange>,
        f: impl FnOnce(&mut PacketState),
    ) {
        if let Some(state) = self.packets.get_mut(id) {
            changes.extend(retract_packet(state));
            f(state);
            changes.extend(assert_packet(state));
        }
    }

    fn replace_volk(
        &mut self,
        alias: &str,
        volk: Fact,
        caps: Vec<Fact>,
        changes: &mut Vec<FactChange>,
    ) {
        if let Some((old, old_caps, status)) = self.volks.remove(alias) {
            changes.push(FactChange::Retract(old));
            changes.extend(old_caps.into_iter().map(FactChange::Retract));
            changes.push(FactChange::Retract(Fact::VolkStatus(
                alias.to_owned(),
                status,
            )));
        }
        changes.push(FactChange::Assert(volk.clone()));
        changes.extend(caps.iter().cloned().map(FactChange::Assert));
        changes.push(FactChange::Assert(Fact::VolkStatus(
            alias.to_owned(),
            "active".into(),
        )));
        self.volks
            .insert(alias.to_owned(), (volk, caps, "active".into()));
    }

    fn set_volk_status(&mut self, alias: &str, status: &str, changes: &mut Vec<FactChange>) {
        if let Some((_, _, current)) = self.volks.get_mut(alias) {
            changes.push(FactChange::Retract(Fact::VolkStatus(
                alias.to_owned(),
                current.clone(),
            )));
            *current = status.to_owned();
            changes.push(FactChange::Assert(Fact::VolkStatus(
                alias.to_owned(),
                status.to_owned(),
            )));
        }
    }

    fn set_session_status(&mut self, id: &str, status: &str, changes: &mut Vec<FactChange>) {
        if let Some(Fact::Session(i, p, s, o)) = self.sessions.get_mut(id) {
            let old = Fact::Session(i.clone(), p.clone(), s.clone(), o.clone());
            *s = status.to_owned();
            changes.push(FactChange::Retract(old));
            changes.push(FactChange::Assert(Fact::Session(
                i.clone(),
                p.clone(),
                s.clone(),
                o.clone(),
            )));
        }
    }
}

fn assert_packet(state: &PacketState) -> Vec<FactChange> {
    packet_facts(state)
        .into_iter()
        .map(FactChange::Assert)
        .collect()
}

fn retract_packet(state: &PacketState) -> Vec<FactChange> {
    packet_facts(state)
        .into_iter()
        .map(FactChange::Retract)
        .collect()
}

fn packet_facts(state: &PacketState) -> [Fact; 3] {
    let p = &state.packet;
    [
        Fact::Packet(p.clone()),
        Fact::DeliveryStatus(p.message_id.clone(), p.delivery.clone(), state.delivery_ts),
        Fact::WorkStatus(p.message_id.clone(), p.work.clone(), state.work_ts),
    ]
}
