//! A deterministic synthetic workload: plausible event traffic for tests, benchmarks and
//! load checks of the views.
//!
//! [`Workload`] plays a small multi-agent system from a seed: it registers the standard
//! roster, opens sessions, sends packets in new and existing threads, delivers,
//! acknowledges, fails and retries them, moves their work along, changes priorities,
//! closes, reopens and archives threads, records governance decisions, and lets event
//! time advance (now and then by more than 30 days, so the archive age rule fires). Same
//! seed, same events — including event ids and timestamps — so two runs fold to the same
//! views. It is pure (a xorshift generator, no clock, no OS randomness).

use std::collections::BTreeMap;

use chrono::{DateTime, Duration, TimeZone, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::cxp_traffic::*;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::governance::DecisionRecorded;
use orchestrata_schemas::events::session::*;
use orchestrata_schemas::events::types::{
    DecisionResult, Health, Packet, PacketPayload, SubjectKind, TaskOutcome,
};
use orchestrata_schemas::events::volk_lifecycle::*;
use orchestrata_schemas::events::{Envelope, Event, EventRecord, Stream};
use uuid::Uuid;

/// The standard roster of spec 005.
pub const ROSTER: [&str; 8] = [
    "U:Ox", "U:PS", "U:Vz", "U:Qa", "U:Ar", "U:Ux", "U:PM", "U:Cx",
];

struct PacketInfo {
    id: Uuid,
    thread: String,
    to: String,
    delivery: DeliveryStatus,
    work: WorkStatus,
    priority: i32,
    retries: i32,
}

/// A seeded generator of event records (see the module docs).
pub struct Workload {
    state: u64,
    time: DateTime<Utc>,
    threads: Vec<String>,
    packets: Vec<PacketInfo>,
    sessions: Vec<(String, bool)>,
    tasks: Vec<(String, String)>,
    pending: Vec<EventRecord>,
    sequences: BTreeMap<Stream, u64>,
}

impl Workload {
    /// A workload starting at 2026-01-01T00:00:00Z whose first events register the roster.
    pub fn new(seed: u64) -> Self {
        let time = Utc
            .with_ymd_and_hms(2026, 1, 1, 0, 0, 0)
            .single()
            .unwrap_or_default();
        let mut w = Workload {
            state: seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1,
            time,
            threads: Vec::new(),
            packets: Vec::new(),
            sessions: Vec::new(),
            tasks: Vec::new(),
            pending: Vec::new(),
            sequences: BTreeMap::new(),
        };
        for alias in ROSTER.iter().rev() {
            let e = VolkRegistered {
                alias: (*alias).into(),
                capabilities: vec!["cxp".into()],
                parent: (*alias != "U:Ox").then(|| "U:Ox".into()),
                protocols: vec!["cxp/1.0".into()],
                session_id: None,
                metadata: Json(serde_json::json!({"role": alias})),
            };
            let record = w.record(alias, e);
            w.pending.push(record);
        }
        w
    }

    fn next_u64(&mut self) -> u64 {
        self.state ^= self.state << 13;
        self.state ^= self.state >> 7;
        self.state ^= self.state << 17;
        self.state
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n.max(1) as u64) as usize
    }

    fn uuid(&mut self) -> Uuid {
        let hi = u128::from(self.next_u64());
        let lo = u128::from(self.next_u64());
        uuid::Builder::from_random_bytes(((hi << 64) | lo).to_le_bytes()).into_uuid()
    }

    fn alias(&mut self) -> String {
        ROSTER[self.below(ROSTER.len())].to_owned()
    }

    fn record(&mut self, key: &str, event: impl Into<Event>) -> EventRecord {
        EventRecord {
            event_id: self.uuid(),
            timestamp: self.time,
            source: "workload".into(),
            key: key.to_owned(),
            command_id: None,
            principal: None,
            event: event.into(),
        }
    }

    /// The next event record.
    pub fn next_record(&mut self) -> EventRecord {
        if let Some(r) = self.pending.pop() {
            return r;
        }
        // Time moves 1-500 ms per event, and once in ~20,000 events by 31 days.
        let step = if self.below(20_000) == 0 {
            Duration::days(31)
        } else {
            Duration::milliseconds(1 + self.below(500) as i64)
        };
        self.time += step;
        let roll = self.below(100);
        match roll {
            0..=29 => self.send(),
            30..=64 => self.advance_delivery(),
            65..=79 => self.advance_work(),
            80..=82 => self.priority(),
            83..=86 => self.thread_lifecycle(),
            87..=91 => self.session(),
            92..=95 => self.volk(),
            _ => self.decision(),
        }
    }

    /// The next `n` records wrapped as the log would hand them back (per-stream
    /// sequences from 0, epoch `sample`).
    pub fn envelopes(&mut self, n: usize) -> Vec<Envelope> {
        (0..n)
            .map(|_| {
                let record = self.next_record();
                let stream = record.stream();
                let seq = self.sequences.entry(stream).or_insert(0);
                let sequence = *seq;
                *seq += 1;
                Envelope {
                    stream,
                    sequence,
                    epoch: "sample".into(),
                    record,
                }
            })
            .collect()
    }

    fn send(&mut self) -> EventRecord {
        let from = self.alias();
        let to = self.alias();
        let reply = !self.threads.is_empty() && self.below(3) > 0;
        let thread = if reply {
            let i = self.below(self.threads.len());
            self.threads[i].clone()
        } else {
            let t = self.uuid().to_string();
            self.threads.push(t.clone());
            t
        };
        let id = self.uuid();
        let priority = self.below(11) as i32;
        let packet = Packet {
            message_id: id,
            from_agent: from.clone(),
            to_agent: to.clone(),
            thread_id: thread.clone(),
            subject: format!("task {}", self.packets.len()),
            payload: PacketPayload::Json(serde_json::json!({"step": self.packets.len()}).into()),
            created_at: self.time,
            priority,
            delivery_status: DeliveryStatus::Queued,
            work_status: WorkStatus::Pending,
            protocol_version: "1.0.0".into(),
            in_reply_to: None,
            metadata: Json::default(),
        };
        self.packets.push(PacketInfo {
            id,
            thread: thread.clone(),
            to,
            delivery: DeliveryStatus::Queued,
            work: WorkStatus::Pending,
            priority,
            retries: 0,
        });
        if self.packets.len() > 4096 {
            self.packets.remove(0);
        }
        self.record(&thread, PacketSent { packet })
    }

    fn pick_packet(&mut self) -> Option<usize> {
        (!self.packets.is_empty()).then(|| {
            let n = self.packets.len();
            n - 1 - self.below(n.min(64))
        })
    }

    fn advance_delivery(&mut self) -> EventRecord {
        let Some(i) = self.pick_packet() else {
            return self.send();
        };
        let fail = self.below(10) == 0;
        let p = &mut self.packets[i];
        let (id, thread, to) = (p.id, p.thread.clone(), p.to.clone());
        let event: Event = match p.delivery {
            DeliveryStatus::Queued if fail => {
                p.delivery = DeliveryStatus::Failed;
                PacketFailed {
                    message_id: id,
                    thread_id: thread.clone(),
                    reason: "recipient inbox unavailable".into(),
                    retry_count: p.retries,
                    will_retry: p.retries < 3,
                }
                .into()
            }
            DeliveryStatus::Queued => {
                p.delivery = DeliveryStatus::Delivered;
                PacketDelivered {
                    message_id: id,
                    thread_id: thread.clone(),
                    to_agent: to,
                }
                .into()
            }
            DeliveryStatus::Delivered => {
                p.delivery = DeliveryStatus::Acknowledged;
                PacketAcknowledged {
                    message_id: id,
                    thread_id: thread.clone(),
                    acknowledged_by: to,
                }
                .into()
            }
            DeliveryStatus::Failed => {
                p.delivery = DeliveryStatus::Queued;
                p.retries += 1;
                PacketRetried {
                    message_id: id,
                    thread_id: thread.clone(),
                    attempt: p.retries,
                }
                .into()
            }
            DeliveryStatus::Acknowledged => return self.send(),
        };
        self.record(&thread, event)
    }

    fn advance_work(&mut self) -> EventRecord {
        let Some(i) = self.pick_packet() else {
            return self.send();
        };
        let p = &mut self.packets[i];
        let old = p.work;
        let new = match old {
            WorkStatus::Pending => WorkStatus::InProgress,
            WorkStatus::InProgress => WorkStatus::Resolved,
            WorkStatus::Resolved => WorkStatus::Archived,
            WorkStatus::Archived => return self.send(),
        };
        p.work = new;
        let e = WorkStatusChanged {
            message_id: p.id,
            thread_id: p.thread.clone(),
            old,
            new,
            changed_by: p.to.clone(),
            assigned_to: (new == WorkStatus::InProgress).then(|| p.to.clone()),
            resolution: (new == WorkStatus::Resolved)
                .then(|| Json(serde_json::json!({"ok": true}))),
            notes: None,
        };
        let thread = p.thread.clone();
        self.record(&thread, e)
    }

    fn priority(&mut self) -> EventRecord {
        let Some(i) = self.pick_packet() else {
            return self.send();
        };
        let new = self.below(11) as i32;
        let p = &mut self.packets[i];
        let e = PriorityChanged {
            message_id: p.id,
            thread_id: p.thread.clone(),
            old: p.priority,
            new,
            changed_by: "U:Ox".into(),
            reason: Some("rebalance".into()),
        };
        p.priority = new;
        let thread = p.thread.clone();
        self.record(&thread, e)
    }

    fn thread_lifecycle(&mut self) -> EventRecord {
        if self.threads.is_empty() {
            return self.send();
        }
        let i = self.below(self.threads.len());
        let thread_id = self.threads[i].clone();
        let event: Event = match self.below(3) {
            0 => ThreadClosed {
                thread_id: thread_id.clone(),
                closed_by: "U:Ox".into(),
                reason: None,
            }
            .into(),
            1 => ThreadReopened {
                thread_id: thread_id.clone(),
                reopened_by: "U:Ox".into(),
                reason: Some("follow-up".into()),
            }
            .into(),
            _ => ThreadArchived {
                thread_id: thread_id.clone(),
                archived_by: "kernel".into(),
                reason: None,
            }
            .into(),
        };
        self.record(&thread_id, event)
    }

    fn session(&mut self) -> EventRecord {
        let open: Vec<usize> = (0..self.sessions.len())
            .filter(|i| self.sessions[*i].1)
            .collect();
        let roll = self.below(6);
        if open.is_empty() || roll == 0 || self.sessions.is_empty() {
            let id = format!("s-{}", self.sessions.len());
            self.sessions.push((id.clone(), true));
            let portfolio = format!("p-{}", self.below(3));
            let e = SessionOpened {
                session_id: id.clone(),
                portfolio_id: portfolio,
                goals: vec!["ship".into()],
                opened_by: "U:Ox".into(),
            };
            return self.record(&id, e);
        }
        let i = open[self.below(open.len())];
        let id = self.sessions[i].0.clone();
        let event: Event = match roll {
            1 => {
                self.sessions[i].1 = false;
                let carry = if self.below(2) == 0 {
                    vec![]
                } else {
                    vec!["follow-up".into()]
                };
                SessionClosed {
                    session_id: id.clone(),
                    summary: "done".into(),
                    carryover: carry,
                }
                .into()
            }
            2 => SessionContextUpdated {
                session_id: id.clone(),
                patch: Json(serde_json::json!({"k": self.below(5), "gone": null})),
                updated_by: "U:Ox".into(),
            }
            .into(),
            3 => SessionFactAsserted {
                session_id: id.clone(),
                fact_type: "note".into(),
                data: Json(serde_json::json!({"n": 1})),
                asserted_by: "U:Qa".into(),
            }
            .into(),
            4 => SessionErrorOccurred {
                session_id: id.clone(),
                code: "E1".into(),
                message: "hiccup".into(),
                recoverable: true,
            }
            .into(),
            _ => SessionRecovered {
                session_id: id.clone(),
                recovered_by: "U:Ox".into(),
                reason: None,
            }
            .into(),
        };
        self.record(&id, event)
    }

    fn volk(&mut self) -> EventRecord {
        let alias = self.alias();
        let event: Event = match self.below(4) {
            0 => VolkHealthChanged {
                alias: alias.clone(),
                old: Health::Healthy,
                new: if self.below(2) == 0 {
                    Health::Degraded
                } else {
                    Health::Healthy
                },
                details: None,
            }
            .into(),
            1 if !self.tasks.is_empty() => {
                let (a, task) = self.tasks.remove(0);
                VolkTaskCompleted {
                    alias: a,
                    task_id: task,
                    outcome: TaskOutcome::Succeeded,
                    summary: None,
                    duration_ms: 10,
                }
                .into()
            }
            2 => VolkEscalated {
                alias: alias.clone(),
                escalated_to: "U:Ox".into(),
                path: vec![alias.clone(), "U:Ox".into()],
                reason: "blocked".into(),
                thread_id: None,
            }
            .into(),
            _ => {
                let task = format!("task-{}", self.next_u64() % 1_000_000);
                self.tasks.push((alias.clone(), task.clone()));
                VolkTaskStarted {
                    alias: alias.clone(),
                    task_id: task,
                    thread_id: None,
                    description: "work".into(),
                }
                .into()
            }
        };
        self.record(&alias, event)
    }

    fn decision(&mut self) -> EventRecord {
        let subject = self.alias();
        let result = [
            DecisionResult::Allow,
            DecisionResult::Deny,
            DecisionResult::Escalate,
        ][self.below(3)];
        let e = DecisionRecorded {
            decision_id: self.uuid(),
            subject_kind: SubjectKind::Volk,
            subject: subject.clone(),
            action: ["cxp.send", "session.open"][self.below(2)].into(),
            resource: "thread".into(),
            result,
            rule_trace: vec!["allow_roster".into()],
            articles_applied: vec!["Article I".into()],
            policy_hash: "h1".into(),
            latency_us: 12,
            query: None,
            dry_run: false,
            reason: None,
        };
        self.record(&subject, e)
    }
}
