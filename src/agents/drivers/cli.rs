//! [`CliDriver`]: a junior that is a local program reading its task on stdin
//! (`aider`, `opencode`, or any script).
//!
//! The program runs in its own process group, so a timeout or `cleanup` kills it and
//! everything it started (`killpg`), not just the direct child. Its stdout is the
//! answer; a non-zero exit is a crash whose error carries the exit status and the end
//! of stderr.

use std::path::PathBuf;
use std::process::Stdio;
use std::time::Duration;

use async_trait::async_trait;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::agents::driver::{Driver, DriverError, Task};

/// How much of stderr a crash report keeps (the end of it).
const STDERR_TAIL: usize = 2048;

/// What to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CliConfig {
    /// The program.
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Its working directory (inherited when `None`).
    pub cwd: Option<PathBuf>,
    /// Extra environment variables.
    pub env: Vec<(String, String)>,
}

impl CliConfig {
    /// Runs `program` with no arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        CliConfig {
            program: program.into(),
            args: Vec::new(),
            cwd: None,
            env: Vec::new(),
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
        if let Some(pgid) = self.process_group() {
            // SAFETY: killpg only sends a signal; a stale group id fails with ESRCH.
            unsafe {
                libc::killpg(pgid, libc::SIGKILL);
            }
        }
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
            .kill_on_drop(true);
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
        let mut stdout = child.stdout.take();
        let mut stderr = child.stderr.take();
        let run = async {
            let mut out = Vec::new();
            let mut err = Vec::new();
            let read_out = async {
                if let Some(s) = stdout.as_mut() {
                    let _ = s.read_to_end(&mut out).await;
                }
            };
            let read_err = async {
                if let Some(s) = stderr.as_mut() {
                    let _ = s.read_to_end(&mut err).await;
                }
            };
            tokio::join!(read_out, read_err);
            let status = child.wait().await;
            (status, out, err)
        };
        let limit = self.timeout;
        match tokio::time::timeout(limit, run).await {
            Err(_) => {
                self.kill_group();
                Err(DriverError::Timeout {
                    after_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
                })
            }
            Ok((Err(e), _, _)) => Err(DriverError::Crashed {
                reason: format!("cannot wait for the program: {e}"),
            }),
            Ok((Ok(status), out, err)) => {
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

impl Drop for CliDriver {
    fn drop(&mut self) {
        self.kill_group();
    }
}
