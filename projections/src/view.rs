//! The [`View`] trait every fold implements.

use std::fmt;
use std::marker::PhantomData;
use std::str::FromStr;

use orchestrata_schemas::events::{Envelope, Stream};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::stored::{self, Changes, StoredEntry, StoredError};
use crate::Checkpoint;

/// A view: a value folded from the log, one event at a time.
///
/// Start from `Default` (the empty view) and [`apply`](View::apply) every event of the
/// view's [`STREAMS`](View::STREAMS) in log order. Implementations must keep `apply`
/// pure and idempotent (see the crate docs), and must not depend on how events of
/// *different* streams interleave, so a runner that tails several streams concurrently
/// and a rebuild that reads them one after the other reach the same value.
pub trait View: Default + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// Which view this is (its storage key and CLI name).
    const NAME: ViewName;
    /// The streams the view folds; events of other streams are ignored.
    const STREAMS: &'static [Stream];

    /// How far the view has folded each stream.
    fn checkpoint(&self) -> &Checkpoint;

    /// Applies one event. Returns `true` if it changed the checkpoint, `false` if the
    /// event was a repeat, older than the checkpoint, or of a stream the view ignores.
    fn apply(&mut self, envelope: &Envelope) -> bool;

    /// [`apply`](View::apply) for an envelope the caller no longer needs: the same
    /// change, but a view that keeps parts of events (the thread view keeps every
    /// packet) may move them out instead of cloning them. Rebuilds and the runner read
    /// pages of owned envelopes and fold them with this; the result must equal `apply`'s.
    fn apply_owned(&mut self, envelope: Envelope) -> bool {
        self.apply(&envelope)
    }

    /// What a commit must write: the head and the entries changed since the last call,
    /// or every entry when `all` (a first or full commit). Forgets the changes it hands
    /// out, so call it only for a commit that will be written or followed by a full one.
    ///
    /// The default stores the whole view as its head, with no entries: right for views
    /// whose size does not follow the log's (see [`stored`](crate::stored)).
    fn take_changes(&mut self, all: bool) -> Result<Changes, StoredError> {
        let _ = all;
        Ok(Changes::tracked(
            stored::encode(Self::NAME.as_str(), self)?,
            Vec::new(),
        ))
    }

    /// Whether the view should be committed now, whatever the runner's batching and
    /// spacing say: its record of what changed is about to outgrow its bound, past
    /// which the next commit would write the whole view (the graph view, whose packets
    /// and decisions churn through a bounded window while its threads grow with the
    /// history). The default never asks.
    fn needs_commit(&self) -> bool {
        false
    }

    /// Called by a runner once the changes last taken are durably in the store. A view
    /// whose entries never change once written (the decision index) may now let go of
    /// those it can read back from the store, keeping at most `keep_hot` of the newest
    /// in memory. The default keeps everything.
    fn committed(&mut self, keep_hot: usize) {
        let _ = keep_hot;
    }

    /// Adds to `keys` the stored entries that folding `envelope` needs back in memory:
    /// entries this view let go of in [`committed`](View::committed) that the event
    /// changes. A runner reads them from its store and hands them to
    /// [`warm`](View::warm) before it applies the event (and asks again, since an
    /// entry read back may name more), so the fold itself never reads the store and a
    /// view that lets entries go folds exactly like one that keeps them. The default
    /// asks for nothing.
    fn cold_keys(&self, envelope: &Envelope, keys: &mut Vec<Vec<u8>>) {
        let _ = (envelope, keys);
    }

    /// Takes back entries read from the store, as [`cold_keys`](View::cold_keys)
    /// named them; they count as stored (a commit does not write them again unless an
    /// event changes them). A key the store does not hold comes back with an empty
    /// value (no stored value is empty): the view decides whether that may be (an
    /// index row it was not sure of) or is a corrupt store. The default refuses any:
    /// such a view never lets go.
    fn warm(&mut self, entries: Vec<StoredEntry>) -> Result<(), StoredError> {
        match entries.first() {
            None => Ok(()),
            Some((key, _)) => Err(StoredError::entry(
                Self::NAME.as_str(),
                format!("offered entry {key:?} back, but this view keeps every entry"),
            )),
        }
    }

    /// Whether [`take_changes`](View::take_changes) hands out again what a commit that
    /// failed had taken (the view forgets changes only in
    /// [`committed`](View::committed)). A runner then retries such a view incrementally
    /// rather than writing it whole — which a view that let entries go could not do.
    const RETAKES_UNCOMMITTED: bool = false;

    /// Whether the view may fold on while its commit is written: the changes
    /// [`take_changes`](View::take_changes) handed out are the commit in flight, what
    /// changes after it stays marked for the next one, and
    /// [`committed`](View::committed) forgets only what was taken and lets go only of
    /// entries the store holds as they are. A runner then keeps applying events while
    /// the store writes (readers waiting for a sequence are not held up by a commit);
    /// for any other view it stops folding until the commit is stored.
    const FOLDS_WHILE_STORING: bool = false;

    /// A restore that takes the stored entries one at a time, in key order, and keeps
    /// at most about `keep_hot` of those the view lets go of in memory while it reads
    /// (a runner's start: a large store is never held whole). The view it finishes
    /// with equals [`from_stored`](View::from_stored) followed by
    /// [`committed`](View::committed)`(keep_hot)`. The default collects the entries
    /// and does exactly that.
    fn restorer(head: &[u8], keep_hot: usize) -> Result<Box<dyn Restorer<Self>>, StoredError> {
        Ok(Box::new(Collect {
            head: head.to_vec(),
            entries: Vec::new(),
            keep_hot,
            view: PhantomData,
        }))
    }

    /// Rebuilds the view from its stored head and every stored entry (in key order),
    /// as [`take_changes`](View::take_changes) wrote them. The result must equal the
    /// view that was stored.
    fn from_stored(head: &[u8], entries: Vec<StoredEntry>) -> Result<Self, StoredError> {
        if let Some((key, _)) = entries.first() {
            return Err(StoredError::Decode {
                what: Self::NAME.as_str().to_owned(),
                reason: format!(
                    "a view stored whole has an entry ({} bytes of key)",
                    key.len()
                ),
            });
        }
        stored::decode(Self::NAME.as_str(), head)
    }
}

/// Builds a view from its stored entries handed in one at a time ([`View::restorer`]).
pub trait Restorer<V>: Send {
    /// The next stored entry (entries come in key order).
    fn entry(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), StoredError>;
    /// The view, once every entry was handed in.
    fn finish(self: Box<Self>) -> Result<V, StoredError>;
}

/// Hands every entry to `restorer`, in order, and finishes it: a whole restore
/// ([`View::from_stored`]) of a view that restores entry by entry.
pub(crate) fn restore_all<V, R: Restorer<V> + 'static>(
    mut restorer: R,
    entries: Vec<StoredEntry>,
) -> Result<V, StoredError> {
    for (key, value) in entries {
        restorer.entry(key, value)?;
    }
    Box::new(restorer).finish()
}

/// The default [`Restorer`]: every entry collected, then [`View::from_stored`].
struct Collect<V> {
    head: Vec<u8>,
    entries: Vec<StoredEntry>,
    keep_hot: usize,
    view: PhantomData<fn() -> V>,
}

impl<V: View> Restorer<V> for Collect<V> {
    fn entry(&mut self, key: Vec<u8>, value: Vec<u8>) -> Result<(), StoredError> {
        self.entries.push((key, value));
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<V, StoredError> {
        let mut view = V::from_stored(&self.head, self.entries)?;
        view.committed(self.keep_hot);
        Ok(view)
    }
}

/// Folds `events` into an empty view (a rebuild from scratch over in-memory events).
pub fn fold<'a, V: View>(events: impl IntoIterator<Item = &'a Envelope>) -> V {
    let mut view = V::default();
    for envelope in events {
        view.apply(envelope);
    }
    view
}

/// The name of a view, as used by the store and `orchestrata projections --view`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ViewName {
    /// [`ThreadView`](crate::ThreadView).
    Thread,
    /// [`SessionView`](crate::SessionView).
    Session,
    /// [`VolkView`](crate::VolkView).
    Volk,
    /// [`DecisionIndex`](crate::DecisionIndex).
    Decision,
    /// [`GraphView`](crate::GraphView).
    Graph,
    /// [`PacketIndex`](crate::PacketIndex).
    Packet,
    /// [`WorkflowView`](crate::WorkflowView).
    Workflow,
}

impl ViewName {
    /// Every view, in a stable order.
    pub const ALL: [ViewName; 7] = [
        ViewName::Thread,
        ViewName::Session,
        ViewName::Volk,
        ViewName::Decision,
        ViewName::Graph,
        ViewName::Packet,
        ViewName::Workflow,
    ];

    /// The name as written on the command line and in the store.
    pub const fn as_str(self) -> &'static str {
        match self {
            ViewName::Thread => "thread",
            ViewName::Session => "session",
            ViewName::Volk => "volk",
            ViewName::Decision => "decision",
            ViewName::Graph => "graph",
            ViewName::Packet => "packet",
            ViewName::Workflow => "workflow",
        }
    }
}

impl fmt::Display for ViewName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A view name that is none of [`ViewName::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown view `{0}` (known: thread, session, volk, decision, graph, packet, workflow)")]
pub struct UnknownView(pub String);

impl FromStr for ViewName {
    type Err = UnknownView;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ViewName::ALL
            .into_iter()
            .find(|v| v.as_str() == s)
            .ok_or_else(|| UnknownView(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sample::Workload;
    use crate::{DecisionIndex, GraphView, SessionView, ThreadView, VolkView};

    /// Folds `events` twice, by reference and by value (with every tenth event
    /// re-delivered, which both must ignore), and returns both views as JSON.
    fn both_ways<V: View>(events: &[Envelope]) -> (String, String) {
        let mut by_ref = V::default();
        let mut by_value = V::default();
        for (i, envelope) in events.iter().enumerate() {
            let changed = by_ref.apply(envelope);
            assert_eq!(by_value.apply_owned(envelope.clone()), changed);
            if i % 10 == 0 {
                assert!(!by_ref.apply(envelope), "a repeat changes nothing");
                assert!(
                    !by_value.apply_owned(envelope.clone()),
                    "a repeat changes nothing"
                );
            }
        }
        let json = |v: &V| serde_json::to_string(v).expect("view serializes");
        (json(&by_ref), json(&by_value))
    }

    // REQ-004-US-004-013 REQ-004-US-005-013
    #[test]
    fn apply_owned_folds_every_view_exactly_like_apply() {
        let events = Workload::new(11).envelopes(20_000);
        let (a, b) = both_ways::<ThreadView>(&events);
        assert!(a.contains("packet"), "the sample sends packets");
        assert_eq!(a, b, "thread view");
        let (a, b) = both_ways::<SessionView>(&events);
        assert_eq!(a, b, "session view");
        let (a, b) = both_ways::<VolkView>(&events);
        assert_eq!(a, b, "volk view");
        let (a, b) = both_ways::<DecisionIndex>(&events);
        assert_eq!(a, b, "decision index");
        let (a, b) = both_ways::<GraphView>(&events);
        assert_eq!(a, b, "graph view");
    }
}
