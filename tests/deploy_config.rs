//! `orchestrata config check` / `config print`, run as the real binary: one YAML file,
//! environment overrides `ORCHESTRATA_<SECTION>__<KEY>`, errors naming key and line,
//! secrets redacted (issue 9, configuration).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The binary with no inherited ORCHESTRATA_* variables, plus `env`.
fn orchestrata(args: &[&str], env: &[(&str, &str)], dir: &Path) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_orchestrata"));
    for (k, _) in std::env::vars() {
        if k.starts_with("ORCHESTRATA_") || k == "GATEWAY_TOKEN" {
            cmd.env_remove(k);
        }
    }
    cmd.args(args).envs(env.iter().copied()).current_dir(dir);
    cmd.output().expect("run orchestrata")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn write(dir: &Path, body: &str) -> PathBuf {
    let path = dir.join("orchestrata.yaml");
    std::fs::write(&path, body).expect("write config");
    path
}

fn check(body: &str, env: &[(&str, &str)]) -> (bool, String, String) {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), body);
    let out = orchestrata(
        &["config", "check", path.to_str().expect("utf-8 path")],
        env,
        dir.path(),
    );
    (out.status.success(), text(&out.stdout), text(&out.stderr))
}

// Issue 9: the shipped example configs are valid.
#[test]
fn shipped_example_configs_pass_check() {
    for name in ["config/monolithic.yaml", "config/compose.yaml"] {
        let path = repo().join(name);
        let out = orchestrata(
            &["config", "check", path.to_str().expect("utf-8 path")],
            &[],
            &repo(),
        );
        assert!(out.status.success(), "{name}: {}", text(&out.stderr));
        assert!(text(&out.stdout).starts_with("ok: "), "{name}");
    }
}

// Issue 9: a value out of range names the key and its line, and exits 1.
#[test]
fn out_of_range_value_names_key_and_line() {
    let (ok, _, err) = check(
        "log:\n  data_dir: ./d\ngateway:\n  listen: 127.0.0.1:0\n  max_clients: 0\n",
        &[],
    );
    assert!(!ok);
    assert!(err.contains("gateway.max_clients"), "{err}");
    assert!(err.contains("line 5"), "{err}");
    assert!(err.contains("at least 1"), "{err}");
}

// Issue 9: unknown keys and sections are rejected by name, with the line.
#[test]
fn unknown_key_and_unknown_section_are_named() {
    let (ok, _, err) = check("log:\n  dat_dir: ./d\n", &[]);
    assert!(!ok);
    assert!(err.contains("dat_dir"), "{err}");
    let (ok, _, err) = check("log:\n  data_dir: ./d\nredis_cluster:\n  x: 1\n", &[]);
    assert!(!ok);
    assert!(err.contains("redis_cluster"), "{err}");
    assert!(err.contains("line 3"), "{err}");
    assert!(err.contains("unknown section"), "{err}");
    let (ok, _, err) = check("kernel:\n  backoff_base_ms: 0\n", &[]);
    assert!(!ok);
    assert!(
        err.contains("kernel.backoff_base_ms") && err.contains("line 2"),
        "{err}"
    );
    let (ok, _, err) = check("logging:\n  level: loud\n", &[]);
    assert!(!ok);
    assert!(
        err.contains("logging.level") && err.contains("loud"),
        "{err}"
    );
}

// Issue 9: broken YAML reports where, and a missing file names the file.
#[test]
fn broken_yaml_and_missing_file_are_clear() {
    let (ok, _, err) = check("log:\n  data_dir: [unclosed\n", &[]);
    assert!(!ok);
    assert!(
        err.contains("not valid YAML") && err.contains("line"),
        "{err}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let out = orchestrata(&["config", "check", "nope.yaml"], &[], dir.path());
    assert!(!out.status.success());
    assert!(text(&out.stderr).contains("nope.yaml"));
}

// Issue 9: every key is overridable by ORCHESTRATA_<SECTION>__<KEY>; a bad override
// names the variable.
#[test]
fn environment_overrides_keys_and_bad_overrides_name_the_variable() {
    let body = "gateway:\n  max_clients: 10\n";
    let (ok, out, err) = check(
        body,
        &[
            ("ORCHESTRATA_GATEWAY__MAX_CLIENTS", "7"),
            ("ORCHESTRATA_LOG__FSYNC", "every_n:100"),
        ],
    );
    assert!(ok, "{err}");
    assert!(out.contains("ORCHESTRATA_GATEWAY__MAX_CLIENTS overrides gateway.max_clients"));
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), body);
    let out = orchestrata(
        &["config", "print", "--config", path.to_str().expect("utf-8")],
        &[
            ("ORCHESTRATA_GATEWAY__MAX_CLIENTS", "7"),
            ("ORCHESTRATA_LOG__KAFKA", "broker:9092"),
            ("ORCHESTRATA_PROJECTIONS__BATCH_MS", "50"),
            ("ORCHESTRATA_PROJECTIONS__HOT_ENTRIES", "64"),
        ],
        dir.path(),
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(&out.stdout).expect("print emits YAML");
    assert_eq!(
        printed["gateway"]["max_clients"],
        serde_yaml_ng::Value::from(7)
    );
    assert_eq!(printed["log"]["kafka"].as_str(), Some("broker:9092"));
    assert_eq!(
        printed["projections"]["batch_ms"],
        serde_yaml_ng::Value::from(50)
    );
    assert_eq!(
        printed["projections"]["hot_entries"],
        serde_yaml_ng::Value::from(64)
    );
    let (ok, _, err) = check(body, &[("ORCHESTRATA_PROJECTIONS__HOT_ENTRIES", "0")]);
    assert!(!ok);
    assert!(err.contains("projections.hot_entries"), "{err}");

    let (ok, _, err) = check(body, &[("ORCHESTRATA_GATEWAY__MAX_CLIENTS", "0")]);
    assert!(!ok);
    assert!(
        err.contains("ORCHESTRATA_GATEWAY__MAX_CLIENTS") && err.contains("gateway.max_clients"),
        "{err}"
    );
    let (ok, _, err) = check(body, &[("ORCHESTRATA_NOSUCH__KEY", "1")]);
    assert!(!ok);
    assert!(err.contains("ORCHESTRATA_NOSUCH__KEY") && err.contains("unknown section"));
}

// REQ-014-083
// REQ-014-091
#[test]
fn print_redacts_secrets_from_file_and_environment() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        dir.path(),
        "gateway:\n  static_token: s3cr3t-file\n  tokens:\n    - { token: adm1n-t0ken, scope: admin, name: ops }\n",
    );
    let out = orchestrata(
        &["config", "print", "--config", path.to_str().expect("utf-8")],
        &[],
        dir.path(),
    );
    let printed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!printed.contains("s3cr3t-file") && !printed.contains("adm1n-t0ken"));
    assert_eq!(printed.matches("***").count(), 2, "{printed}");
    assert!(printed.contains("scope: admin"), "{printed}");

    let out = orchestrata(
        &["config", "print"],
        &[("ORCHESTRATA_GATEWAY__STATIC_TOKEN", "0123456")],
        dir.path(),
    );
    let printed = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!printed.contains("0123456"), "{printed}");
    assert!(printed.contains("***"));
}

// Issue 9: with no file, the defaults are the embedded mode.
#[test]
fn defaults_serve_the_embedded_mode() {
    let dir = tempfile::tempdir().expect("tempdir");
    let out = orchestrata(&["config", "print"], &[], dir.path());
    assert!(out.status.success(), "{}", text(&out.stderr));
    let printed: serde_yaml_ng::Value =
        serde_yaml_ng::from_slice(&out.stdout).expect("print emits YAML");
    assert_eq!(printed["log"]["data_dir"].as_str(), Some("./data"));
    assert!(printed["log"].get("kafka").is_none());
    assert_eq!(
        printed["gateway"]["listen"].as_str(),
        Some("127.0.0.1:18790")
    );
    assert_eq!(printed["log"]["fsync"].as_str(), Some("every_append"));
    assert_eq!(printed["logging"]["format"].as_str(), Some("auto"));
}

/// Runs `orchestrata --config FILE up` on a temp data dir and free port with `body` as
/// FILE; returns its stderr once it exits (it must exit within 60 s: a refused
/// configuration stops it before it serves).
fn up_refuses(body: &str) -> String {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), body);
    let data = dir.path().join("data");
    let mut child = Command::new(env!("CARGO_BIN_EXE_orchestrata"))
        .args([
            "--config",
            path.to_str().expect("utf-8 path"),
            "up",
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            data.to_str().expect("utf-8 path"),
        ])
        .env_remove("ORCHESTRATA_CONFIG")
        .current_dir(dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("start up");
    for _ in 0..600 {
        if let Some(status) = child.try_wait().expect("wait") {
            let out = child.wait_with_output().expect("stderr");
            assert!(!status.success(), "up accepted {body}");
            return text(&out.stderr);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let _ = child.kill();
    panic!("up kept running with a configuration check refuses:\n{body}");
}

// ISSUE-16 (item 7): `config check` reads the `agents:` sections exactly as `up` does,
// so a file it calls valid is one `up` starts with, and what `up` refuses it refuses,
// naming the same key. The documented example of every section passes.
#[test]
fn agents_sections_are_checked_as_up_reads_them() {
    for (body, key) in [
        (
            "agents:\n  pipeline:\n    coder: [python3, coder.py]\n    bogus: 1\n",
            "agents.pipeline",
        ),
        (
            "agents:\n  pipeline:\n    coder: []\n",
            "agents.pipeline.coder",
        ),
        ("agents:\n  pipline:\n    coder: [x]\n", "agents.pipline"),
        (
            "agents:\n  review:\n    MAX_REVIEW_CYCLES: 0\n",
            "agents.review",
        ),
        (
            "agents:\n  escalation:\n    paths:\n      U:Qa: U:Ox\n",
            "agents.escalation",
        ),
        (
            "agents:\n  drivers:\n    upper: { cli: [] }\n",
            "agents.drivers.upper.cli",
        ),
        (
            "agents:\n  drivers:\n    upper: { cli: [tr], shell: true }\n",
            "agents.drivers",
        ),
        (
            "agents:\n  drivers:\n    both: { cli: [tr], api: [] }\n",
            "agents.drivers.both.kind",
        ),
        (
            "agents:\n  providers:\n    - { name: a, base_url: \"http://127.0.0.1:1/v1\", model: m }\n  drivers:\n    w: { api: [b] }\n",
            "agents.drivers.w.api",
        ),
        (
            "agents:\n  providers:\n    - { name: a, base_url: \"ftp://x\", model: m }\n",
            "agents.providers[0]",
        ),
        (
            "agents:\n  providers:\n    - { name: a, base_url: \"http://x/v1\", model: m, apikey: sk-1 }\n",
            "agents.providers",
        ),
        (
            "agents:\n  drivers:\n    b: { browser: /nonexistent/site.yaml }\n",
            "agents.drivers.b.browser",
        ),
        (
            "agents:\n  browser:\n    headless: false\n",
            "agents.browser",
        ),
    ] {
        let (ok, _, err) = check(body, &[]);
        assert!(!ok, "config check accepted {body}");
        assert!(err.contains(key), "check names {key}: {err}");
        let err = up_refuses(body);
        assert!(err.contains(key), "up names {key}: {err}");
    }
    let documented = "agents:\n  drivers:\n    upper: { cli: [tr, a-z, A-Z], timeout_s: 30 }\n    \
                      writer: { api: [local, hosted], timeout_s: 60 }\n    \
                      qwen: { browser: config/browser-profiles/qwen.yaml }\n  providers:\n    \
                      - { name: local, base_url: \"http://127.0.0.1:8080/v1\", model: llama3, api_key_env: LOCAL_LLM_KEY, quota_tokens: 1000000, max_retries: 2, max_backoff_ms: 5000 }\n    \
                      - { name: hosted, base_url: \"https://api.openai.com/v1\", model: gpt-4o-mini, api_key_env: OPENAI_API_KEY }\n  \
                      browser:\n    chromium: chromium\n    extra_allowed: []\n    session_cap_s: 1800\n    start_timeout_s: 30\n  escalation:\n    paths:\n      U:Qa: [U:Ox]\n  pipeline:\n    \
                      coder: [python3, coder.py]\n    workdir: ./data/workflows\n    \
                      task_timeout_s: 300\n    junior_retries: 2\n  review:\n    MAX_REVIEW_CYCLES: 3\n    \
                      REVIEW_TIMEOUT_SECONDS: 300\n    ESCALATE_ON_MAX_CYCLES: true\n    \
                      AUTO_FIX_ON_SINGLE_ISSUE: true\n    checkers: [[ruff, check]]\n";
    // A site profile path is read relative to the directory `up` runs in.
    let site = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/config/browser-profiles/qwen.yaml"
    );
    let documented = documented.replace("config/browser-profiles/qwen.yaml", site);
    let (ok, out, err) = check(&documented, &[]);
    assert!(ok, "the documented example passes: {err}");
    assert!(out.starts_with("ok: "), "{out}");
}
