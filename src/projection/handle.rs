//! [`ViewHandle`]: shared, cheap reads of a live view, and read-your-write waits.

use std::sync::{Arc, RwLock, RwLockReadGuard};
use std::time::Duration;

use orchestrata_projections::packet::{Lookup, StoredParties};
use orchestrata_projections::thread::{Held, PacketState, ThreadState};
use orchestrata_projections::{Checkpoint, PacketIndex, ThreadView, View};
use orchestrata_schemas::events::Stream;
use tokio::sync::watch;
use uuid::Uuid;

use super::{ProjectionError, ViewStore};

/// A handle on a view kept live by a runner. Clone freely; reads never block the
/// runner for longer than one applied chunk of events.
pub struct ViewHandle<V> {
    pub(super) view: Arc<RwLock<V>>,
    pub(super) progress: watch::Receiver<Checkpoint>,
    /// Where the runner commits the view: entries the view let go of are read here.
    pub(super) store: ViewStore,
}

impl<V> Clone for ViewHandle<V> {
    fn clone(&self) -> Self {
        ViewHandle {
            view: self.view.clone(),
            progress: self.progress.clone(),
            store: self.store.clone(),
        }
    }
}

impl ViewHandle<PacketIndex> {
    /// The parties of packet `message_id` as the index holds them — from memory, or
    /// from the store when the index let the packet go — or `None` if the folded log
    /// did not send it. Reads the store without holding [`read`](Self::read)'s guard.
    pub fn parties(&self, message_id: &Uuid) -> Result<Option<StoredParties>, ProjectionError> {
        let key = match self.read().lookup(message_id) {
            Lookup::Memory(p) => return Ok(Some(p.into())),
            Lookup::Unknown => return Ok(None),
            Lookup::Store(key) => key,
            Lookup::Indexed(rows) => match self.first_row(&rows, PacketIndex::indexed_key)? {
                Some(key) => key,
                None => return Ok(None),
            },
        };
        let Some(bytes) = self.store.entry(PacketIndex::NAME, &key)? else {
            return Ok(None);
        };
        self.read()
            .decode_stored(&bytes)
            .map(Some)
            .map_err(|e| self.store.corrupt(PacketIndex::NAME, e.to_string()))
    }
}

impl ViewHandle<ThreadView> {
    /// The packet `message_id` as the view holds it — from memory, or from the store
    /// when the view let it go — or `None` if the view has not folded it.
    pub fn packet_state(&self, message_id: &Uuid) -> Result<Option<PacketState>, ProjectionError> {
        let Some(place) = self.read().find_packet(message_id).map(Owned::of) else {
            return Ok(None);
        };
        self.fetch(place, ThreadView::decode_packet)
    }

    /// The thread `thread_id` and its packets in send order, from memory or the store;
    /// `None` for a thread the view has not folded.
    pub fn thread_state(
        &self,
        thread_id: &str,
    ) -> Result<Option<(ThreadState, Vec<PacketState>)>, ProjectionError> {
        let Some(place) = self.read().find_thread(thread_id).map(Owned::of) else {
            return Ok(None);
        };
        let Some(thread) = self.fetch(place, ThreadView::decode_thread)? else {
            return Ok(None);
        };
        // Where each packet is, under one read; the stored ones are read after it.
        let places: Vec<Owned<PacketState>> = {
            let view = self.read();
            thread
                .packets
                .iter()
                .filter_map(|id| view.find_packet(id).map(Owned::of))
                .collect()
        };
        let mut packets = Vec::with_capacity(places.len());
        for place in places {
            // A packet its thread lists is stored: none found is a corrupt store.
            let packet = self
                .fetch(place, ThreadView::decode_packet)?
                .ok_or_else(|| {
                    self.store.corrupt(
                        ThreadView::NAME,
                        format!("a packet of thread {thread_id} has no stored index row"),
                    )
                })?;
            packets.push(packet);
        }
        Ok(Some((thread, packets)))
    }

    /// The entry at `place`: cloned from memory, or read from the store (through its
    /// index rows if need be); `None` when no row of it is stored (the view's filters
    /// said "maybe" for an id it never let go of).
    fn fetch<T>(
        &self,
        place: Owned<T>,
        decode: fn(&[u8]) -> Result<T, orchestrata_projections::StoredError>,
    ) -> Result<Option<T>, ProjectionError> {
        let key = match place {
            Owned::Memory(entry) => return Ok(Some(*entry)),
            Owned::Stored(key) => key,
            Owned::Indexed(rows) => match self.first_row(&rows, ThreadView::indexed_key)? {
                Some(key) => key,
                None => return Ok(None),
            },
        };
        self.stored(&key, decode).map(Some)
    }
}

/// Reads an index row (its key, its value) into the key of the entry it names.
type RowKey = fn(&[u8], &[u8]) -> Result<Vec<u8>, orchestrata_projections::StoredError>;

/// [`Held`] owned, to read the store after the view's lock is released.
enum Owned<T> {
    Memory(Box<T>),
    Stored(Vec<u8>),
    Indexed(Vec<Vec<u8>>),
}

impl<T: Clone> Owned<T> {
    fn of(held: Held<'_, T>) -> Self {
        match held {
            Held::Memory(entry) => Owned::Memory(Box::new(entry.clone())),
            Held::Stored(key) => Owned::Stored(key),
            Held::Indexed(rows) => Owned::Indexed(rows),
        }
    }
}

impl<V: View> ViewHandle<V> {
    /// Entry `key` the view let go of, read from the store and decoded (outside the
    /// view's lock).
    fn stored<T>(
        &self,
        key: &[u8],
        decode: fn(&[u8]) -> Result<T, orchestrata_projections::StoredError>,
    ) -> Result<T, ProjectionError> {
        let bytes = self.store.let_go_entry(V::NAME, key)?;
        decode(&bytes).map_err(|e| self.store.corrupt(V::NAME, e.to_string()))
    }

    /// The key of the entry the first stored of index `rows` names (`key_of` reads a
    /// row), `None` if none is stored: the view's filters of let-go ids said "maybe"
    /// for an id it never let go of.
    fn first_row(
        &self,
        rows: &[Vec<u8>],
        key_of: RowKey,
    ) -> Result<Option<Vec<u8>>, ProjectionError> {
        for row in rows {
            if let Some(value) = self.store.entry(V::NAME, row)? {
                return key_of(row, &value)
                    .map(Some)
                    .map_err(|e| self.store.corrupt(V::NAME, e.to_string()));
            }
        }
        Ok(None)
    }

    /// Read access to the live view. Hold the guard briefly: the runner waits for it
    /// before applying more events.
    pub fn read(&self) -> RwLockReadGuard<'_, V> {
        self.view.read().unwrap_or_else(|p| p.into_inner())
    }

    /// Whether the runner keeping this view live is still running (a stopped or
    /// crashed runner leaves the view frozen at its last checkpoint).
    pub fn is_running(&self) -> bool {
        self.progress.has_changed().is_ok()
    }

    /// How far the view has applied each stream.
    pub fn checkpoint(&self) -> Checkpoint {
        self.progress.borrow().clone()
    }

    /// Read-your-write: resolves once the view has applied `sequence` of `stream` (for
    /// example the sequence `EventLog::append` returned), or fails with
    /// [`ProjectionError::WaitTimeout`] after `timeout`. Fails at once with
    /// [`ProjectionError::NotFolded`] for a stream the view does not fold, and with
    /// [`ProjectionError::Stopped`] if the runner stops before getting there.
    pub async fn wait_for(
        &self,
        stream: Stream,
        sequence: u64,
        timeout: Duration,
    ) -> Result<(), ProjectionError> {
        if !V::STREAMS.contains(&stream) {
            return Err(ProjectionError::NotFolded {
                view: V::NAME,
                stream,
                folds: V::STREAMS
                    .iter()
                    .map(|s| s.as_str())
                    .collect::<Vec<_>>()
                    .join(", "),
            });
        }
        let mut progress = self.progress.clone();
        let waited = tokio::time::timeout(
            timeout,
            progress.wait_for(|c| c.has_passed(stream, sequence)),
        )
        .await;
        match waited {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(_)) => Err(ProjectionError::Stopped { view: V::NAME }),
            Err(_) => Err(ProjectionError::WaitTimeout {
                view: V::NAME,
                stream,
                sequence,
                reached: self
                    .progress
                    .borrow()
                    .last(stream)
                    .map_or_else(|| "none".into(), |s| s.to_string()),
                timeout_ms: u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX),
            }),
        }
    }
}
