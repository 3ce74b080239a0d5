//! The allow-list, enforced on every navigation of the session.
//!
//! [`Guard::install`] enables the DevTools `Fetch` domain on the *browser* target with
//! one pattern: every request of resource type `Document`, paused at the request
//! stage. That covers each document the browser is about to load, in any tab: the
//! first page load, link clicks, `location = ...`, meta refresh, each hop of an HTTP
//! redirect, `window.open` popups and new targets, and (out-of-process) iframes. A
//! paused request whose host is on the [`AllowList`] is continued
//! (`Fetch.continueRequest`); any other is failed with `BlockedByClient`
//! (`Fetch.failRequest`) before a byte goes to that host, and its URL is recorded as a
//! violation for the driver to report ([`Guard::violation`]).
//!
//! Popups need a user gesture, which the driver never gives (its scripts run without
//! one), so Chromium's popup blocker stops them first; one that opens anyway is a new
//! target whose document request pauses here like any other.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use super::super::cdp::{Cdp, Event};
use crate::agents::driver::DriverError;

/// Hosts a session may load documents from: each listed domain and its subdomains.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AllowList {
    domains: Vec<String>,
}

impl AllowList {
    /// The list of `domains` (`qwen.ai` allows `qwen.ai` and `chat.qwen.ai`).
    pub fn new(domains: impl IntoIterator<Item = String>) -> Self {
        AllowList {
            domains: domains.into_iter().collect(),
        }
    }

    /// Whether `url` parses and its host is on the list (no host, no entry).
    pub fn allows(&self, url: &str) -> bool {
        let Ok(parsed) = reqwest::Url::parse(url) else {
            return false;
        };
        let Some(host) = parsed.host_str() else {
            return false;
        };
        self.domains
            .iter()
            .any(|d| host == d || host.ends_with(&format!(".{d}")))
    }
}

/// The running interception of one browser session; stops when dropped.
#[derive(Debug)]
pub struct Guard {
    blocked: Arc<Mutex<Vec<String>>>,
    task: JoinHandle<()>,
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// How long the guard waits for the browser to take a continue/fail decision.
const DECIDE: Duration = Duration::from_secs(5);

async fn decide(browser: &Cdp, allow: &AllowList, blocked: &Mutex<Vec<String>>, event: Event) {
    if event.method != "Fetch.requestPaused" {
        return;
    }
    let Some(id) = event.params["requestId"].as_str() else {
        return;
    };
    let url = event.params["request"]["url"].as_str().unwrap_or_default();
    let (method, params) = if allow.allows(url) {
        (
            "Fetch.continueRequest",
            serde_json::json!({ "requestId": id }),
        )
    } else {
        tracing::warn!(%url, "browser navigation off the allow-list blocked");
        blocked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(url.to_owned());
        (
            "Fetch.failRequest",
            serde_json::json!({ "requestId": id, "errorReason": "BlockedByClient" }),
        )
    };
    if let Err(e) = browser.call(method, params, DECIDE).await {
        // The request is gone (its frame closed) or the browser is: nothing to decide.
        tracing::debug!(%url, error = %e, "{method} not applied");
    }
}

impl Guard {
    /// Starts handling `events` (those of `browser`'s connection) and enables the
    /// interception; from its return on, no document loads off `allow`.
    pub async fn install(
        browser: &Cdp,
        mut events: mpsc::UnboundedReceiver<Event>,
        allow: AllowList,
        limit: Duration,
    ) -> Result<Guard, DriverError> {
        let blocked = Arc::new(Mutex::new(Vec::new()));
        let task = {
            let browser = browser.clone();
            let blocked = Arc::clone(&blocked);
            tokio::spawn(async move {
                while let Some(event) = events.recv().await {
                    decide(&browser, &allow, &blocked, event).await;
                }
            })
        };
        let guard = Guard { blocked, task };
        browser
            .call(
                "Fetch.enable",
                serde_json::json!({ "patterns": [
                    { "urlPattern": "*", "resourceType": "Document", "requestStage": "Request" }
                ] }),
                limit,
            )
            .await?;
        Ok(guard)
    }

    /// The first blocked URL not reported yet, if any.
    pub fn violation(&self) -> Option<String> {
        let mut blocked = self.blocked.lock().unwrap_or_else(PoisonError::into_inner);
        (!blocked.is_empty()).then(|| blocked.remove(0))
    }
}
