//! The compose file as Docker Compose itself reads it (ISSUE-17 item 5): Debian's
//! `docker-compose` (1.29; tests/run.sh installs it) validates `docker-compose.yml`
//! with `config -q`, which needs no Docker daemon. tests/deploy_files.rs checks the
//! topology; this checks that Compose accepts the file at all.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `docker-compose -f FILE config -q` in the repository, with `GATEWAY_TOKEN` set or not.
fn compose_config(file: &Path, token: Option<&str>) -> Output {
    let mut cmd = Command::new("docker-compose");
    cmd.current_dir(repo())
        .arg("-f")
        .arg(file)
        .args(["config", "-q"])
        .env_remove("GATEWAY_TOKEN");
    if let Some(t) = token {
        cmd.env("GATEWAY_TOKEN", t);
    }
    cmd.output().unwrap_or_else(|e| {
        panic!("cannot run docker-compose ({e}); tests/run.sh installs it (apt-get install docker-compose)")
    })
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

// ISSUE-17: the shipped compose file is valid for Docker Compose.
#[test]
fn docker_compose_accepts_the_compose_file() {
    let o = compose_config(&repo().join("docker-compose.yml"), Some("test-token"));
    assert!(o.status.success(), "docker-compose config: {}", stderr(&o));
}

// ISSUE-17: without the gateways' shared token the file refuses to start (the
// `${GATEWAY_TOKEN:?…}` guard), naming the variable.
#[test]
fn docker_compose_requires_the_gateway_token() {
    let o = compose_config(&repo().join("docker-compose.yml"), None);
    assert!(!o.status.success(), "accepted without GATEWAY_TOKEN");
    assert!(stderr(&o).contains("GATEWAY_TOKEN"), "{}", stderr(&o));
}

// ISSUE-17: the check has teeth: the same file with a service key Compose does not
// know is refused.
#[test]
fn docker_compose_refuses_an_invalid_file() {
    let text = std::fs::read_to_string(repo().join("docker-compose.yml")).expect("compose file");
    let broken = text.replacen("services:\n", "services:\n  broken:\n    imagee: x\n", 1);
    assert_ne!(broken, text, "the file has a services: section");
    let dir = tempfile::tempdir().expect("temp dir");
    let file = dir.path().join("docker-compose.yml");
    std::fs::write(&file, broken).expect("write");
    let o = compose_config(&file, Some("test-token"));
    assert!(!o.status.success(), "accepted an unknown service key");
    assert!(stderr(&o).contains("imagee"), "{}", stderr(&o));
}
