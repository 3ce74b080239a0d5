// Errors: one class per JSON-RPC code the gateway answers, and one per error of the
// contract (spec 014, ERR-001..018) that a client can meet, chosen by `data.reason`.
//
//   try { await gw.cxp.send(...) } catch (e) {
//     if (e instanceof UnknownTargetVolk) ...        // ERR-006
//     else if (e instanceof InvalidParams) ...       // any other -32602
//     else if (e instanceof GatewayError) e.code, e.reason, e.data
//   }
//
// Close codes of the contract (1003, 1009, 1013) surface as `ConnectionClosed`
// subclasses: pending calls that cannot be retried reject with them.

/** The `error` member of a JSON-RPC answer. */
export interface RpcErrorObject {
  code: number;
  message?: string;
  data?: Record<string, unknown> | null;
}

/** Any error the gateway answered (or the connection's end, for `ConnectionClosed`). */
export class GatewayError extends Error {
  /** The JSON-RPC error code (-32xxx), or the WebSocket close code. */
  readonly code: number;
  /** `data` of the answer (always an object; `{}` when the gateway sent none). */
  readonly data: Record<string, unknown>;
  /** The contract error this is, when it is one (`ERR-006`). */
  static readonly contract: string | null = null;

  constructor(code: number, message: string, data?: Record<string, unknown> | null) {
    super(message);
    this.name = new.target.name;
    this.code = code;
    this.data = data ?? {};
  }

  /** `data.reason`: the stable reason code (`unknown_target_volk`, ...). */
  get reason(): string | undefined {
    const r = this.data.reason;
    return typeof r === 'string' ? r : undefined;
  }
}

// --- one class per JSON-RPC code -----------------------------------------------------

/** -32700: the frame was not JSON. */
export class ParseError extends GatewayError {}
/** -32600: not a valid request (or an empty or too large batch). */
export class InvalidRequest extends GatewayError {}
/** -32601: no such method. */
export class MethodNotFound extends GatewayError {}
/** -32602: params refused (schema, filters, kernel refusals of the request). */
export class InvalidParams extends GatewayError {}
/** -32603: the gateway or a backend failed. */
export class InternalError extends GatewayError {}
/** -32001: authentication or authorization refused. */
export class Unauthorized extends GatewayError {}
/** -32002 (ERR-003): over the rate limit; retry after `retryAfterMs`. */
export class RateLimited extends GatewayError {
  static override readonly contract: string | null = 'ERR-003';
  get retryAfterMs(): number {
    const v = this.data.retry_after_ms;
    return typeof v === 'number' ? v : 0;
  }
}
/** -32003: a budget (the replay scan) exceeded. */
export class BudgetExceeded extends GatewayError {}

// --- one class per contract error ----------------------------------------------------

/** ERR-001: a method called before `auth.authenticate`. */
export class AuthenticationRequired extends Unauthorized {
  static override readonly contract: string | null = 'ERR-001';
}
/** ERR-002: the credentials were refused (token or HMAC signature). */
export class InvalidCredentials extends Unauthorized {
  static override readonly contract: string | null = 'ERR-002';
}
/** ERR-013: an HMAC nonce used twice within the drift window. */
export class NonceReplay extends InvalidCredentials {
  static override readonly contract: string | null = 'ERR-013';
}
/** The principal's scope is below the method's (or topic's). */
export class InsufficientScope extends Unauthorized {}
/** The principal may not act as the Volk named (`data.volk`, `data.acts_as`). */
export class NotActingAs extends Unauthorized {}
/** Governance denied the command (`data.decision_id`). */
export class GovernanceDenied extends Unauthorized {}
/** ERR-005: more than `max_subscriptions_per_client` subscriptions. */
export class SubscriptionLimit extends InvalidParams {
  static override readonly contract: string | null = 'ERR-005';
}
/** ERR-006: `cxp.send` to a Volk that does not exist. */
export class UnknownTargetVolk extends InvalidParams {
  static override readonly contract: string | null = 'ERR-006';
}
/** ERR-007: `knowledge.query` with a mutating clause. */
export class MutationNotAllowed extends InvalidParams {
  static override readonly contract: string | null = 'ERR-007';
}
/** A resume position from another incarnation of the log (`data.epoch`). */
export class EpochMismatch extends InvalidParams {}
/** A resume position retention already dropped (`data.first_sequence`). */
export class PositionTruncated extends InvalidParams {}
/** An idempotency key already used for a different request. */
export class IdempotencyKeyReused extends InvalidParams {}
/** ERR-008: `knowledge.query` ran over its timeout. */
export class QueryTimeout extends InternalError {
  static override readonly contract: string | null = 'ERR-008';
}
/** ERR-009: shared state (Redis) unavailable for an uncached authentication. */
export class SharedStateUnavailable extends Unauthorized {
  static override readonly contract: string | null = 'ERR-009';
}
/** ERR-010: Neo4j unavailable for `knowledge.*`. */
export class Neo4jUnavailable extends InternalError {
  static override readonly contract: string | null = 'ERR-010';
}
/** ERR-011: the governance engine is down; uncached decisions fail closed. */
export class GovernanceEngineUnavailable extends InternalError {
  static override readonly contract: string | null = 'ERR-011';
}
/** ERR-016: the policy raised a Prolog error (`data.prolog_error`). */
export class PrologError extends InternalError {
  static override readonly contract: string | null = 'ERR-016';
}
/** ERR-017: a batch of more than 50 requests. */
export class BatchTooLarge extends InvalidRequest {
  static override readonly contract: string | null = 'ERR-017';
}

// --- the connection's end ------------------------------------------------------------

/** The connection closed before the answer came (ERR-012: the gateway cancels the call). */
export class ConnectionClosed extends GatewayError {
  static override readonly contract: string | null = 'ERR-012';
}
/** ERR-004: a frame over `max_message_size_bytes` (close 1009). */
export class MessageTooBig extends ConnectionClosed {
  static override readonly contract: string | null = 'ERR-004';
}
/** ERR-015: the gateway is full (close 1013); the client retries with backoff. */
export class TryAgainLater extends ConnectionClosed {
  static override readonly contract: string | null = 'ERR-015';
}
/** ERR-018: a binary frame was sent (close 1003). */
export class BinaryFrameRejected extends ConnectionClosed {
  static override readonly contract: string | null = 'ERR-018';
}
/** No answer within the call's timeout. */
export class CallTimeout extends GatewayError {}

/**
 * ERR-014 is not an error a call meets: the gateway dropped events for a slow client
 * and says so with a `gateway.gap` notice; subscriptions fill the range with
 * `gateway.replay` by themselves. This is what `onGap` receives.
 */
export interface GapNotice {
  topic: string;
  subscription?: string;
  dropped?: number;
  sequence_from: number;
  sequence_to: number;
  epoch?: string;
}

type ErrorClass = new (code: number, message: string, data?: Record<string, unknown> | null) => GatewayError;

const BY_CODE: Record<number, ErrorClass> = {
  [-32700]: ParseError,
  [-32600]: InvalidRequest,
  [-32601]: MethodNotFound,
  [-32602]: InvalidParams,
  [-32603]: InternalError,
  [-32001]: Unauthorized,
  [-32002]: RateLimited,
  [-32003]: BudgetExceeded,
};

const BY_REASON: Record<string, ErrorClass> = {
  authentication_required: AuthenticationRequired,
  invalid_token: InvalidCredentials,
  empty_token: InvalidCredentials,
  missing_token: InvalidCredentials,
  token_expired: InvalidCredentials,
  invalid_signature: InvalidCredentials,
  invalid_timestamp: InvalidCredentials,
  timestamp_drift: InvalidCredentials,
  unknown_client: InvalidCredentials,
  unsupported_strategy: InvalidCredentials,
  policy_denied: InvalidCredentials,
  nonce_replay: NonceReplay,
  insufficient_scope: InsufficientScope,
  not_acting_as: NotActingAs,
  governance_denied: GovernanceDenied,
  subscription_limit: SubscriptionLimit,
  unknown_target_volk: UnknownTargetVolk,
  mutation_not_allowed: MutationNotAllowed,
  epoch_mismatch: EpochMismatch,
  position_truncated: PositionTruncated,
  idempotency_key_reused: IdempotencyKeyReused,
  query_timeout: QueryTimeout,
  shared_state_unavailable: SharedStateUnavailable,
  neo4j_unavailable: Neo4jUnavailable,
  governance_engine_unavailable: GovernanceEngineUnavailable,
  prolog_error: PrologError,
  batch_too_large: BatchTooLarge,
};

/** The error class for an answer's `error`: by `data.reason` when the code agrees, else by code. */
export function errorFromRpc(e: RpcErrorObject): GatewayError {
  const data = e.data && typeof e.data === 'object' ? e.data : {};
  const reason = typeof data.reason === 'string' ? data.reason : '';
  const byCode = BY_CODE[e.code] ?? GatewayError;
  const byReason = BY_REASON[reason];
  const cls = byReason && byReason.prototype instanceof byCode ? byReason : byCode;
  const message = reason ? `${e.message ?? 'error'} (${reason})` : (e.message ?? 'error');
  return new cls(e.code, message, data);
}

/** The error pending calls reject with when the socket closed with `code`. */
export function errorFromClose(code: number, reason: string): ConnectionClosed {
  const data = { reason: reason || 'connection_closed', close_code: code };
  const message = `connection closed (${code}${reason ? ` ${reason}` : ''})`;
  switch (code) {
    case 1009:
      return new MessageTooBig(code, message, data);
    case 1013:
      return new TryAgainLater(code, message, data);
    case 1003:
      return new BinaryFrameRejected(code, message, data);
    default:
      return new ConnectionClosed(code, message, data);
  }
}
