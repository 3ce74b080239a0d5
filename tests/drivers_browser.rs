//! Browser driver (005 US-010, T16.11..T16.17): real headless Chromium (Debian's
//! `chromium`, installed by tests/run.sh) driving a chat page this test serves on
//! loopback.

use std::time::Duration;

use axum::response::Html;
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

async fn serve() -> String {
    let app = Router::new().route("/chat", get(|| async { Html(PAGE) }));
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
    for _ in 0..100 {
        if gone(pgid) {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(gone(pgid), "no orphan browser processes");
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
