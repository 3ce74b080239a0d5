//! Browser driver (005 US-010, T16.11..T16.17): real headless Chromium (Debian's
//! `chromium`, installed by tests/run.sh) driving a chat page this test serves on
//! loopback.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use axum::extract::Query;
use axum::response::{Html, Redirect};
use axum::routing::get;
use axum::Router;
use orchestrata::agents::driver::run_task;
use orchestrata::agents::drivers::browser::{BrowserConfig, BrowserDriver, SiteProfile};
use orchestrata::agents::{Driver, DriverError, Task};

const PAGE: &str = r#"<!doctype html><html><body>
<textarea id="msg"></textarea><button id="send">Send</button><div id="log"></div>
<script>
document.getElementById('send').addEventListener('click', () => {
  const text = document.getElementById('msg').value;
  setTimeout(() => {
    const d = document.createElement('div');
    d.className = 'answer';
    d.innerText = 'echo: ' + text;
    document.getElementById('log').appendChild(d);
  }, 300);
});
</script></body></html>"#;

/// A chat page whose bot keeps a counter in `localStorage` and a cookie: the answer
/// to the n-th message of a browser profile is `#n: <message> (cookie n-1)`.
const COUNTER_PAGE: &str = r#"<!doctype html><html><body>
<textarea id="msg"></textarea><button id="send">Send</button><div id="log"></div>
<script>
document.getElementById('send').addEventListener('click', () => {
  const text = document.getElementById('msg').value;
  const before = (document.cookie.match(/seen=(\d+)/) || [0, 0])[1];
  const n = Number(localStorage.getItem('n') || 0) + 1;
  localStorage.setItem('n', String(n));
  document.cookie = 'seen=' + n + '; path=/';
  setTimeout(() => {
    const d = document.createElement('div');
    d.className = 'answer';
    d.innerText = '#' + n + ': ' + text + ' (cookie ' + before + ')';
    document.getElementById('log').appendChild(d);
  }, 200);
});
</script></body></html>"#;

/// A chat page whose bot navigates: `go URL` (script redirect), `click URL` (a link),
/// `frame URL` (an iframe), `later URL` (answers, then redirects), `move` (to this
/// page again, which then answers `landed: move`).
const NAV_PAGE: &str = r#"<!doctype html><html><body>
<textarea id="msg"></textarea><button id="send">Send</button><div id="log"></div>
<script>
function answer(t) {
  const d = document.createElement('div');
  d.className = 'answer'; d.innerText = t;
  document.getElementById('log').appendChild(d);
}
const landed = new URLSearchParams(location.search).get('landed');
if (landed) answer('landed: ' + landed);
document.getElementById('send').addEventListener('click', () => {
  const [cmd, url] = document.getElementById('msg').value.split(' ');
  setTimeout(() => {
    if (cmd === 'go') location.href = url;
    if (cmd === 'click') { const a = document.createElement('a'); a.href = url; document.body.appendChild(a); a.click(); }
    if (cmd === 'frame') { const f = document.createElement('iframe'); f.src = url; document.body.appendChild(f); }
    if (cmd === 'later') { answer('ok'); setTimeout(() => { location.href = url; }, 300); }
    if (cmd === 'move') location.href = '/nav?landed=move';
  }, 100);
});
</script></body></html>"#;

async fn serve() -> String {
    let app = Router::new()
        .route("/chat", get(|| async { Html(PAGE) }))
        .route("/counter", get(|| async { Html(COUNTER_PAGE) }))
        .route("/nav", get(|| async { Html(NAV_PAGE) }))
        .route("/hop", get(|| async { Redirect::temporary("/nav") }))
        .route(
            "/redirect",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                Redirect::temporary(q.get("to").map_or("/nav", String::as_str))
            }),
        )
        .route(
            "/meta",
            get(|Query(q): Query<HashMap<String, String>>| async move {
                let to = q.get("to").cloned().unwrap_or_default();
                Html(format!(
                    r#"<meta http-equiv="refresh" content="0;url={to}"><textarea id="msg"></textarea><button id="send"></button>"#
                ))
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    format!("http://127.0.0.1:{}/chat", addr.port())
}

fn profile(url: &str) -> SiteProfile {
    SiteProfile {
        name: "local".into(),
        url: url.into(),
        allowed_domains: vec![],
        input_selector: "#msg".into(),
        send_selector: "#send".into(),
        answer_selector: ".answer".into(),
    }
}

fn config() -> BrowserConfig {
    BrowserConfig {
        extra_allowed: vec!["127.0.0.1".into()],
        ..BrowserConfig::default()
    }
}

fn task(prompt: &str) -> Task {
    Task {
        id: "b".into(),
        prompt: prompt.into(),
        timeout: Duration::from_secs(20),
    }
}

fn gone(pgid: i32) -> bool {
    // SAFETY: signal 0 only probes the group.
    unsafe { libc::killpg(pgid, 0) != 0 }
}

// REQ-005-US-010-001 REQ-005-FR13-001 REQ-005-FR15-001 REQ-005-AC8-001 REQ-005-NFR7-001
// T15.3 T16.11 T16.13 T16.17: Chromium opens the page, types, sends, reads the answer;
// cleanup kills the browser's process group and deletes its profile directory.
#[tokio::test]
async fn browser_junior_chats_and_cleans_up() {
    let url = serve().await;
    let mut driver = BrowserDriver::new(profile(&url), config());
    driver.initialize().await.unwrap();
    let pgid = driver.process_group().unwrap();
    let dir = driver.profile_dir().unwrap();
    assert!(dir.exists());
    driver.send_task(&task("hello there")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "echo: hello there");
    driver.send_task(&task("second")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "echo: second");
    driver.cleanup().await.unwrap();
    assert!(!dir.exists(), "ephemeral profile removed");
    assert!(wait_gone(pgid).await, "no orphan browser processes");
}

// REQ-005-US-010-001 REQ-005-US-005-001
// T16.12: a site off the allow-list is a violation, before any browser starts.
#[tokio::test]
async fn only_approved_domains() {
    let url = serve().await.replace("127.0.0.1", "localhost");
    let mut driver = BrowserDriver::new(profile(&url), config());
    let err = run_task(&mut driver, &task("x")).await.unwrap_err();
    assert!(
        matches!(err, DriverError::Violation { ref reason } if reason.contains("approved")),
        "{err}"
    );
    assert!(driver.profile_dir().is_none(), "no session was started");
    let p = profile("https://chat.qwen.ai/");
    let d = BrowserDriver::new(
        SiteProfile {
            allowed_domains: vec!["qwen.ai".into()],
            ..p
        },
        BrowserConfig::default(),
    );
    assert!(d.allowed("https://chat.qwen.ai/c/1"));
    assert!(!d.allowed("https://evil.example/?q=chat.qwen.ai"));
    assert!(!d.allowed("not a url"));
}

// REQ-005-NFR9-001 REQ-005-AC12-001 REQ-005-FR13-001
// T16.14 T16.15: a browser that dies mid-answer is restarted once and the task resent;
// past the session cap the session is refused.
#[tokio::test]
async fn recovery_and_session_cap() {
    let url = serve().await;
    let mut driver = BrowserDriver::new(profile(&url), config());
    driver.initialize().await.unwrap();
    let first_dir = driver.profile_dir().unwrap();
    driver.send_task(&task("again")).await.unwrap();
    driver.kill_browser();
    assert_eq!(driver.get_response().await.unwrap(), "echo: again");
    assert_eq!(driver.restarts(), 1);
    assert!(
        !first_dir.exists(),
        "the lost session's profile is gone too"
    );
    driver.cleanup().await.unwrap();

    let capped = BrowserConfig {
        session_cap: Duration::ZERO,
        ..config()
    };
    let mut driver = BrowserDriver::new(profile(&url), capped);
    let err = run_task(&mut driver, &task("late")).await.unwrap_err();
    assert!(
        matches!(err, DriverError::Violation { ref reason } if reason.contains("cap")),
        "{err}"
    );
}

// REQ-005-US-010-001
// The shipped profiles (Qwen Chat, DeepSeek, Kimi) parse and allow their own sites only.
#[test]
fn shipped_profiles_parse() {
    for name in ["qwen", "deepseek", "kimi"] {
        let path = format!(
            "{}/config/browser-profiles/{name}.yaml",
            env!("CARGO_MANIFEST_DIR")
        );
        let p = SiteProfile::from_yaml(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(p.name, name);
        let d = BrowserDriver::new(p.clone(), BrowserConfig::default());
        assert!(d.allowed(&p.url), "{name}");
        assert!(!d.allowed("http://127.0.0.1/"), "{name}");
    }
    assert!(SiteProfile::from_yaml("name: x").is_err());
}

/// A server on a second loopback address that is not on the allow-list; it counts
/// every request it receives.
async fn serve_off_list() -> (String, Arc<AtomicUsize>) {
    let hits = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&hits);
    let app = Router::new().fallback(move || {
        let counted = Arc::clone(&counted);
        async move {
            counted.fetch_add(1, Ordering::SeqCst);
            Html(PAGE)
        }
    });
    let listener = tokio::net::TcpListener::bind("127.0.0.2:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    (format!("http://127.0.0.2:{}", addr.port()), hits)
}

/// Whether the group is gone within 10 s: killed children linger as zombies until the
/// container's init reaps them (seen taking up to ~2 s).
async fn wait_gone(pgid: i32) -> bool {
    for _ in 0..500 {
        if gone(pgid) {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    false
}

fn violation_naming(result: Result<impl std::fmt::Debug, DriverError>, url: &str) {
    match result {
        Err(DriverError::Violation { reason }) => {
            assert!(reason.contains(url), "`{reason}` names `{url}`");
        }
        other => panic!("expected a violation naming {url}, got {other:?}"),
    }
}

// REQ-005-US-010-001 REQ-005-US-005-001 REQ-005-FR4-001 REQ-005-AC3-001
// T16.12: mid-session, a script redirect, a link click, an HTTP redirect hop, a meta
// refresh and an iframe aimed at a host off the allow-list are blocked before the
// request leaves the browser (the off-list server never sees one) and the running
// get_response is a Violation naming the URL; the session is terminated and the
// driver refuses work until cleanup (its browser killed, its profile deleted), then
// starts afresh.
#[tokio::test]
async fn navigation_off_the_allow_list_is_blocked() {
    let base = serve().await.replace("/chat", "");
    let (evil, hits) = serve_off_list().await;
    let mut driver = BrowserDriver::new(profile(&format!("{base}/nav")), config());
    let cases = [
        ("go", format!("{evil}/script")),
        ("click", format!("{evil}/link")),
        ("go", format!("{base}/redirect?to={evil}/http-redirect")),
        ("go", format!("{base}/meta?to={evil}/meta-refresh")),
        ("frame", format!("{evil}/iframe")),
    ];
    let mut killed = Vec::new();
    for (cmd, target) in &cases {
        let blocked = if target.starts_with(&base) {
            target.split("to=").nth(1).unwrap().to_owned()
        } else {
            target.clone()
        };
        driver.initialize().await.unwrap();
        let pgid = driver.process_group().unwrap();
        driver
            .send_task(&task(&format!("{cmd} {target}")))
            .await
            .unwrap();
        violation_naming(driver.get_response().await, &blocked);
        assert_eq!(driver.process_group(), None, "{cmd}: the session is over");
        assert!(
            !driver.profile_dir().unwrap().exists(),
            "{cmd}: profile gone"
        );
        killed.push(pgid);
        violation_naming(driver.send_task(&task("again")).await, &blocked);
        violation_naming(driver.get_response().await, &blocked);
        driver.cleanup().await.unwrap();
    }
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "no request reached the host"
    );
    for pgid in killed {
        assert!(wait_gone(pgid).await, "the violating browser was killed");
    }

    // A redirect scheduled after an answer is reported by the next task.
    driver.initialize().await.unwrap();
    driver
        .send_task(&task(&format!("later {evil}/after")))
        .await
        .unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "ok");
    tokio::time::sleep(Duration::from_millis(800)).await;
    violation_naming(
        driver.send_task(&task("next")).await,
        &format!("{evil}/after"),
    );
    violation_naming(driver.get_response().await, &format!("{evil}/after"));
    driver.cleanup().await.unwrap();
    assert_eq!(
        hits.load(Ordering::SeqCst),
        0,
        "no request reached the host"
    );
}

// REQ-005-US-010-001
// T16.12: navigations within the allow-list still work: the profile URL answers with an
// HTTP redirect to the chat, and a task whose bot moves the page to another approved
// page gets the answer shown there.
#[tokio::test]
async fn allowed_navigation_still_works() {
    let base = serve().await.replace("/chat", "");
    let mut driver = BrowserDriver::new(profile(&format!("{base}/hop")), config());
    driver.initialize().await.unwrap();
    driver.send_task(&task("move")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "landed: move");
    driver.cleanup().await.unwrap();
}

// REQ-005-FR13-001 REQ-005-US-010-001
// T16.13: one session serves a junior's tasks: initialize is idempotent, each task gets
// its own new answer, and localStorage and cookies carry over from task to task (the
// counter the page keeps reaches 3; the cookie shows the previous count).
#[tokio::test]
async fn several_tasks_in_one_session() {
    let url = serve().await.replace("/chat", "/counter");
    let mut driver = BrowserDriver::new(profile(&url), config());
    driver.initialize().await.unwrap();
    let pgid = driver.process_group().unwrap();
    let dir = driver.profile_dir().unwrap();
    let mut answers = Vec::new();
    for prompt in ["alpha", "beta", "alpha"] {
        driver.initialize().await.unwrap();
        assert_eq!(driver.process_group(), Some(pgid), "same browser");
        driver.send_task(&task(prompt)).await.unwrap();
        answers.push(driver.get_response().await.unwrap());
    }
    assert_eq!(
        answers,
        [
            "#1: alpha (cookie 0)",
            "#2: beta (cookie 1)",
            "#3: alpha (cookie 2)"
        ]
    );
    assert_eq!(driver.profile_dir(), Some(dir.clone()));
    assert_eq!(driver.restarts(), 0);
    driver.cleanup().await.unwrap();
    assert!(!dir.exists(), "profile removed at the end");
    assert!(wait_gone(pgid).await, "browser killed at the end");
}

// REQ-005-FR13-001
// T16.14: a browser that dies between tasks is replaced by a fresh session (its state
// starts over: the counter is back at 1) whether the next step is send_task or
// initialize; a second loss within one task is Crashed, not another restart, and the
// task after that runs again.
#[tokio::test]
async fn browser_lost_between_tasks_recovers_once_per_task() {
    let url = serve().await.replace("/chat", "/counter");
    let mut driver = BrowserDriver::new(profile(&url), config());
    driver.initialize().await.unwrap();
    driver.send_task(&task("one")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "#1: one (cookie 0)");
    let (first_pgid, first_dir) = (
        driver.process_group().unwrap(),
        driver.profile_dir().unwrap(),
    );

    driver.kill_browser();
    driver.send_task(&task("two")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "#1: two (cookie 0)");
    assert_eq!(driver.restarts(), 1);
    assert!(
        wait_gone(first_pgid).await,
        "the dead session's group is gone"
    );
    assert!(!first_dir.exists(), "the dead session's profile is gone");
    assert_ne!(driver.profile_dir(), Some(first_dir));

    driver.kill_browser();
    tokio::time::sleep(Duration::from_millis(200)).await;
    driver.initialize().await.unwrap();
    driver.send_task(&task("three")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "#1: three (cookie 0)");
    assert_eq!(driver.restarts(), 2);

    driver.kill_browser();
    driver.send_task(&task("four")).await.unwrap();
    assert_eq!(driver.restarts(), 3);
    let pgid = driver.process_group().unwrap();
    driver.kill_browser();
    let err = driver.get_response().await.unwrap_err();
    assert!(matches!(err, DriverError::Crashed { .. }), "{err}");
    assert_eq!(driver.restarts(), 3, "no second restart in one task");
    assert!(wait_gone(pgid).await);

    driver.initialize().await.unwrap();
    driver.send_task(&task("five")).await.unwrap();
    assert_eq!(driver.get_response().await.unwrap(), "#1: five (cookie 0)");
    driver.cleanup().await.unwrap();
}
