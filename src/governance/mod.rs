//! Governance: every authorization is a Prolog decision, and every decision an event.
//!
//! - [`Governance`] (`service`): the async façade. `decide` evaluates a [`Request`]
//!   (cache, else the engine) and appends a `decision recorded` event; `evaluate` is
//!   the dry run; `rules` lists the loaded predicates; `load_policy` swaps policies.
//! - `engine`: one scryer-prolog machine on a dedicated thread fed through a channel.
//! - [`Evaluator`]: the machine with prelude, policy and facts (also used offline).
//! - [`Policy`]: policy files, their bundle text and SHA-256 hash.
//! - [`FactsView`]: the log folded into `cxp_packet/12`, `volk/4`, `session/4`...
//! - [`audit`]: offline re-evaluation of recorded decisions (`orchestrata audit`).
//! - [`term`]: escaping outside input into inert Prolog atoms.
//!
//! `docs/governance.md` describes the policy conventions (`decide/5`, `rule/1`,
//! `article/1`, `cacheable/1`, `cacheable_with/2`, `rule_category/2`).

pub mod audit;
mod config;
mod engine;
mod error;
mod evaluator;
mod fact_goals;
mod fact_terms;
mod fact_window;
mod facts;
mod judgment;
pub mod kernel;
mod pending;
mod policy;
mod queries;
mod record;
mod renewal;
mod request;
mod roster_cache;
mod rules;
mod service;
mod step;
pub mod term;
mod worker;

pub use config::GovernanceConfig;
pub use engine::Engine;
pub use error::GovernanceError;
pub use evaluator::{Evaluator, DEFAULT_INFERENCE_LIMIT};
pub use fact_window::DEFAULT_FACT_WINDOW;
pub use facts::{Fact, FactChange, FactsView, PacketFact, FACT_STREAMS};
pub use judgment::Judgment;
pub use policy::{hash_text, Policy, PolicyFile};
pub use queries::PacketField;
pub use request::{Decision, Outcome, RecordedQuery, Request};
pub use rules::{filter_rules, RuleInfo};
pub use service::Governance;
