//! A workflow run's state as a pure fold of `workflow.events` (what `workflow.get`
//! answers). The fold lives in the projections crate, where the runner folds it once
//! per event for every run ([`orchestrata_projections::WorkflowView`]); this module
//! keeps the agents' names for one run's state.
//!
//! [`WorkflowView::fold`] folds a single run from any records (a test or a tool that
//! holds the events already); a server answers from the runner's view instead.

pub use orchestrata_projections::workflow::{RunView as WorkflowView, StepView};
