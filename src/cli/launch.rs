//! Starting the gateway for `orchestrata up`: settings from the config file, the
//! `--listen` flag and `GATEWAY_TOKEN`, and the generated token when none is set.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::Context;
use serde_json::json;
use uuid::Uuid;

use crate::config::{Backend, LogConfig};
use crate::gateway::config::{parse_listen, GatewayConfig};
use crate::gateway::server::{start, RunningGateway};
use crate::gateway::state::Services;
use crate::log::EventLog;

/// Name of the generated token file inside the data directory.
pub const TOKEN_FILE: &str = "gateway.token";

/// What `up` needs to start the gateway.
pub struct Launch<'a> {
    /// `--listen HOST:PORT`, overriding the file.
    pub listen: Option<&'a str>,
    /// `--redis URL`, overriding `gateway.redis_url`: state shared with other gateway
    /// instances (nonces, auth cache, token store, client registry).
    pub redis: Option<&'a str>,
    /// The YAML config file, if any (its `gateway:` section).
    pub config_file: Option<&'a Path>,
    /// The log's configuration (for `config.get` and the token file's directory).
    pub log_config: &'a LogConfig,
    /// The open log.
    pub log: Arc<dyn EventLog>,
    /// What the gateway serves besides the log: kernel, views, governance, workflows.
    pub components: Components,
}

/// The components `up` started for the gateway; each absent one makes its methods
/// answer `-32603 <component>_unavailable`.
#[derive(Default)]
pub struct Components {
    /// Where commands go, and the views mutating methods wait on.
    pub kernel: Option<(
        crate::gateway::kernel_port::KernelPort,
        crate::gateway::backends::Views,
    )>,
    /// `governance.*` and policy-based scope decisions.
    pub governance: Option<crate::governance::Governance>,
    /// `workflow.*` and `agents.escalations`.
    pub workflows: Option<crate::agents::workflow::Workflows>,
    /// `agents.delegate`.
    pub delegator: Option<crate::agents::profiles::Delegator>,
}

/// A started gateway and, when one was generated, the token and where it was saved.
pub struct Launched {
    /// The gateway.
    pub running: RunningGateway,
    /// `Some((token, file))` when no token was configured and one was generated.
    pub generated: Option<(String, PathBuf)>,
}

fn token_dir(log_config: &LogConfig) -> PathBuf {
    match &log_config.backend {
        Backend::Sled { data_dir } => data_dir.clone(),
        Backend::Kafka { .. } => PathBuf::from(crate::config::DEFAULT_DATA_DIR),
    }
}

/// Writes `token` to `path` readable by the owner only (mode 0600).
fn write_token(path: &Path, token: &str) -> anyhow::Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut file = options
        .open(path)
        .with_context(|| format!("writing {}", path.display()))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o600))?;
    }
    writeln!(file, "{token}")?;
    Ok(())
}

/// Starts the gateway `orchestrata up` runs.
///
/// The operator's token (principal `operator`, acting as the operator Volk `U:GW`):
/// `gateway.static_token` of the file, else `GATEWAY_TOKEN`; with neither, a random
/// token is generated, written to `<data-dir>/gateway.token` (mode 0600) and returned
/// so `up` prints it once. Grants in `gateway.tokens` are other principals and never
/// replace it.
pub async fn launch(l: Launch<'_>) -> anyhow::Result<Launched> {
    // The file's `gateway:` section with the environment's ORCHESTRATA_GATEWAY__* overrides.
    let mut config = GatewayConfig::from_yaml(&crate::config::merged_yaml(l.config_file)?)?;
    if let Some(listen) = l.listen {
        config.listen = parse_listen(listen)?;
    }
    if let Some(url) = l.redis.filter(|u| !u.trim().is_empty()) {
        config.redis_url = Some(url.to_owned());
    }
    let mut generated = None;
    // The operator's token: the file's `static_token`, else GATEWAY_TOKEN, else a
    // generated one — whatever other `tokens` grants the file has.
    if !config.has_static_token() {
        match std::env::var("GATEWAY_TOKEN") {
            Ok(token) if !token.trim().is_empty() => {
                config = config.with_static_token(token.trim());
            }
            _ => {
                let token = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
                let path = token_dir(l.log_config).join(TOKEN_FILE);
                write_token(&path, &token)?;
                config = config.with_static_token(token.clone());
                generated = Some((token, path));
            }
        }
    }
    let view = json!({
        "gateway": config.view(),
        "log": {
            "location": l.log.location(),
            "topic_prefix": l.log_config.topic_prefix,
            "fsync": l.log_config.fsync.to_string(),
        },
    });
    let mut services = Services::new(l.log.clone()).with_config_view(view);
    if let Some((kernel, views)) = l.components.kernel {
        services = services.with_kernel(kernel, views);
    }
    if let Some(governance) = l.components.governance {
        services = services.with_governance(governance);
    }
    if let Some(delegator) = l.components.delegator {
        services = services.with_delegator(delegator);
    }
    if let Some(workflows) = l.components.workflows {
        services = services.with_workflows(workflows);
    }
    let services = match &config.redis_url {
        Some(url) => {
            let state = crate::gateway::shared::RedisState::connect(url, &config.instance_id)
                .await?
                .with_registry_ttl(config.heartbeat_interval.saturating_mul(4));
            services.with_shared_state(Arc::new(state))
        }
        None => services,
    };
    let running = start(config, services)
        .await
        .context("starting the gateway")?;
    Ok(Launched { running, generated })
}
