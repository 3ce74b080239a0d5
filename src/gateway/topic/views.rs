//! The views the gateway reads besides the kernel's: the [`PacketIndex`] topic filters
//! complete packet transitions from, and the [`WorkflowView`] `workflow.get` answers
//! from.
//!
//! Both are folded once per event by a projection runner. A gateway whose services
//! bring the runner's views ([`Services::views`]) reads those; one started without
//! them (a bare gateway over a log) starts the two runners itself, over an in-memory
//! store (they are rebuilt from the log at every start), and stops them at shutdown.

use std::sync::Arc;

use orchestrata_projections::{PacketIndex, WorkflowView};

use super::facts::FilterIndex;
use crate::gateway::state::Services;
use crate::log::EventLog;
use crate::projection::{
    spawn_view, ProjectionError, RunnerConfig, RunningView, ViewHandle, ViewStore,
};

/// Handles on the two views, and the runners this gateway owns, if any.
pub struct GatewayViews {
    /// What topic filters read.
    pub index: FilterIndex,
    /// Workflow runs.
    pub workflows: ViewHandle<WorkflowView>,
    own: Option<(RunningView<PacketIndex>, RunningView<WorkflowView>)>,
}

impl GatewayViews {
    /// The views of `services`, or runners of this gateway's own over `log`.
    pub async fn start(
        services: &Services,
        log: Arc<dyn EventLog>,
    ) -> Result<Self, ProjectionError> {
        if let Some(views) = &services.views {
            return Ok(GatewayViews {
                index: FilterIndex::new(views.packets.clone()),
                workflows: views.workflows.clone(),
                own: None,
            });
        }
        let store = ViewStore::temporary()?;
        let config = RunnerConfig::default();
        let packets: RunningView<PacketIndex> =
            spawn_view(log.clone(), store.clone(), config).await?;
        let workflows: RunningView<WorkflowView> = spawn_view(log, store, config).await?;
        Ok(GatewayViews {
            index: FilterIndex::new(packets.handle().clone()),
            workflows: workflows.handle().clone(),
            own: Some((packets, workflows)),
        })
    }

    /// Stops the runners this gateway started (nothing for borrowed views).
    pub async fn stop(self) -> Result<(), ProjectionError> {
        if let Some((packets, workflows)) = self.own {
            let a = packets.stop().await;
            let b = workflows.stop().await;
            a?;
            b?;
        }
        Ok(())
    }
}
