//! The Volk registry: register (alias free, parent registered), deregister, and the
//! health observed of a registered Volk.

use orchestrata_schemas::cxp::VolkAlias;
use orchestrata_schemas::events::fields::Json;
use orchestrata_schemas::events::types::Health;
use orchestrata_schemas::events::volk_lifecycle::{
    VolkDeregistered, VolkHealthChanged, VolkRegistered,
};
use orchestrata_schemas::events::EventRecord;

use super::{non_empty, Ctx};
use crate::kernel::convert::SESSION_KEY;
use crate::kernel::KernelError;

/// `register_volk`.
pub(super) fn register(
    cx: &Ctx<'_>,
    alias: &str,
    capabilities: &[String],
    parent: Option<&str>,
    protocols: &[String],
    metadata: &Json,
) -> Result<Vec<EventRecord>, KernelError> {
    VolkAlias::parse_field(alias, "alias")
        .map_err(|e| KernelError::invalid("alias", e.to_string()))?;
    if cx.state.volk(alias).is_some_and(|v| v.registered) {
        return Err(KernelError::VolkExists {
            alias: alias.to_owned(),
        });
    }
    if let Some(parent) = parent {
        if !cx.state.volk(parent).is_some_and(|v| v.registered) {
            return Err(KernelError::UnknownVolk {
                field: "parent",
                alias: parent.to_owned(),
            });
        }
    }
    if !matches!(
        metadata.0,
        serde_json::Value::Object(_) | serde_json::Value::Null
    ) {
        return Err(KernelError::invalid("metadata", "must be a JSON object"));
    }
    let session_id = metadata
        .0
        .get(SESSION_KEY)
        .and_then(|v| v.as_str())
        .map(str::to_owned);
    let event = VolkRegistered {
        alias: alias.to_owned(),
        capabilities: capabilities.to_vec(),
        parent: parent.map(str::to_owned),
        protocols: protocols.to_vec(),
        session_id,
        metadata: metadata.clone(),
    };
    Ok(vec![cx.record(alias, event)])
}

/// `deregister_volk`: packets queued for it then fail (and are retried).
pub(super) fn deregister(
    cx: &Ctx<'_>,
    alias: &str,
    reason: &str,
) -> Result<Vec<EventRecord>, KernelError> {
    non_empty("reason", reason)?;
    if !cx.state.volk(alias).is_some_and(|v| v.registered) {
        return Err(KernelError::UnknownVolk {
            field: "alias",
            alias: alias.to_owned(),
        });
    }
    let event = VolkDeregistered {
        alias: alias.to_owned(),
        reason: reason.to_owned(),
    };
    Ok(vec![cx.record(alias, event)])
}

/// `set_volk_health`: `health_changed` from the Volk's last health, nothing when it is
/// the same (observers repeat themselves; the log records changes).
pub(super) fn set_health(
    cx: &Ctx<'_>,
    alias: &str,
    health: Health,
    details: Option<String>,
) -> Result<Vec<EventRecord>, KernelError> {
    let volk = cx
        .state
        .volk(alias)
        .filter(|v| v.registered)
        .ok_or_else(|| KernelError::UnknownVolk {
            field: "alias",
            alias: alias.to_owned(),
        })?;
    if volk.health == health {
        return Ok(Vec::new());
    }
    let event = VolkHealthChanged {
        alias: alias.to_owned(),
        old: volk.health,
        new: health,
        details,
    };
    Ok(vec![cx.record(alias, event)])
}
