import type { AgentsAssignParams, AgentsAssignResult, AgentsDelegateParams, AgentsDelegateResult, AgentsEscalationsParams, AgentsEscalationsResult, AgentsResolveEscalationParams, AgentsResolveEscalationResult, AgentsSpawnParams, AgentsSpawnResult, AgentsTerminateParams, AgentsTerminateResult, AuthAuthenticateParams, AuthAuthenticateResult, ConfigGetParams, ConfigGetResult, CxpAckParams, CxpAckResult, CxpSendParams, CxpSendResult, CxpStatusParams, CxpStatusResult, CxpSubscribeParams, CxpSubscribeResult, CxpUnsubscribeParams, CxpUnsubscribeResult, CxpWorkParams, CxpWorkResult, GatewayClientsParams, GatewayClientsResult, GatewayInfoParams, GatewayInfoResult, GatewayPingParams, GatewayPingResult, GatewayReplayParams, GatewayReplayResult, GatewaySubscribeParams, GatewaySubscribeResult, GatewayUnsubscribeParams, GatewayUnsubscribeResult, GovernanceEvaluateParams, GovernanceEvaluateResult, GovernanceQueryParams, GovernanceQueryResult, GovernanceRulesParams, GovernanceRulesResult, KnowledgeNodesParams, KnowledgeNodesResult, KnowledgeQueryParams, KnowledgeQueryResult, KnowledgeRelationshipsParams, KnowledgeRelationshipsResult, SessionAssertFactParams, SessionAssertFactResult, SessionCloseParams, SessionCloseResult, SessionGetParams, SessionGetResult, SessionListParams, SessionListResult, SessionOpenParams, SessionOpenResult, SessionPortfolioStatsParams, SessionPortfolioStatsResult, SessionReportErrorParams, SessionReportErrorResult, SessionUpdateContextParams, SessionUpdateContextResult, VolkDeregisterParams, VolkDeregisterResult, VolkGetParams, VolkGetResult, VolkListParams, VolkListResult, VolkRegisterParams, VolkRegisterResult, WorkflowCancelParams, WorkflowCancelResult, WorkflowGetParams, WorkflowGetResult, WorkflowPauseParams, WorkflowPauseResult, WorkflowResumeParams, WorkflowResumeResult, WorkflowStartParams, WorkflowStartResult } from './types.js';
/** Every gateway method: its params and result types. */
export interface MethodMap {
    'agents.assign': {
        params: AgentsAssignParams;
        result: AgentsAssignResult;
    };
    'agents.delegate': {
        params: AgentsDelegateParams;
        result: AgentsDelegateResult;
    };
    'agents.escalations': {
        params: AgentsEscalationsParams;
        result: AgentsEscalationsResult;
    };
    'agents.resolve_escalation': {
        params: AgentsResolveEscalationParams;
        result: AgentsResolveEscalationResult;
    };
    'agents.spawn': {
        params: AgentsSpawnParams;
        result: AgentsSpawnResult;
    };
    'agents.terminate': {
        params: AgentsTerminateParams;
        result: AgentsTerminateResult;
    };
    'auth.authenticate': {
        params: AuthAuthenticateParams;
        result: AuthAuthenticateResult;
    };
    'config.get': {
        params: ConfigGetParams;
        result: ConfigGetResult;
    };
    'cxp.ack': {
        params: CxpAckParams;
        result: CxpAckResult;
    };
    'cxp.send': {
        params: CxpSendParams;
        result: CxpSendResult;
    };
    'cxp.status': {
        params: CxpStatusParams;
        result: CxpStatusResult;
    };
    'cxp.subscribe': {
        params: CxpSubscribeParams;
        result: CxpSubscribeResult;
    };
    'cxp.unsubscribe': {
        params: CxpUnsubscribeParams;
        result: CxpUnsubscribeResult;
    };
    'cxp.work': {
        params: CxpWorkParams;
        result: CxpWorkResult;
    };
    'gateway.clients': {
        params: GatewayClientsParams;
        result: GatewayClientsResult;
    };
    'gateway.info': {
        params: GatewayInfoParams;
        result: GatewayInfoResult;
    };
    'gateway.ping': {
        params: GatewayPingParams;
        result: GatewayPingResult;
    };
    'gateway.replay': {
        params: GatewayReplayParams;
        result: GatewayReplayResult;
    };
    'gateway.subscribe': {
        params: GatewaySubscribeParams;
        result: GatewaySubscribeResult;
    };
    'gateway.unsubscribe': {
        params: GatewayUnsubscribeParams;
        result: GatewayUnsubscribeResult;
    };
    'governance.evaluate': {
        params: GovernanceEvaluateParams;
        result: GovernanceEvaluateResult;
    };
    'governance.query': {
        params: GovernanceQueryParams;
        result: GovernanceQueryResult;
    };
    'governance.rules': {
        params: GovernanceRulesParams;
        result: GovernanceRulesResult;
    };
    'knowledge.nodes': {
        params: KnowledgeNodesParams;
        result: KnowledgeNodesResult;
    };
    'knowledge.query': {
        params: KnowledgeQueryParams;
        result: KnowledgeQueryResult;
    };
    'knowledge.relationships': {
        params: KnowledgeRelationshipsParams;
        result: KnowledgeRelationshipsResult;
    };
    'session.assert_fact': {
        params: SessionAssertFactParams;
        result: SessionAssertFactResult;
    };
    'session.close': {
        params: SessionCloseParams;
        result: SessionCloseResult;
    };
    'session.get': {
        params: SessionGetParams;
        result: SessionGetResult;
    };
    'session.list': {
        params: SessionListParams;
        result: SessionListResult;
    };
    'session.open': {
        params: SessionOpenParams;
        result: SessionOpenResult;
    };
    'session.portfolio.stats': {
        params: SessionPortfolioStatsParams;
        result: SessionPortfolioStatsResult;
    };
    'session.report_error': {
        params: SessionReportErrorParams;
        result: SessionReportErrorResult;
    };
    'session.update_context': {
        params: SessionUpdateContextParams;
        result: SessionUpdateContextResult;
    };
    'volk.deregister': {
        params: VolkDeregisterParams;
        result: VolkDeregisterResult;
    };
    'volk.get': {
        params: VolkGetParams;
        result: VolkGetResult;
    };
    'volk.list': {
        params: VolkListParams;
        result: VolkListResult;
    };
    'volk.register': {
        params: VolkRegisterParams;
        result: VolkRegisterResult;
    };
    'workflow.cancel': {
        params: WorkflowCancelParams;
        result: WorkflowCancelResult;
    };
    'workflow.get': {
        params: WorkflowGetParams;
        result: WorkflowGetResult;
    };
    'workflow.pause': {
        params: WorkflowPauseParams;
        result: WorkflowPauseResult;
    };
    'workflow.resume': {
        params: WorkflowResumeParams;
        result: WorkflowResumeResult;
    };
    'workflow.start': {
        params: WorkflowStartParams;
        result: WorkflowStartResult;
    };
}
/** The name of a gateway method. */
export type MethodName = keyof MethodMap;
/** Every method the schemas describe, in name order. */
export declare const METHOD_NAMES: readonly MethodName[];
/** Methods whose params take an `idempotency_key`: the client adds one to every call. */
export declare const IDEMPOTENT_METHODS: ReadonlySet<string>;
/** Options of one call. */
export interface CallOptions {
    /** The idempotency key to send (default: a fresh UUID for methods that take one). */
    idempotencyKey?: string;
    /** Give up after this many milliseconds (default: the connection's `callTimeoutMs`). */
    timeoutMs?: number;
}
/** How the namespaced functions reach the gateway. */
export type Caller = <M extends MethodName>(method: M, params: MethodMap[M]['params'], options?: CallOptions) => Promise<MethodMap[M]['result']>;
/** Every method as a typed async function, grouped by namespace (`gw.cxp.send`). */
export interface Namespaces {
    agents: {
        /** `agents.assign` */
        assign(params: AgentsAssignParams, options?: CallOptions): Promise<AgentsAssignResult>;
        /** `agents.delegate` */
        delegate(params: AgentsDelegateParams, options?: CallOptions): Promise<AgentsDelegateResult>;
        /** `agents.escalations` */
        escalations(params?: AgentsEscalationsParams, options?: CallOptions): Promise<AgentsEscalationsResult>;
        /** `agents.resolve_escalation` */
        resolveEscalation(params: AgentsResolveEscalationParams, options?: CallOptions): Promise<AgentsResolveEscalationResult>;
        /** `agents.spawn` */
        spawn(params: AgentsSpawnParams, options?: CallOptions): Promise<AgentsSpawnResult>;
        /** `agents.terminate` */
        terminate(params: AgentsTerminateParams, options?: CallOptions): Promise<AgentsTerminateResult>;
    };
    auth: {
        /** `auth.authenticate` */
        authenticate(params: AuthAuthenticateParams, options?: CallOptions): Promise<AuthAuthenticateResult>;
    };
    config: {
        /** `config.get` */
        get(params?: ConfigGetParams, options?: CallOptions): Promise<ConfigGetResult>;
    };
    cxp: {
        /** `cxp.ack` */
        ack(params: CxpAckParams, options?: CallOptions): Promise<CxpAckResult>;
        /** `cxp.send` */
        send(params: CxpSendParams, options?: CallOptions): Promise<CxpSendResult>;
        /** `cxp.status` */
        status(params: CxpStatusParams, options?: CallOptions): Promise<CxpStatusResult>;
        /** `cxp.subscribe` */
        subscribe(params?: CxpSubscribeParams, options?: CallOptions): Promise<CxpSubscribeResult>;
        /** `cxp.unsubscribe` */
        unsubscribe(params: CxpUnsubscribeParams, options?: CallOptions): Promise<CxpUnsubscribeResult>;
        /** `cxp.work` */
        work(params: CxpWorkParams, options?: CallOptions): Promise<CxpWorkResult>;
    };
    gateway: {
        /** `gateway.clients` */
        clients(params?: GatewayClientsParams, options?: CallOptions): Promise<GatewayClientsResult>;
        /** `gateway.info` */
        info(params?: GatewayInfoParams, options?: CallOptions): Promise<GatewayInfoResult>;
        /** `gateway.ping` */
        ping(params?: GatewayPingParams, options?: CallOptions): Promise<GatewayPingResult>;
        /** `gateway.replay` */
        replay(params: GatewayReplayParams, options?: CallOptions): Promise<GatewayReplayResult>;
        /** `gateway.subscribe` */
        subscribe(params: GatewaySubscribeParams, options?: CallOptions): Promise<GatewaySubscribeResult>;
        /** `gateway.unsubscribe` */
        unsubscribe(params: GatewayUnsubscribeParams, options?: CallOptions): Promise<GatewayUnsubscribeResult>;
    };
    governance: {
        /** `governance.evaluate` */
        evaluate(params: GovernanceEvaluateParams, options?: CallOptions): Promise<GovernanceEvaluateResult>;
        /** `governance.query` */
        query(params?: GovernanceQueryParams, options?: CallOptions): Promise<GovernanceQueryResult>;
        /** `governance.rules` */
        rules(params?: GovernanceRulesParams, options?: CallOptions): Promise<GovernanceRulesResult>;
    };
    knowledge: {
        /** `knowledge.nodes` */
        nodes(params?: KnowledgeNodesParams, options?: CallOptions): Promise<KnowledgeNodesResult>;
        /** `knowledge.query` */
        query(params: KnowledgeQueryParams, options?: CallOptions): Promise<KnowledgeQueryResult>;
        /** `knowledge.relationships` */
        relationships(params?: KnowledgeRelationshipsParams, options?: CallOptions): Promise<KnowledgeRelationshipsResult>;
    };
    session: {
        /** `session.assert_fact` */
        assertFact(params: SessionAssertFactParams, options?: CallOptions): Promise<SessionAssertFactResult>;
        /** `session.close` */
        close(params: SessionCloseParams, options?: CallOptions): Promise<SessionCloseResult>;
        /** `session.get` */
        get(params: SessionGetParams, options?: CallOptions): Promise<SessionGetResult>;
        /** `session.list` */
        list(params?: SessionListParams, options?: CallOptions): Promise<SessionListResult>;
        /** `session.open` */
        open(params?: SessionOpenParams, options?: CallOptions): Promise<SessionOpenResult>;
        /** `session.portfolio.stats` */
        portfolioStats(params?: SessionPortfolioStatsParams, options?: CallOptions): Promise<SessionPortfolioStatsResult>;
        /** `session.report_error` */
        reportError(params: SessionReportErrorParams, options?: CallOptions): Promise<SessionReportErrorResult>;
        /** `session.update_context` */
        updateContext(params: SessionUpdateContextParams, options?: CallOptions): Promise<SessionUpdateContextResult>;
    };
    volk: {
        /** `volk.deregister` */
        deregister(params: VolkDeregisterParams, options?: CallOptions): Promise<VolkDeregisterResult>;
        /** `volk.get` */
        get(params: VolkGetParams, options?: CallOptions): Promise<VolkGetResult>;
        /** `volk.list` */
        list(params?: VolkListParams, options?: CallOptions): Promise<VolkListResult>;
        /** `volk.register` */
        register(params: VolkRegisterParams, options?: CallOptions): Promise<VolkRegisterResult>;
    };
    workflow: {
        /** `workflow.cancel` */
        cancel(params: WorkflowCancelParams, options?: CallOptions): Promise<WorkflowCancelResult>;
        /** `workflow.get` */
        get(params: WorkflowGetParams, options?: CallOptions): Promise<WorkflowGetResult>;
        /** `workflow.pause` */
        pause(params: WorkflowPauseParams, options?: CallOptions): Promise<WorkflowPauseResult>;
        /** `workflow.resume` */
        resume(params: WorkflowResumeParams, options?: CallOptions): Promise<WorkflowResumeResult>;
        /** `workflow.start` */
        start(params: WorkflowStartParams, options?: CallOptions): Promise<WorkflowStartResult>;
    };
}
/** Binds every method to `call`. */
export declare function bindNamespaces(call: Caller): Namespaces;
