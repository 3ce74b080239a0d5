/** params of a topic notification (method = topic). */
export type GatewayEvent = {
    topic: "cxp.traffic" | "volk.lifecycle" | "governance.decisions" | "session.events" | "workflow.events" | "kernel.events" | "gateway.presence" | "provider.events";
    /** The event's log sequence in its topic. */
    sequence: number;
    /** The topic's log epoch; resume positions are (epoch, sequence). */
    epoch: string;
    timestamp: string;
    payload: {
        [key: string]: unknown;
    };
    source: string;
    event_type?: string;
    event_id?: string;
    key?: string;
    command_id?: string | null;
    /** Who acted: the principal whose command caused the event (null when none did). */
    principal?: string | null;
    truncated?: boolean;
    [key: string]: unknown;
};
/** AgentsAssignParams */
export type AgentsAssignParams = {
    /** A live, idle junior spawned with a deadline or session lifespan; the caller must be allowed to act as its parent. */
    junior: string;
    /** The task; the answer goes to the parent as a `junior_result` packet. */
    task: string;
};
/** Result of `agents.assign` (our addition): the task runs; its answer follows on cxp.traffic. */
export type AgentsAssignResult = {
    alias: string;
    task_id: string;
    status: "running";
    [key: string]: unknown;
};
/** AgentsDelegateParams */
export type AgentsDelegateParams = {
    /** The Volk that delegates; the caller must be allowed to act as it. */
    senior: string;
    /** The task, given to every junior on stdin. */
    task: string;
    /** Profile names of `agents.drivers`, one junior each (a name may repeat). */
    juniors: Array<string>;
    /** How the senior combines the scored answers: `best` (the highest-scoring answer; ties go to the earliest junior) or `merge` (every answer, best first, separated by a line `---`). */
    synthesis?: "best" | "merge";
};
/** Result of `agents.delegate` (our addition): the delegation started; its juniors' answers and the synthesis follow on cxp.traffic. */
export type AgentsDelegateResult = {
    task_id: string;
    senior: string;
    juniors: Array<string>;
    status: "running";
    synthesis: "best" | "merge";
    [key: string]: unknown;
};
/** AgentsEscalationsParams */
export type AgentsEscalationsParams = {
    /** Which entries: `open` (default), `resolved` or `all`. */
    status?: "open" | "resolved" | "all";
};
/** Result of `agents.escalations`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type AgentsEscalationsResult = {
    escalations: Array<{
        escalation_id: string;
        alias: string;
        path: Array<string>;
        reason: string;
        thread_id?: string | null;
        status: "open" | "resolved";
        resolution?: {
            resolved_by: string;
            decision: string;
            notes?: string | null;
            at: string;
            [key: string]: unknown;
        } | null;
        [key: string]: unknown;
    }>;
    total: number;
    [key: string]: unknown;
};
/** AgentsResolveEscalationParams */
export type AgentsResolveEscalationParams = {
    escalation_id: string;
    /** What the human decided. */
    decision: string;
    /** Anything the escalating Volk should know besides. */
    notes?: string;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `agents.resolve_escalation` (our addition): the queue entry with its resolution. */
export type AgentsResolveEscalationResult = {
    escalation_id: string;
    alias: string;
    path: Array<string>;
    reason: string;
    status: "resolved";
    resolution: {
        resolved_by: string;
        decision: string;
        notes?: string | null;
        at: string;
        [key: string]: unknown;
    };
    sequence: number | null;
    [key: string]: unknown;
};
/** AgentsSpawnParams */
export type AgentsSpawnParams = {
    /** The senior the junior reports to; the caller must be allowed to act as it. */
    parent: string;
    /** A profile name of `agents.drivers` (its kind: cli, api or browser). */
    driver: string;
    /** The junior's first task; its answer goes to the parent as a `junior_result` packet. */
    task?: string;
    /** How the junior's life is bounded: `"task"` (default; it is terminated when its first task ends), `{"deadline_ms": N}` or `{"session_id": S}` (it lives on for more tasks through `agents.assign` until then). */
    lifespan?: "task" | {
        /** Milliseconds from the spawn until the junior is terminated; at most 365 days. */
        deadline_ms: number;
    } | {
        session_id: string;
    };
    /** What the junior is for (default: the task's first line). */
    purpose?: string;
    /** A time limit per task shorter than the profile's `timeout_s` (a longer one is refused). */
    timeout_s?: number;
};
/** Result of `agents.spawn` (our addition): the junior is spawned; its first task, if any, runs on and answers the parent on cxp.traffic. */
export type AgentsSpawnResult = {
    alias: string;
    parent: string;
    driver: string;
    kind: "cli" | "api" | "browser";
    task_id: string | null;
    lifespan: "task" | {
        deadline_ms: number;
        [key: string]: unknown;
    } | {
        session_id: string;
        [key: string]: unknown;
    };
    status: "running" | "idle";
    [key: string]: unknown;
};
/** AgentsTerminateParams */
export type AgentsTerminateParams = {
    /** The junior (or any live agent) to terminate; the caller must be allowed to act as its parent. */
    alias: string;
    /** Recorded in `terminated` (default `terminated_by_request`). */
    reason?: string;
};
/** Result of `agents.terminate` (our addition): the agent and its subtree are terminated. */
export type AgentsTerminateResult = {
    alias: string;
    reason: string;
    status: "terminated";
    [key: string]: unknown;
};
/** AuthenticateParams */
export type AuthAuthenticateParams = {
    strategy: "static_token" | "hmac" | "prolog_policy";
    token?: string;
    client_id?: string;
    timestamp?: string;
    nonce?: string;
    signature?: string;
    client_metadata?: {
        client_name?: string;
        client_version?: string;
        purpose?: string;
        [key: string]: unknown;
    };
    /** Alias of client_metadata. */
    metadata?: {
        client_name?: string;
        client_version?: string;
        purpose?: string;
        [key: string]: unknown;
    };
};
/** Result of `auth.authenticate`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type AuthAuthenticateResult = {
    authenticated: boolean;
    client_id: string;
    scope: "read_only" | "read_write" | "admin";
    expires_at?: string | null;
    gateway_version?: string;
    capabilities?: Array<string>;
    [key: string]: unknown;
};
/** ConfigGetParams */
export type ConfigGetParams = {
    path?: string;
};
/** Result of `config.get`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type ConfigGetResult = {
    config: {
        [key: string]: unknown;
    };
    [key: string]: unknown;
} | {
    path: string;
    value: unknown;
    [key: string]: unknown;
};
/** Acknowledge a delivered packet as its recipient (the caller's principal must act as the recipient). */
export type CxpAckParams = {
    message_id: string;
    /** The acknowledging Volk; defaults to the packet's recipient, and must be it. */
    by?: string;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `cxp.ack`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type CxpAckResult = {
    message_id: string;
    status: "queued" | "delivered" | "acknowledged" | "failed";
    sequence?: number | null;
    [key: string]: unknown;
};
/** CXPSendParams */
export type CxpSendParams = {
    target: string;
    /** The sending Volk; one the caller's principal may act as. Defaults to the principal's default Volk (U:GW for the operator token). */
    from?: string;
    payload: {
        [key: string]: unknown;
    } | string | null;
    subject?: string;
    priority?: number;
    /** Thread id: a UUID when generated; any non-empty string of at most 128 characters without whitespace when supplied. */
    thread_id?: string;
    in_reply_to?: string;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `cxp.send`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type CxpSendResult = {
    status: "sent" | "failed" | "queued";
    thread_id: string;
    message_id?: string;
    routed_via?: string;
    /** Our extra: the packet's real delivery status. */
    delivery_status?: "queued" | "delivered" | "acknowledged" | "failed";
    [key: string]: unknown;
};
/** CXPStatusParams */
export type CxpStatusParams = {
    /** Thread id: a UUID when generated; any non-empty string of at most 128 characters without whitespace when supplied. */
    thread_id: string;
};
/** Result of `cxp.status`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type CxpStatusResult = {
    thread_id: string;
    delivery_status: string;
    work_status: string;
    transitions?: Array<{
        status: string;
        timestamp: string;
        kind?: "delivery" | "work";
        message_id?: string;
        sequence?: number;
        [key: string]: unknown;
    }>;
    packets?: Array<{
        [key: string]: unknown;
    }>;
    total?: number;
    [key: string]: unknown;
};
/** CXPSubscribeParams */
export type CxpSubscribeParams = {
    /** All given filters must match (AND). */
    filters?: {
        /** Sender or recipient (cxp.traffic); the Volk an event is about on other topics. */
        volk_id?: string;
        /** Same as volk_id (the name volk.lifecycle uses). */
        volk_alias?: string;
        /** Thread id: a UUID when generated; any non-empty string of at most 128 characters without whitespace when supplied. */
        thread_id?: string;
        /** Glob over the packet subject (`*`, `?`, `[abc]`). */
        subject?: string;
        delivery_status?: "queued" | "delivered" | "acknowledged" | "failed";
        /** The event type within the topic, e.g. packet_sent, registered. */
        event_type?: string;
        /** The event's record key (thread id, Volk alias, session id...). */
        key?: string;
        session_id?: string;
    };
    /** Truncate event payloads whose JSON exceeds this many bytes. */
    max_payload_size?: number;
    /** Resume position: the last event the client has seen. */
    since?: {
        epoch: string;
        sequence: number;
    };
};
/** Result of `cxp.subscribe`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type CxpSubscribeResult = {
    subscription_id: string;
    topic: string;
    filters?: {
        [key: string]: unknown;
    };
    [key: string]: unknown;
};
/** CXPUnsubscribeParams */
export type CxpUnsubscribeParams = {
    subscription_id: string;
};
/** Result of `cxp.unsubscribe`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type CxpUnsubscribeResult = {
    unsubscribed: boolean;
    [key: string]: unknown;
};
/** Move a packet's work status. */
export type CxpWorkParams = {
    message_id: string;
    status: "pending" | "in_progress" | "resolved" | "archived";
    assigned_to?: string;
    resolution?: unknown;
    notes?: string;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `cxp.work`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type CxpWorkResult = {
    message_id: string;
    work_status: string;
    assigned_to?: string | null;
    sequence?: number | null;
    [key: string]: unknown;
};
/** GatewayClientsParams */
export type GatewayClientsParams = Record<string, never> | null;
/** Result of `gateway.clients`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type GatewayClientsResult = {
    clients: Array<{
        client_id: string;
        instance_id: string;
        connected_at: string;
        last_activity?: string;
        auth_scope?: string | null;
        subscriptions: Array<string>;
        [key: string]: unknown;
    }>;
    total: number;
    instance_id: string;
    shared_state?: string;
    shared_state_available?: boolean;
    [key: string]: unknown;
};
/** GatewayInfoParams */
export type GatewayInfoParams = Record<string, never> | null;
/** Result of `gateway.info`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type GatewayInfoResult = {
    version: string;
    uptime_seconds: number;
    capabilities: Array<string>;
    topics: Array<string>;
    [key: string]: unknown;
};
/** GatewayPingParams */
export type GatewayPingParams = Record<string, never> | null;
/** Result of `gateway.ping`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type GatewayPingResult = {
    server_timestamp: string;
    [key: string]: unknown;
};
/** GatewayReplayParams */
export type GatewayReplayParams = {
    topic: "cxp.traffic" | "volk.lifecycle" | "governance.decisions" | "session.events" | "workflow.events" | "kernel.events" | "gateway.presence" | "provider.events";
    since?: string;
    until?: string;
    count?: number;
    sequence_from?: number;
    sequence_to?: number;
    /** All given filters must match (AND). */
    filters?: {
        /** Sender or recipient (cxp.traffic); the Volk an event is about on other topics. */
        volk_id?: string;
        /** Same as volk_id (the name volk.lifecycle uses). */
        volk_alias?: string;
        /** Thread id: a UUID when generated; any non-empty string of at most 128 characters without whitespace when supplied. */
        thread_id?: string;
        /** Glob over the packet subject (`*`, `?`, `[abc]`). */
        subject?: string;
        delivery_status?: "queued" | "delivered" | "acknowledged" | "failed";
        /** The event type within the topic, e.g. packet_sent, registered. */
        event_type?: string;
        /** The event's record key (thread id, Volk alias, session id...). */
        key?: string;
        session_id?: string;
    };
    /** Truncate event payloads whose JSON exceeds this many bytes. */
    max_payload_size?: number;
};
export type GatewayReplayResultGatewayEvent = {
    topic: string;
    sequence: number;
    epoch?: string;
    timestamp: string;
    /** The event's payload; a payload cut to max_payload_size is {truncated, size_bytes, preview}. */
    payload: {
        [key: string]: unknown;
    };
    source: string;
    event_type?: string;
    event_id?: string;
    key?: string;
    command_id?: string | null;
    truncated?: boolean;
    [key: string]: unknown;
};
/** Result of `gateway.replay`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type GatewayReplayResult = {
    events: Array<GatewayReplayResultGatewayEvent>;
    total_matched: number;
    buffer_range?: {
        oldest_sequence?: number | null;
        newest_sequence?: number | null;
        [key: string]: unknown;
    };
    [key: string]: unknown;
};
/** GatewaySubscribeParams */
export type GatewaySubscribeParams = {
    topic: "cxp.traffic" | "volk.lifecycle" | "governance.decisions" | "session.events" | "workflow.events" | "kernel.events" | "gateway.presence" | "provider.events";
    /** All given filters must match (AND). */
    filters?: {
        /** Sender or recipient (cxp.traffic); the Volk an event is about on other topics. */
        volk_id?: string;
        /** Same as volk_id (the name volk.lifecycle uses). */
        volk_alias?: string;
        /** Thread id: a UUID when generated; any non-empty string of at most 128 characters without whitespace when supplied. */
        thread_id?: string;
        /** Glob over the packet subject (`*`, `?`, `[abc]`). */
        subject?: string;
        delivery_status?: "queued" | "delivered" | "acknowledged" | "failed";
        /** The event type within the topic, e.g. packet_sent, registered. */
        event_type?: string;
        /** The event's record key (thread id, Volk alias, session id...). */
        key?: string;
        session_id?: string;
    };
    /** Truncate event payloads whose JSON exceeds this many bytes. */
    max_payload_size?: number;
    /** Resume position: the last event the client has seen. */
    since?: {
        epoch: string;
        sequence: number;
    };
};
/** Result of `gateway.subscribe`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type GatewaySubscribeResult = {
    subscription_id: string;
    topic: string;
    filters?: {
        [key: string]: unknown;
    };
    epoch: string;
    live_from_sequence?: number | null;
    resumed_from_sequence?: number;
    duplicate?: boolean;
    [key: string]: unknown;
};
/** GatewayUnsubscribeParams */
export type GatewayUnsubscribeParams = {
    subscription_id: string;
};
/** Result of `gateway.unsubscribe`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type GatewayUnsubscribeResult = {
    unsubscribed: boolean;
    subscription_id?: string;
    [key: string]: unknown;
};
/** GovernanceEvaluateParams */
export type GovernanceEvaluateParams = {
    /** The subject asking: a Volk alias, or a client id with subject_kind client. */
    volk_id: string;
    action: string;
    /** What the action is asked on (default: empty). */
    resource?: string;
    /** Whether volk_id names a Volk (default) or a gateway client. */
    subject_kind?: "volk" | "client";
    /** Further facts of the request (e.g. session, priority), as the policy's Key-Value context list. */
    context?: {
        [key: string]: unknown;
    };
};
/** Result of `governance.evaluate`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type GovernanceEvaluateResult = {
    result: "allow" | "deny" | "escalate";
    prolog_trace: string;
    articles_applied?: Array<string>;
    [key: string]: unknown;
};
/** GovernanceQueryParams */
export type GovernanceQueryParams = {
    /** Only decisions recorded at or after this time. */
    date_from?: string;
    /** Only decisions recorded strictly before this time. */
    date_to?: string;
    /** Only decisions about this subject (Volk alias or client id). */
    volk_id?: string;
    /** Only decisions caused by this principal (who acted: a token's name, an HMAC client id), as recorded on the decision's envelope. */
    principal?: string;
    result?: "allow" | "deny" | "escalate";
    action?: string;
    offset?: number;
    limit?: number;
    /** Only dry runs (true) or only real decisions (false). */
    dry_run?: boolean;
};
/** Result of `governance.query`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type GovernanceQueryResult = {
    decisions: Array<{
        decision_id: string;
        result: "allow" | "deny" | "escalate";
        sequence?: number;
        timestamp?: string;
        volk_id?: string;
        /** Who acted: the principal whose call or command was judged (null when none did). */
        principal?: string | null;
        prolog_query?: string;
        evaluation_latency_ms?: number;
        [key: string]: unknown;
    }>;
    total: number;
    offset: number;
    limit: number;
    has_more: boolean;
    [key: string]: unknown;
};
/** GovernanceRulesParams */
export type GovernanceRulesParams = {
    /** Only rules of this category, as the policy declares them with rule_category/2 (the default policy uses routing, permission, escalation, budget; undeclared predicates are uncategorized). */
    category?: string;
    /** Case-insensitive substring of the predicate name. */
    search?: string;
};
/** Result of `governance.rules`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type GovernanceRulesResult = {
    rules: Array<{
        [key: string]: unknown;
    }>;
    categories: {
        [key: string]: unknown;
    };
    total: number;
    policy_hash: string;
    [key: string]: unknown;
};
/** KnowledgeNodesParams */
export type KnowledgeNodesParams = {
    /** Only nodes with this label. */
    node_type?: "Volk" | "Thread" | "Session" | "Packet" | "Decision";
    /** Same as node_type. */
    label?: "Volk" | "Thread" | "Session" | "Packet" | "Decision";
    /** Only nodes whose properties hold each of these values exactly. */
    properties?: {
        [key: string]: unknown;
    };
    offset?: number;
    limit?: number;
};
/** Result of `knowledge.nodes`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type KnowledgeNodesResult = {
    nodes: Array<{
        id: string;
        labels: Array<string>;
        label?: string;
        properties: {
            [key: string]: unknown;
        };
        [key: string]: unknown;
    }>;
    total: number;
    offset: number;
    limit: number;
    has_more: boolean;
    [key: string]: unknown;
};
/** KnowledgeQueryParams */
export type KnowledgeQueryParams = {
    /** Read-only Cypher query. Mutations are rejected. */
    cypher: string;
    /** Cypher query parameters. */
    params?: {
        [key: string]: unknown;
    };
    timeout_seconds?: number;
    max_results?: number;
};
/** Result of `knowledge.query`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type KnowledgeQueryResult = {
    records: unknown[];
    execution_time_ms: number;
    truncated?: boolean;
    [key: string]: unknown;
};
/** KnowledgeRelationshipsParams */
export type KnowledgeRelationshipsParams = {
    /** Only relationships of this type. */
    relationship_type?: "SENT_TO" | "SENT_BY" | "CHILD_OF" | "IN_THREAD" | "IN_SESSION" | "DECIDED_ABOUT";
    /** Same as relationship_type. */
    type?: "SENT_TO" | "SENT_BY" | "CHILD_OF" | "IN_THREAD" | "IN_SESSION" | "DECIDED_ABOUT";
    /** Only relationships leaving this node id, e.g. volk:U:Ox. */
    from?: string;
    /** Only relationships entering this node id. */
    to?: string;
    /** Only relationships whose properties hold each of these values exactly. */
    properties?: {
        [key: string]: unknown;
    };
    offset?: number;
    limit?: number;
};
/** Result of `knowledge.relationships`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type KnowledgeRelationshipsResult = {
    relationships: Array<{
        id: string;
        type: string;
        source: string;
        target: string;
        properties: {
            [key: string]: unknown;
        };
        [key: string]: unknown;
    }>;
    total: number;
    offset: number;
    limit: number;
    has_more: boolean;
    [key: string]: unknown;
};
/** SessionAssertFactParams */
export type SessionAssertFactParams = {
    session_id: string;
    /** Kind of fact (REQ-014-060). */
    fact_type: string;
    /** The fact: any JSON value. */
    data: unknown;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `session.assert_fact` (our addition; REQ-014-060 fact events): the fact as recorded. */
export type SessionAssertFactResult = {
    session_id: string;
    fact_type: string;
    /** How many facts the session holds now. */
    facts: number;
    /** Sequence of the event on session.events. */
    sequence: number | null;
    [key: string]: unknown;
};
/** SessionCloseParams */
export type SessionCloseParams = {
    session_id: string;
    /** The status the caller closes the session with (free text, e.g. `completed`); recorded in the session's context as `close_status`. The session's own status is `closed` (completion is derived: a closed session with nothing carried over is completed). */
    status?: string;
    /** What was done (default: empty). */
    summary?: string;
    /** Tasks to carry over; the kernel adds the session's unresolved packets and active threads. */
    carryover_tasks?: Array<string>;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `session.close`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type SessionCloseResult = {
    session_id: string;
    status: string;
    duration_seconds: number;
    closed_at?: string;
    [key: string]: unknown;
};
/** SessionGetParams */
export type SessionGetParams = {
    session_id: string;
};
/** Result of `session.get`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type SessionGetResult = {
    session_id: string;
    status: "open" | "closed";
    portfolio_id: string;
    goals: Array<string>;
    /** The session's context: the `context` of session.open, then later updates. */
    context: {
        [key: string]: unknown;
    };
    duration_seconds: number;
    carryover_tasks: Array<string>;
    opened_at?: string;
    closed_at?: string | null;
    opened_by?: string;
    summary?: string | null;
    [key: string]: unknown;
};
/** SessionListParams */
export type SessionListParams = {
    /** Only sessions of this portfolio. */
    portfolio_id?: string;
    /** Only sessions in this status (open: opened or resumed; closed). */
    status?: "open" | "closed";
    offset?: number;
    limit?: number;
    /** Only sessions opened by this client id or Volk alias. */
    opened_by?: string;
};
/** Result of `session.list`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type SessionListResult = {
    sessions: Array<{
        session_id: string;
        portfolio_id: string;
        status: "open" | "closed";
        opened_at: string;
        closed_at?: string | null;
        opened_by?: string;
        goals?: Array<string>;
        [key: string]: unknown;
    }>;
    total: number;
    offset: number;
    limit: number;
    has_more: boolean;
    [key: string]: unknown;
};
/** SessionOpenParams */
export type SessionOpenParams = {
    /** Portfolio the session belongs to (default: `default`). */
    portfolio?: string;
    /** What the session should achieve. */
    goals?: Array<string>;
    /** Initial session context (a JSON object): recorded as the session's first context_updated event; session.get shows it. */
    context?: {
        [key: string]: unknown;
    };
    /** Caller-chosen id (default: a new UUID); an id already used is refused with session_exists. */
    session_id?: string;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `session.open`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type SessionOpenResult = {
    session_id: string;
    status: string;
    opened_at?: string;
    context?: {
        [key: string]: unknown;
    };
    [key: string]: unknown;
};
/** PortfolioStatsParams */
export type SessionPortfolioStatsParams = {
    /** Only this portfolio (default: every portfolio, with a per-portfolio breakdown). */
    portfolio_id?: string;
    /** Only sessions opened at or after this time. */
    date_from?: string;
    /** Only sessions opened strictly before this time. */
    date_to?: string;
};
/** Result of `session.portfolio.stats`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type SessionPortfolioStatsResult = {
    total_sessions: number;
    active_count: number;
    closed_count: number;
    completed_count: number;
    completion_rate: number;
    total_duration_seconds: number;
    mean_duration_seconds: number;
    by_portfolio?: {
        [key: string]: {
            total_sessions: number;
            active_count: number;
            closed_count: number;
            completed_count: number;
            completion_rate: number;
            total_duration_seconds: number;
            mean_duration_seconds: number;
            [key: string]: unknown;
        };
    };
    [key: string]: unknown;
};
/** SessionReportErrorParams */
export type SessionReportErrorParams = {
    session_id: string;
    /** Stable error code. */
    code: string;
    /** What went wrong. */
    message: string;
    /** Whether the session can go on (default true). */
    recoverable?: boolean;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `session.report_error` (our addition; REQ-014-057 `error_occurred` events): the error as recorded. */
export type SessionReportErrorResult = {
    session_id: string;
    code: string;
    /** How many errors the session holds now. */
    errors: number;
    /** Sequence of the event on session.events. */
    sequence: number | null;
    [key: string]: unknown;
};
/** SessionUpdateContextParams */
export type SessionUpdateContextParams = {
    session_id: string;
    /** A JSON merge patch (RFC 7396) of the session's context: members set keys, `null` members remove them. */
    context: {
        [key: string]: unknown;
    };
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `session.update_context` (our addition; spec 014 names `context_updated` events but no method writing them): the session's context after the patch. */
export type SessionUpdateContextResult = {
    session_id: string;
    context: {
        [key: string]: unknown;
    };
    /** Sequence of the event on session.events. */
    sequence: number | null;
    [key: string]: unknown;
};
/** VolkDeregisterParams */
export type VolkDeregisterParams = {
    alias: string;
    reason?: string;
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `volk.deregister`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type VolkDeregisterResult = {
    deregistered: true;
    volk: {
        alias: string;
        capabilities: Array<string>;
        health: string;
        active_tasks?: number;
        last_activity?: string;
        status?: string;
        parent?: string | null;
        protocols?: Array<string>;
        [key: string]: unknown;
    };
    [key: string]: unknown;
};
/** VolkGetParams */
export type VolkGetParams = {
    alias: string;
};
/** Result of `volk.get`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type VolkGetResult = {
    alias: string;
    capabilities: Array<string>;
    health: string;
    active_tasks?: number;
    last_activity?: string;
    status?: string;
    parent?: string | null;
    protocols?: Array<string>;
    [key: string]: unknown;
};
/** VolkListParams */
export type VolkListParams = {
    offset?: number;
    limit?: number;
};
/** Result of `volk.list`: the contract's result schema (spec 014, contracts/gateway/rpc-v1.0.0.yaml). Answers may carry more fields than the contract names (additionalProperties allowed); every required field is present with the contract's type. */
export type VolkListResult = {
    volks: Array<{
        alias: string;
        capabilities: Array<string>;
        health: string;
        active_tasks?: number;
        last_activity?: string;
        status?: string;
        parent?: string | null;
        protocols?: Array<string>;
        [key: string]: unknown;
    }>;
    total: number;
    [key: string]: unknown;
};
/** VolkRegisterParams */
export type VolkRegisterParams = {
    alias: string;
    capabilities: Array<string>;
    parent?: string;
    protocols?: Array<string>;
    metadata?: {
        [key: string]: unknown;
    };
    /** Our extension: the same key on a repeated call (same principal, same method) makes it the same command, executed once; the repeat answers what the first call did. See docs/gateway.md, 'Retrying a mutating call'. */
    idempotency_key?: string;
};
/** Result of `volk.register`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type VolkRegisterResult = {
    registered: true;
    volk: {
        alias: string;
        capabilities: Array<string>;
        health: string;
        active_tasks?: number;
        last_activity?: string;
        status?: string;
        parent?: string | null;
        protocols?: Array<string>;
        [key: string]: unknown;
    };
    [key: string]: unknown;
};
/** WorkflowCancelParams */
export type WorkflowCancelParams = {
    workflow_id: string;
    reason?: string;
};
/** Result of `workflow.cancel`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type WorkflowCancelResult = {
    workflow_id: string;
    status: "cancelled";
    [key: string]: unknown;
};
/** WorkflowGetParams */
export type WorkflowGetParams = {
    workflow_id: string;
};
/** Result of `workflow.get`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type WorkflowGetResult = {
    workflow_id: string;
    name: string;
    status: "running" | "paused" | "cancelled" | "completed" | "failed";
    started_by?: string;
    steps: Array<{
        [key: string]: unknown;
    }>;
    updated_at?: string;
    [key: string]: unknown;
};
/** WorkflowPauseParams */
export type WorkflowPauseParams = {
    workflow_id: string;
    reason?: string;
};
/** Result of `workflow.pause`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type WorkflowPauseResult = {
    workflow_id: string;
    status: "paused";
    [key: string]: unknown;
};
/** WorkflowResumeParams */
export type WorkflowResumeParams = {
    workflow_id: string;
};
/** Result of `workflow.resume`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type WorkflowResumeResult = {
    workflow_id: string;
    status: "running";
    [key: string]: unknown;
};
/** WorkflowStartParams */
export type WorkflowStartParams = {
    name: string;
    params: {
        [key: string]: unknown;
    };
    session_id?: string;
};
/** Result of `workflow.start`, a method this gateway adds to the contract of spec 014: what it answers (more fields may be added; these are always there). */
export type WorkflowStartResult = {
    workflow_id: string;
    status: "running";
    [key: string]: unknown;
};
