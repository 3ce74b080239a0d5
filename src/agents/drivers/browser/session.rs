//! One browser session: a headless Chromium in its own process group with a fresh
//! profile directory, its DevTools connection, the page it shows and the navigation
//! [`Guard`].

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::navigation::{AllowList, Guard};
use crate::agents::driver::DriverError;
use crate::agents::drivers::cdp::Cdp;

/// A running browser; [`Session::stop`] (or drop) kills it and deletes its profile.
pub(super) struct Session {
    child: Child,
    pub(super) pgid: Option<i32>,
    pub(super) profile_dir: PathBuf,
    /// The page the chat runs in.
    pub(super) page: Cdp,
    pub(super) guard: Guard,
    pub(super) started: Instant,
}

/// Sends SIGKILL to the process group (a stale group fails harmlessly with ESRCH).
pub(super) fn kill(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        // SAFETY: killpg only sends a signal.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

fn start_error(field: &'static str, reason: impl Into<String>) -> DriverError {
    DriverError::Start {
        field,
        reason: reason.into(),
    }
}

/// The browser's DevTools URL from one line of its stderr.
fn devtools_url(line: &str) -> Option<String> {
    let at = line.find("ws://127.0.0.1:")?;
    line[at..].split_whitespace().next().map(str::to_owned)
}

impl Session {
    /// Starts `chromium` on `about:blank` with a fresh profile in `dir` and installs the
    /// navigation guard for `allow`, all within `limit`.
    pub(super) async fn launch(
        chromium: &Path,
        dir: PathBuf,
        allow: AllowList,
        limit: Duration,
    ) -> Result<Session, DriverError> {
        std::fs::create_dir_all(&dir).map_err(|e| start_error("profile_dir", e.to_string()))?;
        let mut child = Command::new(chromium)
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
            .map_err(|e| {
                let _ = std::fs::remove_dir_all(&dir);
                start_error("chromium", format!("{}: {e}", chromium.display()))
            })?;
        let pgid = child.id().and_then(|p| i32::try_from(p).ok());
        let (tx, rx) = tokio::sync::oneshot::channel::<String>();
        if let Some(stderr) = child.stderr.take() {
            // Reads the DevTools URL, then keeps draining so Chromium never blocks on a
            // full pipe.
            tokio::spawn(async move {
                let mut tx = Some(tx);
                let mut lines = BufReader::new(stderr).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if let Some(url) = devtools_url(&line) {
                        if let Some(tx) = tx.take() {
                            let _ = tx.send(url);
                        }
                    }
                }
            });
        }
        let connected = async {
            let url = match tokio::time::timeout(limit, rx).await {
                Ok(Ok(url)) => url,
                _ => return Err(start_error("chromium", "no DevTools endpoint announced")),
            };
            let (browser, events) = Cdp::connect(&url, limit).await?;
            let guard = Guard::install(&browser, events, allow, limit).await?;
            let page = browser.attach_first_page(limit).await?;
            Ok((page, guard))
        }
        .await;
        match connected {
            Ok((page, guard)) => Ok(Session {
                child,
                pgid,
                profile_dir: dir,
                page,
                guard,
                started: Instant::now(),
            }),
            Err(e) => {
                kill(pgid);
                let _ = child.kill().await;
                let _ = std::fs::remove_dir_all(&dir);
                Err(e)
            }
        }
    }

    /// Whether the browser is gone: its DevTools connection closed or its process exited.
    pub(super) fn lost(&mut self) -> bool {
        self.page.is_closed() || !matches!(self.child.try_wait(), Ok(None))
    }

    /// Kills the browser's process group and deletes the profile directory.
    pub(super) async fn stop(mut self) {
        kill(self.pgid.take());
        let _ = self.child.kill().await;
        let _ = std::fs::remove_dir_all(&self.profile_dir);
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        kill(self.pgid);
        let _ = std::fs::remove_dir_all(&self.profile_dir);
    }
}
