/** The `error` member of a JSON-RPC answer. */
export interface RpcErrorObject {
    code: number;
    message?: string;
    data?: Record<string, unknown> | null;
}
/** Any error the gateway answered (or the connection's end, for `ConnectionClosed`). */
export declare class GatewayError extends Error {
    /** The JSON-RPC error code (-32xxx), or the WebSocket close code. */
    readonly code: number;
    /** `data` of the answer (always an object; `{}` when the gateway sent none). */
    readonly data: Record<string, unknown>;
    /** The contract error this is, when it is one (`ERR-006`). */
    static readonly contract: string | null;
    constructor(code: number, message: string, data?: Record<string, unknown> | null);
    /** `data.reason`: the stable reason code (`unknown_target_volk`, ...). */
    get reason(): string | undefined;
}
/** -32700: the frame was not JSON. */
export declare class ParseError extends GatewayError {
}
/** -32600: not a valid request (or an empty or too large batch). */
export declare class InvalidRequest extends GatewayError {
}
/** -32601: no such method. */
export declare class MethodNotFound extends GatewayError {
}
/** -32602: params refused (schema, filters, kernel refusals of the request). */
export declare class InvalidParams extends GatewayError {
}
/** -32603: the gateway or a backend failed. */
export declare class InternalError extends GatewayError {
}
/** -32001: authentication or authorization refused. */
export declare class Unauthorized extends GatewayError {
}
/** -32002 (ERR-003): over the rate limit; retry after `retryAfterMs`. */
export declare class RateLimited extends GatewayError {
    static readonly contract: string | null;
    get retryAfterMs(): number;
}
/** -32003: a budget (the replay scan) exceeded. */
export declare class BudgetExceeded extends GatewayError {
}
/** ERR-001: a method called before `auth.authenticate`. */
export declare class AuthenticationRequired extends Unauthorized {
    static readonly contract: string | null;
}
/** ERR-002: the credentials were refused (token or HMAC signature). */
export declare class InvalidCredentials extends Unauthorized {
    static readonly contract: string | null;
}
/** ERR-013: an HMAC nonce used twice within the drift window. */
export declare class NonceReplay extends InvalidCredentials {
    static readonly contract: string | null;
}
/** The principal's scope is below the method's (or topic's). */
export declare class InsufficientScope extends Unauthorized {
}
/** The principal may not act as the Volk named (`data.volk`, `data.acts_as`). */
export declare class NotActingAs extends Unauthorized {
}
/** Governance denied the command (`data.decision_id`). */
export declare class GovernanceDenied extends Unauthorized {
}
/** ERR-005: more than `max_subscriptions_per_client` subscriptions. */
export declare class SubscriptionLimit extends InvalidParams {
    static readonly contract: string | null;
}
/** ERR-006: `cxp.send` to a Volk that does not exist. */
export declare class UnknownTargetVolk extends InvalidParams {
    static readonly contract: string | null;
}
/** ERR-007: `knowledge.query` with a mutating clause. */
export declare class MutationNotAllowed extends InvalidParams {
    static readonly contract: string | null;
}
/** A resume position from another incarnation of the log (`data.epoch`). */
export declare class EpochMismatch extends InvalidParams {
}
/** A resume position retention already dropped (`data.first_sequence`). */
export declare class PositionTruncated extends InvalidParams {
}
/** An idempotency key already used for a different request. */
export declare class IdempotencyKeyReused extends InvalidParams {
}
/** ERR-008: `knowledge.query` ran over its timeout. */
export declare class QueryTimeout extends InternalError {
    static readonly contract: string | null;
}
/** ERR-009: shared state (Redis) unavailable for an uncached authentication. */
export declare class SharedStateUnavailable extends Unauthorized {
    static readonly contract: string | null;
}
/** ERR-010: Neo4j unavailable for `knowledge.*`. */
export declare class Neo4jUnavailable extends InternalError {
    static readonly contract: string | null;
}
/** ERR-011: the governance engine is down; uncached decisions fail closed. */
export declare class GovernanceEngineUnavailable extends InternalError {
    static readonly contract: string | null;
}
/** ERR-016: the policy raised a Prolog error (`data.prolog_error`). */
export declare class PrologError extends InternalError {
    static readonly contract: string | null;
}
/** ERR-017: a batch of more than 50 requests. */
export declare class BatchTooLarge extends InvalidRequest {
    static readonly contract: string | null;
}
/** The connection closed before the answer came (ERR-012: the gateway cancels the call). */
export declare class ConnectionClosed extends GatewayError {
    static readonly contract: string | null;
}
/** ERR-004: a frame over `max_message_size_bytes` (close 1009). */
export declare class MessageTooBig extends ConnectionClosed {
    static readonly contract: string | null;
}
/** ERR-015: the gateway is full (close 1013); the client retries with backoff. */
export declare class TryAgainLater extends ConnectionClosed {
    static readonly contract: string | null;
}
/** ERR-018: a binary frame was sent (close 1003). */
export declare class BinaryFrameRejected extends ConnectionClosed {
    static readonly contract: string | null;
}
/** No answer within the call's timeout. */
export declare class CallTimeout extends GatewayError {
}
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
/** The error class for an answer's `error`: by `data.reason` when the code agrees, else by code. */
export declare function errorFromRpc(e: RpcErrorObject): GatewayError;
/** The error pending calls reject with when the socket closed with `code`. */
export declare function errorFromClose(code: number, reason: string): ConnectionClosed;
