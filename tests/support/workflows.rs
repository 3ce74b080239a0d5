//! The workflow runner behind a real gateway: a real sled log, kernel under
//! governance, CLI juniors that are shell scripts, a checker script; WebSocket clients.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use orchestrata::agents::drivers::cli::CliConfig;
use orchestrata::agents::review::ReviewConfig;
use orchestrata::agents::workflow::{PipelineConfig, Workflows};
use orchestrata::agents::{AgentMetrics, Agents, EscalationPaths};
use orchestrata::config::LogConfig;
use orchestrata::gateway::{self, RunningGateway, Services};
use orchestrata::governance::{Governance, GovernanceConfig};
use orchestrata::kernel::{Kernel, KernelConfig, TokioClock};
use serde_json::{json, Value};

use super::ws::{test_config, Ws};

/// Writes two `BAD` lines on round 1 and fixes one per later round.
pub const FIXING_CODER: &str = r#"task=$(cat)
if [ "$ORCHESTRATA_ROUND" = 1 ]; then printf 'fn main() {\n  BAD\n  BAD\n}\n' > "$ORCHESTRATA_FILE";
else sed -i '0,/BAD/s//ok/' "$ORCHESTRATA_FILE"; fi
echo "round $ORCHESTRATA_ROUND done""#;

/// Writes one `BAD` line every round: the review never passes.
pub const STUBBORN_CODER: &str = r#"cat > /dev/null
printf 'BAD\n' > "$ORCHESTRATA_FILE"
echo written"#;

/// Prints one lint issue per file that still holds `BAD`.
pub const CHECKER: &str = r#"n=$(grep -c BAD "$1")
if [ "$n" -gt 0 ]; then
  printf '[{"type":"lint","rule":"no-bad","line":2,"message":"%s BAD left","severity":"error"}]' "$n"
else printf '[]'; fi"#;

/// Writes an executable `/bin/sh` script `name` into `dir`.
pub fn script(dir: &Path, name: &str, body: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    std::fs::write(&path, format!("#!/bin/sh\n{body}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

/// A gateway serving workflows; the temp dir holds the log, the scripts and the code.
pub struct Stack {
    pub dir: tempfile::TempDir,
    pub gateway: RunningGateway,
    pub workflows: Workflows,
}

impl Stack {
    /// The pipeline with a coding junior running `coder` (a shell script body) and
    /// `junior_retries` retries.
    pub async fn start(coder: &str, junior_retries: u32) -> Stack {
        let dir = tempfile::tempdir().unwrap();
        let log = orchestrata::log::open(&LogConfig::sled(dir.path().join("log")))
            .await
            .unwrap();
        let (kernel, _) = Kernel::start(
            log.clone(),
            KernelConfig::default(),
            Arc::new(TokioClock::new()),
        )
        .await
        .unwrap();
        let governance = Governance::start(log.clone(), GovernanceConfig::default())
            .await
            .unwrap();
        let kernel = kernel.with_governance(governance);
        let agents = Agents::new(
            kernel,
            EscalationPaths::default(),
            AgentMetrics::new().unwrap(),
        );
        let checker = script(dir.path(), "checker.sh", CHECKER);
        let config = PipelineConfig {
            coder: CliConfig::new(script(dir.path(), "coder.sh", coder)),
            review: ReviewConfig::with_checkers(vec![vec![checker.display().to_string()]]),
            workdir: dir.path().to_path_buf(),
            task_timeout: Duration::from_secs(30),
            junior_retries,
        };
        let workflows = Workflows::new(agents, config);
        let services = Services::new(log).with_workflows(workflows.clone());
        let gateway = gateway::start(test_config(), services).await.unwrap();
        Stack {
            dir,
            gateway,
            workflows,
        }
    }
}

/// A client of `s`, authenticated with `token`.
pub async fn client(s: &Stack, token: &str) -> Ws {
    let mut ws = Ws::connect(&format!("ws://{}/", s.gateway.local_addr())).await;
    ws.auth(token).await;
    ws
}

/// `workflow.get` of run `id` once it is neither running nor paused (30 s at most).
pub async fn wait_done(ws: &mut Ws, id: &str) -> Value {
    for _ in 0..600 {
        let v = ws.ok("workflow.get", json!({ "workflow_id": id })).await;
        if v["status"] != "running" && v["status"] != "paused" {
            return v;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("workflow {id} did not finish");
}
