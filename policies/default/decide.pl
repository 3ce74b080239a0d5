%% decide(+Subject, +Action, +Resource, +Context, -Result): the engine's entry point.
%%
%% Subject is client(Id) or volk(Alias); Context a list of Key-Value pairs.
%% Result is allow, deny or escalate. The first clause whose guard holds decides (each
%% ends in a cut); when none does, the engine answers deny with trace [default_deny].
%% Each clause names itself with rule/1 and the articles it applies with article/1:
%% those become the decision's trace and articles on the log.

%% --- Gateway (spec 014) ------------------------------------------------------
decide(client(C), 'gateway.access', Scope, _, R) :- !,
    rule(gateway_access),
    verdict(gateway_access(C, Scope), R).
%% A client authenticated by token carries its scope in the context (scope-Held,
%% required-Need from the gateway's method table); the policy may only tighten it.
decide(client(_), 'gateway.execute', Method, Ctx, R) :-
    memberchk(scope-Held, Ctx), memberchk(required-Need, Ctx), !,
    rule(gateway_can_execute),
    verdict(token_can_execute(Held, Need, Method), R).
decide(client(C), 'gateway.execute', Method, _, R) :- !,
    rule(gateway_can_execute),
    verdict(gateway_can_execute(C, Method), R).
decide(client(_), 'gateway.subscribe', Topic, Ctx, R) :-
    memberchk(scope-Held, Ctx), memberchk(required-Need, Ctx), !,
    rule(gateway_can_subscribe),
    verdict(token_can_subscribe(Held, Need, Topic), R).
decide(client(C), 'gateway.subscribe', Topic, _, R) :- !,
    rule(gateway_can_subscribe),
    verdict(gateway_can_subscribe(C, Topic), R).
decide(client(_), 'knowledge.query', Pattern, Ctx, R) :-
    memberchk(scope-Held, Ctx), Held \== none, !,
    rule(gateway_can_query_kg),
    verdict(scope_can_query_kg(Held, Pattern), R).
decide(client(C), 'knowledge.query', Pattern, _, R) :- !,
    rule(gateway_can_query_kg),
    verdict(gateway_can_query_kg(C, Pattern), R).
%% Which Volks a client the policy admitted may act as (cxp.send `from`, cxp.ack).
decide(client(C), 'gateway.act_as', Alias, _, R) :- !,
    rule(gateway_acts_as),
    verdict(gateway_acts_as(C, Alias), R).

%% --- CXP (spec 004) ----------------------------------------------------------
decide(volk(V), 'cxp.send', To, Ctx, R) :- !,
    rule(cxp_send),
    send_verdict(V, To, Ctx, R).
decide(volk(V), 'cxp.priority', MessageId, Ctx, R) :- !,
    rule(priority_authority),
    priority_verdict(V, MessageId, Ctx, R).
decide(client(_), 'cxp.priority', _, _, allow) :- !,
    rule(client_priority_authorized_by_gateway).
decide(volk(V), 'cxp.escalate', Target, _, R) :- !,
    rule(escalation_authority),
    article('005 Article III'),
    (   escalation_target(V, Target) -> R = allow
    ;   rule(not_on_escalation_path), R = deny
    ).

%% --- Volks and sessions (spec 005) -------------------------------------------
decide(_, 'volk.register', Alias, Ctx, R) :- !,
    rule(volk_register),
    register_verdict(Alias, Ctx, R).
decide(S, 'volk.deregister', Alias, _, R) :- !,
    rule(volk_deregister),
    (   \+ active_volk(Alias) -> rule(unknown_volk), R = deny
    ;   deregister_by(S, Alias) -> R = allow
    ;   rule(not_self_or_parent), article('005 Article IV'), R = deny
    ).
decide(_, 'session.open', Session, _, R) :- !,
    rule(session_open),
    (   session(Session, _, open, _) -> rule(session_already_open), R = deny
    ;   R = allow
    ).
decide(_, 'session.resume', Session, _, R) :- !,
    rule(session_resume),
    (   session(Session, _, _, _) -> R = allow
    ;   rule(unknown_session), R = deny
    ).
decide(_, 'session.close', Session, _, R) :- !,
    rule(session_close),
    (   session(Session, _, open, _) -> R = allow
    ;   rule(session_not_open), R = deny
    ).
%% Writing into a session (context, facts, errors): only while it is open; a junior
%% may report an error but not change what the session knows (Article XII).
decide(S, Action, Session, _, R) :-
    session_write(Action), !,
    rule(session_write),
    (   \+ session(Session, _, open, _) -> rule(session_not_open), R = deny
    ;   S = volk(V), junior(V), Action \== 'session.error' ->
            rule(junior_read_only), article('005 Article XII'), R = deny
    ;   R = allow
    ).
decide(volk(V), 'facts.read', Owner, _, R) :- !,
    rule(fact_visibility),
    article('005 Article II'),
    verdict(fact_visible(V, Owner), R).
decide(volk(V), 'facts.write', Owner, _, R) :- !,
    rule(fact_ownership),
    article('005 Article II'),
    (   junior(V) -> rule(junior_read_only), article('005 Article XII'), R = deny
    ;   V == Owner -> R = allow
    ;   rule(parent_facts_read_only), R = deny
    ).
decide(volk(V), 'knowledge.query', _, _, R) :- !,
    rule(knowledge_access),
    (   junior(V) -> rule(junior_no_knowledge_graph), article('005 Article XII'), R = deny
    ;   R = allow
    ).
decide(volk(V), 'governance.modify', _, _, deny) :-
    junior(V), !,
    rule(junior_no_governance),
    article('005 Article XII').

verdict(Goal, allow) :- call(Goal), !.
verdict(_, deny) :- rule(not_permitted).

send_verdict(V, _, _, deny) :-
    \+ active_volk(V), !,
    rule(unknown_sender), article('004 Article V').
send_verdict(_, To, _, deny) :-
    \+ active_volk(To), !,
    rule(unknown_recipient), article('004 Article V').
send_verdict(V, _, Ctx, deny) :-
    ctx(Ctx, session, S),
    send_budget(B),
    sends_in_session(V, S, N),
    N >= B, !,
    rule(send_budget_exceeded), article('005 Article VI').
send_verdict(V, To, _, deny) :-
    junior(V),
    \+ volk_parent(V, To), !,
    rule(junior_parent_only), article('005 Article IX').
send_verdict(V, To, Ctx, deny) :-
    ctx_subject(Ctx, Subject),
    \+ subject_owned_by(Subject, V, To), !,
    rule(subject_not_owned), article('004 Article X').
send_verdict(V, To, Ctx, allow) :-
    ctx_subject(Ctx, Subject),
    subject_owned_by(Subject, V, To), !,
    rule(sanctioned_route), article('004 Article X').
send_verdict(V, To, _, escalate) :-
    \+ may_talk(V, To), !,
    rule(cross_hierarchy), article('005 Article IX').
send_verdict(_, _, _, allow) :-
    rule(send_allowed), article('005 Article IX'), article('004 Article X').

priority_verdict(V, M, Ctx, deny) :-
    \+ priority_party(M, V, Ctx), !,
    rule(not_a_party), article('004 Article X').
priority_verdict(V, _, Ctx, escalate) :-
    ctx(Ctx, priority, P), integer(P),
    priority_urgent(U), P >= U,
    junior(V), !,
    rule(urgent_needs_senior), article('005 Article XII').
priority_verdict(_, _, _, allow) :-
    rule(priority_allowed).

register_verdict(A, _, deny) :-
    volk_status(A, active), !,
    rule(identity_immutable), article('005 Article I').
register_verdict(_, Ctx, deny) :-
    ctx(Ctx, parent, P), P \== none, \+ active_volk(P), !,
    rule(unknown_parent), article('005 Article I').
register_verdict(_, Ctx, deny) :-
    ctx(Ctx, parent, P), junior(P), !,
    rule(junior_cannot_spawn), article('005 Article XII').
register_verdict(_, Ctx, deny) :-
    ctx(Ctx, parent, P), P \== none,
    volk_depth(P, D), max_depth(M), D + 1 > M, !,
    rule(depth_limit), article('005 Article VI').
register_verdict(_, Ctx, deny) :-
    ctx(Ctx, kind, junior), ctx(Ctx, parent, P),
    active_juniors(P, N), max_juniors(M), N >= M, !,
    rule(junior_limit), article('005 Article XII').
register_verdict(_, _, allow) :-
    rule(register_allowed), article('005 Article I').

%% Decisions of these actions depend only on the query and the policy (not on traffic
%% facts), so the engine may cache them.
cacheable('gateway.access').
cacheable('gateway.execute').
cacheable('gateway.subscribe').

%% A send's decision reads the sender's and recipient's roster facts, the context's
%% session and subject, and, only when it names a session, the session's send count
%% (a traffic fact). The engine notes traffic reads, so it reuses a decision that
%% made none until a roster fact changes: a send outside a session, after the first
%% of its kind, is not evaluated again (src/governance/evaluator/reuse.rs). Any key
%% the send clauses read must be listed here.
cacheable_with('cxp.send', [session, subject]).

%% rule_category(Name/Arity, Category) groups predicates for governance.rules.
rule_category(decide/5, permission).
rule_category(verdict/2, permission).
rule_category(gateway_access/2, permission).
rule_category(gateway_can_execute/2, permission).
rule_category(gateway_can_subscribe/2, permission).
rule_category(gateway_can_query_kg/2, permission).
rule_category(method_requires_scope/2, permission).
rule_category(topic_requires_scope/2, permission).
rule_category(scope_sufficient/2, permission).
rule_category(fact_visible/2, permission).
rule_category(register_verdict/3, permission).
rule_category(deregister_by/2, permission).
rule_category(send_verdict/4, routing).
rule_category(may_talk/2, routing).
rule_category(subject_route/3, routing).
rule_category(ctx_subject/2, routing).
rule_category(subject_owned_by/3, routing).
rule_category(escalation_target/2, escalation).
rule_category(priority_verdict/4, escalation).
rule_category(priority_urgent/1, escalation).
rule_category(send_budget/1, budget).
rule_category(sends_in_session/3, budget).
rule_category(max_juniors/1, budget).
rule_category(active_juniors/2, budget).
rule_category(max_depth/1, budget).
rule_category(volk_depth/2, budget).

%% session_write(?Action): the actions that write into an open session.
session_write('session.update').
session_write('session.fact').
session_write('session.error').
