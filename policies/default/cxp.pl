%% CXP routing, ownership, priority and escalation authority (spec 004 Articles V, X).
%%
%% Reads the traffic and Volk facts the engine keeps in step with the log:
%%   cxp_packet(MessageId, From, To, ThreadId, Subject, TimestampMs, Priority,
%%              DeliveryStatus, WorkStatus, ProtocolVersion, PayloadRef, SessionId)
%%     (MessageId is id(A, B, C), the UUID's bits as three integers; ThreadId and
%%      PayloadRef are strings; every other value an atom)
%%   volk(Alias, Parent, Kind, SessionId)    Parent = none for a root, Kind senior|junior
%%   volk_status(Alias, active|deregistered|terminated)
%%   cxp_sends(From, SessionId, Count)       packets of From in that session (> 0)

active_volk(V) :- volk_status(V, active).
volk_parent(V, P) :- volk(V, P, _, _), P \== none.
junior(V) :- volk(V, _, junior, _).
root_volk(V) :- volk(V, none, _, _).

%% Article IX: parent and child talk; root (senior, parentless) Volks are peers.
may_talk(A, B) :- volk_parent(A, B).
may_talk(A, B) :- volk_parent(B, A).
may_talk(A, B) :- root_volk(A), root_volk(B).
%% The operator Volk is the human operator's seat at the gateway (the `orchestrata up`
%% token acts as it). It stands where the human stands, above the root, so it may
%% address any Volk and any senior Volk may answer it; juniors still talk only to
%% their parent (Article IX 9.5, 9.6).
may_talk(A, _) :- operator_volk(A).
may_talk(A, B) :- operator_volk(B), \+ junior(A).

operator_volk('U:GW').

%% Subject ownership (Article X): who may send a subject to whom.
subject_route(review_code, ['U:Cx', 'U:Ox', 'U:Vz'], ['U:Qa']).
subject_route(fix_issues, ['U:Qa'], ['U:Vz']).

%% The packet's subject as the route atom that names it; fails for a subject no route
%% names. Subjects arrive as strings (free text must not become atoms: scryer keeps
%% every atom for good), so each route's atom is compared as characters. An atom is
%% accepted too (decisions recorded before subjects were strings, replayed by audit);
%% any other value names no route.
ctx_subject(Ctx, Subject) :-
    ctx(Ctx, subject, Text),
    subject_route(Subject, _, _),
    (   atom(Text) -> Text == Subject
    ;   catch(atom_chars(Subject, Text), _, fail)   % a number or a list: no route
    ),
    !.

subject_owned_by(Subject, From, To) :-
    (   subject_route(Subject, Senders, Recipients)
    ->  memberchk(From, Senders), memberchk(To, Recipients)
    ;   true
    ).

%% Budget: at most this many packets per Volk per session.
send_budget(100).

%% The engine keeps the count as cxp_sends(V, Session, N) (no fact when N = 0), equal
%% to the number of cxp_packet/12 facts with sender V and that session: one lookup
%% instead of a scan of every packet seen.
sends_in_session(V, Session, N) :-
    (   cxp_sends(V, Session, N0) -> N = N0 ; N = 0 ).

%% Priority authority: only a party of the packet may change its priority;
%% urgent priorities (>= 8) from a junior Volk go to its senior.
priority_urgent(8).

packet_party(M, V) :- cxp_packet(M, V, _, _, _, _, _, _, _, _, _, _).
packet_party(M, V) :- cxp_packet(M, _, V, _, _, _, _, _, _, _, _, _).

%% The kernel names the packet's parties in a priority request (from, to): the check
%% then holds for packets older than the engine's window, which shows only the most
%% recent ones. A request without them (a dry run) asks the packet facts.
priority_party(M, V, Ctx) :-
    (   ctx(Ctx, from, _)
    ->  ( ctx(Ctx, from, V) -> true ; ctx(Ctx, to, V) )
    ;   packet_party(M, V)
    ).

%% Escalation authority: a Volk escalates to its parent; a root Volk to the human.
escalation_target(V, P) :- volk_parent(V, P).
escalation_target(V, human) :- root_volk(V).
