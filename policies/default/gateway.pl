%% PAM++ gateway predicates (spec 014, "Prolog Governance Predicates").
%%
%% Principals. The shipped policy registers none: a default install grants nothing
%% beyond the credentials in its configuration (tokens, HMAC clients). A deployment
%% that turns on the `prolog_policy` strategy (gateway.prolog_policy: true) names its
%% clients in a policy file of its own, e.g.
%%   registered_admin('ops-admin').
%%   registered_operator('deploy-bot').
%%   registered_client('dashboard').
%%   gateway_acts_as('deploy-bot', 'U:Cx').   % the Volks a policy client may act as
%%   suspended('old-bot').
%% (The engine's prelude declares these predicates, so a policy may leave them out.)

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
method_scope('session.update_context', read_write).
method_scope('session.assert_fact', read_write).
method_scope('session.report_error', read_write).
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
    scope_can_query_kg(Scope, Pattern).

%% scope_can_query_kg(+Scope, +Pattern): for clients whose credential (token, HMAC)
%% carries its scope in the request context.
scope_can_query_kg(Scope, Pattern) :-
    (   Scope == admin -> true ; \+ kg_write_pattern(Pattern) ).

%% kg_write_pattern(+Pattern): the pattern contains a writing clause as a whole word
%% (so `n.offset` or `n.reset_at` are not mistaken for SET).
kg_write_pattern(Pattern) :-
    atom_chars(Pattern, Chars),
    kg_words(Chars, Words),
    member(Word, Words),
    member(Word, ["CREATE", "MERGE", "DELETE", "DETACH", "SET", "REMOVE", "DROP",
                  "create", "merge", "delete", "detach", "set", "remove", "drop"]),
    !.

%% kg_words(+Chars, -Words): the maximal runs of letters, digits and underscores.
kg_words([], []).
kg_words([C|Cs], Words) :-
    (   kg_word_char(C)
    ->  kg_word([C|Cs], Word, Rest),
        Words = [Word|More],
        kg_words(Rest, More)
    ;   kg_words(Cs, Words)
    ).

kg_word([C|Cs], [C|Word], Rest) :-
    kg_word_char(C), !,
    kg_word(Cs, Word, Rest).
kg_word(Rest, [], Rest).

kg_word_char(C) :-
    char_code(C, X),
    (   X >= 0'a, X =< 0'z
    ;   X >= 0'A, X =< 0'Z
    ;   X >= 0'0, X =< 0'9
    ;   X =:= 0'_
    ), !.
