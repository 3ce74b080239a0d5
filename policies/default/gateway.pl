%% PAM++ gateway predicates (spec 014, "Prolog Governance Predicates").
%%
%% Clients and their standing. Replace these facts in your own policy directory.
registered_admin('ops-admin').
registered_operator('operator').
registered_operator('suspended-operator').
registered_client('dashboard').
registered_client('operator').
suspended('suspended-operator').

%% gateway_access(+ClientId, ?Scope): the scopes a client holds.
gateway_access(C, admin) :-
    registered_admin(C).
gateway_access(C, read_write) :-
    registered_operator(C),
    \+ suspended(C).
gateway_access(C, read_only) :-
    registered_client(C),
    \+ suspended(C).

%% scope_sufficient(+Held, +Required)
scope_sufficient(admin, _).
scope_sufficient(read_write, read_write).
scope_sufficient(read_write, read_only).
scope_sufficient(read_only, read_only).

%% Methods and topics that need more than read_only. Anything else needs read_only.
method_scope('cxp.send', read_write).
method_scope('cxp.escalate', read_write).
method_scope('session.open', read_write).
method_scope('session.close', read_write).
method_scope('workflow.start', read_write).
method_scope('governance.evaluate', read_write).
method_scope('volk.register', admin).
method_scope('volk.deregister', admin).
method_scope('governance.rules', admin).

topic_scope('governance.decisions', read_write).
topic_scope('kernel.events', read_write).

%% The spec's default clause `method_requires_scope(_, read_only)` would also match
%% 'cxp.send' on backtracking; the if-then-else keeps the default a true default.
method_requires_scope(Method, Scope) :-
    (   method_scope(Method, S0) -> Scope = S0 ; Scope = read_only ).

topic_requires_scope(Topic, Scope) :-
    (   topic_scope(Topic, S0) -> Scope = S0 ; Scope = read_only ).

gateway_can_execute(C, Method) :-
    gateway_access(C, Scope),
    method_requires_scope(Method, Required),
    scope_sufficient(Scope, Required).

gateway_can_subscribe(C, Topic) :-
    gateway_access(C, Scope),
    topic_requires_scope(Topic, Required),
    scope_sufficient(Scope, Required).

%% token_can_execute(+Held, +Need, +Method): a token client holding Held may call Method,
%% which the gateway's method table says needs Need and the policy may say needs more.
token_can_execute(Held, Need, Method) :-
    scope_sufficient(Held, Need),
    (   method_scope(Method, PolicyNeed) -> scope_sufficient(Held, PolicyNeed) ; true ).

token_can_subscribe(Held, Need, Topic) :-
    scope_sufficient(Held, Need),
    (   topic_scope(Topic, PolicyNeed) -> scope_sufficient(Held, PolicyNeed) ; true ).

%% Knowledge-graph queries: admins may run anything, others read-only patterns.
gateway_can_query_kg(C, Pattern) :-
    gateway_access(C, Scope),
    (   Scope == admin -> true ; \+ kg_write_pattern(Pattern) ).

kg_write_pattern(Pattern) :-
    atom_chars(Pattern, Chars),
    member(Word, ["CREATE", "MERGE", "DELETE", "SET ", "REMOVE", "DROP",
                  "create", "merge", "delete", "set ", "remove", "drop"]),
    append(_, Rest, Chars),
    append(Word, _, Rest),
    !.
