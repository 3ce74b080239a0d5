%% Orchestrata governance prelude: loaded into every engine before the policy.
%%
%% It declares the facts the engine keeps in step with the log, and the small
%% vocabulary policies use to explain themselves:
%%   rule(Name)     - records that the rule Name is on the decision path (trace)
%%   article(Name)  - records a constitutional article the decision applied
%%   ctx(Context, Key, Value) - looks a key up in the request context
:- use_module(library(lists)).
:- use_module(library(iso_ext)).

:- dynamic(cxp_packet_base/17).
:- dynamic(cxp_status/6).
:- dynamic(cxp_fresh/3).
:- dynamic(volk/4).
:- dynamic(volk_capability/2).
:- dynamic(volk_status/2).
:- dynamic(session/4).
:- dynamic(cxp_sends_key/3).

%% A packet's facts: cxp_packet_base/17 holds its message id, the sequence of its
%% `packet sent`, what its statuses do not change, then its delivery and work status as
%% first stored (Status, TimestampMs each), asserted once; cxp_status(A, B, C, d|w,
%% Status, TimestampMs) is appended at every later status change and never retracted
%% (scryer's retract visits every clause of a predicate, so its cost grows with
%% history): a packet's status is the last one appended, or its base's if none was.
%% Policies read the three predicates below (src/governance/fact_goals.rs).
%%
%% The engine shows a window of the most recent packets (src/governance/fact_window.rs):
%% a packet whose sequence is below the floor kept in the blackboard under
%% orchestrata_fact_floor is hidden, and its clauses are dropped when the engine is
%% renewed (src/governance/renewal.rs) rather than retracted one by one.
%%
%% A message id is id(A, B, C): the UUID's 128 bits as three integers (48, 48, 32
%% bits), stored as the facts' first three arguments so that a lookup by id is indexed
%% on A and no packet adds an atom (see docs/governance.md, "Facts that do not grow
%% the atom table").
cxp_packet(id(A, B, C), From, To, Thread, Subject, Ts, Priority, D, W, Version, Payload,
           Session) :-
    '$traffic_read',
    '$fresh'(A, B, C),
    cxp_packet_base(A, B, C, Seq, From, To, Thread, Subject, Ts, Priority, Version, Payload,
                    Session, D0, DT0, W0, WT0),
    '$in_window'(Seq),
    '$packet_status'(A, B, C, d, D0-DT0, D, _),
    '$packet_status'(A, B, C, w, W0-WT0, W, _).

cxp_delivery_status(id(A, B, C), S, T) :-
    '$traffic_read',
    '$fresh'(A, B, C),
    cxp_packet_base(A, B, C, Seq, _, _, _, _, _, _, _, _, _, S0, T0, _, _),
    '$in_window'(Seq),
    '$packet_status'(A, B, C, d, S0-T0, S, T).

cxp_work_status(id(A, B, C), S, T) :-
    '$traffic_read',
    '$fresh'(A, B, C),
    cxp_packet_base(A, B, C, Seq, _, _, _, _, _, _, _, _, _, _, _, S0, T0),
    '$in_window'(Seq),
    '$packet_status'(A, B, C, w, S0-T0, S, T).

%% Packet changes are compiled when a goal reads packet facts, not when they happen
%% (src/governance/pending.rs): while some wait, the engine sets orchestrata_stale to 1,
%% and a read notes what it read and throws, so the engine compiles what the read needs
%% and runs the decision again. A read naming its packet asks for that packet alone,
%% which then has a cxp_fresh/3 marker until everything is compiled; any other read
%% asks for all. cxp_packet_base/17, cxp_status/6 and cxp_fresh/3 are internal: read
%% the three predicates above.
'$fresh'(_, _, _) :- bb_get(orchestrata_stale, 0), !.
'$fresh'(A, B, C) :- nonvar(A), nonvar(B), nonvar(C), cxp_fresh(A, B, C), !.
'$fresh'(A, B, C) :-
    (   nonvar(A), nonvar(B), nonvar(C) -> R = id(A, B, C) ; R = all ),
    (   catch('$fetch_global_var'(orchestrata_stale_read, R0), _, fail) -> true ; R0 = 0 ),
    (   R0 == 0 -> R1 = R ; R0 == R -> R1 = R ; R1 = all ),
    '$store_global_var'(orchestrata_stale_read, R1),
    throw(orchestrata_stale_facts).

'$set_stale'(S) :- bb_put(orchestrata_stale, S).

%% Every read of traffic facts (the three packet predicates above and cxp_sends/3)
%% notes itself, kept through backtracking and failure: a decision that read none
%% depends on no traffic fact, which lets the engine reuse it while the roster holds
%% (cacheable_with/2, src/governance/roster_cache.rs).
'$traffic_read' :- '$store_global_var'(orchestrata_traffic_read, 1).

%% '$caught'(Goal, E): runs Goal, binding E to anything it throws (the engine's fact
%% upkeep, operators' queries and the loader run through it). A catch/3 written in a
%% top-level query is compiled anew for every query — ~23 us in scryer 0.10 against
%% ~3 us for one compiled here (examples/scryer_memory.rs caught|defined) — and the fact
%% upkeep runs a query per command. Not a bare query either: after an uncaught
%% exception scryer 0.10 answers the next query with that exception again.
'$caught'(G, E) :- catch(G, E, true).

%% '$all'(Goals): runs the goals of the list one after another (the fact upkeep's
%% batches). A conjunction handed to call/1 is compiled as a clause first: two upkeep
%% goals took 31 us as '$caught'((A, B), E) and 8 us as '$caught'('$all'([A, B]), E)
%% (examples/scryer_memory.rs upkeep|upkeep_list).
'$all'([]).
'$all'([G|Gs]) :- call(G), '$all'(Gs).

'$in_window'(Seq) :-
    bb_get(orchestrata_fact_floor, F),
    Seq >= F.

'$set_floor'(F) :- bb_put(orchestrata_fact_floor, F).

'$packet_status'(A, B, C, Kind, First, S, T) :-
    findall(S0-T0, cxp_status(A, B, C, Kind, S0, T0), All),
    (   All == [] -> First = S-T ; '$last'(All, S-T) ).

%% cxp_sends(From, SessionId, Count): packets From sent in that session, over the whole
%% history (not only the window). A count changes with every send, and scryer 0.10 keeps
%% a retracted clause's memory and a retract visits every clause, so the count lives in
%% the blackboard (one global variable per sender and session, replaced in place) and
%% cxp_sends_key/3 (asserted once per pair, with the variable's name) lets a policy
%% enumerate the pairs. The name is built once per pair: building it per update (three
%% atom_concat/3) was most of an update's ~20 us.
cxp_sends(V, S, N) :-
    '$traffic_read',
    cxp_sends_key(V, S, K),
    bb_get(K, N),
    N > 0.

'$sends_var'(V, S, K) :-
    atom_concat('$sends ', V, K0),
    atom_concat(K0, '\x1\', K1),
    atom_concat(K1, S, K).

'$set_sends'(V, S, N) :-
    (   cxp_sends_key(V, S, K) -> true
    ;   '$sends_var'(V, S, K), assertz(cxp_sends_key(V, S, K))
    ),
    bb_put(K, N).

%% Forgets every fact kept outside clauses (counts and floor), for clear_facts.
'$clear_blackboard' :-
    forall(cxp_sends_key(_, _, K), bb_put(K, 0)),
    '$set_floor'(0),
    '$set_stale'(0).

'$last'([X], X) :- !.
'$last'([_|Xs], X) :- '$last'(Xs, X).

%% The gateway principals a site policy may register (policies/default/gateway.pl
%% registers none). Declared here so that a policy defining none of them answers
%% "no" instead of raising an existence error, whatever order its files load in.
:- dynamic(registered_admin/1).
:- dynamic(registered_operator/1).
:- dynamic(registered_client/1).
:- dynamic(suspended/1).
:- dynamic(gateway_acts_as/2).

%% The blackboard is used through the built-ins behind bb_get/2 and bb_b_put/2
%% (same semantics, without the wrappers' type check of the constant key): rule/1
%% and article/1 run several times in every decision.
rule(Name) :-
    '$fetch_global_var'(orchestrata_trace, T),
    '$store_backtrackable_global_var'(orchestrata_trace, [Name|T]).

article(A) :-
    '$fetch_global_var'(orchestrata_articles, As),
    (   memberchk(A, As) -> true
    ;   '$store_backtrackable_global_var'(orchestrata_articles, [A|As])
    ).

ctx(Context, Key, Value) :-
    memberchk(Key-Value, Context).

%% The engine's entry point, '$od'(Subject, Action, Resource, Context, Out):
%%   Out = ok(Result, TraceReversed, ArticlesReversed, TrafficRead) or error(E), where
%%   TrafficRead is 1 if the decision read traffic facts, else 0.
%% Its goal text is parsed for every uncached decision and scryer's reader costs
%% about 0.07 us per character, so the name and the single output variable are short,
%% the inference limit is a fact set at load (orchestrata_inference_limit/1), and
%% the engine reverses the trace and checks the result in Rust. The catch/3 is compiled
%% here: one in a top-level query would be compiled anew for every decision.
:- dynamic(orchestrata_inference_limit/1).

'$od'(S, A, R, C, Out) :-
    '$store_global_var'(orchestrata_stale_read, 0),
    '$store_global_var'(orchestrata_traffic_read, 0),
    catch(orchestrata_decide(S, A, R, C, Out0), E, Out0 = error(E)),
    !,
    %% A read of stale packet facts, even one a policy's own catch/3 swallowed.
    '$fetch_global_var'(orchestrata_stale_read, Read),
    '$fetch_global_var'(orchestrata_traffic_read, Traffic),
    (   Read \== 0
    ->  Out = error(orchestrata_stale_facts(Read))
    ;   Out0 = ok(Result, Trace, Articles)
    ->  Out = ok(Result, Trace, Articles, Traffic)
    ;   Out = Out0
    ).

orchestrata_decide(S, A, R, C, ok(Result, Trace, Articles)) :-
    orchestrata_inference_limit(Limit),
    '$store_global_var'(orchestrata_trace, []),
    '$store_global_var'(orchestrata_articles, []),
    call_with_inference_limit(orchestrata_first(S, A, R, C, Result, Trace, Articles),
                              Limit, Outcome),
    (   Outcome == inference_limit_exceeded
    ->  throw(error(resource_error(inference_limit), decide/5))
    ;   true
    ).

%% The first answer of decide/5 with the trace and articles recorded on its path
%% (newest first); deny with [default_deny] when decide/5 fails.
orchestrata_first(S, A, R, C, Result, T, As) :-
    (   decide(S, A, R, C, Result0)
    ->  '$fetch_global_var'(orchestrata_trace, T),
        '$fetch_global_var'(orchestrata_articles, As),
        (   memberchk(Result0, [allow, deny, escalate]) -> Result = Result0
        ;   throw(error(domain_error(decision_result, Result0), decide/5))
        )
    ;   Result = deny, T = [default_deny], As = []
    ).
