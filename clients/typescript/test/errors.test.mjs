// Error answers become the class of their contract error (ERR-001..018) by data.reason,
// else the class of their JSON-RPC code; close codes become ConnectionClosed classes.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as E from '../dist/index.js';

const CASES = [
  [-32001, 'authentication_required', E.AuthenticationRequired, 'ERR-001'],
  [-32001, 'invalid_token', E.InvalidCredentials, 'ERR-002'],
  [-32001, 'invalid_signature', E.InvalidCredentials, 'ERR-002'],
  [-32002, 'rate_limited', E.RateLimited, 'ERR-003'],
  [-32602, 'subscription_limit', E.SubscriptionLimit, 'ERR-005'],
  [-32602, 'unknown_target_volk', E.UnknownTargetVolk, 'ERR-006'],
  [-32602, 'mutation_not_allowed', E.MutationNotAllowed, 'ERR-007'],
  [-32603, 'query_timeout', E.QueryTimeout, 'ERR-008'],
  [-32001, 'shared_state_unavailable', E.SharedStateUnavailable, 'ERR-009'],
  [-32603, 'neo4j_unavailable', E.Neo4jUnavailable, 'ERR-010'],
  [-32603, 'governance_engine_unavailable', E.GovernanceEngineUnavailable, 'ERR-011'],
  [-32001, 'nonce_replay', E.NonceReplay, 'ERR-013'],
  [-32603, 'prolog_error', E.PrologError, 'ERR-016'],
  [-32600, 'batch_too_large', E.BatchTooLarge, 'ERR-017'],
  [-32602, 'unknown_thread', E.InvalidParams, null],
  [-32601, 'method_not_found', E.MethodNotFound, null],
  [-32700, 'invalid_json', E.ParseError, null],
  [-32003, 'replay_scan_budget', E.BudgetExceeded, null],
  // A reason under another code than the contract's keeps the code's class.
  [-32603, 'unknown_target_volk', E.InternalError, null],
];

test('answers map to one class per contract error and per code', () => {
  for (const [code, reason, cls, contract] of CASES) {
    const e = E.errorFromRpc({ code, message: 'm', data: { reason, extra: 1 } });
    assert.equal(e.constructor, cls, `${code} ${reason}`);
    assert.ok(e instanceof E.GatewayError);
    assert.equal(e.code, code);
    assert.equal(e.reason, reason);
    assert.equal(e.data.extra, 1);
    if (contract) assert.equal(cls.contract, contract);
  }
  assert.equal(E.errorFromRpc({ code: -32002, data: { reason: 'rate_limited', retry_after_ms: 7 } }).retryAfterMs, 7);
});

test('close codes map to the contract errors that close the connection', () => {
  assert.equal(E.errorFromClose(1009, 'message_too_big').constructor, E.MessageTooBig); // ERR-004
  assert.equal(E.errorFromClose(1013, 'max_clients').constructor, E.TryAgainLater); // ERR-015
  assert.equal(E.errorFromClose(1003, 'binary_frames_not_supported').constructor, E.BinaryFrameRejected); // ERR-018
  const lost = E.errorFromClose(1006, '');
  assert.equal(lost.constructor, E.ConnectionClosed); // ERR-012
  assert.equal(E.ConnectionClosed.contract, 'ERR-012');
});
