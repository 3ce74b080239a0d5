%% Constitutional constraints on Volks (spec 005 checklists/constitutional.md).

max_depth(3).
max_juniors(5).

%% Depth of a Volk in the hierarchy: roots are 0.
volk_depth(V, 0) :- volk(V, none, _, _), !.
volk_depth(V, D) :-
    volk(V, P, _, _),
    P \== none,
    volk_depth(P, D0),
    D is D0 + 1.

active_juniors(P, N) :-
    findall(J, (volk(J, P, junior, _), volk_status(J, active)), Js),
    length(Js, N).

ancestor(A, V) :-
    volk(V, P, _, _),
    P \== none,
    (   P == A -> true ; ancestor(A, P) ).

%% Article II 2.4: a Volk sees its own facts and its ancestors' (read-only).
fact_visible(Reader, Owner) :- Reader == Owner, !.
fact_visible(Reader, Owner) :- ancestor(Owner, Reader).

%% Who may deregister a Volk: clients (already authorized as admin by the gateway),
%% the Volk itself, or its parent.
deregister_by(client(_), _).
deregister_by(volk(V), V).
deregister_by(volk(P), A) :- volk(A, P, _, _).
