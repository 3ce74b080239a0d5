//! [`BrowserDriver`]: a junior that chats through a web page in headless Chromium
//! (Debian's `chromium`), over the DevTools protocol ([`super::cdp`]).
//!
//! A [`SiteProfile`] says where the chat is and how to use it (CSS selectors of the
//! input, the send button and the answers); profiles for Qwen Chat, DeepSeek and Kimi
//! ship in `config/browser-profiles/`. Guarantees:
//! - **only approved domains, on every navigation**: the allow-list (profile domains
//!   plus configured extras such as loopback in tests) is checked before the browser
//!   starts, and then by the DevTools `Fetch` domain, enabled browser-wide for every
//!   document request ([`navigation`]): a link, a script redirect, a meta refresh, an
//!   HTTP redirect hop, a popup or an iframe aimed at another host is failed
//!   (`BlockedByClient`) before the request leaves the browser. The blocked URL is
//!   reported as [`DriverError::Violation`] by the next `send_task` or `get_response`
//!   (the one running, if a task is being answered); the session is then terminated
//!   (spec 005 JV2) and the driver refuses work until `cleanup`. As a second guard the
//!   page's `location.href` is checked after the page loads and after each answer.
//!   Only documents are checked: subresources (scripts, images, XHR) of an approved
//!   page are not;
//! - **one session for the junior's lifetime**: `initialize` starts the browser (and
//!   does nothing while a session is alive), any number of `send_task` /
//!   `get_response` rounds run in that same page (cookies, storage and page state
//!   carry over; each task's answer is a bubble that was not there when the task was
//!   sent), and `cleanup` ends it;
//! - a fresh profile directory per session, deleted in `cleanup` (no login state or
//!   history survives a junior, Article XII); the browser runs in its own process
//!   group and is killed with it;
//! - a session lifetime cap (30 minutes by default): past it, the session is refused;
//! - timeouts on every step; **recovery** (FR13): when the browser is gone (its
//!   DevTools connection closed or its process exited) in `initialize`, `send_task`
//!   or `get_response`, the driver starts a fresh session and sends the task again,
//!   once per task; a second loss in the same task is [`DriverError::Crashed`].

pub mod navigation;
mod session;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde::Deserialize;

use crate::agents::driver::{Driver, DriverError, Task};
use crate::agents::error::AgentError;
use navigation::AllowList;
use session::Session;

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

/// See the module docs.
pub struct BrowserDriver {
    profile: SiteProfile,
    config: BrowserConfig,
    session: Option<Session>,
    task: Option<Task>,
    answers_before: u64,
    restarts: u32,
    task_restarts: u32,
    /// The reason of the violation that ended the session, until `cleanup`.
    violation: Option<String>,
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

fn timeout(limit: Duration) -> DriverError {
    DriverError::Timeout {
        after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
    }
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
            task_restarts: 0,
            violation: None,
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

    /// How many times a session was restarted after the browser was lost.
    pub fn restarts(&self) -> u32 {
        self.restarts
    }

    fn allow_list(&self) -> AllowList {
        AllowList::new(
            self.profile
                .allowed_domains
                .iter()
                .chain(&self.config.extra_allowed)
                .cloned(),
        )
    }

    /// Whether `url`'s host is on the allow-list.
    pub fn allowed(&self, url: &str) -> bool {
        self.allow_list().allows(url)
    }

    /// Kills the current session's browser (as a crash would); the next step recovers.
    pub fn kill_browser(&mut self) {
        if let Some(s) = &self.session {
            session::kill(s.pgid);
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
        self.last_profile_dir = Some(dir.clone());
        let limit = self.config.start_timeout;
        let session = Session::launch(&self.config.chromium, dir, self.allow_list(), limit).await?;
        let page = session.page.clone();
        self.session = Some(session);
        let navigated = page
            .call(
                "Page.navigate",
                serde_json::json!({ "url": self.profile.url }),
                limit,
            )
            .await?;
        self.check_navigation().await?;
        if let Some(error) = navigated["errorText"].as_str() {
            return Err(DriverError::Start {
                field: "url",
                reason: format!("{}: {error}", self.profile.url),
            });
        }
        let ready = format!(
            "document.readyState === 'complete' && !!document.querySelector({})",
            js(&self.profile.input_selector)
        );
        let deadline = Instant::now() + limit;
        loop {
            let is_ready = match page.eval(&ready, limit).await {
                Ok(v) => v.as_bool() == Some(true),
                // Between documents of an (approved) redirect: ask again.
                Err(DriverError::Protocol { .. }) if !self.lost() => false,
                Err(e) => return Err(e),
            };
            self.check_navigation().await?;
            if is_ready {
                break;
            }
            if Instant::now() > deadline {
                return Err(timeout(limit));
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        self.check_location(limit).await
    }

    /// Starts a session unless one is alive; a lost one is replaced (a recovery).
    async fn ensure_session(&mut self) -> Result<(), DriverError> {
        self.check_navigation().await?;
        let lost = match &mut self.session {
            Some(s) => s.lost(),
            None => {
                let started = self.start().await;
                if started.is_err() {
                    self.stop().await;
                }
                return started;
            }
        };
        if lost {
            self.recover("the browser is gone").await?;
        }
        Ok(())
    }

    /// A fresh session after the browser was lost: once per task, then `Crashed`.
    async fn recover(&mut self, reason: &str) -> Result<(), DriverError> {
        self.stop().await;
        if self.task_restarts > 0 {
            return Err(DriverError::Crashed {
                reason: format!("the browser was lost again in the same task: {reason}"),
            });
        }
        self.task_restarts += 1;
        self.restarts += 1;
        tracing::warn!(site = %self.profile.name, %reason, "browser session lost; recovering");
        let started = self.start().await;
        if started.is_err() {
            self.stop().await;
        }
        started
    }

    fn lost(&mut self) -> bool {
        self.session.as_mut().is_some_and(Session::lost)
    }

    /// A navigation the guard blocked (or one recorded earlier) as a violation; the
    /// session is then over.
    async fn check_navigation(&mut self) -> Result<(), DriverError> {
        if self.violation.is_none() {
            self.violation = self
                .session
                .as_ref()
                .and_then(|s| s.guard.violation())
                .map(|url| format!("navigation to `{url}` blocked: not an approved domain"));
        }
        match self.violation.clone() {
            Some(reason) => {
                self.stop().await;
                Err(DriverError::Violation { reason })
            }
            None => Ok(()),
        }
    }

    /// The second guard: where the page is now must be approved too.
    async fn check_location(&mut self, limit: Duration) -> Result<(), DriverError> {
        let here = self.page()?.eval("location.href", limit).await?;
        let here = here.as_str().unwrap_or_default().to_owned();
        // A URL the guard blocked names the cause better than the error page shown.
        self.check_navigation().await?;
        if !self.allowed(&here) {
            self.violation = Some(format!("the page is at `{here}`, not an approved domain"));
        }
        self.check_navigation().await
    }

    fn page(&self) -> Result<crate::agents::drivers::cdp::Cdp, DriverError> {
        self.session
            .as_ref()
            .map(|s| s.page.clone())
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
        self.check_navigation().await?;
        let page = self.page()?;
        let count = format!(
            "document.querySelectorAll({}).length",
            js(&self.profile.answer_selector)
        );
        let limit = task.timeout;
        self.answers_before = page.eval(&count, limit).await?.as_u64().unwrap_or(0);
        let script = format!(
            "(() => {{ const i = document.querySelector({input}); const b = document.querySelector({send});
               if (!i || !b) return false;
               i.focus(); if ('value' in i) i.value = {text}; else i.textContent = {text}; i.dispatchEvent(new Event('input', {{bubbles: true}}));
               b.click(); return true; }})()",
            input = js(&self.profile.input_selector),
            send = js(&self.profile.send_selector),
            text = js(&task.prompt),
        );
        if page.eval(&script, limit).await?.as_bool() != Some(true) {
            self.check_navigation().await?;
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
            self.check_navigation().await?;
            let polled = self.page()?.eval(&script, limit).await;
            self.check_navigation().await?;
            let v = match polled {
                Ok(v) => v,
                // While the page navigates (to an approved host) there may be no
                // document to ask: poll again, unless the browser itself is gone.
                Err(DriverError::Protocol { reason }) if !self.lost() => {
                    tracing::debug!(%reason, "answer poll failed; polling again");
                    serde_json::Value::Null
                }
                Err(e) => return Err(e),
            };
            let n = v[0].as_u64().unwrap_or(0);
            let text = v[1].as_str().unwrap_or_default().trim().to_owned();
            if n > self.answers_before && !text.is_empty() {
                // Streamed answers grow: take it once two polls agree.
                if last.as_ref() == Some(&text) {
                    self.check_location(limit).await?;
                    return Ok(text);
                }
                last = Some(text);
            }
            if Instant::now() > deadline {
                return Err(timeout(limit));
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn stop(&mut self) {
        if let Some(s) = self.session.take() {
            s.stop().await;
        }
    }
}

#[async_trait]
impl Driver for BrowserDriver {
    fn name(&self) -> String {
        format!("browser:{}", self.profile.name)
    }

    async fn initialize(&mut self) -> Result<(), DriverError> {
        self.ensure_session().await
    }

    async fn send_task(&mut self, task: &Task) -> Result<(), DriverError> {
        self.task = Some(task.clone());
        if self.session.is_none() && self.violation.is_none() {
            return Err(DriverError::State {
                reason: "send_task before initialize".into(),
            });
        }
        self.ensure_session().await?;
        let mut posted = self.post(task).await;
        while let Err(e) = &posted {
            if !self.lost() {
                break;
            }
            // The browser died before the task reached it: a fresh session, once.
            let reason = e.to_string();
            posted = match self.recover(&reason).await {
                Ok(()) => self.post(task).await,
                Err(e) => Err(e),
            };
        }
        posted
    }

    async fn get_response(&mut self) -> Result<String, DriverError> {
        let task = self.task.clone().ok_or_else(|| DriverError::State {
            reason: "get_response before send_task".into(),
        })?;
        let mut answered = self.answer(&task).await;
        while let Err(e) = &answered {
            if !self.lost() {
                break;
            }
            // The browser died mid-answer: a fresh session, the task again, once.
            let reason = e.to_string();
            answered = match self.recover(&reason).await {
                Ok(()) => match self.post(&task).await {
                    Ok(()) => self.answer(&task).await,
                    Err(e) => Err(e),
                },
                Err(e) => Err(e),
            };
        }
        // The task is over: the next one has its own restart.
        self.task_restarts = 0;
        answered
    }

    async fn cleanup(&mut self) -> Result<(), DriverError> {
        self.stop().await;
        self.task = None;
        self.task_restarts = 0;
        self.violation = None;
        Ok(())
    }
    /// The junior lives on: its page, cookies and profile stay for the next task.
    async fn finish_task(&mut self) -> Result<(), DriverError> {
        self.task = None;
        self.task_restarts = 0;
        Ok(())
    }
}
