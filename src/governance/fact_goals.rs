//! How changes to the facts become Prolog goals, at a cost that does not grow with
//! history.
//!
//! scryer 0.10's `retract/1` visits every clause of the predicate (it collects its
//! candidates with `findall` over the `'$clause'/2` mirror of all dynamic clauses,
//! indexed only by functor), so retracting one packet's status costs in proportion to
//! the packets held, while asserting one does not (`benches/governance.rs`,
//! `governance_status_change`). A packet's
//! status changes several times in its life, so packet facts are kept in two parts
//! (see `prelude.pl`):
//!
//! - `cxp_packet_base/16`, asserted once per packet: its id, what its statuses do not change,
//!   then its delivery and work status as first stored. Retracted only when a packet is
//!   sent again under its id with other fields (rare).
//! - `cxp_status(A, B, C, d|w, Status, TimestampMs)` (`A, B, C`: the message id), appended at every later change
//!   and never retracted: a packet's status is the last one appended for it (clauses
//!   keep their assertion order), found through first-argument indexing, or the base's
//!   when none was appended.
//!
//! `cxp_packet/12`, `cxp_delivery_status/3` and `cxp_work_status/3` are prelude rules
//! over these, so policies and `governance.query` read exactly what they read before.
//! The price: superseded statuses stay in the engine (a few per packet).

use std::collections::hash_map::Entry;
use std::collections::{HashMap, HashSet, VecDeque};

use super::facts::{Fact, FactChange};
use super::term::PlTerm;

/// The Prolog goals that apply `changes`, in order.
///
/// Each goal is an `assertz` scryer parses and compiles (`docs/governance.md`), so the
/// list is made as short as the engine's answers allow
/// (one call applies the whole list before any query runs, so only its end state is
/// visible):
/// - a fact retracted and asserted again unchanged is left alone, and so is a packet's
///   base when only its statuses changed;
/// - a status asserted and superseded by a later one of the same packet and kind in
///   the same list is not asserted;
/// - a new packet's base carries its statuses as first stored, so a packet sent (and
///   queued) costs one `assertz`, not three. Not for a packet sent again under its id:
///   its earlier `cxp_status/6` facts stay, so its statuses are appended after them.
///
/// Counts and the floor arrive here at most once each: the evaluator keeps only their
/// latest value until a goal runs (`evaluator/deferred.rs`).
pub fn goals(changes: &[FactChange]) -> Vec<String> {
    // Linear in the list (a fresh engine loads every fact of the history through here).
    let mut skip = vec![false; changes.len()];
    // Asserts by subject, in order, to pair each retract with the next assert of the
    // same subject.
    let mut asserts: HashMap<Subject<'_>, VecDeque<usize>> = HashMap::new();
    for (j, change) in changes.iter().enumerate() {
        if let FactChange::Assert(new) = change {
            asserts.entry(subject(new)).or_default().push_back(j);
        }
    }
    for (i, change) in changes.iter().enumerate() {
        let FactChange::Retract(old) = change else {
            continue;
        };
        let Some(queue) = asserts.get_mut(&subject(old)) else {
            continue;
        };
        while queue.front().is_some_and(|&j| j < i || skip[j]) {
            queue.pop_front();
        }
        if let Some(&j) = queue.front() {
            if let FactChange::Assert(new) = &changes[j] {
                if unchanged(old, new) {
                    skip[i] = true;
                    skip[j] = true;
                    queue.pop_front();
                }
            }
        }
    }
    // Statuses superseded within the list: only the last of a packet and kind stays.
    let mut latest: HashMap<Subject<'_>, usize> = HashMap::new();
    for i in (0..changes.len()).rev() {
        if skip[i] {
            continue;
        }
        if let FactChange::Assert(status @ (Fact::DeliveryStatus(..) | Fact::WorkStatus(..))) =
            &changes[i]
        {
            match latest.entry(subject(status)) {
                Entry::Occupied(_) => skip[i] = true,
                Entry::Vacant(slot) => {
                    slot.insert(i);
                }
            }
        }
    }
    let resent: HashSet<&str> = changes
        .iter()
        .zip(&skip)
        .filter_map(|(c, skipped)| match c {
            FactChange::Retract(Fact::Packet(p)) if !skipped => Some(p.message_id.as_str()),
            _ => None,
        })
        .collect();
    let mut out = Vec::with_capacity(changes.len());
    for i in 0..changes.len() {
        if skip[i] {
            continue;
        }
        match &changes[i] {
            FactChange::Assert(Fact::Packet(p)) if !resent.contains(p.message_id.as_str()) => {
                let mut take = |key: Subject<'_>| {
                    let j = *latest.get(&key)?;
                    if j <= i || skip[j] {
                        return None;
                    }
                    skip[j] = true;
                    match &changes[j] {
                        FactChange::Assert(
                            Fact::DeliveryStatus(_, s, t) | Fact::WorkStatus(_, s, t),
                        ) => Some(status_of(s, *t)),
                        _ => None,
                    }
                };
                let d = take(Subject::Status('d', &p.message_id));
                let w = take(Subject::Status('w', &p.message_id));
                let base = p.base_term(
                    d.unwrap_or_else(|| status_of(&p.delivery, p.timestamp_ms)),
                    w.unwrap_or_else(|| status_of(&p.work, p.timestamp_ms)),
                );
                out.push(format!("assertz({base})"));
            }
            change => out.extend(goal(change)),
        }
    }
    out
}

/// What a fact is a version of: a packet (by id), one of its statuses (by kind and
/// id), or any other fact (itself).
#[derive(Debug, PartialEq, Eq, Hash)]
enum Subject<'a> {
    Packet(&'a str),
    Status(char, &'a str),
    Other(&'a Fact),
}

fn subject(fact: &Fact) -> Subject<'_> {
    match fact {
        Fact::Packet(p) => Subject::Packet(&p.message_id),
        Fact::DeliveryStatus(m, ..) => Subject::Status('d', m),
        Fact::WorkStatus(m, ..) => Subject::Status('w', m),
        other => Subject::Other(other),
    }
}

fn status_of(status: &str, ts: i64) -> (PlTerm, PlTerm) {
    (PlTerm::atom(status), PlTerm::Int(ts))
}

/// Whether replacing `old` by `new` changes nothing the engine stores (a packet's
/// base is compared without its statuses, which change through `cxp_status/6`).
fn unchanged(old: &Fact, new: &Fact) -> bool {
    match (old, new) {
        (Fact::Packet(a), Fact::Packet(b)) => a.base_pattern() == b.base_pattern(),
        _ => old.term() == new.term(),
    }
}

fn goal(change: &FactChange) -> Option<String> {
    match change {
        FactChange::Assert(Fact::Sends(v, s, n)) => Some(set_sends(v, s, *n)),
        FactChange::Retract(Fact::Sends(v, s, _)) => Some(set_sends(v, s, 0)),
        FactChange::Assert(Fact::Floor(f)) => Some(format!("'$set_floor'({f})")),
        FactChange::Retract(Fact::Floor(_)) => None,
        // The status appended next supersedes it; without its base it is not visible.
        FactChange::Retract(Fact::DeliveryStatus(..) | Fact::WorkStatus(..)) => None,
        FactChange::Retract(Fact::Packet(p)) => {
            Some(format!("(retract({}) -> true ; true)", p.base_pattern()))
        }
        FactChange::Assert(f) => Some(format!("assertz({})", f.term())),
        FactChange::Retract(f) => Some(format!("(retract({}) -> true ; true)", f.term())),
    }
}

/// Replaces the `cxp_sends/3` count of `v` in `s` (0: none).
fn set_sends(v: &str, s: &str, n: i64) -> String {
    format!(
        "'$set_sends'({},{},{n})",
        PlTerm::atom(v.to_owned()),
        PlTerm::atom(s.to_owned())
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::governance::facts::PacketFact;

    fn packet(delivery: &str) -> PacketFact {
        PacketFact {
            message_id: "m-1".into(),
            from: "U:Ox".into(),
            to: "U:Vz".into(),
            delivery: delivery.into(),
            ..PacketFact::default()
        }
    }

    /// The facts of packet `m-1` delivered as `delivery` at `ts` (work pending since 1),
    /// as the facts view emits them.
    fn facts(delivery: &str, ts: i64) -> [Fact; 3] {
        [
            Fact::Packet(packet(delivery)),
            Fact::DeliveryStatus("m-1".into(), delivery.into(), ts),
            Fact::WorkStatus("m-1".into(), "pending".into(), 1),
        ]
    }

    /// What the facts view emits when the packet's delivery goes from `old` to `new`.
    fn change(old: [Fact; 3], new: [Fact; 3]) -> Vec<FactChange> {
        old.into_iter()
            .map(FactChange::Retract)
            .chain(new.into_iter().map(FactChange::Assert))
            .collect()
    }

    #[test]
    fn a_status_change_appends_one_status_and_retracts_nothing() {
        let changes = change(facts("queued", 1), facts("delivered", 2));
        let goals = goals(&changes);
        assert_eq!(
            goals,
            ["assertz(cxp_status('m-1',0,0,('d'),('delivered'),2))"],
            "{goals:?}"
        );
    }

    #[test]
    fn a_packet_sent_again_with_other_fields_replaces_its_base() {
        let mut moved = packet("queued");
        moved.to = "U:Qa".into();
        let goals = goals(&[
            FactChange::Retract(Fact::Packet(packet("queued"))),
            FactChange::Assert(Fact::Packet(moved)),
        ]);
        assert_eq!(goals.len(), 2);
        assert!(
            goals[0].starts_with("(retract(cxp_packet_base("),
            "{goals:?}"
        );
        assert!(
            goals[1].starts_with("assertz(cxp_packet_base("),
            "{goals:?}"
        );
    }

    // ISSUE-15: a packet sent and queued in one batch costs one assertz
    #[test]
    fn a_new_packet_is_one_base_carrying_its_latest_statuses() {
        // Sent (asserted pending), then queued in the same batch.
        let mut changes: Vec<FactChange> = facts("pending", 1)
            .into_iter()
            .map(FactChange::Assert)
            .collect();
        changes.extend(change(facts("pending", 1), facts("queued", 2)));
        let goals = goals(&changes);
        assert_eq!(goals.len(), 1, "{goals:?}");
        assert!(
            goals[0].starts_with("assertz(cxp_packet_base('m-1',0,0,")
                && goals[0].ends_with("('queued'),2,('pending'),1))"),
            "{goals:?}"
        );
    }

    // ISSUE-15: a packet sent again keeps its earlier statuses in the engine, so its
    // new ones are appended after them rather than folded into its new base
    #[test]
    fn a_packet_sent_again_appends_its_statuses() {
        let mut moved = packet("queued");
        moved.to = "U:Qa".into();
        let goals = goals(&[
            FactChange::Retract(Fact::Packet(packet("acknowledged"))),
            FactChange::Retract(Fact::DeliveryStatus("m-1".into(), "acknowledged".into(), 5)),
            FactChange::Assert(Fact::Packet(moved)),
            FactChange::Assert(Fact::DeliveryStatus("m-1".into(), "queued".into(), 6)),
        ]);
        assert_eq!(goals.len(), 3, "{goals:?}");
        assert_eq!(
            goals[2],
            "assertz(cxp_status('m-1',0,0,('d'),('queued'),6))"
        );
    }
}
