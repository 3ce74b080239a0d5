//! Helpers of the unit tests: envelopes built by hand, and a store as a map.

use chrono::{DateTime, Duration, TimeZone, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::{Packet, PacketPayload};
use orchestrata_schemas::events::{Envelope, Event, EventRecord};
use uuid::Uuid;

/// 2026-01-01T00:00:00Z plus `secs` seconds.
pub fn t(secs: i64) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::seconds(secs)
}

/// The envelope of `event` at `sequence` of its stream, at time `t(secs)`.
pub fn env(sequence: u64, secs: i64, event: impl Into<Event>) -> Envelope {
    let event = event.into();
    Envelope {
        stream: event.stream(),
        sequence,
        epoch: "test".into(),
        record: EventRecord {
            event_id: Uuid::from_u128(u128::from(sequence) + 1),
            timestamp: t(secs),
            source: "test".into(),
            key: "k".into(),
            command_id: None,
            principal: None,
            event,
        },
    }
}

/// A queued, pending packet.
pub fn packet(id: u128, thread: &str, from: &str, to: &str, priority: i32) -> Packet {
    Packet {
        message_id: Uuid::from_u128(id),
        from_agent: from.into(),
        to_agent: to.into(),
        thread_id: thread.into(),
        subject: format!("subject {id}"),
        payload: PacketPayload::Json(serde_json::json!({"n": id as u64}).into()),
        created_at: t(0),
        priority,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: "1.0.0".into(),
        in_reply_to: None,
        metadata: Json::default(),
    }
}

/// The JSON of a view (the byte-for-byte comparison form).
pub fn json<V: serde::Serialize>(view: &V) -> String {
    serde_json::to_string(view).unwrap()
}

/// A view store as a map: what a view's commits leave behind, head and entries, used
/// the way a runner uses its store.
#[derive(Default)]
pub struct Shelf {
    pub head: Vec<u8>,
    pub entries: std::collections::BTreeMap<Vec<u8>, Vec<u8>>,
}

impl Shelf {
    /// Commits as the runner does: takes the changes (all of them when `all`), stores
    /// them, and tells the view they are stored, so it may let all but `keep_hot` go.
    pub fn commit<V: crate::View>(&mut self, view: &mut V, all: bool, keep_hot: usize) {
        let changes = view.take_changes(all).unwrap();
        self.write(changes, all);
        view.committed(keep_hot);
    }

    /// Stores what a commit took (`all`: the commit was asked to write the view
    /// whole). A runner that folds while storing applies events between the take and
    /// this write, reading let-go entries from the shelf as it was before it.
    pub fn write(&mut self, changes: crate::stored::Changes, all: bool) {
        if all || changes.full {
            self.entries.clear();
        }
        let fresh: Vec<bool> = (0..changes.entries.len())
            .map(|i| changes.is_fresh(i))
            .collect();
        self.head = changes.head;
        for ((key, value), fresh) in changes.entries.into_iter().zip(fresh) {
            // What a view calls fresh the store must not hold: the store writes it
            // without reading what is there (`Changes::fresh`).
            assert!(
                !fresh || !self.entries.contains_key(&key),
                "entry {key:?} is called fresh but is stored"
            );
            match value {
                Some(value) => self.entries.insert(key, value),
                None => self.entries.remove(&key),
            };
        }
    }

    /// What a runner does before applying `chunk`: hands back the let-go entries the
    /// view asks for until it asks for none. Answers how many it read.
    pub fn warm<V: crate::View>(&self, view: &mut V, chunk: &[Envelope]) -> usize {
        let mut read = 0;
        for _ in 0..8 {
            let mut keys = Vec::new();
            for e in chunk {
                view.cold_keys(e, &mut keys);
            }
            keys.sort_unstable();
            keys.dedup();
            if keys.is_empty() {
                return read;
            }
            read += keys.len();
            let entries = keys
                .into_iter()
                .map(|k| {
                    let v = self.entries.get(&k).cloned().unwrap_or_default();
                    (k, v)
                })
                .collect();
            view.warm(entries).unwrap();
        }
        panic!("the view kept asking for entries");
    }

    /// Warms, then applies `envelope`.
    pub fn apply<V: crate::View>(&self, view: &mut V, envelope: &Envelope) {
        self.warm(view, std::slice::from_ref(envelope));
        view.apply(envelope);
    }

    /// Applies `event(0)` … `event(PRESSING_ENTRIES)` to `view`, each a new entry
    /// waiting for a commit: the view must not ask for a commit before the last and
    /// must ask after it ([`View::needs_commit`](crate::View::needs_commit)); a commit
    /// keeping `keep_hot` must quiet it.
    pub fn presses_past_the_bound<V: crate::View>(
        &mut self,
        view: &mut V,
        event: impl Fn(u64) -> Envelope,
        keep_hot: usize,
    ) {
        let n = u64::try_from(crate::stored::PRESSING_ENTRIES).unwrap();
        for seq in 0..=n {
            assert!(!view.needs_commit(), "asked early, at {seq}");
            view.apply(&event(seq));
        }
        assert!(view.needs_commit(), "{} entries wait", n + 1);
        self.commit(view, false, keep_hot);
        assert!(!view.needs_commit(), "still asks after a commit");
    }

    /// The view as the store holds it.
    pub fn restore<V: crate::View>(&self) -> V {
        let entries = self
            .entries
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        V::from_stored(&self.head, entries).unwrap()
    }
}
