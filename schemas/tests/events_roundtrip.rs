//! Every event type round-trips through its Avro schema, and our bytes are exactly
//! what apache-avro's generic reader expects from the `.avsc` (issue 3).

use apache_avro::types::Value;
use chrono::{DateTime, TimeZone, Utc};
use orchestrata_schemas::cxp::{DeliveryStatus, WorkStatus};
use orchestrata_schemas::events::command::{Command, CommandKind};
use orchestrata_schemas::events::cxp_traffic::*;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::governance::*;
use orchestrata_schemas::events::kernel::*;
use orchestrata_schemas::events::presence::*;
use orchestrata_schemas::events::provider::*;
use orchestrata_schemas::events::session::*;
use orchestrata_schemas::events::types::*;
use orchestrata_schemas::events::volk_lifecycle::*;
use orchestrata_schemas::events::workflow::*;
use orchestrata_schemas::events::{
    codec, decode, encode, Envelope, Event, EventKind, EventRecord, Stream,
};
use serde_json::json;
use uuid::Uuid;

fn at(micros: i64) -> DateTime<Utc> {
    Utc.timestamp_micros(1_768_473_000_000_000 + micros)
        .unwrap()
}

fn id(n: u128) -> Uuid {
    Uuid::from_u128(0x550e8400_e29b_41d4_a716_446655440000 + n)
}

fn s(v: &str) -> String {
    v.to_owned()
}

fn packet(binary: bool) -> Packet {
    Packet {
        message_id: id(1),
        from_agent: s("U:Ox"),
        to_agent: s("U:Vz"),
        thread_id: s("thread-001"),
        subject: s("Generate UserService Implementation — ünïcode"),
        payload: if binary {
            PacketPayload::Binary(BinaryPayload {
                content_type: s("application/octet-stream"),
                data: vec![0, 1, 2, 255],
            })
        } else {
            PacketPayload::Json(json!({"task": "generate_code", "n": [1, 2.5, null]}).into())
        },
        created_at: at(1),
        priority: 8,
        delivery_status: DeliveryStatus::Queued,
        work_status: WorkStatus::Pending,
        protocol_version: s("1.0.0"),
        in_reply_to: binary.then(|| id(2)),
        metadata: Json(json!({"trace": "abc"})),
    }
}

fn command_kinds() -> Vec<CommandKind> {
    vec![
        CommandKind::SendPacket {
            packet: packet(false),
        },
        CommandKind::MarkDelivered { message_id: id(3) },
        CommandKind::Acknowledge {
            message_id: id(3),
            by: s("U:Vz"),
        },
        CommandKind::Fail {
            message_id: id(3),
            reason: s("recipient offline"),
        },
        CommandKind::Retry { message_id: id(3) },
        CommandKind::SetWorkStatus {
            message_id: id(3),
            status: WorkStatus::Resolved,
            assigned_to: Some(s("U:Qa")),
            resolution: Some(Json(json!({"ok": true}))),
            notes: None,
        },
        CommandKind::SetPriority {
            message_id: id(3),
            priority: 10,
            reason: Some(s("urgent")),
        },
        CommandKind::CloseThread {
            thread_id: s("t1"),
            reason: None,
        },
        CommandKind::ReopenThread {
            thread_id: s("t1"),
            reason: Some(s("follow-up")),
        },
        CommandKind::ArchiveThread {
            thread_id: s("t1"),
            reason: None,
        },
        CommandKind::OpenSession {
            session_id: s("s1"),
            portfolio_id: s("p1"),
            goals: vec![s("ship")],
        },
        CommandKind::CloseSession {
            session_id: s("s1"),
            summary: s("done"),
            carryover: vec![],
        },
        CommandKind::ResumeSession {
            session_id: s("s1"),
        },
        CommandKind::RegisterVolk {
            alias: s("U:Qa"),
            capabilities: vec![s("review")],
            parent: Some(s("U:Ox")),
            protocols: vec![s("cxp/1.0")],
            metadata: Json(json!({})),
        },
        CommandKind::DeregisterVolk {
            alias: s("U:Qa"),
            reason: s("retired"),
        },
        CommandKind::SpawnVolk {
            alias: s("U:Jr1"),
            parent: s("U:Vz"),
            driver: s("cli"),
            purpose: s("write code"),
            scope: vec![s("generate_code")],
            lifespan_ms: Some(60_000),
            task_id: Some(s("task-1")),
            session_id: None,
        },
        CommandKind::TerminateVolk {
            alias: s("U:Jr1"),
            reason: s("task_completed"),
        },
        CommandKind::EscalateVolk {
            alias: s("U:Jr1"),
            to: s("U:Vz"),
            path: vec![s("U:Jr1"), s("U:Vz")],
            reason: s("stuck"),
            thread_id: Some(s("t1")),
            context: Json(json!({"cycle": 3})),
        },
        CommandKind::StartWorkflow {
            workflow_id: s("w1"),
            name: s("pipeline"),
            params: Json(json!({"task": "x"})),
            session_id: None,
        },
        CommandKind::PauseWorkflow {
            workflow_id: s("w1"),
            reason: Some(s("lunch")),
        },
        CommandKind::ResumeWorkflow {
            workflow_id: s("w1"),
        },
        CommandKind::CancelWorkflow {
            workflow_id: s("w1"),
            reason: None,
        },
        CommandKind::RecordWorkflowStep {
            workflow_id: s("w1"),
            step: s("U:Vz"),
            phase: s("started"),
            assigned_to: Some(s("U:Vz")),
            output: Json(json!(null)),
        },
        CommandKind::FailWorkflow {
            workflow_id: s("w1"),
            error: s("the coding junior failed 3 times"),
            step: Some(s("U:Vz")),
        },
        CommandKind::SetVolkHealth {
            alias: s("U:Ja"),
            health: orchestrata_schemas::events::types::Health::Unhealthy,
            details: Some(s("driver crashed")),
        },
        CommandKind::ResolveEscalation {
            escalation_id: s("e-1"),
            decision: s("ship it"),
            notes: None,
        },
        CommandKind::UpdateSessionContext {
            session_id: s("s1"),
            patch: Json(json!({"repo": "orchestrata", "old": null})),
        },
        CommandKind::AssertSessionFact {
            session_id: s("s1"),
            fact_type: s("decision"),
            data: Json(json!({"use": "sled"})),
        },
        CommandKind::ReportSessionError {
            session_id: s("s1"),
            code: s("tool_failed"),
            message: s("cargo test failed"),
            recoverable: true,
        },
        CommandKind::RegisterProvider {
            provider: s("local"),
            kind: s("openai"),
            models: vec![s("m1")],
            quota_tokens: Some(50_000),
        },
        CommandKind::RecordProviderUsage {
            provider: s("local"),
            request_id: s("r1"),
            model: s("m1"),
            input_tokens: 4,
            output_tokens: 6,
            latency_ms: 12,
        },
        CommandKind::RecordProviderFailure {
            provider: s("local"),
            request_id: s("r2"),
            model: s("m1"),
            error: s("HTTP 429"),
            retryable: true,
            retry_after_ms: Some(1_000),
            quota_exhausted: false,
        },
    ]
}

/// One sample per event kind. The match has no wildcard: a new variant without a
/// sample does not compile.
fn sample(kind: EventKind) -> Event {
    match kind {
        EventKind::PacketSent => PacketSent {
            packet: packet(true),
        }
        .into(),
        EventKind::PacketDelivered => PacketDelivered {
            message_id: id(1),
            thread_id: s("t1"),
            to_agent: s("U:Vz"),
        }
        .into(),
        EventKind::PacketAcknowledged => PacketAcknowledged {
            message_id: id(1),
            thread_id: s("t1"),
            acknowledged_by: s("U:Vz"),
        }
        .into(),
        EventKind::PacketFailed => PacketFailed {
            message_id: id(1),
            thread_id: s("t1"),
            reason: s("timeout"),
            retry_count: 2,
            will_retry: true,
        }
        .into(),
        EventKind::PacketRetried => PacketRetried {
            message_id: id(1),
            thread_id: s("t1"),
            attempt: 3,
        }
        .into(),
        EventKind::WorkStatusChanged => WorkStatusChanged {
            message_id: id(1),
            thread_id: s("t1"),
            old: WorkStatus::InProgress,
            new: WorkStatus::Resolved,
            changed_by: s("U:Vz"),
            assigned_to: Some(s("U:Vz")),
            resolution: Some(Json(json!({"pr": 12}))),
            notes: Some(s("merged")),
        }
        .into(),
        EventKind::PriorityChanged => PriorityChanged {
            message_id: id(1),
            thread_id: s("t1"),
            old: 5,
            new: 10,
            changed_by: s("U:Ox"),
            reason: None,
        }
        .into(),
        EventKind::ThreadOpened => ThreadOpened {
            thread_id: s("t1"),
            subject: s("hi"),
            opened_by: s("U:Ox"),
            participants: vec![s("U:Ox"), s("U:Vz")],
        }
        .into(),
        EventKind::ThreadClosed => ThreadClosed {
            thread_id: s("t1"),
            closed_by: s("U:Ox"),
            reason: Some(s("done")),
        }
        .into(),
        EventKind::ThreadReopened => ThreadReopened {
            thread_id: s("t1"),
            reopened_by: s("U:Vz"),
            reason: None,
        }
        .into(),
        EventKind::ThreadArchived => ThreadArchived {
            thread_id: s("t1"),
            archived_by: s("kernel"),
            reason: Some(s("30 days")),
        }
        .into(),
        EventKind::VolkRegistered => VolkRegistered {
            alias: s("U:Qa"),
            capabilities: vec![s("review"), s("test")],
            parent: Some(s("U:Ox")),
            protocols: vec![s("cxp/1.0")],
            session_id: None,
            metadata: Json(json!({"model": "x", "nested": {"a": [1]}})),
        }
        .into(),
        EventKind::VolkDeregistered => VolkDeregistered {
            alias: s("U:Qa"),
            reason: s("retired"),
        }
        .into(),
        EventKind::VolkHealthChanged => VolkHealthChanged {
            alias: s("U:Qa"),
            old: Health::Healthy,
            new: Health::Degraded,
            details: Some(s("slow")),
        }
        .into(),
        EventKind::VolkTaskStarted => VolkTaskStarted {
            alias: s("U:Qa"),
            task_id: s("task-1"),
            thread_id: Some(s("t1")),
            description: s("review"),
        }
        .into(),
        EventKind::VolkTaskCompleted => VolkTaskCompleted {
            alias: s("U:Qa"),
            task_id: s("task-1"),
            outcome: TaskOutcome::Cancelled,
            summary: None,
            duration_ms: 1234,
        }
        .into(),
        EventKind::VolkSpawned => VolkSpawned {
            alias: s("U:J1"),
            parent: s("U:Qa"),
            driver: s("local/llama"),
            purpose: s("lint"),
            lifespan_ms: Some(60_000),
        }
        .into(),
        EventKind::VolkTerminated => VolkTerminated {
            alias: s("U:J1"),
            parent: s("U:Qa"),
            reason: s("done"),
        }
        .into(),
        EventKind::VolkEscalated => VolkEscalated {
            alias: s("U:J1"),
            escalated_to: s("U:Ox"),
            path: vec![s("U:J1"), s("U:Qa"), s("U:Ox")],
            reason: s("budget"),
            thread_id: None,
        }
        .into(),
        EventKind::HumanEscalationQueued => HumanEscalationQueued {
            escalation_id: s("e-1"),
            alias: s("U:Ox"),
            path: vec![s("U:Qa"), s("U:Ox"), s("human")],
            reason: s("max review cycles"),
            thread_id: Some(s("t1")),
            context: Json(json!({"issues": 2})),
        }
        .into(),
        EventKind::HumanEscalationResolved => HumanEscalationResolved {
            escalation_id: s("e-1"),
            resolved_by: s("operator"),
            decision: s("ship it with the known issues"),
            notes: Some(s("fix next sprint")),
        }
        .into(),
        EventKind::DecisionRecorded => DecisionRecorded {
            decision_id: id(9),
            subject_kind: SubjectKind::Volk,
            subject: s("U:Qa"),
            action: s("cxp.send"),
            resource: s("thread:t1"),
            result: DecisionResult::Escalate,
            rule_trace: vec![s("allow_send(U:Qa)"), s("budget_ok")],
            articles_applied: vec![s("Article III")],
            policy_hash: s("sha256:abc"),
            latency_us: 420,
            query: Some(s("may(U:Qa, send, t1)")),
            dry_run: false,
            reason: None,
        }
        .into(),
        EventKind::PolicyLoaded => PolicyLoaded {
            policy_hash: s("sha256:abc"),
            origin: s("policy.pl"),
            text: s("allow(_, _).\n"),
            rule_count: 1,
        }
        .into(),
        EventKind::SessionOpened => SessionOpened {
            session_id: s("s1"),
            portfolio_id: s("p1"),
            goals: vec![s("ship"), s("test")],
            opened_by: s("cli"),
        }
        .into(),
        EventKind::SessionClosed => SessionClosed {
            session_id: s("s1"),
            summary: s("shipped"),
            carryover: vec![s("docs")],
        }
        .into(),
        EventKind::SessionRecovered => SessionRecovered {
            session_id: s("s1"),
            recovered_by: s("kernel"),
            reason: Some(s("crash")),
        }
        .into(),
        EventKind::SessionContextUpdated => SessionContextUpdated {
            session_id: s("s1"),
            patch: Json(json!({"k": "v", "gone": null})),
            updated_by: s("U:Ox"),
        }
        .into(),
        EventKind::SessionFactAsserted => SessionFactAsserted {
            session_id: s("s1"),
            fact_type: s("decision"),
            data: Json(json!(["a", 1])),
            asserted_by: s("U:Ox"),
        }
        .into(),
        EventKind::SessionErrorOccurred => SessionErrorOccurred {
            session_id: s("s1"),
            code: s("E42"),
            message: s("boom"),
            recoverable: true,
        }
        .into(),
        EventKind::WorkflowStarted => WorkflowStarted {
            workflow_id: s("w1"),
            name: s("review-fix"),
            params: Json(json!({"max": 3})),
            started_by: s("cli"),
            session_id: Some(s("s1")),
        }
        .into(),
        EventKind::WorkflowPaused => WorkflowPaused {
            workflow_id: s("w1"),
            paused_by: s("cli"),
            reason: None,
        }
        .into(),
        EventKind::WorkflowResumed => WorkflowResumed {
            workflow_id: s("w1"),
            resumed_by: s("cli"),
        }
        .into(),
        EventKind::WorkflowCancelled => WorkflowCancelled {
            workflow_id: s("w1"),
            cancelled_by: s("cli"),
            reason: Some(s("obsolete")),
        }
        .into(),
        EventKind::WorkflowStepStarted => WorkflowStepStarted {
            workflow_id: s("w1"),
            step: s("review"),
            assigned_to: Some(s("U:Qa")),
        }
        .into(),
        EventKind::WorkflowStepCompleted => WorkflowStepCompleted {
            workflow_id: s("w1"),
            step: s("review"),
            outcome: TaskOutcome::Succeeded,
            output: Json(json!(null)),
        }
        .into(),
        EventKind::WorkflowCompleted => WorkflowCompleted {
            workflow_id: s("w1"),
            result: Json(json!({"ok": true})),
        }
        .into(),
        EventKind::WorkflowFailed => WorkflowFailed {
            workflow_id: s("w1"),
            error: s("boom"),
            step: None,
        }
        .into(),
        EventKind::ClientConnected => ClientConnected {
            client_id: s("c1"),
            client_name: Some(s("dashboard")),
            client_version: Some(s("2.1")),
            purpose: None,
            auth_scope: s("read_only"),
            remote_addr: Some(s("127.0.0.1:5000")),
        }
        .into(),
        EventKind::ClientDisconnected => ClientDisconnected {
            client_id: s("c1"),
            reason: DisconnectReason::ServerShutdown,
            detail: None,
            connected_ms: 99,
        }
        .into(),
        EventKind::ClientTimedOut => ClientTimedOut {
            client_id: s("c1"),
            last_activity: at(-5_000_000),
            missed_heartbeats: 3,
        }
        .into(),
        EventKind::ClientMetadataUpdated => ClientMetadataUpdated {
            client_id: s("c1"),
            metadata: Json(json!({"purpose": "ops"})),
        }
        .into(),
        EventKind::KernelStarted => KernelStarted {
            node: s("n1"),
            version: s("0.1.0"),
            backend: s("sled"),
        }
        .into(),
        EventKind::KernelStopped => KernelStopped {
            node: s("n1"),
            reason: s("signal"),
            clean: true,
        }
        .into(),
        EventKind::CommandApplied => CommandApplied { event_count: 2 }.into(),
        EventKind::CommandRejected => CommandRejected {
            code: s("invalid_transition"),
            message: s("acknowledged -> queued"),
        }
        .into(),
        EventKind::EpochMarked => EpochMarked {
            stream: s("cxp.traffic"),
            epoch: s("6f1c2a9e-2d5b-4f7e-9a43-0d3b1f6c8e21"),
        }
        .into(),
        EventKind::ProviderRegistered => ProviderRegistered {
            provider: s("anthropic"),
            kind: s("anthropic"),
            models: vec![s("m1")],
            quota_tokens: Some(1_000_000),
        }
        .into(),
        EventKind::ProviderRequestStarted => ProviderRequestStarted {
            provider: s("p"),
            request_id: s("r1"),
            model: s("m1"),
            volk: Some(s("U:J1")),
        }
        .into(),
        EventKind::ProviderRequestCompleted => ProviderRequestCompleted {
            provider: s("p"),
            request_id: s("r1"),
            model: s("m1"),
            input_tokens: 100,
            output_tokens: 2_000_000_000_000,
            latency_ms: 950,
        }
        .into(),
        EventKind::ProviderRequestFailed => ProviderRequestFailed {
            provider: s("p"),
            request_id: s("r1"),
            model: s("m1"),
            error: s("503"),
            retryable: true,
        }
        .into(),
        EventKind::ProviderRateLimited => ProviderRateLimited {
            provider: s("p"),
            retry_after_ms: None,
        }
        .into(),
        EventKind::ProviderQuotaExhausted => ProviderQuotaExhausted {
            provider: s("p"),
            used_tokens: 1_000_010,
            quota_tokens: Some(1_000_000),
            reason: s("counted"),
        }
        .into(),
        EventKind::ProviderHealthChanged => ProviderHealthChanged {
            provider: s("p"),
            old: Health::Unknown,
            new: Health::Unhealthy,
            details: None,
        }
        .into(),
        EventKind::Command => Command {
            id: id(7),
            principal: None,
            issuer: s("c1"),
            action: CommandKind::Retry { message_id: id(1) },
        }
        .into(),
    }
}

/// Every sample, plus every command kind inside a `Command` event.
fn all_samples() -> Vec<EventRecord> {
    let mut events: Vec<Event> = EventKind::ALL.iter().map(|i| sample(i.kind)).collect();
    events.push(
        PacketSent {
            packet: packet(false),
        }
        .into(),
    );
    for (n, action) in command_kinds().into_iter().enumerate() {
        events.push(
            Command {
                id: id(100 + n as u128),
                principal: None,
                issuer: s("U:Ox"),
                action,
            }
            .into(),
        );
    }
    events
        .into_iter()
        .enumerate()
        .map(|(n, event)| {
            let record = EventRecord::new("kernel", format!("key-{n}"), event, at(n as i64));
            let record = if n % 2 == 0 {
                record.caused_by(id(500 + n as u128))
            } else {
                record
            };
            // Attribution: every third record names a principal (ISSUE-14: attribution).
            if n % 3 == 0 {
                record.by(Some(format!("principal-{n} ✓")))
            } else {
                record
            }
        })
        .collect()
}

// issue 3: every Rust event round-trips through its schema
#[test]
fn every_event_type_round_trips_through_avro() {
    let samples = all_samples();
    assert!(samples.len() > EventKind::ALL.len());
    for record in &samples {
        let bytes = encode(record).unwrap();
        let back = decode(&bytes).unwrap();
        assert_eq!(&back, record, "{}", record.event_type());
        assert_eq!(back.stream(), record.event.stream());
    }
}

// issue 3: one kind per sample; kinds map to distinct (stream, event_type) pairs and files
#[test]
fn event_kinds_have_unique_names_and_schema_files() {
    let mut names = std::collections::HashSet::new();
    let mut files = std::collections::HashSet::new();
    for info in EventKind::ALL {
        assert!(
            names.insert((info.stream, info.event_type)),
            "{}",
            info.event_type
        );
        assert!(files.insert(info.avro_file), "{}", info.avro_file);
        assert!(info
            .avro_file
            .starts_with(&format!("{}.", info.stream.as_str())));
        assert_eq!(sample(info.kind).kind(), info.kind);
        assert_eq!(
            EventKind::find(info.stream, info.event_type),
            Some(info.kind)
        );
    }
    assert_eq!(EventKind::find(Stream::Commands, "registered"), None);
    // Every stream carries at least one event type.
    for stream in Stream::ALL {
        assert!(
            EventKind::ALL.iter().any(|i| i.stream == stream),
            "{stream}"
        );
    }
}

/// Converts apache-avro's generic value to JSON, to compare with our serde JSON.
fn avro_json(value: &Value) -> serde_json::Value {
    match value {
        Value::Null => serde_json::Value::Null,
        Value::Boolean(b) => json!(b),
        Value::Int(n) => json!(n),
        Value::Long(n) => json!(n),
        Value::Double(n) => json!(n),
        Value::String(v) => json!(v),
        Value::Uuid(u) => json!(u.to_string()),
        Value::TimestampMicros(m) => json!(DateTime::from_timestamp_micros(*m).unwrap()),
        Value::Bytes(b) => {
            use base64::Engine as _;
            json!(base64::engine::general_purpose::STANDARD.encode(b))
        }
        Value::Enum(_, symbol) => json!(symbol),
        Value::Union(_, inner) => avro_json(inner),
        Value::Array(items) => items.iter().map(avro_json).collect(),
        Value::Map(m) => m.iter().map(|(k, v)| (k.clone(), avro_json(v))).collect(),
        Value::Record(fields) => fields
            .iter()
            .map(|(k, v)| (k.clone(), avro_json(v)))
            .collect(),
        other => panic!("unexpected Avro value {other:?}"),
    }
}

/// Compares an Avro-derived JSON value with our JSON, allowing for the two encoding
/// differences: JSON fields travel as JSON text, and unions drop the serde tag.
fn same(avro: &serde_json::Value, ours: &serde_json::Value) -> bool {
    use serde_json::Value as J;
    let direct = match (avro, ours) {
        (J::String(a), J::String(o)) => {
            a == o
                || matches!(
                    (a.parse::<DateTime<Utc>>(), o.parse::<DateTime<Utc>>()),
                    (Ok(x), Ok(y)) if x == y
                )
        }
        (J::String(text), other) => serde_json::from_str::<J>(text).ok().as_ref() == Some(other),
        (J::Object(a), J::Object(o)) => {
            a.len() == o.len() && a.iter().all(|(k, v)| o.get(k).is_some_and(|w| same(v, w)))
        }
        (J::Array(a), J::Array(o)) => {
            a.len() == o.len() && a.iter().zip(o).all(|(x, y)| same(x, y))
        }
        (a, o) => a == o,
    };
    // A union branch carries no serde tag: `{"variant": value}` in JSON is `value` in Avro.
    direct || matches!(ours, J::Object(o) if o.len() == 1 && same(avro, o.values().next().unwrap()))
}

// issue 3: our bytes are exactly what each .avsc describes (read by apache-avro's generic reader)
// REQ-004-US-004-012
#[test]
fn apache_avro_reads_every_record_with_the_avsc_alone() {
    for record in all_samples() {
        let bytes = encode(&record).unwrap();
        let kind = codec::kind_of(&bytes).unwrap();
        let mut body = &bytes[codec::HEADER_LEN..];
        let value =
            apache_avro::reader::datum::GenericDatumReader::builder(codec::schema(kind).unwrap())
                .build()
                .and_then(|reader| reader.read_value(&mut body))
                .unwrap_or_else(|e| panic!("{}: {e}", record.event_type()));
        assert!(
            body.is_empty(),
            "{}: {} bytes unread",
            record.event_type(),
            body.len()
        );
        let avro = avro_json(&value);
        let mut ours = serde_json::to_value(&record.event).unwrap();
        let ours_obj = ours.as_object_mut().unwrap();
        ours_obj.insert("event_id".into(), json!(record.event_id.to_string()));
        ours_obj.insert("timestamp".into(), json!(record.timestamp));
        ours_obj.insert("source".into(), json!(record.source));
        ours_obj.insert("key".into(), json!(record.key));
        ours_obj.insert(
            "command_id".into(),
            json!(record.command_id.map(|c| c.to_string())),
        );
        ours_obj.insert("principal".into(), json!(record.principal));
        assert!(
            same(&avro, &ours),
            "{}:\navro {avro}\nours {ours}",
            record.event_type()
        );
        // The transition time is the envelope timestamp, in microseconds.
        let Value::Record(fields) = &value else {
            panic!("not a record")
        };
        assert_eq!(
            fields[1],
            (
                "timestamp".to_owned(),
                Value::TimestampMicros(record.timestamp.timestamp_micros())
            )
        );
    }
}

// issue 3: the envelope's JSON is flat and round-trips
// REQ-014-023 REQ-014-058 REQ-014-131
#[test]
fn envelope_json_is_flat_and_round_trips() {
    let record = EventRecord::new("kernel", "U:Qa", sample(EventKind::VolkRegistered), at(0))
        .caused_by(id(7));
    let envelope = Envelope {
        stream: Stream::VolkLifecycle,
        sequence: 42,
        epoch: s("ep-1"),
        record,
    };
    let value = serde_json::to_value(&envelope).unwrap();
    let keys: std::collections::BTreeSet<_> = value.as_object().unwrap().keys().cloned().collect();
    let expected: std::collections::BTreeSet<_> = [
        "event_id",
        "stream",
        "sequence",
        "epoch",
        "timestamp",
        "source",
        "event_type",
        "key",
        "command_id",
        "principal",
        "payload",
    ]
    .into_iter()
    .map(String::from)
    .collect();
    assert_eq!(keys, expected);
    assert_eq!(value["stream"], "volk.lifecycle");
    assert_eq!(value["event_type"], "registered");
    assert_eq!(value["sequence"], 42);
    assert_eq!(value["timestamp"], "2026-01-15T10:30:00Z");
    assert_eq!(value["command_id"], id(7).to_string());
    assert_eq!(value["payload"]["alias"], "U:Qa");
    assert_eq!(value["payload"]["metadata"]["nested"]["a"][0], 1);
    let back: Envelope = serde_json::from_value(value).unwrap();
    assert_eq!(back, envelope);
    // Every sample survives the JSON form too.
    for record in all_samples() {
        let envelope = Envelope {
            stream: record.stream(),
            sequence: 1,
            epoch: s("e"),
            record,
        };
        let text = serde_json::to_string(&envelope).unwrap();
        assert_eq!(serde_json::from_str::<Envelope>(&text).unwrap(), envelope);
    }
}

// issue 3: a JSON envelope naming an event type its stream lacks is a clear error
#[test]
fn envelope_json_with_wrong_event_type_or_payload_is_rejected() {
    let record = EventRecord::new("kernel", "n1", sample(EventKind::KernelStarted), at(0));
    let mut value = serde_json::to_value(Envelope {
        stream: Stream::KernelEvents,
        sequence: 0,
        epoch: s("e"),
        record,
    })
    .unwrap();
    value["stream"] = json!("session.events");
    let err = serde_json::from_value::<Envelope>(value.clone())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("event_type") && err.contains("session.events"),
        "{err}"
    );
    value["stream"] = json!("kernel.events");
    value["payload"] = json!({"node": 1});
    let err = serde_json::from_value::<Envelope>(value)
        .unwrap_err()
        .to_string();
    assert!(err.contains("payload"), "{err}");
}
