//! Attribution (issue 14, item 2): the principal whose command caused an event is
//! recorded on it — cxp.traffic, governance.decisions, kernel.events, the command
//! record itself — on the in-process path, the `commands` stream path and through a
//! real gateway; `governance.query {"principal"}` and `orchestrata audit decisions
//! --principal` filter by it. Real sled log, real kernel, real Prolog engine, real
//! WebSocket clients on loopback, the real binary.

mod support;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use orchestrata::gateway::{self, backends::Views, Services};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{cmd, KernelError, RemoteKernel};
use orchestrata::log::EventLog;
use orchestrata_schemas::events::{Envelope, Event, Stream};
use serde_json::{json, Value};
use support::ws::{self, Ws, ADMIN_TOKEN, READ_ONLY_TOKEN, TOKEN};
use uuid::Uuid;

/// Every event of every stream, oldest first per stream.
async fn everything(log: &dyn EventLog) -> Vec<Envelope> {
    let mut out = Vec::new();
    for stream in Stream::ALL.iter().copied() {
        let mut from = 0;
        loop {
            let page = log.read(stream, from, None, 1024).await.expect("log read");
            let Some(last) = page.last().map(|e| e.sequence) else {
                break;
            };
            from = last + 1;
            out.extend(page);
        }
    }
    out
}

/// The events `command_id` caused, by stream.
fn caused_by(events: &[Envelope], command_id: Uuid) -> Vec<&Envelope> {
    events
        .iter()
        .filter(|e| e.record.command_id == Some(command_id))
        .collect()
}

/// Decisions of `action` on `resource`, with the principal each names.
fn decisions_on<'a>(
    events: &'a [Envelope],
    action: &str,
    resource: &str,
) -> Vec<(&'a str, Option<&'a str>)> {
    events
        .iter()
        .filter_map(|e| match &e.record.event {
            Event::DecisionRecorded(d) if d.action == action && d.resource == resource => {
                Some((d.subject.as_str(), e.record.principal.as_deref()))
            }
            _ => None,
        })
        .collect()
}

async fn governed_core() -> (support::stack::Core, Governance) {
    let core = support::stack::Core::start().await;
    let governance = Governance::start(core.log.clone(), GovernanceConfig::default())
        .await
        .expect("governance starts");
    (core, governance)
}

// ISSUE-14: attribution — in process, every event a command causes (and the decision
// governance records for it) names the command's principal; events of other
// principals' commands name theirs; the kernel's own events name none
#[tokio::test]
async fn kernel_stamps_the_command_principal_on_everything_it_causes() {
    let (core, governance) = governed_core().await;
    let kernel = core.kernel.clone().with_governance(governance);
    let alice = cmd::send(
        "U:Ox",
        cmd::packet("U:Ox", "U:Vz", "build", json!({"n": 1})),
    )
    .with_principal("alice");
    let bob = cmd::send(
        "U:Vz",
        cmd::packet("U:Vz", "U:Ox", "report", json!({"n": 2})),
    )
    .with_principal("bob");
    let unattributed = cmd::send(
        "U:Ox",
        cmd::packet("U:Ox", "U:Qa", "review", json!({"n": 3})),
    );
    let outcomes = [
        kernel.execute(alice.clone()).await.expect("alice's send"),
        kernel.execute(bob.clone()).await.expect("bob's send"),
        kernel.execute(unattributed.clone()).await.expect("send"),
    ];
    assert!(outcomes.iter().all(|o| !o.events.is_empty()));
    let events = everything(core.log.as_ref()).await;
    for (command, principal) in [
        (&alice, Some("alice")),
        (&bob, Some("bob")),
        (&unattributed, None),
    ] {
        let caused = caused_by(&events, command.id);
        assert!(
            caused.iter().any(|e| e.stream == Stream::CxpTraffic),
            "{caused:?}"
        );
        for e in caused {
            assert_eq!(e.record.principal.as_deref(), principal, "{e:?}");
        }
    }
    assert_eq!(
        decisions_on(&events, "cxp.send", "U:Vz"),
        [("U:Ox", Some("alice"))]
    );
    assert_eq!(
        decisions_on(&events, "cxp.send", "U:Ox"),
        [("U:Vz", Some("bob"))]
    );
    assert_eq!(decisions_on(&events, "cxp.send", "U:Qa"), [("U:Ox", None)]);
    // The standard roster, registered by the kernel at its first start, is nobody's doing.
    let roster: Vec<&Envelope> = events
        .iter()
        .filter(|e| matches!(e.record.event, Event::VolkRegistered(_)))
        .collect();
    assert!(!roster.is_empty());
    assert!(roster.iter().all(|e| e.record.principal.is_none()));
}

// ISSUE-14: attribution — through the `commands` stream (split deployment): the
// command record, the events it causes, its decision and command_applied /
// command_rejected all name the principal
#[tokio::test]
async fn streamed_commands_carry_their_principal_to_every_event() {
    let (core, governance) = governed_core().await;
    let kernel = core.kernel.clone().with_governance(governance);
    let consumer = kernel.consume_commands();
    let remote = RemoteKernel::connect(core.log.clone(), "gw-1", Duration::from_secs(10))
        .await
        .expect("remote kernel");
    let carol = cmd::send(
        "U:Ox",
        cmd::packet("U:Ox", "U:Vz", "build", json!({"n": 1})),
    )
    .with_principal("carol");
    let outcome = remote.execute(carol.clone()).await.expect("carol's send");
    assert!(!outcome.events.is_empty());
    let refused = cmd::acknowledge("U:Vz", Uuid::new_v4()).with_principal("dave");
    let error = remote
        .execute(refused.clone())
        .await
        .expect_err("unknown packet");
    assert!(matches!(error, KernelError::Rejected { .. }), "{error:?}");
    let events = everything(core.log.as_ref()).await;

    let caused = caused_by(&events, carol.id);
    let streams: Vec<Stream> = caused.iter().map(|e| e.stream).collect();
    for stream in [Stream::Commands, Stream::CxpTraffic, Stream::KernelEvents] {
        assert!(streams.contains(&stream), "{stream} in {streams:?}");
    }
    for e in &caused {
        assert_eq!(e.record.principal.as_deref(), Some("carol"), "{e:?}");
        if let Event::Command(c) = &e.record.event {
            assert_eq!(c.principal.as_deref(), Some("carol"));
        }
    }
    assert!(caused
        .iter()
        .any(|e| matches!(e.record.event, Event::CommandApplied(_))));
    assert_eq!(
        decisions_on(&events, "cxp.send", "U:Vz"),
        [("U:Ox", Some("carol"))]
    );

    let caused = caused_by(&events, refused.id);
    assert!(caused
        .iter()
        .any(|e| matches!(e.record.event, Event::CommandRejected(_))));
    for e in &caused {
        assert_eq!(e.record.principal.as_deref(), Some("dave"), "{e:?}");
    }
    consumer.abort();
}

/// `orchestrata audit decisions --principal NAME --json` on a copy of `data`.
fn audit_decisions(data: &Path, principal: &str) -> Vec<Value> {
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args(["audit", "--data-dir"])
        .arg(data)
        .args(["decisions", "--principal", principal, "--json"])
        .output()
        .expect("run orchestrata audit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| serde_json::from_str(l).expect("a JSON line"))
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).expect("mkdir");
    for entry in std::fs::read_dir(from).expect("read dir") {
        let entry = entry.expect("entry");
        let target = to.join(entry.file_name());
        if entry.file_type().expect("file type").is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).expect("copy");
        }
    }
}

// ISSUE-14: attribution — two principals (two tokens with names) send through a real
// gateway: every event each send causes names its principal, read back from the log;
// `governance.query {"principal"}` and `orchestrata audit decisions --principal`
// answer only that principal's decisions
#[tokio::test]
async fn two_principals_through_the_gateway_are_told_apart_online_and_offline() {
    let (core, governance) = governed_core().await;
    let support::stack::Core {
        dir,
        log,
        kernel,
        projections,
    } = core;
    let kernel = kernel.with_governance(governance.clone());
    let services = Services::new(log.clone())
        .with_kernel(kernel, Views::of(&projections))
        .with_governance(governance);
    let running = gateway::start(ws::test_config(), services)
        .await
        .expect("gateway starts");
    let url = format!("ws://{}/", running.local_addr());
    let client = |token: &'static str| {
        let url = url.clone();
        async move {
            let mut ws = Ws::connect(&url).await;
            ws.auth(token).await;
            ws
        }
    };
    // `TOKEN` is principal `tester`, `ADMIN_TOKEN` principal `admin` (tests/support/ws.rs).
    let mut tester = client(TOKEN).await;
    let mut admin = client(ADMIN_TOKEN).await;
    // A third principal watches the traffic live.
    let mut watcher = client(READ_ONLY_TOKEN).await;
    watcher
        .ok("gateway.subscribe", json!({"topic": "cxp.traffic"}))
        .await;
    let sent_by_tester = tester
        .ok(
            "cxp.send",
            json!({"from": "U:Ox", "target": "U:Vz", "subject": "build", "payload": {"n": 1}}),
        )
        .await;
    let sent_by_admin = admin
        .ok(
            "cxp.send",
            json!({"from": "U:Ox", "target": "U:Qa", "subject": "review", "payload": {"n": 2}}),
        )
        .await;
    let message = |answer: &Value| -> Uuid {
        answer["message_id"]
            .as_str()
            .and_then(|s| s.parse().ok())
            .unwrap_or_else(|| panic!("message_id in {answer}"))
    };
    let (tester_packet, admin_packet) = (message(&sent_by_tester), message(&sent_by_admin));

    // Pushed and replayed events name the principal too.
    let sent_in = |params: &Value| -> Option<Uuid> {
        (params["event_type"] == "packet_sent")
            .then(|| {
                params["payload"]["packet"]["message_id"]
                    .as_str()?
                    .parse()
                    .ok()
            })
            .flatten()
    };
    let mut pushed = Vec::new();
    while pushed.len() < 2 {
        let note = watcher.notification().await;
        if let Some(packet) = sent_in(&note["params"]) {
            pushed.push((packet, note["params"]["principal"].clone()));
        }
    }
    pushed.sort_by_key(|(packet, _)| *packet == admin_packet);
    assert_eq!(
        pushed,
        [
            (tester_packet, json!("tester")),
            (admin_packet, json!("admin"))
        ]
    );
    let replayed = admin
        .ok(
            "gateway.replay",
            json!({"topic": "cxp.traffic", "count": 100}),
        )
        .await;
    let mut replayed: Vec<(Uuid, Value)> = replayed["events"]
        .as_array()
        .expect("events")
        .iter()
        .filter_map(|e| sent_in(e).map(|packet| (packet, e["principal"].clone())))
        .collect();
    replayed.sort_by_key(|(packet, _)| *packet == admin_packet);
    assert_eq!(replayed, pushed);
    let events = everything(log.as_ref()).await;
    for (packet, principal) in [(tester_packet, "tester"), (admin_packet, "admin")] {
        let command_id = events
            .iter()
            .find_map(|e| match &e.record.event {
                Event::PacketSent(s) if s.packet.message_id == packet => e.record.command_id,
                _ => None,
            })
            .expect("packet_sent with its command id");
        let caused = caused_by(&events, command_id);
        assert!(!caused.is_empty());
        for e in caused {
            assert_eq!(e.record.principal.as_deref(), Some(principal), "{e:?}");
        }
    }
    assert_eq!(
        decisions_on(&events, "cxp.send", "U:Vz"),
        [("U:Ox", Some("tester"))]
    );
    assert_eq!(
        decisions_on(&events, "cxp.send", "U:Qa"),
        [("U:Ox", Some("admin"))]
    );
    // Every decision recorded here — the gateway's scope checks, the kernel's
    // governance of each send — names who acted.
    let unattributed: Vec<&Envelope> = events
        .iter()
        .filter(|e| matches!(e.record.event, Event::DecisionRecorded(_)))
        .filter(|e| e.record.principal.is_none())
        .collect();
    assert!(unattributed.is_empty(), "{unattributed:?}");
    // Each client's connection is its principal's doing too.
    let mut connected: Vec<&str> = events
        .iter()
        .filter(|e| matches!(e.record.event, Event::ClientConnected(_)))
        .filter_map(|e| e.record.principal.as_deref())
        .collect();
    connected.sort_unstable();
    assert_eq!(connected, ["admin", "tester", "viewer"]);
    let recorded = |principal: &str| -> usize {
        events
            .iter()
            .filter(|e| {
                matches!(e.record.event, Event::DecisionRecorded(_))
                    && e.record.principal.as_deref() == Some(principal)
            })
            .count()
    };
    let (tester_decisions, admin_decisions) = (recorded("tester"), recorded("admin"));
    assert!(tester_decisions >= 1 && admin_decisions >= 1);

    // Online: governance.query filters by principal and answers each one's principal.
    let last = log
        .last_sequence(Stream::GovernanceDecisions)
        .await
        .expect("bounds")
        .expect("decisions recorded");
    projections
        .decisions()
        .wait_for(Stream::GovernanceDecisions, last, Duration::from_secs(10))
        .await
        .expect("decisions view catches up");
    for (principal, count) in [("tester", tester_decisions), ("admin", admin_decisions)] {
        let answer = admin
            .ok(
                "governance.query",
                json!({"principal": principal, "limit": 1000}),
            )
            .await;
        let decisions = answer["decisions"].as_array().expect("decisions");
        assert_eq!(answer["total"], json!(count), "{answer}");
        assert_eq!(decisions.len(), count, "{answer}");
        assert!(
            decisions.iter().all(|d| d["principal"] == principal),
            "{answer}"
        );
    }
    let nobody = admin
        .ok("governance.query", json!({"principal": "nobody"}))
        .await;
    assert_eq!(nobody["total"], 0, "{nobody}");
    // The filter is a string: anything else is refused by the params schema.
    let error = admin.err("governance.query", json!({"principal": 7})).await;
    assert_eq!(error["code"], -32602, "{error}");

    // Offline: the binary reads a copy of the log.
    log.flush().await.expect("flush");
    let copy = dir.path().join("copy");
    copy_dir(&dir.path().join("log"), &copy);
    for (principal, count) in [("tester", tester_decisions), ("admin", admin_decisions)] {
        let lines = audit_decisions(&copy, principal);
        assert_eq!(lines.len(), count, "{lines:?}");
        assert!(
            lines.iter().all(|l| l["principal"] == principal),
            "{lines:?}"
        );
    }
    assert!(audit_decisions(&copy, "nobody").is_empty());
    let _keep: Arc<dyn EventLog> = log;
}
