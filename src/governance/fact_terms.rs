//! The facts the engine holds, as Rust values and as the Prolog terms it stores.
//!
//! [`Fact`] is what [`FactsView`](super::facts::FactsView) folds the log into;
//! [`Fact::term`] is how the engine stores it (see `prelude.pl` and `fact_goals.rs`
//! for why a packet is a base fact plus appended statuses).

use serde::{Deserialize, Serialize};

use super::term::PlTerm;

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
    /// `cxp_sends/3`: sender, session, number of packets it ever sent in that session
    /// (kept in the engine's blackboard, not as a clause: see `prelude.pl`).
    Sends(String, String, i64),
    /// The packet window's floor: the `packet sent` sequence of the oldest packet the
    /// engine shows; packets below it are hidden (see `fact_window.rs`).
    Floor(u64),
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
    /// Sequence of its `packet sent` on `cxp.traffic` (what the window is ordered by).
    #[serde(default)]
    pub sequence: u64,
}

impl PacketFact {
    /// `cxp_packet_base/17`: the message id's three parts (see
    /// [`PlTerm::message_id`]), the `packet sent` sequence (compared with the window's
    /// floor), what does not change about the packet, then its delivery
    /// and work status as first stored (`Status`, `TimestampMs` each; later changes are
    /// `cxp_status/6` facts, see `prelude.pl`). `d` and `w` may be variables (a pattern).
    pub(super) fn base_term(&self, d: (PlTerm, PlTerm), w: (PlTerm, PlTerm)) -> PlTerm {
        let a = |s: &String| PlTerm::atom(s.clone());
        PlTerm::compound(
            "cxp_packet_base",
            super::term::message_id_parts(&self.message_id)
                .into_iter()
                .chain([
                    PlTerm::Int(i64::try_from(self.sequence).unwrap_or(i64::MAX)),
                    a(&self.from),
                    a(&self.to),
                    PlTerm::string(self.thread_id.clone()),
                    // Free text: a string, not an atom (see `Request::context_term`).
                    PlTerm::string(self.subject.clone()),
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
    ///
    /// The open places are anonymous (`_`): several retracts run as one conjunction
    /// (`fact_goals.rs`), where named variables would be shared between them and the
    /// second retract would only match a base stored with the first one's statuses.
    pub(super) fn base_pattern(&self) -> PlTerm {
        let var = || PlTerm::Var("_".to_owned());
        self.base_term((var(), var()), (var(), var()))
    }
}

impl Fact {
    /// The fact as the engine stores it. A packet is stored as `cxp_packet_base/17`
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
            Fact::Floor(f) => PlTerm::compound(
                "cxp_window_floor",
                vec![PlTerm::Int(i64::try_from(*f).unwrap_or(i64::MAX))],
            ),
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
