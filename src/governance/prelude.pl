%% Orchestrata governance prelude: loaded into every engine before the policy.
%%
%% It declares the facts the engine keeps in step with the log, and the small
%% vocabulary policies use to explain themselves:
%%   rule(Name)     - records that the rule Name is on the decision path (trace)
%%   article(Name)  - records a constitutional article the decision applied
%%   ctx(Context, Key, Value) - looks a key up in the request context
:- use_module(library(lists)).
:- use_module(library(iso_ext)).

:- dynamic(cxp_packet/12).
:- dynamic(cxp_delivery_status/3).
:- dynamic(cxp_work_status/3).
:- dynamic(volk/4).
:- dynamic(volk_capability/2).
:- dynamic(volk_status/2).
:- dynamic(session/4).

rule(Name) :-
    bb_get(orchestrata_trace, T),
    bb_b_put(orchestrata_trace, [Name|T]).

article(A) :-
    bb_get(orchestrata_articles, As),
    (   memberchk(A, As) -> true
    ;   bb_b_put(orchestrata_articles, [A|As])
    ).

ctx(Context, Key, Value) :-
    memberchk(Key-Value, Context).

orchestrata_decide(Subject, Action, Resource, Context, Limit, Result, Trace, Articles) :-
    bb_put(orchestrata_trace, []),
    bb_put(orchestrata_articles, []),
    call_with_inference_limit(
        orchestrata_first(Subject, Action, Resource, Context, R0, T0, A0),
        Limit, Outcome),
    (   Outcome == inference_limit_exceeded
    ->  throw(error(resource_error(inference_limit), decide/5))
    ;   true
    ),
    Result = R0,
    reverse(T0, Trace),
    reverse(A0, Articles).

%% The engine's entry point: errors come back in E instead of escaping (a catch/3
%% compiled here is far cheaper than one in each top-level query).
orchestrata_safe_decide(S, A, R, C, Limit, Result, Trace, Articles, E) :-
    catch(orchestrata_decide(S, A, R, C, Limit, Result, Trace, Articles), E, true),
    !.

orchestrata_first(S, A, R, C, Result, T, As) :-
    (   decide(S, A, R, C, Result0)
    ->  bb_get(orchestrata_trace, T),
        bb_get(orchestrata_articles, As),
        (   memberchk(Result0, [allow, deny, escalate]) -> Result = Result0
        ;   throw(error(domain_error(decision_result, Result0), decide/5))
        )
    ;   Result = deny, T = [default_deny], As = []
    ).
