//! [`EventRecord`] (what a writer appends) and [`Envelope`] (what the log hands back).

use chrono::{DateTime, Utc};
use serde::de::Error as _;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use uuid::Uuid;

use super::{Event, EventKind, Stream};

/// What a writer hands to the log: everything but the position, which the log assigns.
#[derive(Debug, Clone, PartialEq)]
pub struct EventRecord {
    /// Unique id of this event.
    pub event_id: Uuid,
    /// When the change happened (the transition time; folds use it, never the clock).
    pub timestamp: DateTime<Utc>,
    /// Component that wrote it, e.g. `kernel`.
    pub source: String,
    /// Entity it is about: thread id, Volk alias, session id... Also the log's record key.
    pub key: String,
    /// The command that caused it, for correlation across processes.
    pub command_id: Option<Uuid>,
    /// Who acted: the name of the authenticated principal whose command caused this
    /// event (`operator`, `dashboard`, an HMAC client id...). `None` when no principal
    /// caused it: the kernel's own start, a Postman retry fired by a timer, records
    /// written before attribution existed.
    pub principal: Option<String>,
    /// The typed payload; stream and event type derive from it.
    pub event: Event,
}

impl EventRecord {
    /// A record with a fresh random `event_id` and no `command_id`. The timestamp is
    /// passed in: this crate never reads the clock. It names no principal, except a
    /// command's record, which names the command's principal (see [`EventRecord::by`]).
    pub fn new(
        source: impl Into<String>,
        key: impl Into<String>,
        event: impl Into<Event>,
        timestamp: DateTime<Utc>,
    ) -> Self {
        let event = event.into();
        let principal = match &event {
            Event::Command(command) => command.principal.clone(),
            _ => None,
        };
        EventRecord {
            event_id: Uuid::new_v4(),
            timestamp,
            source: source.into(),
            key: key.into(),
            command_id: None,
            principal,
            event,
        }
    }

    /// The same record, caused by command `command_id`.
    pub fn caused_by(mut self, command_id: Uuid) -> Self {
        self.command_id = Some(command_id);
        self
    }

    /// The same record, attributed to `principal` (`None` leaves it unattributed).
    ///
    /// ```
    /// # use orchestrata_schemas::events::{EventRecord, kernel::KernelStarted};
    /// # let at = chrono::DateTime::UNIX_EPOCH;
    /// # let event = KernelStarted { node: "n".into(), version: "1".into(), backend: "sled".into() };
    /// let record = EventRecord::new("kernel", "k", event, at).by(Some("operator".into()));
    /// assert_eq!(record.principal.as_deref(), Some("operator"));
    /// ```
    ///
    /// A command's record and the command agree on the principal: `by` sets both, as
    /// the codec does when it reads one.
    pub fn by(mut self, principal: Option<String>) -> Self {
        if let Event::Command(command) = &mut self.event {
            command.principal.clone_from(&principal);
        }
        self.principal = principal;
        self
    }

    /// The stream the record belongs on.
    pub fn stream(&self) -> Stream {
        self.event.stream()
    }

    /// The event's type name within its stream.
    pub fn event_type(&self) -> &'static str {
        self.event.event_type()
    }
}

/// What the log hands back: the record plus its position.
///
/// Its JSON (used by `orchestrata replay` and pushed by the gateway) is flat:
///
/// ```json
/// {"event_id":"…","stream":"volk.lifecycle","sequence":7,"epoch":"…",
///  "timestamp":"2026-01-15T10:30:00Z","source":"kernel","event_type":"registered",
///  "key":"U:Ox","command_id":null,"principal":null,"payload":{"alias":"U:Ox",…}}
/// ```
#[derive(Debug, Clone, PartialEq)]
pub struct Envelope {
    /// The stream the log read it from.
    pub stream: Stream,
    /// Its position in the stream (0, 1, 2… with no gaps).
    pub sequence: u64,
    /// The stream's incarnation; a changed epoch voids saved positions.
    pub epoch: String,
    /// The record itself.
    pub record: EventRecord,
}

#[derive(Serialize)]
struct FlatRef<'a> {
    #[serde(with = "super::fields::uuid")]
    event_id: Uuid,
    stream: Stream,
    sequence: u64,
    epoch: &'a str,
    timestamp: DateTime<Utc>,
    source: &'a str,
    event_type: &'static str,
    key: &'a str,
    #[serde(with = "super::fields::opt_uuid")]
    command_id: Option<Uuid>,
    principal: Option<&'a str>,
    payload: &'a Event,
}

#[derive(Deserialize)]
struct FlatOwned {
    #[serde(with = "super::fields::uuid")]
    event_id: Uuid,
    stream: Stream,
    sequence: u64,
    epoch: String,
    timestamp: DateTime<Utc>,
    source: String,
    event_type: String,
    key: String,
    #[serde(default, with = "super::fields::opt_uuid")]
    command_id: Option<Uuid>,
    #[serde(default)]
    principal: Option<String>,
    payload: serde_json::Value,
}

impl Serialize for Envelope {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let r = &self.record;
        FlatRef {
            event_id: r.event_id,
            stream: self.stream,
            sequence: self.sequence,
            epoch: &self.epoch,
            timestamp: r.timestamp,
            source: &r.source,
            event_type: r.event.event_type(),
            key: &r.key,
            command_id: r.command_id,
            principal: r.principal.as_deref(),
            payload: &r.event,
        }
        .serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Envelope {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let flat = FlatOwned::deserialize(deserializer)?;
        let kind = EventKind::find(flat.stream, &flat.event_type).ok_or_else(|| {
            D::Error::custom(format!(
                "field `event_type`: `{}` is not an event type of stream `{}`",
                flat.event_type, flat.stream
            ))
        })?;
        let mut event = Event::from_json(kind, flat.payload).map_err(|e| {
            D::Error::custom(format!("field `payload` of `{}`: {e}", flat.event_type))
        })?;
        if let Event::Command(command) = &mut event {
            command.principal.clone_from(&flat.principal);
        }
        Ok(Envelope {
            stream: flat.stream,
            sequence: flat.sequence,
            epoch: flat.epoch,
            record: EventRecord {
                event_id: flat.event_id,
                timestamp: flat.timestamp,
                source: flat.source,
                key: flat.key,
                command_id: flat.command_id,
                principal: flat.principal,
                event,
            },
        })
    }
}
