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

pub use super::fact_terms::{Fact, FactChange, PacketFact};

/// The streams the facts view folds.
pub const FACT_STREAMS: [Stream; 3] = [
    Stream::CxpTraffic,
    Stream::VolkLifecycle,
    Stream::SessionEvents,
];

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(super) struct PacketState {
    packet: PacketFact,
    delivery_ts: i64,
    work_ts: i64,
}

/// The facts view: current facts plus how far each fact stream has been folded.
///
/// With a window ([`FactsView::with_window`]) it keeps only the most recent packets
/// (see `fact_window.rs`); send counts always cover the whole history. Serialized (the
/// checkpoint) without the packets' order, which is rebuilt from their sequences when
/// it is read (see `StoredView`).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(from = "StoredView")]
pub struct FactsView {
    /// Per stream name: number of events folded (the next sequence to fold).
    pub positions: BTreeMap<String, u64>,
    /// Per stream name: the epoch the positions belong to.
    pub epochs: BTreeMap<String, String>,
    pub(super) packets: BTreeMap<String, PacketState>,
    volks: BTreeMap<String, (Fact, Vec<Fact>, String)>,
    sessions: BTreeMap<String, Fact>,
    /// Per sender, per session: packets ever sent (the `cxp_sends/3` facts).
    sends: BTreeMap<String, BTreeMap<String, i64>>,
    /// How many packets the view shows (`None`: every packet).
    pub(super) window: Option<u64>,
    /// The `packet sent` sequence below which packets are hidden (0: none is).
    pub(super) floor: u64,
    /// The shown packets by the sequence of their `packet sent` (oldest first).
    #[serde(skip)]
    pub(super) order: BTreeMap<u64, String>,
}

/// The serialized form of [`FactsView`]. Checkpoints written before windows and
/// whole-history counts existed have neither: they held every packet, so their counts
/// are the packets' and their window is `None`.
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
    #[serde(default)]
    sends: Option<BTreeMap<String, BTreeMap<String, i64>>>,
    #[serde(default)]
    window: Option<u64>,
    #[serde(default)]
    floor: u64,
}

impl From<StoredView> for FactsView {
    fn from(mut stored: StoredView) -> Self {
        for state in stored.packets.values_mut() {
            if state.packet.sequence == 0 {
                state.packet.sequence = sequence_of(&state.packet.payload_ref);
            }
        }
        let sends = stored.sends.unwrap_or_else(|| {
            let mut sends: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
            for state in stored.packets.values() {
                let (from, session) = send_key(&state.packet);
                *sends.entry(from).or_default().entry(session).or_default() += 1;
            }
            sends
        });
        let order = stored
            .packets
            .iter()
            .map(|(id, state)| (state.packet.sequence, id.clone()))
            .collect();
        FactsView {
            positions: stored.positions,
            epochs: stored.epochs,
            packets: stored.packets,
            volks: stored.volks,
            sessions: stored.sessions,
            sends,
            window: stored.window,
            floor: stored.floor,
            order,
        }
    }
}

/// The sequence in a payload reference `cxp.traffic:<sequence>` (0 if it has none).
fn sequence_of(payload_ref: &str) -> u64 {
    payload_ref
        .rsplit(':')
        .next()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
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
    /// An empty view at position 0 of every stream, showing every packet.
    pub fn new() -> Self {
        FactsView::default()
    }

    /// An empty view that shows the `window` most recent packets (`None`: all).
    pub fn with_window(window: Option<u64>) -> Self {
        FactsView {
            window,
            ..FactsView::default()
        }
    }

    /// How many packets the view shows (`None`: every packet).
    pub fn window(&self) -> Option<u64> {
        self.window
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
        out.extend(self.sends.iter().flat_map(|(v, by_session)| {
            by_session
                .iter()
                .map(|(s, n)| Fact::Sends(v.clone(), s.clone(), *n))
        }));
        if self.floor > 0 {
            out.push(Fact::Floor(self.floor));
        }
        out
    }

    /// The `cxp_sends/3` count of `from` in `session` (0 when it has sent nothing).
    pub fn sends(&self, from: &str, session: &str) -> i64 {
        self.sends
            .get(from)
            .and_then(|by_session| by_session.get(session))
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
        let mut changes = Vec::with_capacity(8);
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
                    sequence,
                };
                let id = packet.message_id.clone();
                let key = send_key(&packet);
                let old_key = self.packets.remove(&id).map(|old| {
                    changes.extend(retract_packet(&old));
                    self.order.remove(&old.packet.sequence);
                    send_key(&old.packet)
                });
                let state = PacketState {
                    packet,
                    delivery_ts: ts,
                    work_ts: ts,
                };
                changes.extend(assert_packet(&state));
                self.packets.insert(id.clone(), state);
                self.order.insert(sequence, id);
                // A packet sent again under its id (and still shown) moves its count
                // (or leaves it).
                if old_key.as_ref() != Some(&key) {
                    if let Some(old_key) = old_key {
                        self.count_send(old_key, -1, &mut changes);
                    }
                    self.count_send(key, 1, &mut changes);
                }
                self.slide(&mut changes);
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
        let (from, session) = key;
        let by_session = self.sends.entry(from.clone()).or_default();
        let old = by_session.get(&session).copied().unwrap_or(0);
        let new = old + delta;
        if old > 0 {
            changes.push(FactChange::Retract(Fact::Sends(
                from.clone(),
                session.clone(),
                old,
            )));
        }
        if new > 0 {
            changes.push(FactChange::Assert(Fact::Sends(from, session.clone(), new)));
            by_session.insert(session, new);
        } else {
            by_session.remove(&session);
            if by_session.is_empty() {
                self.sends.remove(&from);
            }
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
