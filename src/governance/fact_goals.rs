//! How changes to the facts become Prolog goals, at a cost that does not grow with
//! history.
//!
//! scryer 0.10's `retract/1` visits every clause of the predicate (it collects its
//! candidates with `findall` over the `'$clause'/2` mirror of all dynamic clauses,
//! indexed only by functor): retracting one packet's status with 100,000 packets held
//! cost 31.6 ms, while asserting one costs ~0.14 ms (`benches/governance.rs`). A packet's
//! status changes several times in its life, so packet facts are kept in two parts
//! (see `prelude.pl`):
//!
//! - `cxp_packet_base/10`, asserted once per packet: what its statuses do not change.
//!   Retracted only when a packet is sent again under its id with other fields (rare).
//! - `cxp_status(MessageId, d|w, Status, TimestampMs)`, appended at every change and
//!   never retracted: a packet's status is the last one appended for it (clauses keep
//!   their assertion order), found through first-argument indexing.
//!
//! `cxp_packet/12`, `cxp_delivery_status/3` and `cxp_work_status/3` are prelude rules
//! over these, so policies and `governance.query` read exactly what they read before.
//! The price: superseded statuses stay in the engine (a few per packet).

use super::facts::{Fact, FactChange};

/// The Prolog goals that apply `changes`, in order.
pub fn goals(changes: &[FactChange]) -> Vec<String> {
    let mut skip = vec![false; changes.len()];
    // A fact retracted and asserted again unchanged is left alone, and so is a packet's
    // base when only its statuses changed.
    for (i, change) in changes.iter().enumerate() {
        let FactChange::Retract(old) = change else {
            continue;
        };
        let again = changes.iter().enumerate().skip(i + 1).find(|(j, c)| {
            !skip[*j] && matches!(c, FactChange::Assert(new) if same_subject(old, new))
        });
        if let Some((j, FactChange::Assert(new))) = again {
            if unchanged(old, new) {
                skip[i] = true;
                skip[j] = true;
            }
        }
    }
    changes
        .iter()
        .zip(skip)
        .filter(|(_, skipped)| !skipped)
        .filter_map(|(change, _)| goal(change))
        .collect()
}

/// Whether `new` is a later version of `old` (the same packet or status).
fn same_subject(old: &Fact, new: &Fact) -> bool {
    match (old, new) {
        (Fact::Packet(a), Fact::Packet(b)) => a.message_id == b.message_id,
        (Fact::DeliveryStatus(a, ..), Fact::DeliveryStatus(b, ..))
        | (Fact::WorkStatus(a, ..), Fact::WorkStatus(b, ..)) => a == b,
        (a, b) => a == b,
    }
}

/// Whether replacing `old` by `new` changes nothing the engine stores (a packet's
/// stored term leaves out its statuses).
fn unchanged(old: &Fact, new: &Fact) -> bool {
    old.term() == new.term()
}

fn goal(change: &FactChange) -> Option<String> {
    match change {
        // The status appended next supersedes it; without its base it is not visible.
        FactChange::Retract(Fact::DeliveryStatus(..) | Fact::WorkStatus(..)) => None,
        FactChange::Assert(f) => Some(format!("assertz({})", f.term())),
        FactChange::Retract(f) => Some(format!("(retract({}) -> true ; true)", f.term())),
    }
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

    #[test]
    fn a_status_change_appends_one_status_and_retracts_nothing() {
        let changes = [
            FactChange::Retract(Fact::Packet(packet("queued"))),
            FactChange::Retract(Fact::DeliveryStatus("m-1".into(), "queued".into(), 1)),
            FactChange::Retract(Fact::WorkStatus("m-1".into(), "pending".into(), 1)),
            FactChange::Assert(Fact::Packet(packet("delivered"))),
            FactChange::Assert(Fact::DeliveryStatus("m-1".into(), "delivered".into(), 2)),
            FactChange::Assert(Fact::WorkStatus("m-1".into(), "pending".into(), 1)),
        ];
        let goals = goals(&changes);
        assert_eq!(
            goals,
            ["assertz(cxp_status('m-1',('d'),('delivered'),2))"],
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
}
