//! [`CliDriver`]: a junior that is a local program reading its task on stdin
//! (`aider`, `opencode`, or any script).
//!
//! The program runs in its own process group, so a timeout or `cleanup` kills it and
//! everything it started (`killpg`), not just the direct child. Its stdout is the
//! answer; a non-zero exit is a crash whose error carries the exit status and the end
//! of stderr.
//!
//! The program sees only what its profile gives it: the environment is cleared, then
//! `PATH`, `HOME` and `LANG` are passed on from the server's and the profile's `env:`
//! entries added; the server's secrets (`GATEWAY_TOKEN`, provider keys, passwords)
//! never reach it. Its stdout is read up to `max_output_bytes` (default
//! [`MAX_OUTPUT_BYTES`]): more fails the task `output_too_large` and stops the program.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::agents::driver::{Driver, DriverError, Task};

/// How much of stderr a crash report keeps (the end of it).
const STDERR_TAIL: usize = 2048;

/// How much output a junior may answer with unless its profile says otherwise: 1 MiB.
pub const MAX_OUTPUT_BYTES: u64 = 1 << 20;

/// The variables of the server's environment a program inherits (the rest is cleared).
pub const INHERITED_ENV: [&str; 3] = ["PATH", "HOME", "LANG"];

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliConfig {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (inherited when `None`).
    pub cwd: Option<PathBuf>,
    /// Its environment besides [`INHERITED_ENV`] (nothing else of the server's).
    pub env: Vec<(String, String)>,
    /// The most bytes of stdout (and of stderr) read; more fails `output_too_large`.
    pub max_output_bytes: u64,
}

impl CliConfig {
    /// Runs `program` with no arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        CliConfig {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
            max_output_bytes: MAX_OUTPUT_BYTES,
        }
    }

    /// Adds arguments.
    pub fn args(mut self, args: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }
}

/// See the module docs.
#[derive(Debug)]
pub struct CliDriver {
    config: CliConfig,
    child: Option<Child>,
    pgid: Option<i32>,
    timeout: Duration,
}

impl CliDriver {
    /// A driver for `config`; nothing runs until [`Driver::send_task`].
    pub fn new(config: CliConfig) -> Self {
        CliDriver {
            config,
            child: None,
            pgid: None,
            timeout: Duration::from_secs(60),
        }
    }

    /// The process group of the program started last (its pid), until `cleanup`.
    pub fn process_group(&self) -> Option<i32> {
        self.pgid
    }

    fn kill_group(&mut self) {
        kill_group(self.process_group());
    }
}

#[async_trait]
impl Driver for CliDriver {
    fn name(&self) -> String {
        "cli".into()
    }

    async fn initialize(&mut self) -> Result<(), DriverError> {
        let program = &self.config.program;
        if program.as_os_str().is_empty() {
            return Err(DriverError::Start {
                field: "command",
                reason: "no program configured".into(),
            });
        }
        Ok(())
    }

    async fn send_task(&mut self, task: &Task) -> Result<(), DriverError> {
        if self.child.is_some() {
            return Err(DriverError::State {
                reason: "a task is already running".into(),
            });
        }
        self.timeout = task.timeout;
        let mut cmd = Command::new(&self.config.program);
        cmd.args(&self.config.args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .process_group(0)
            .kill_on_drop(true)
            .env_clear();
        for key in INHERITED_ENV {
            if let Some(v) = std::env::var_os(key) {
                cmd.env(key, v);
            }
        }
        if let Some(cwd) = &self.config.cwd {
            cmd.current_dir(cwd);
        }
        for (k, v) in &self.config.env {
            cmd.env(k, v);
        }
        // ETXTBSY: a program written just now can still be open for writing in a child
        // another thread is forking; that clears within milliseconds.
        let mut attempt = 0;
        let mut child = loop {
            match cmd.spawn() {
                Ok(c) => break c,
                Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && attempt < 20 => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(10)).await;
                }
                Err(e) => {
                    return Err(DriverError::Start {
                        field: "command",
                        reason: format!("{}: {e}", self.config.program.display()),
                    })
                }
            }
        };
        self.pgid = child.id().and_then(|p| i32::try_from(p).ok());
        if let Some(mut stdin) = child.stdin.take() {
            // A program that exits without reading its stdin is not an error here;
            // its exit status tells.
            let _ = stdin.write_all(task.prompt.as_bytes()).await;
            let _ = stdin.shutdown().await;
        }
        self.child = Some(child);
        Ok(())
    }

    async fn get_response(&mut self) -> Result<String, DriverError> {
        let Some(child) = self.child.as_mut() else {
            return Err(DriverError::State {
                reason: "get_response before send_task".into(),
            });
        };
        let stdout = child.stdout.take();
        let stderr = child.stderr.take();
        let cap = self.config.max_output_bytes;
        let pgid = self.pgid;
        let run = async {
            let read_out = async {
                let out = capped(stdout, cap).await;
                if out.len() as u64 > cap {
                    // Stop it now: it would block on a pipe nobody reads any more.
                    kill_group(pgid);
                }
                out
            };
            let (out, err) = tokio::join!(read_out, capped(stderr, cap));
            if out.len() as u64 > cap {
                return (None, out, err);
            }
            let status = child.wait().await;
            (Some(status), out, err)
        };
        let limit = self.timeout;
        match tokio::time::timeout(limit, run).await {
            Err(_) => {
                self.kill_group();
                Err(DriverError::Timeout {
                    after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                })
            }
            Ok((None, _, _)) => {
                self.kill_group();
                Err(DriverError::OutputTooLarge { limit: cap })
            }
            Ok((Some(Err(e)), _, _)) => Err(DriverError::Crashed {
                reason: format!("cannot wait for the program: {e}"),
            }),
            Ok((Some(Ok(status)), out, err)) => {
                // The direct child is gone; anything it left behind in its group goes too.
                self.kill_group();
                if status.success() {
                    String::from_utf8(out).map_err(|e| DriverError::Protocol {
                        reason: format!("stdout is not UTF-8: {e}"),
                    })
                } else {
                    let err = String::from_utf8_lossy(&err);
                    let start = err.len().saturating_sub(STDERR_TAIL);
                    let tail = err.get(start..).unwrap_or(err.as_ref()).trim();
                    Err(DriverError::Crashed {
                        reason: format!("{status}: {tail}"),
                    })
                }
            }
        }
    }

    async fn cleanup(&mut self) -> Result<(), DriverError> {
        self.kill_group();
        if let Some(mut child) = self.child.take() {
            let _ = child.kill().await;
        }
        self.pgid = None;
        Ok(())
    }
}

/// Kills process group `pgid` and everything in it.
fn kill_group(pgid: Option<i32>) {
    if let Some(pgid) = pgid {
        // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
        unsafe {
            libc::killpg(pgid, libc::SIGKILL);
        }
    }
}

/// At most `cap + 1` bytes of `pipe` (one more than allowed tells it was too much);
/// stops reading there, so a program writing without end costs no more memory.
async fn capped<R: tokio::io::AsyncRead + Unpin>(pipe: Option<R>, cap: u64) -> Vec<u8> {
    let mut buf = Vec::new();
    if let Some(pipe) = pipe {
        let _ = pipe.take(cap.saturating_add(1)).read_to_end(&mut buf).await;
    }
    buf
}

impl Drop for CliDriver {
    fn drop(&mut self) {
        self.kill_group();
    }
}
