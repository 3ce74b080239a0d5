//! What every connection and handler shares: configuration, components, hubs, clients.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use chrono::{DateTime, Utc};
use futures::future::BoxFuture;
use orchestrata_schemas::events::{EventRecord, Stream};
use serde_json::Value;
use tokio::sync::watch;

use super::client::Client;
use super::config::GatewayConfig;
use super::error::RpcError;
use super::kernel_port::KernelPort;
use super::metrics::Metrics;
use super::schema::ParamsSchemas;
use super::topic::facts::FilterIndex;
use super::topic::hub::Hub;
use crate::log::EventLog;

/// The components the gateway serves. Build it with [`Services::new`] and add the
/// optional ones.
#[derive(Clone)]
pub struct Services {
    /// The event log: topics, replay and presence are read from / written to it.
    pub log: Arc<dyn EventLog>,
    /// The effective configuration shown by `config.get` (secrets already redacted
    /// or not — `config.get` redacts again by key name).
    pub config_view: Value,
    /// When that configuration was loaded.
    pub config_loaded_at: DateTime<Utc>,
    /// The kernel that executes `cxp.send/ack/work`, `volk.register/deregister`,
    /// `session.open/close`; those methods answer -32603 `kernel_unavailable` without it.
    pub kernel: Option<super::kernel_port::KernelPort>,
    /// The live views the read methods answer from (and mutating methods wait on).
    pub views: Option<super::backends::Views>,
    /// The governance service (`governance.*`, scope decisions).
    pub governance: Option<crate::governance::Governance>,
    /// Workflow runs and the agents under them (`workflow.*`, `agents.escalations`);
    /// those methods answer `unavailable` without it.
    pub workflows: Option<crate::agents::workflow::Workflows>,
    /// `agents.delegate`: fan-outs over the configured `agents.drivers`.
    pub delegator: Option<crate::agents::profiles::Delegator>,
    /// State shared with other gateway instances (HMAC nonces, auth cache, token
    /// store, client registry): in memory unless [`Services::with_shared_state`] gives
    /// a [`super::shared::RedisState`].
    pub shared_state: Arc<dyn super::shared::SharedState>,
}

impl Services {
    /// Services over `log` with an empty configuration view.
    pub fn new(log: Arc<dyn EventLog>) -> Self {
        Services {
            log,
            config_view: Value::Object(Default::default()),
            config_loaded_at: Utc::now(),
            kernel: None,
            views: None,
            governance: None,
            workflows: None,
            delegator: None,
            shared_state: Arc::new(super::shared::MemoryState::default()),
        }
    }

    /// Shares nonces, auth decisions, tokens and the client registry through `state`.
    pub fn with_shared_state(mut self, state: Arc<dyn super::shared::SharedState>) -> Self {
        self.shared_state = state;
        self
    }

    /// Serves `agents.delegate` with `delegator`.
    pub fn with_delegator(mut self, delegator: crate::agents::profiles::Delegator) -> Self {
        self.delegator = Some(delegator);
        self
    }

    /// Serves workflows (and the agents' metrics and human queue) from `workflows`.
    pub fn with_workflows(mut self, workflows: crate::agents::workflow::Workflows) -> Self {
        self.workflows = Some(workflows);
        self
    }

    /// Acts through `kernel` — a [`crate::kernel::Kernel`] in this process or a
    /// [`crate::kernel::RemoteKernel`] over the log — and reads (and waits on) `views`.
    pub fn with_kernel(
        mut self,
        kernel: impl Into<super::kernel_port::KernelPort>,
        views: super::backends::Views,
    ) -> Self {
        self.kernel = Some(kernel.into());
        self.views = Some(views);
        self
    }

    /// Answers `governance.*` and routes scope decisions through `governance`.
    pub fn with_governance(mut self, governance: crate::governance::Governance) -> Self {
        self.governance = Some(governance);
        self
    }

    /// Sets what `config.get` shows.
    pub fn with_config_view(mut self, view: Value) -> Self {
        self.config_view = view;
        self
    }
}

/// Gateway-wide state.
pub struct Shared {
    /// Settings.
    pub config: GatewayConfig,
    /// Components.
    pub services: Services,
    /// Metrics.
    pub metrics: Arc<Metrics>,
    /// One hub per topic.
    pub hubs: BTreeMap<Stream, Arc<Hub>>,
    /// The packet index filters complete packet transitions from (a view folded over
    /// the whole log; see `topic::facts`).
    pub index: FilterIndex,
    /// Workflow runs, folded once per event (`workflow.get`).
    pub workflows: crate::projection::ViewHandle<orchestrata_projections::WorkflowView>,
    /// Connected clients by id.
    pub clients: Mutex<HashMap<String, Arc<Client>>>,
    /// Start time (uptime).
    pub started: Instant,
    /// Start time (wall clock).
    pub started_at: DateTime<Utc>,
    /// `true` once shutdown began.
    pub shutdown: watch::Sender<bool>,
    /// Params schemas.
    pub schemas: ParamsSchemas,
    /// Client and pending-authentication slots in use (see `connection::Slots`).
    pub slots: Arc<super::connection::Slots>,
}

impl Shared {
    /// Locks the client registry.
    pub fn clients(&self) -> MutexGuard<'_, HashMap<String, Arc<Client>>> {
        self.clients.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether shutdown began.
    pub fn shutting_down(&self) -> bool {
        *self.shutdown.borrow()
    }

    /// The hub of `stream`.
    pub fn hub(&self, stream: Stream) -> Result<&Arc<Hub>, RpcError> {
        self.hubs.get(&stream).ok_or_else(|| {
            RpcError::invalid_params("unknown_topic", format!("`{stream}` is not a topic"))
        })
    }

    /// Appends `record`, mapping a log failure to -32603 `log_unavailable`. With a
    /// kernel in this process the kernel's writer appends it in its next batch (one
    /// appender, group commit); otherwise (a split gateway, or a kernel that has
    /// already stopped during shutdown) the gateway appends it itself.
    pub async fn append(&self, record: &EventRecord) -> Result<u64, RpcError> {
        let writer = match &self.services.kernel {
            Some(KernelPort::Local(kernel)) => Some(kernel as &dyn crate::log::Recorder),
            _ => None,
        };
        crate::log::append_via(writer, self.services.log.as_ref(), record)
            .await
            .map_err(|e| RpcError::internal("log_unavailable", e))
    }
}

/// One call of a method: the gateway, the calling client, the params, and work to do
/// once the response is queued (e.g. make a new subscription live).
pub struct Call {
    /// The gateway.
    pub gw: Arc<Shared>,
    /// The caller.
    pub client: Arc<Client>,
    /// Validated params (`null` when none were given).
    pub params: Value,
    after: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    /// The audit record of this (allowed, mutating) call, not appended yet: the first
    /// kernel command the call issues appends it in its own batch
    /// ([`Call::take_audit`]); dispatch appends it if the handler issued none.
    audit: Arc<Mutex<Option<EventRecord>>>,
    /// The method called (`""` for a call built outside dispatch).
    method: &'static str,
}

impl Call {
    /// A call with an empty follow-up list.
    pub fn new(
        gw: Arc<Shared>,
        client: Arc<Client>,
        params: Value,
        after: Arc<Mutex<Vec<BoxFuture<'static, ()>>>>,
    ) -> Self {
        Call {
            gw,
            client,
            params,
            after,
            audit: Arc::default(),
            method: "",
        }
    }

    /// The call of `method` (what idempotency keys are scoped by).
    pub fn of_method(mut self, method: &'static str) -> Self {
        self.method = method;
        self
    }

    /// The method called.
    pub fn method(&self) -> &'static str {
        self.method
    }

    /// A call whose audit record (in `audit`, shared with the dispatcher, which
    /// appends it if the handler issued no command) the kernel command it issues will
    /// append.
    pub fn with_audit(mut self, audit: Arc<Mutex<Option<EventRecord>>>) -> Self {
        self.audit = audit;
        self
    }

    /// The call's audit record, if not appended yet (taken: appended once).
    pub fn take_audit(&self) -> Option<EventRecord> {
        self.audit.lock().unwrap_or_else(|e| e.into_inner()).take()
    }

    /// Runs `work` after the response to this call has been queued.
    pub fn after_response(&self, work: BoxFuture<'static, ()>) {
        self.after
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(work);
    }

    /// Deserializes the params into `T` (-32602 naming serde's complaint).
    pub fn parse<T: serde::de::DeserializeOwned>(&self) -> Result<T, RpcError> {
        // Read through a reference: the params tree is not copied first (it was, for
        // every call).
        let parsed = if self.params.is_null() {
            <T as serde::Deserialize>::deserialize(&Value::Object(serde_json::Map::new()))
        } else {
            <T as serde::Deserialize>::deserialize(&self.params)
        };
        parsed.map_err(|e| RpcError::invalid_params("invalid_params", format!("params: {e}")))
    }

    /// The caller's id.
    pub fn client_id(&self) -> String {
        self.client.id().to_owned()
    }
}
