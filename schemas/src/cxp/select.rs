//! Selecting packets from a collection: by thread (chronological), sender, recipient and
//! status (US-004-019, US-005-019, US-008).

use super::alias::VolkAlias;
use super::packet::CxpPacket;
use super::status::{DeliveryStatus, WorkStatus};

/// The packets of `thread_id`, oldest first (ties broken by `message_id`).
pub fn thread_packets<'a>(
    packets: impl IntoIterator<Item = &'a CxpPacket>,
    thread_id: &str,
) -> Vec<&'a CxpPacket> {
    let mut v: Vec<_> = packets
        .into_iter()
        .filter(|p| p.thread_id() == thread_id)
        .collect();
    v.sort_by(|a, b| {
        a.timestamp()
            .cmp(&b.timestamp())
            .then(a.message_id().cmp(&b.message_id()))
    });
    v
}

/// Packets sent by `sender`.
pub fn from_sender<'a>(
    packets: impl IntoIterator<Item = &'a CxpPacket>,
    sender: VolkAlias,
) -> impl Iterator<Item = &'a CxpPacket> {
    packets
        .into_iter()
        .filter(move |p| p.from_agent() == sender)
}

/// Packets addressed to `recipient`.
pub fn to_recipient<'a>(
    packets: impl IntoIterator<Item = &'a CxpPacket>,
    recipient: VolkAlias,
) -> impl Iterator<Item = &'a CxpPacket> {
    packets
        .into_iter()
        .filter(move |p| p.to_agent() == recipient)
}

/// Packets whose delivery status is `status`.
pub fn with_delivery_status<'a>(
    packets: impl IntoIterator<Item = &'a CxpPacket>,
    status: DeliveryStatus,
) -> impl Iterator<Item = &'a CxpPacket> {
    packets
        .into_iter()
        .filter(move |p| p.delivery_status() == status)
}

/// Packets whose work status is `status`.
pub fn with_work_status<'a>(
    packets: impl IntoIterator<Item = &'a CxpPacket>,
    status: WorkStatus,
) -> impl Iterator<Item = &'a CxpPacket> {
    packets
        .into_iter()
        .filter(move |p| p.work_status() == status)
}
