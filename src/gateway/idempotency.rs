//! Idempotent retries: the optional `idempotency_key` of the kernel-command methods (our
//! extension of the contract; see `docs/gateway.md`, "Retrying a mutating call").
//!
//! A client that did not hear the answer to a mutating call (a timeout, a dropped
//! connection, a broker that froze) cannot know whether it took effect. Sent again with
//! the same key, the call is the *same command*: its command id is derived from the
//! caller's principal, the method and the key (UUIDv5), not minted per request, and the
//! kernel executes a command id once — it answers a repeat as a duplicate and appends
//! nothing. Ids the first call would have minted (the packet's message id, a session id
//! the caller left out) are derived from the command id too, so the repeat's answer
//! names the same packet or session, read from the views.
//!
//! Keys are scoped by principal (two principals' equal keys are different commands) and
//! by method. A connection without a principal (authentication disabled) shares the
//! scope `anonymous`. The dedup lasts as long as the log holds the first command's
//! events: the kernel's set of executed command ids is folded from the log.

use uuid::Uuid;

use super::error::RpcError;
use super::state::Call;

/// The namespace every idempotency-derived id lives in (a fixed, random UUID).
const NAMESPACE: Uuid = Uuid::from_u128(0x5d0b_8f4e_6a1c_4c3b_9e72_1f0a_d4c8_b217);

/// The params field that carries the key.
pub const FIELD: &str = "idempotency_key";

/// The longest key accepted (the params schemas say the same).
pub const MAX_LEN: usize = 200;

/// A call's idempotency key, resolved to the command id it stands for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct IdempotencyKey {
    command_id: Uuid,
}

impl IdempotencyKey {
    /// The key of a call of `method` by `principal` (`None`: the anonymous scope).
    pub fn new(principal: Option<&str>, method: &str, key: &str) -> Self {
        let scope = principal.unwrap_or("anonymous");
        // The scope is length-prefixed and method names hold no NUL, so no two
        // (scope, method, key) triples share a name.
        let name = format!("{}:{scope}\0{method}\0{key}", scope.len());
        IdempotencyKey {
            command_id: Uuid::new_v5(&NAMESPACE, name.as_bytes()),
        }
    }

    /// The call's key, if it carries one (the params schemas already checked its type
    /// and length).
    pub fn of(call: &Call) -> Result<Option<Self>, RpcError> {
        let Some(value) = call.params.get(FIELD) else {
            return Ok(None);
        };
        let key = value
            .as_str()
            .filter(|k| !k.is_empty() && k.chars().count() <= MAX_LEN)
            .ok_or_else(|| {
                RpcError::invalid_params(
                    "invalid_params",
                    format!("params.{FIELD}: a string of 1 to {MAX_LEN} characters"),
                )
                .with("field", format!("params.{FIELD}"))
            })?;
        let principal = call.client.principal().map(|p| p.name);
        Ok(Some(Self::new(principal.as_deref(), call.method(), key)))
    }

    /// The command id every attempt with this key carries.
    pub fn command_id(&self) -> Uuid {
        self.command_id
    }

    /// An id the first attempt would have minted for `what` (e.g. `message_id`): the same
    /// for every attempt with this key, different for every `what`.
    pub fn derive(&self, what: &str) -> Uuid {
        Uuid::new_v5(&self.command_id, what.as_bytes())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_scoped_by_principal_and_method() {
        let a = IdempotencyKey::new(Some("alice"), "cxp.send", "k-1");
        assert_eq!(a, IdempotencyKey::new(Some("alice"), "cxp.send", "k-1"));
        assert_ne!(a, IdempotencyKey::new(Some("bob"), "cxp.send", "k-1"));
        assert_ne!(a, IdempotencyKey::new(Some("alice"), "cxp.ack", "k-1"));
        assert_ne!(a, IdempotencyKey::new(Some("alice"), "cxp.send", "k-2"));
        assert_ne!(a, IdempotencyKey::new(None, "cxp.send", "k-1"));
        // Parts cannot be shifted into one another.
        assert_ne!(
            IdempotencyKey::new(Some("a"), "cxp.send", "b\0c"),
            IdempotencyKey::new(Some("a\0b"), "cxp.send", "c"),
        );
    }

    #[test]
    fn derived_ids_are_stable_and_distinct() {
        let k = IdempotencyKey::new(Some("alice"), "cxp.send", "k-1");
        assert_eq!(k.derive("message_id"), k.derive("message_id"));
        assert_ne!(k.derive("message_id"), k.derive("session_id"));
        assert_ne!(k.derive("message_id"), k.command_id());
    }
}
