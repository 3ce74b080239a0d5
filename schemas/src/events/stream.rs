//! The log's streams.
//!
//! A stream is an ordered, append-only sequence of events about one area of the
//! system. Streams are the gateway's subscription topics, and in Kafka each stream
//! is one topic named `<prefix>.<stream>` (prefix `orchestrata` by default).

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// Every stream Orchestrata writes. One writer (the kernel) per stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Stream {
    /// CXP packets and their delivery / work status transitions, thread lifecycle.
    #[serde(rename = "cxp.traffic")]
    CxpTraffic,
    /// Volk registration, health, tasks, junior Volks, escalation.
    #[serde(rename = "volk.lifecycle")]
    VolkLifecycle,
    /// Every governance decision and every policy load.
    #[serde(rename = "governance.decisions")]
    GovernanceDecisions,
    /// Session lifecycle, context and facts.
    #[serde(rename = "session.events")]
    SessionEvents,
    /// Workflow lifecycle.
    #[serde(rename = "workflow.events")]
    WorkflowEvents,
    /// Gateway client presence.
    #[serde(rename = "gateway.presence")]
    GatewayPresence,
    /// Kernel lifecycle.
    #[serde(rename = "kernel.events")]
    KernelEvents,
    /// LLM / driver provider lifecycle.
    #[serde(rename = "provider.events")]
    ProviderEvents,
    /// Commands handed to the kernel by other processes (split deployment).
    #[serde(rename = "commands")]
    Commands,
}

impl Stream {
    /// All streams, in a stable order.
    pub const ALL: [Stream; 9] = [
        Stream::CxpTraffic,
        Stream::VolkLifecycle,
        Stream::GovernanceDecisions,
        Stream::SessionEvents,
        Stream::WorkflowEvents,
        Stream::GatewayPresence,
        Stream::KernelEvents,
        Stream::ProviderEvents,
        Stream::Commands,
    ];

    /// The stream's wire name, e.g. `cxp.traffic`.
    pub const fn as_str(self) -> &'static str {
        match self {
            Stream::CxpTraffic => "cxp.traffic",
            Stream::VolkLifecycle => "volk.lifecycle",
            Stream::GovernanceDecisions => "governance.decisions",
            Stream::SessionEvents => "session.events",
            Stream::WorkflowEvents => "workflow.events",
            Stream::GatewayPresence => "gateway.presence",
            Stream::KernelEvents => "kernel.events",
            Stream::ProviderEvents => "provider.events",
            Stream::Commands => "commands",
        }
    }
}

impl fmt::Display for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A stream name that is not one of [`Stream::ALL`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown stream `{0}` (known: cxp.traffic, volk.lifecycle, governance.decisions, session.events, workflow.events, gateway.presence, kernel.events, provider.events, commands)")]
pub struct UnknownStream(pub String);

impl FromStr for Stream {
    type Err = UnknownStream;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Stream::ALL
            .into_iter()
            .find(|stream| stream.as_str() == s)
            .ok_or_else(|| UnknownStream(s.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for stream in Stream::ALL {
            assert_eq!(stream.as_str().parse::<Stream>(), Ok(stream));
            let json = serde_json::to_string(&stream).expect("stream serializes");
            assert_eq!(json, format!("\"{}\"", stream.as_str()));
        }
        assert!("cxp".parse::<Stream>().is_err());
    }
}
