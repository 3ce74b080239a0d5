"""One exception class per gateway error.

Every JSON-RPC error code has a class (``InvalidParams`` for -32602, ...); every error
of the contract (spec 014's ERR-001..018) and the frequent ``data.reason`` values have a
subclass of their code's class, so ``except InvalidParams`` also catches
``UnknownTargetVolk``. ``error.reason`` is ``data.reason``, ``error.data`` the whole
``data`` object. Errors the connection itself reports (close codes) derive from
``ConnectionClosed``.
"""

from __future__ import annotations

from typing import Any


class GatewayError(Exception):
    """An error answered by the gateway (``code``, ``message``, ``data``)."""

    code: int = 0
    #: The contract's error id (``ERR-006``), when this class is one.
    contract: str | None = None

    def __init__(self, message: str = "", *, code: int | None = None, data: dict[str, Any] | None = None):
        super().__init__(message)
        self.message = message
        if code is not None:
            self.code = code
        self.data: dict[str, Any] = dict(data or {})

    @property
    def reason(self) -> str | None:
        """``data.reason``: the stable machine-readable cause."""
        value = self.data.get("reason")
        return value if isinstance(value, str) else None

    def __str__(self) -> str:
        return f"{self.code} {self.message} ({self.reason})" if self.reason else f"{self.code} {self.message}"


# --- JSON-RPC codes -------------------------------------------------------------------
class ParseError(GatewayError):
    code = -32700


class InvalidRequest(GatewayError):
    code = -32600


class MethodNotFound(GatewayError):
    code = -32601


class InvalidParams(GatewayError):
    code = -32602


class InternalError(GatewayError):
    code = -32603


class Unauthorized(GatewayError):
    code = -32001


class RateLimited(GatewayError):
    """ERR-003: ``data.retry_after_ms``; the client retries these by itself."""

    code = -32002
    contract = "ERR-003"

    @property
    def retry_after(self) -> float:
        ms = self.data.get("retry_after_ms", 10)
        return max(float(ms if isinstance(ms, (int, float)) else 10), 1.0) / 1000.0


class BudgetExceeded(GatewayError):
    code = -32003


# --- the contract's errors and frequent reasons ----------------------------------------
class AuthenticationRequired(Unauthorized):
    contract = "ERR-001"


class InvalidCredentials(Unauthorized):
    """ERR-002: a bad token or signature (``invalid_token``, ``invalid_signature``, ...)."""

    contract = "ERR-002"


class InsufficientScope(Unauthorized):
    pass


class NotActingAs(Unauthorized):
    """The principal may not act as that Volk (``data.volk``, ``data.acts_as``)."""


class GovernanceDenied(Unauthorized):
    """The policy refused the command (``data.decision_id``)."""


class SharedStateUnavailable(Unauthorized):
    contract = "ERR-009"


class NonceReplay(Unauthorized):
    contract = "ERR-013"


class SubscriptionLimit(InvalidParams):
    contract = "ERR-005"


class UnknownTargetVolk(InvalidParams):
    contract = "ERR-006"


class MutationNotAllowed(InvalidParams):
    contract = "ERR-007"


class EpochMismatch(InvalidParams):
    """The log was recreated: a saved position is void (``data.epoch`` is the new one)."""


class PositionTruncated(InvalidParams):
    """Retention dropped the position (``data.first_sequence``)."""


class InvalidTransition(InvalidParams):
    pass


class IdempotencyKeyReused(InvalidParams):
    """The key already named another packet."""


class QueryTimeout(InternalError):
    contract = "ERR-008"


class Neo4jUnavailable(InternalError):
    contract = "ERR-010"


class GovernanceUnavailable(InternalError):
    """ERR-011: the policy engine is down; uncached decisions are denied."""

    contract = "ERR-011"


class PrologError(InternalError):
    """ERR-016: ``data.prolog_error`` holds the Prolog error text."""

    contract = "ERR-016"


class BatchTooLarge(InvalidRequest):
    contract = "ERR-017"


class EventsDropped(GatewayError):
    """ERR-014: events were dropped and cannot be replayed any more (retention)."""

    contract = "ERR-014"


# --- the connection ---------------------------------------------------------------------
class ConnectionClosed(GatewayError):
    """The WebSocket closed (``close_code``, ``close_reason``)."""

    def __init__(self, message: str = "", *, close_code: int | None = None, close_reason: str = ""):
        super().__init__(message or f"connection closed: {close_code} {close_reason}".strip(), data={"reason": close_reason or None})
        self.close_code = close_code
        self.close_reason = close_reason


class ConnectionLost(ConnectionClosed):
    """ERR-012: the connection dropped before the answer came; the call may or may not
    have run. Raised only for calls that cannot be retried safely (a mutating call
    without an idempotency key)."""

    contract = "ERR-012"


class AuthenticationTimeout(ConnectionClosed):
    """ERR-001: closed with 1008 after the authentication grace period."""

    contract = "ERR-001"


class MessageTooBig(ConnectionClosed):
    contract = "ERR-004"


class ServerFull(ConnectionClosed):
    """ERR-015: 1013 ``max_clients`` / ``max_pending_auth``."""

    contract = "ERR-015"


class BinaryFrameRejected(ConnectionClosed):
    contract = "ERR-018"


class ClientClosed(GatewayError):
    """The client was closed (``close()`` / ``drain()``) while the call waited."""


BY_CODE: dict[int, type[GatewayError]] = {
    c.code: c
    for c in (ParseError, InvalidRequest, MethodNotFound, InvalidParams, InternalError, Unauthorized, RateLimited, BudgetExceeded)
}

BY_REASON: dict[str, type[GatewayError]] = {
    "authentication_required": AuthenticationRequired,
    "invalid_token": InvalidCredentials,
    "empty_token": InvalidCredentials,
    "missing_token": InvalidCredentials,
    "token_expired": InvalidCredentials,
    "unsupported_strategy": InvalidCredentials,
    "invalid_signature": InvalidCredentials,
    "invalid_timestamp": InvalidCredentials,
    "timestamp_drift": InvalidCredentials,
    "unknown_client": InvalidCredentials,
    "missing_field": InvalidCredentials,
    "policy_denied": InvalidCredentials,
    "insufficient_scope": InsufficientScope,
    "not_acting_as": NotActingAs,
    "governance_denied": GovernanceDenied,
    "shared_state_unavailable": SharedStateUnavailable,
    "nonce_replay": NonceReplay,
    "rate_limited": RateLimited,
    "subscription_limit": SubscriptionLimit,
    "unknown_target_volk": UnknownTargetVolk,
    "mutation_not_allowed": MutationNotAllowed,
    "epoch_mismatch": EpochMismatch,
    "position_truncated": PositionTruncated,
    "invalid_transition": InvalidTransition,
    "idempotency_key_reused": IdempotencyKeyReused,
    "query_timeout": QueryTimeout,
    "neo4j_unavailable": Neo4jUnavailable,
    "governance_unavailable": GovernanceUnavailable,
    "governance_engine_unavailable": GovernanceUnavailable,
    "prolog_error": PrologError,
    "batch_too_large": BatchTooLarge,
    "replay_scan_budget": BudgetExceeded,
}

BY_CLOSE: dict[int, type[ConnectionClosed]] = {
    1003: BinaryFrameRejected,
    1008: AuthenticationTimeout,
    1009: MessageTooBig,
    1013: ServerFull,
}


def from_error(error: Any) -> GatewayError:
    """The exception for a JSON-RPC ``error`` object."""
    if not isinstance(error, dict):
        return InternalError(f"malformed error: {error!r}", code=-32603)
    code = error.get("code")
    code = code if isinstance(code, int) else 0
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    message = str(error.get("message") or "")
    cls = BY_REASON.get(str(data.get("reason")))
    if cls is None or cls.code != code:
        cls = BY_CODE.get(code, GatewayError)
    return cls(message, code=code, data=data)


def from_close(code: int | None, reason: str) -> ConnectionClosed:
    """The exception for a close the gateway initiated."""
    return BY_CLOSE.get(code or 0, ConnectionClosed)(close_code=code, close_reason=reason)
