//! Browser juniors from the outside (issue 16 item 3; spec 005 US-010, FR13): a real
//! `orchestrata up` runs Debian's Chromium for a junior a client spawns with
//! `agents.spawn` on a `browser` profile; the chat page is served by this test on
//! loopback. The junior keeps its browser session for its lifetime (tasks given with
//! `agents.assign` see the page's own state from the earlier ones), and `agents.terminate`
//! ends the browser.

mod support;

use axum::response::Html;
use axum::routing::get;
use axum::Router;
use serde_json::{json, Value};
use support::up::Up;
use support::ws::Ws;
use support::{checked_ok, replay};

const TOKEN: &str = "browser-juniors-operator";
const VZ_TOKEN: &str = "browser-juniors-vz";

/// A chat page whose bot counts the messages of this browser profile in
/// `localStorage`: the n-th answer is `#n: <message>`.
const PAGE: &str = r#"<!doctype html><html><body>
<textarea id="msg"></textarea><button id="send">Send</button><div id="log"></div>
<script>
document.getElementById('send').addEventListener('click', () => {
  const text = document.getElementById('msg').value;
  const n = Number(localStorage.getItem('n') || 0) + 1;
  localStorage.setItem('n', String(n));
  setTimeout(() => {
    const d = document.createElement('div');
    d.className = 'answer';
    d.innerText = '#' + n + ': ' + text;
    document.getElementById('log').appendChild(d);
  }, 100);
});
</script></body></html>"#;

async fn serve_page() -> String {
    let app = Router::new().route("/chat", get(|| async { Html(PAGE) }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind the chat page");
    let addr = listener.local_addr().expect("page address");
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://127.0.0.1:{}/chat", addr.port())
}

async fn answers(ws: &mut Ws, want: usize) -> Vec<String> {
    support::junior_results(ws, want, 800)
        .await
        .iter()
        .map(Value::to_string)
        .collect()
}

// REQ-005-US-010-001 REQ-005-FR13-001 ISSUE-16: a browser junior spawned through the
// gateway answers its parent from the chat page; it keeps one browser session for its
// lifetime (the second task's answer is the page's second message in that profile);
// agents.terminate ends it and records the reason.
#[tokio::test]
async fn a_browser_junior_keeps_its_session_for_its_lifetime() {
    let url = serve_page().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let site = dir.path().join("local-chat.yaml");
    std::fs::write(
        &site,
        format!(
            "name: local\nurl: {url}\nallowed_domains: []\ninput_selector: '#msg'\nsend_selector: '#send'\nanswer_selector: .answer\n"
        ),
    )
    .expect("write the site profile");
    let yaml = format!(
        "agents:\n  browser:\n    extra_allowed: [127.0.0.1]\n  drivers:\n    chat: {{ browser: {}, timeout_s: 60 }}\n",
        site.display()
    );
    let port = support::free_port();
    let grant =
        format!("[{{token: {VZ_TOKEN}, scope: read_write, name: vz-bot, acts_as: [U:Vz]}}]");
    let _up = Up::with_config(
        dir.path(),
        &yaml,
        port,
        TOKEN,
        &[("ORCHESTRATA_GATEWAY__TOKENS", grant.as_str())],
    );
    let mut vz = Ws::connect(&format!("ws://127.0.0.1:{port}/")).await;
    vz.auth(VZ_TOKEN).await;

    let spawned = checked_ok(
        &mut vz,
        "agents.spawn",
        json!({ "parent": "U:Vz", "driver": "chat", "task": "hello", "lifespan": {"deadline_ms": 120000} }),
    )
    .await;
    assert_eq!(spawned["kind"], "browser", "{spawned}");
    let junior = spawned["alias"].as_str().expect("alias").to_owned();
    let first = answers(&mut vz, 1).await;
    assert!(first.iter().any(|a| a.contains("#1: hello")), "{first:?}");

    checked_ok(
        &mut vz,
        "agents.assign",
        json!({ "junior": junior, "task": "again" }),
    )
    .await;
    let both = answers(&mut vz, 2).await;
    assert!(
        both.iter().any(|a| a.contains("#2: again")),
        "the second task ran in the same browser session: {both:?}"
    );

    checked_ok(
        &mut vz,
        "agents.terminate",
        json!({ "alias": junior, "reason": "done chatting" }),
    )
    .await;
    let lifecycle: Vec<Value> = replay(&mut vz, "volk.lifecycle").await;
    assert!(
        lifecycle.iter().any(|e| e["event_type"] == "terminated"
            && e["payload"]["alias"] == junior
            && e["payload"]["reason"] == "done chatting"),
        "{lifecycle:?}"
    );
}
