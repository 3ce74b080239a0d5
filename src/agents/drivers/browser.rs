//! [`BrowserDriver`]: a junior that chats through a web page in headless Chromium
//! (Debian's `chromium`), over the DevTools protocol ([`super::cdp`]).
//!
//! A [`SiteProfile`] says where the chat is and how to use it (CSS selectors of the
//! input, the send button and the answers); profiles for Qwen Chat, DeepSeek and Kimi
//! ship in `config/browser-profiles/`. Guarantees:
//! - only approved domains: the profile's URL and every page it lands on must be on
//!   the allow-list (profile domains plus configured extras such as loopback in
//!   tests), otherwise [`DriverError::Violation`];
//! - a fresh profile directory per session, deleted in `cleanup` (no login state or
//!   history survives a junior, Article XII); the browser runs in its own process
//!   group and is killed with it;
//! - a session lifetime cap (30 minutes by default): past it, the session is refused;
//! - timeouts on every step; when the page or browser dies mid-answer, the driver
//!   restarts the session once and sends the task again (recovery).

use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::cdp::Cdp;
use crate::agents::driver::{Driver, DriverError, Task};
use crate::agents::error::AgentError;

/// How to use one chat site.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SiteProfile {
    /// A short name (`qwen`, `deepseek`, `kimi`).
    pub name: String,
    /// The chat page.
    pub url: String,
    /// Domains the session may be on (a host matches a domain or its subdomains).
    pub allowed_domains: Vec<String>,
    /// CSS selector of the message input.
    pub input_selector: String,
    /// CSS selector of the send button.
    pub send_selector: String,
    /// CSS selector matching each answer bubble (the last one is the new answer).
    pub answer_selector: String,
}

impl SiteProfile {
    /// Parses a profile from YAML.
    pub fn from_yaml(text: &str) -> Result<Self, AgentError> {
        serde_yaml_ng::from_str(text).map_err(|e| AgentError::Config {
            field: "browser_profile",
            reason: e.to_string(),
        })
    }
}

/// The browser and its limits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BrowserConfig {
    /// The Chromium binary.
    pub chromium: PathBuf,
    /// Domains allowed besides the profile's (e.g. `127.0.0.1` in tests).
    pub extra_allowed: Vec<String>,
    /// The session lifetime cap.
    pub session_cap: Duration,
    /// Time to start the browser and load the page.
    pub start_timeout: Duration,
}

impl Default for BrowserConfig {
    fn default() -> Self {
        BrowserConfig {
            chromium: PathBuf::from("chromium"),
            extra_allowed: Vec::new(),
            session_cap: Duration::from_secs(30 * 60),
            start_timeout: Duration::from_secs(30),
        }
    }
}

struct Session {
    child: Child,
    pgid: Option<i32>,
    profile_dir: PathBuf,
    cdp: Cdp,
    started: Instant,
}

/// See the module docs.
pub struct BrowserDriver {
    profile: SiteProfile,
    config: BrowserConfig,
    session: Option<Session>,
    task: Option<Task>,
    answers_before: u64,
    restarts: u32,
    last_profile_dir: Option<PathBuf>,
}

impl std::fmt::Debug for BrowserDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BrowserDriver")
            .field("profile", &self.profile.name)
            .finish()
    }
}

fn js(s: &str) -> String {
    serde_json::Value::from(s).to_string()
}

impl BrowserDriver {
    /// A driver for `profile`; nothing starts before `initialize`.
    pub fn new(profile: SiteProfile, config: BrowserConfig) -> Self {
        BrowserDriver {
            profile,
            config,
            session: None,
            task: None,
            answers_before: 0,
            restarts: 0,
            last_profile_dir: None,
        }
    }

    /// The profile directory of the current (or last) session.
    pub fn profile_dir(&self) -> Option<PathBuf> {
        self.last_profile_dir.clone()
    }

    /// The browser's process group while a session runs.
    pub fn process_group(&self) -> Option<i32> {
        self.session.as_ref().and_then(|s| s.pgid)
    }

    /// How many times a session was restarted after a failure.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    /// Whether `url`'s host is on the allow-list.
    pub fn allowed(&self, url: &str) -> bool {
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return false;
        };
        let Some(host) = parsed.host_str() else {
            return false;
        };
        self.profile
            .allowed_domains
            .iter()
            .chain(&self.config.extra_allowed)
            .any(|d| host == d || host.ends_with(&format!(".{d}")))
    }

    /// Kills the current session's browser (as a crash would); the next step recovers.
    pub fn kill_browser(&mut self) {
        if let Some(s) = &self.session {
            if let Some(pgid) = s.pgid {
                // SAFETY: killpg only sends a signal.
                unsafe {
                    libc::killpg(pgid, libc::SIGKILL);
                }
            }
        }
    }

    async fn start(&mut self) -> Result<(), DriverError> {
        if !self.allowed(&self.profile.url) {
            return Err(DriverError::Violation {
                reason: format!("`{}` is not an approved domain", self.profile.url),
            });
        }
        let dir =
            std::env::temp_dir().join(format!("orchestrata-browser-{}", uuid::Uuid::new_v4()));
        std::fs::create_dir_all(&dir).map_err(|e| DriverError::Start {
            field: "profile_dir",
            reason: e.to_string(),
        })?;
        self.last_profile_dir = Some(dir.clone());
        let mut child = Command::new(&self.config.chromium)
            .args([
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--disable-quic",
                "--no-first-run",
                "--disable-background-networking",
                "--disable-component-update",
                "--disable-sync",
                "--remote-debugging-port=0",
                "--remote-debugging-address=127.0.0.1",
            ])
            .arg(format!("--user-data-dir={}", dir.display()))
            .arg("about:blank")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| DriverError::Start {
                field: "chromium",
                reason: format!("{}: {e}", self.config.chromium.display()),
            })?;
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        let (tx, rx) = tokio::sync::oneshot::channel::<u16>();
        if let Some(stderr) = child.stderr.take() {
            // Reads the DevTools port, then keeps draining so Chromium never blocks on a
            // full pipe.
            tokio::spawn(async move {
                let mut tx = Some(tx);
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    let port = line
                        .split("ws://127.0.0.1:")
                        .nth(1)
                        .and_then(|rest| rest.split('/').next())
                        .and_then(|p| p.parse::<u16>().ok());
                    if let Some(p) = port {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(p);
                        }
                    }
                }
            });
        }
        let port = match tokio::time::timeout(self.config.start_timeout, rx).await {
            Ok(Ok(p)) => p,
            _ => {
                kill(pgid);
                let _ = std::fs::remove_dir_all(&dir);
                return Err(DriverError::Start {
                    field: "chromium",
                    reason: "no DevTools endpoint announced".into(),
                });
            }
        };
        let cdp = match Cdp::first_page(port).await {
            Ok(c) => c,
            Err(e) => {
                kill(pgid);
                let _ = std::fs::remove_dir_all(&dir);
                return Err(e);
            }
        };
        self.session = Some(Session {
            child,
            pgid,
            profile_dir: dir,
            cdp,
            started: Instant::now(),
        });
        let limit = self.config.start_timeout;
        let url = self.profile.url.clone();
        let ready = format!(
            "document.readyState === 'complete' && !!document.querySelector({})",
            js(&self.profile.input_selector)
        );
        let cdp = self.cdp()?;
        cdp.call("Page.navigate", serde_json::json!({ "url": url }), limit)
            .await?;
        let deadline = Instant::now() + limit;
        loop {
            if cdp.eval(&ready, limit).await?.as_bool() == Some(true) {
                break;
            }
            if Instant::now() > deadline {
                return Err(DriverError::Timeout {
                    after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                });
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let here = cdp.eval("location.href", limit).await?;
        let here = here.as_str().unwrap_or_default().to_owned();
        if !self.allowed(&here) {
            return Err(DriverError::Violation {
                reason: format!("the page went to `{here}`, not an approved domain"),
            });
        }
        Ok(())
    }

    fn cdp(&mut self) -> Result<&mut Cdp, DriverError> {
        self.session
            .as_mut()
            .map(|s| &mut s.cdp)
            .ok_or_else(|| DriverError::State {
                reason: "no browser session".into(),
            })
    }

    fn check_cap(&self) -> Result<(), DriverError> {
        match &self.session {
            Some(s) if s.started.elapsed() > self.config.session_cap => {
                Err(DriverError::Violation {
                    reason: format!(
                        "session older than the {} s cap",
                        self.config.session_cap.as_secs()
                    ),
                })
            }
            _ => Ok(()),
        }
    }

    async fn post(&mut self, task: &Task) -> Result<(), DriverError> {
        self.check_cap()?;
        let count = format!(
            "document.querySelectorAll({}).length",
            js(&self.profile.answer_selector)
        );
        let limit = task.timeout;
        self.answers_before = self.cdp()?.eval(&count, limit).await?.as_u64().unwrap_or(0);
        let script = format!(
            "(() => {{ const i = document.querySelector({input}); const b = document.querySelector({send});
               if (!i || !b) return false;
               i.focus(); if ('value' in i) i.value = {text}; else i.textContent = {text}; i.dispatchEvent(new Event('input', {{bubbles: true}}));
               b.click(); return true; }})()",
            input = js(&self.profile.input_selector),
            send = js(&self.profile.send_selector),
            text = js(&task.prompt),
        );
        if self.cdp()?.eval(&script, limit).await?.as_bool() != Some(true) {
            return Err(DriverError::Protocol {
                reason: "the input or send control is missing on the page".into(),
            });
        }
        Ok(())
    }

    async fn answer(&mut self, task: &Task) -> Result<String, DriverError> {
        let limit = task.timeout;
        let script = format!(
            "(() => {{ const a = document.querySelectorAll({sel}); return [a.length, a.length ? a[a.length-1].innerText : '']; }})()",
            sel = js(&self.profile.answer_selector)
        );
        let deadline = Instant::now() + limit;
        let mut last = None;
        loop {
            self.check_cap()?;
            let v = self.cdp()?.eval(&script, limit).await?;
            let n = v[0].as_u64().unwrap_or(0);
            let text = v[1].as_str().unwrap_or_default().trim().to_owned();
            if n > self.answers_before && !text.is_empty() {
                // Streamed answers grow: take it once two polls agree.
                if last.as_ref() == Some(&text) {
                    return Ok(text);
                }
                last = Some(text);
            }
            if Instant::now() > deadline {
                return Err(DriverError::Timeout {
                    after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                });
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn stop(&mut self) {
        if let Some(mut s) = self.session.take() {
            kill(s.pgid);
            let _ = s.child.kill().await;
            let _ = std::fs::remove_dir_all(&s.profile_dir);
        }
    }
}

fn kill(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        // SAFETY: killpg only sends a signal; a stale group fails with ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

#[async_trait]
impl Driver for BrowserDriver {
    fn name(&self) -> String {
        format!("browser:{}", self.profile.name)
    }

    async fn initialize(&mut self) -> Result<(), DriverError> {
        if self.session.is_some() {
            return Ok(());
        }
        let started = self.start().await;
        if started.is_err() {
            self.stop().await;
        }
        started
    }

    async fn send_task(&mut self, task: &Task) -> Result<(), DriverError> {
        self.task = Some(task.clone());
        self.post(task).await
    }

    async fn get_response(&mut self) -> Result<String, DriverError> {
        let task = self.task.clone().ok_or_else(|| DriverError::State {
            reason: "get_response before send_task".into(),
        })?;
        match self.answer(&task).await {
            Err(DriverError::Protocol { reason }) if self.restarts == 0 => {
                // The page or the browser died: one fresh session, the task again.
                tracing::warn!(site = %self.profile.name, %reason, "browser session lost; recovering");
                self.restarts += 1;
                self.stop().await;
                self.start().await?;
                self.post(&task).await?;
                self.answer(&task).await
            }
            other => other,
        }
    }

    async fn cleanup(&mut self) -> Result<(), DriverError> {
        self.stop().await;
        self.task = None;
        Ok(())
    }
}

impl Drop for BrowserDriver {
    fn drop(&mut self) {
        if let Some(s) = &self.session {
            kill(s.pgid);
            let _ = std::fs::remove_dir_all(&s.profile_dir);
        }
    }
}
