//! Sessions (spec 004 Articles I and III, REQ-004-INTG-006..009): packets carry their
//! session; closing archives resolved packets and carries unresolved packets and active
//! threads over; resuming restores them; reads across sessions must name the session.

mod kernel_common;

use kernel_common::{config, events, harness, positions, Harness};
use orchestrata::kernel::cmd;
use orchestrata_schemas::cxp::WorkStatus;
use orchestrata_schemas::events::{Event, Stream};
use uuid::Uuid;

async fn send_in(h: &Harness, session: &str, from: &str, to: &str, subject: &str) -> Uuid {
    let p = cmd::in_session(
        cmd::packet(from, to, subject, serde_json::json!({})),
        session,
    );
    h.kernel
        .execute(cmd::send(from, p.clone()))
        .await
        .expect("sent");
    p.message_id
}

async fn thread_of(h: &Harness, id: Uuid) -> String {
    h.kernel
        .packet(id)
        .await
        .expect("known")
        .thread_id()
        .to_owned()
}

// REQ-004-INTG-006
#[tokio::test]
async fn packets_record_their_session_and_reads_across_sessions_need_its_id() {
    let h = harness(config()).await;
    h.kernel
        .execute(cmd::open_session("U:Cx", "s-1", "p-1"))
        .await
        .expect("s-1");
    h.kernel
        .execute(cmd::open_session("U:Cx", "s-2", "p-1"))
        .await
        .expect("s-2");
    let a = send_in(&h, "s-1", "U:Cx", "U:Ox", "in one").await;
    let b = send_in(&h, "s-2", "U:Cx", "U:Ox", "in two").await;
    let one = h.kernel.session_packets("s-1").await.expect("s-1 packets");
    assert_eq!(one.iter().map(|p| p.message_id()).collect::<Vec<_>>(), [a]);
    let two = h.kernel.session_packets("s-2").await.expect("s-2 packets");
    assert_eq!(two.iter().map(|p| p.message_id()).collect::<Vec<_>>(), [b]);
    let thread = thread_of(&h, a).await;
    let implicit = h
        .kernel
        .thread_packets(&thread, None)
        .await
        .expect_err("needs the session");
    assert_eq!(implicit.code(), "cross_session");
    let other = h
        .kernel
        .thread_packets(&thread, Some("s-2"))
        .await
        .expect_err("wrong session");
    assert_eq!(other.code(), "cross_session");
    assert_eq!(
        h.kernel
            .thread_packets(&thread, Some("s-1"))
            .await
            .expect("explicit")
            .len(),
        1
    );
    // A packet of session 2 may not join session 1's thread.
    let mut leak = cmd::in_session(
        cmd::packet("U:Ox", "U:Cx", "leak", serde_json::json!({})),
        "s-2",
    );
    leak.thread_id = thread.clone();
    let before = positions(&h.log).await;
    let err = h
        .kernel
        .execute(cmd::send("U:Ox", leak))
        .await
        .expect_err("isolation");
    assert_eq!(err.code(), "cross_session");
    assert_eq!(positions(&h.log).await, before);
    let unknown = cmd::in_session(
        cmd::packet("U:Ox", "U:Cx", "x", serde_json::json!({})),
        "s-9",
    );
    assert_eq!(
        h.kernel
            .execute(cmd::send("U:Ox", unknown))
            .await
            .expect_err("no session")
            .code(),
        "unknown_session"
    );
}

// REQ-004-INTG-008 REQ-004-INTG-007
#[tokio::test]
async fn close_archives_resolved_packets_and_carries_the_rest_over() {
    let h = harness(config()).await;
    h.kernel
        .execute(cmd::open_session("U:Cx", "s-1", "p-1"))
        .await
        .expect("open");
    let done = send_in(&h, "s-1", "U:Ox", "U:Vz", "done").await;
    let open = send_in(&h, "s-1", "U:Ox", "U:Qa", "open").await;
    h.kernel
        .execute(cmd::work("U:Vz", done, WorkStatus::InProgress))
        .await
        .expect("start");
    h.kernel
        .execute(cmd::resolve("U:Vz", done, serde_json::json!({"ok": 1})))
        .await
        .expect("resolve");
    let done_thread = thread_of(&h, done).await;
    h.kernel
        .execute(cmd::thread("U:Ox", cmd::close_thread, &done_thread))
        .await
        .expect("close finished thread");
    let out = h
        .kernel
        .execute(cmd::close_session("U:Cx", "s-1", "half done"))
        .await
        .expect("close");
    assert_eq!(out.event_types(), ["work_status_changed", "closed"]);
    assert!(h.kernel.packet(done).await.expect("done").is_archived());
    let closed = events(&h.log, Stream::SessionEvents)
        .await
        .into_iter()
        .find_map(|e| match e.record.event {
            Event::SessionClosed(c) => Some(c),
            _ => None,
        })
        .expect("closed event");
    let open_thread = thread_of(&h, open).await;
    assert_eq!(
        closed.carryover,
        [format!("packet:{open}"), format!("thread:{open_thread}")]
    );
    // A closed session takes no packets and cannot close twice.
    let p = cmd::in_session(
        cmd::packet("U:Ox", "U:Vz", "late", serde_json::json!({})),
        "s-1",
    );
    assert_eq!(
        h.kernel
            .execute(cmd::send("U:Ox", p))
            .await
            .expect_err("closed")
            .code(),
        "session_closed"
    );
    let again = h
        .kernel
        .execute(cmd::close_session("U:Cx", "s-1", "again"))
        .await
        .expect_err("closed");
    assert_eq!(again.code(), "session_closed");
    // Resume restores it: the carried packet and thread are the session's again.
    let out = h
        .kernel
        .execute(cmd::resume_session("U:Cx", "s-1"))
        .await
        .expect("resume");
    assert_eq!(out.event_types(), ["recovered"]);
    let carried = h
        .kernel
        .read(|s| s.session("s-1").map(|s| s.carryover.clone()))
        .await
        .expect("read");
    assert_eq!(carried.map(|c| c.len()), Some(2));
    let reply = cmd::in_session(
        {
            let mut r = cmd::packet("U:Qa", "U:Ox", "still working", serde_json::json!({}));
            r.in_reply_to = Some(open);
            r
        },
        "s-1",
    );
    h.kernel
        .execute(cmd::send("U:Qa", reply))
        .await
        .expect("resumed session takes packets");
    let resume_open = h
        .kernel
        .execute(cmd::resume_session("U:Cx", "s-1"))
        .await
        .expect_err("open");
    assert_eq!(resume_open.code(), "invalid_transition");
}

// REQ-004-INTG-009
#[tokio::test]
async fn a_carried_over_thread_continues_in_the_next_session_only() {
    let h = harness(config()).await;
    h.kernel
        .execute(cmd::open_session("U:Cx", "s-1", "p-1"))
        .await
        .expect("open");
    let first = send_in(&h, "s-1", "U:Cx", "U:Ox", "long task").await;
    let thread = thread_of(&h, first).await;
    h.kernel
        .execute(cmd::open_session("U:Cx", "s-2", "p-1"))
        .await
        .expect("open next");
    let mut early = cmd::in_session(
        cmd::reply(
            &cmd::packet("U:Cx", "U:Ox", "x", serde_json::json!({})),
            "x",
            serde_json::json!({}),
        ),
        "s-2",
    );
    early.in_reply_to = Some(first);
    early.from_agent = "U:Ox".into();
    early.to_agent = "U:Cx".into();
    let err = h
        .kernel
        .execute(cmd::send("U:Ox", early.clone()))
        .await
        .expect_err("s-1 still open");
    assert_eq!(err.code(), "cross_session");
    h.kernel
        .execute(cmd::close_session("U:Cx", "s-1", "to be continued"))
        .await
        .expect("close");
    h.kernel
        .execute(cmd::send("U:Ox", early))
        .await
        .expect("continuation in s-2");
    assert_eq!(
        h.kernel
            .thread_packets(&thread, Some("s-2"))
            .await
            .expect("now in s-2")
            .len(),
        2
    );
}

// REQ-004-INTG-006
#[tokio::test]
async fn session_commands_validate_their_fields() {
    let h = harness(config()).await;
    let before = positions(&h.log).await;
    for (command, code) in [
        (cmd::open_session("U:Cx", "", "p-1"), "invalid_field"),
        (cmd::open_session("U:Cx", "s-1", " "), "invalid_field"),
        (cmd::close_session("U:Cx", "s-9", "x"), "unknown_session"),
        (cmd::resume_session("U:Cx", "s-9"), "unknown_session"),
    ] {
        assert_eq!(
            h.kernel.execute(command).await.expect_err("refused").code(),
            code
        );
    }
    assert_eq!(positions(&h.log).await, before);
    h.kernel
        .execute(cmd::open_session("U:Cx", "s-1", "p-1"))
        .await
        .expect("open");
    let dup = h
        .kernel
        .execute(cmd::open_session("U:Cx", "s-1", "p-1"))
        .await
        .expect_err("dup");
    assert_eq!(dup.code(), "session_exists");
}
