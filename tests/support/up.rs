//! `orchestrata up` as a real child process: the binary under test, a data dir, a
//! loopback port, JSON log lines on stderr.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

/// A running `up`; killed (SIGKILL) on drop unless stopped before.
pub struct Up {
    child: Child,
    /// Its stderr, line by line (JSON log lines).
    pub stderr: Receiver<String>,
    /// Its stdout lines up to and including `gateway listening on ...`.
    pub started: Vec<String>,
}

impl Up {
    /// Starts `up --listen 127.0.0.1:PORT --data-dir DATA ARGS...` with `GATEWAY_TOKEN`
    /// = `token`, JSON logs, none of this process's `ORCHESTRATA_*` and `_RJEM_*` (the
    /// allocator's) variables and the given `env`; returns once the gateway listens.
    pub fn start(data: &Path, port: u16, token: &str, args: &[&str], env: &[(&str, &str)]) -> Up {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
        for (k, _) in std::env::vars() {
            if k.starts_with("ORCHESTRATA_") || k.starts_with("_RJEM_") || k == "RUST_LOG" {
                cmd.env_remove(k);
            }
        }
        cmd.envs(env.iter().copied());
        let mut child = cmd
            .args(["up", "--listen", &format!("127.0.0.1:{port}"), "--data-dir"])
            .arg(data)
            .args(args)
            .env("GATEWAY_TOKEN", token)
            .env("ORCHESTRATA_LOGGING__FORMAT", "json")
            .env("ORCHESTRATA_LOGGING__LEVEL", "info")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start orchestrata up");
        let stdout = child.stdout.take().expect("stdout");
        let errors = child.stderr.take().expect("stderr");
        let (tx, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let (etx, stderr) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(errors).lines().map_while(Result::ok) {
                if etx.send(line).is_err() {
                    break;
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut started = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = lines.recv_timeout(left).expect("up starts the gateway");
            let listening = line.contains("gateway listening on");
            started.push(line);
            if listening {
                break;
            }
        }
        std::thread::spawn(move || for _ in lines {});
        Up {
            child,
            stderr,
            started,
        }
    }

    /// [`Up::start`] with `yaml` written to `<dir>/orchestrata.yaml` as its
    /// configuration file (`ORCHESTRATA_CONFIG`) and the data dir `<dir>/data`.
    pub fn with_config(dir: &Path, yaml: &str, port: u16, token: &str, env: &[(&str, &str)]) -> Up {
        let file = dir.join("orchestrata.yaml");
        std::fs::write(&file, yaml).expect("write the config file");
        let file = file.display().to_string();
        let mut all = vec![("ORCHESTRATA_CONFIG", file.as_str())];
        all.extend_from_slice(env);
        Up::start(&dir.join("data"), port, token, &[], &all)
    }

    /// What `look` reads of the process (by its id) while an `up` started with `env`
    /// on a temp data dir and a free port runs; the `up` is then stopped, and must
    /// stop cleanly.
    pub fn observe<T>(env: &[(&str, &str)], look: impl FnOnce(i32) -> T) -> T {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut up = Up::start(&dir.path().join("data"), super::free_port(), "t", &[], env);
        let seen = look(up.pid());
        assert!(up.stop(), "up stops cleanly");
        seen
    }

    /// The process id.
    pub fn pid(&self) -> i32 {
        i32::try_from(self.child.id()).expect("pid fits in i32")
    }

    /// Stops it with SIGTERM (as an operator would) and waits until it exited;
    /// returns whether it exited successfully.
    pub fn stop(&mut self) -> bool {
        // SAFETY: kill only sends a signal to our own child.
        unsafe {
            libc::kill(self.pid(), libc::SIGTERM);
        }
        self.child.wait().map(|s| s.success()).unwrap_or(false)
    }

    /// Kills it with SIGKILL (a crash) and waits until it is gone.
    pub fn crash(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Up {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
