//! One scryer-prolog machine loaded with the prelude, a policy and the facts.
//!
//! Not thread-safe (a `Machine` is `!Send`): the engine keeps one on its own thread,
//! the offline audit builds its own. Every goal is run wrapped in `catch/3`, so Prolog
//! errors come back as values and never leave the machine in an exception state.

use std::collections::{BTreeMap, HashSet};
use std::path::PathBuf;

use orchestrata_schemas::events::types::DecisionResult;
use scryer_prolog::{LeafAnswer, Machine, MachineBuilder, Term};

use super::pending::PendingPackets;
use super::policy::Policy;
use super::request::{Outcome, Request};
use super::rules::{clause_lines, RuleInfo};
use super::term::{quote_atom, render, term_list, term_text};
use super::GovernanceError;

mod apply;
mod deferred;
mod reuse;

use deferred::Deferred;
use reuse::{Cacheable, RosterCacheable};

const PRELUDE: &str = include_str!("prelude.pl");

/// Inferences a single decision may spend before it is refused (deterministic, unlike
/// a wall-clock timeout).
pub const DEFAULT_INFERENCE_LIMIT: u64 = 2_000_000;

/// Helpers loaded after the prelude: read a policy file term by term (syntax errors
/// with their line), refusing clauses that redefine built-ins.
const LOADER: &str = r#"
orchestrata_read_clauses(File, Clauses) :-
    open(File, read, S),
    catch(orchestrata_read_all(S, Clauses), E, (close(S), throw(E))),
    close(S).
orchestrata_read_all(S, Clauses) :-
    read_term(S, T, []),
    (   T == end_of_file -> Clauses = []
    ;   stream_property(S, position(position_and_lines_read(_, L))),
        orchestrata_clause_info(T, L, Info),
        Clauses = [Info|Rest],
        orchestrata_read_all(S, Rest)
    ).
orchestrata_clause_info((:- _), L, directive(L)) :- !.
orchestrata_clause_info((H :- _), L, I) :- !, orchestrata_head_info(H, L, I).
orchestrata_clause_info(H, L, I) :- orchestrata_head_info(H, L, I).
orchestrata_head_info(H, L, clause(N, A, L)) :-
    (   callable(H) -> true ; throw(error(type_error(callable, H), line(L))) ),
    functor(H, N, A),
    (   catch(predicate_property(H, built_in), _, fail)
    ->  throw(error(permission_error(modify, static_procedure, N/A), line(L)))
    ;   true
    ).
"#;

/// A machine with a policy loaded.
///
/// Packet fact changes are compiled when a goal reads packet facts, not when they
/// arrive (`pending.rs`); every other fact change is applied at once.
pub struct Evaluator {
    machine: Machine,
    cacheable: Cacheable,
    roster_cacheable: RosterCacheable,
    policy: Policy,
    rules: Vec<RuleInfo>,
    pending: PendingPackets,
    /// Counts and the floor not yet set in the machine (`evaluator/deferred.rs`).
    deferred: Deferred,
    /// Whether the machine's `orchestrata_stale` flag is set (changes wait).
    stale: bool,
    /// Estimated bytes left in the machine by changes applied inside `decide` and
    /// `query` (see [`Evaluator::take_flushed_cost`]).
    flushed_cost: u64,
    /// Packets compiled alone for a read that named them while others wait: each has a
    /// `cxp_fresh/3` marker, and its later changes are applied at once.
    fresh: HashSet<String>,
    /// Whether a goal may have read packet facts on this machine: a decision that
    /// read them, or any query (see [`Evaluator::packets_read`]).
    packets_read: bool,
}

/// The error a decision answers when it read packet facts while changes waited.
const STALE: &str = "orchestrata_stale_facts";

/// Reads by id a decision may be run again for (one packet compiled each time) before
/// everything waiting is compiled instead.
const BY_ID_RERUNS: usize = 8;

/// One run of a decision.
enum Run {
    Done(Outcome),
    /// It read stale packet facts: of this packet (its message id), or of any.
    Stale(Option<String>),
}

/// What one run of a goal gave.
enum Answer {
    Bindings(BTreeMap<String, Term>),
    True,
    False,
    Error(String),
}

fn run(machine: &mut Machine, goal: &str) -> Answer {
    let mut first = None;
    for answer in machine.run_query(goal.to_owned()) {
        let stop = !matches!(
            answer,
            Ok(LeafAnswer::LeafAnswer { .. }) | Ok(LeafAnswer::True)
        );
        if first.is_none() {
            first = Some(match answer {
                Ok(LeafAnswer::LeafAnswer { bindings, .. }) => Answer::Bindings(bindings),
                Ok(LeafAnswer::True) => Answer::True,
                Ok(LeafAnswer::False) => Answer::False,
                Ok(LeafAnswer::Exception(t)) | Err(t) => Answer::Error(render(&t)),
            });
        }
        if stop {
            break;
        }
    }
    first.unwrap_or(Answer::False)
}

/// Runs `goal` inside `catch/3` (the prelude's `'$caught'/2`, compiled once); `Err`
/// with the rendered error if it threw.
fn run_caught(machine: &mut Machine, goal: &str) -> Result<Option<BTreeMap<String, Term>>, String> {
    let wrapped = format!("'$caught'(({goal}), OrchestrataError).");
    match run(machine, &wrapped) {
        Answer::Bindings(mut b) => match b.remove("OrchestrataError") {
            Some(e) => Err(render(&e)),
            None => Ok(Some(b)),
        },
        Answer::True => Ok(Some(BTreeMap::new())),
        Answer::False => Ok(None),
        Answer::Error(e) => Err(e),
    }
}

fn line_of(error: &Term) -> u64 {
    // error(_, line(L)) from the loader, or error(_, read_term/3:L) from the reader.
    if let Term::Compound(f, args) = error {
        if f == "error" && args.len() == 2 {
            match &args[1] {
                Term::Compound(g, a) if (g == "line" || g == ":") && !a.is_empty() => {
                    if let Some(Term::Integer(i)) = a.last() {
                        return i.to_string().parse().unwrap_or(0);
                    }
                }
                _ => {}
            }
        }
    }
    0
}

impl Evaluator {
    /// Builds a machine and loads `policy` into it. On any error nothing is kept.
    pub fn load(policy: &Policy, inference_limit: u64) -> Result<Self, GovernanceError> {
        let mut machine = MachineBuilder::new().build();
        machine.consult_module_string("orchestrata_prelude", PRELUDE.to_owned());
        machine.consult_module_string("orchestrata_loader", LOADER.to_owned());
        let dir = std::env::temp_dir().join(format!("orchestrata-policy-{}", uuid::Uuid::new_v4()));
        let result = Self::load_files(&mut machine, policy, &dir);
        let _ = std::fs::remove_dir_all(&dir);
        let rules = result?;
        // decide/5's safety net, read by the prelude's entry point (not passed per goal:
        // every character of a goal costs parsing time).
        let limit = i64::try_from(inference_limit).unwrap_or(i64::MAX);
        run_caught(
            &mut machine,
            &format!(
                "retractall(orchestrata_inference_limit(_)), assertz(orchestrata_inference_limit({limit})), \
                 '$clear_blackboard'"
            ),
        )
        .map_err(GovernanceError::Prolog)?;
        let cacheable = Cacheable::read(&mut machine);
        let roster_cacheable = RosterCacheable::read(&mut machine, policy);
        Ok(Evaluator {
            machine,
            cacheable,
            roster_cacheable,
            policy: policy.clone(),
            rules,
            pending: PendingPackets::default(),
            deferred: Deferred::default(),
            stale: false,
            flushed_cost: 0,
            fresh: HashSet::new(),
            packets_read: false,
        })
    }

    fn load_files(
        machine: &mut Machine,
        policy: &Policy,
        dir: &PathBuf,
    ) -> Result<Vec<RuleInfo>, GovernanceError> {
        std::fs::create_dir_all(dir).map_err(|source| GovernanceError::PolicyRead {
            path: dir.display().to_string(),
            source,
        })?;
        let mut clauses = Vec::new();
        for (index, file) in policy.files().iter().enumerate() {
            let invalid = |line: u64, message: String| GovernanceError::PolicyInvalid {
                file: file.name.clone(),
                line,
                message,
            };
            let path = dir.join(format!("{index}.pl"));
            std::fs::write(&path, &file.text).map_err(|source| GovernanceError::PolicyRead {
                path: path.display().to_string(),
                source,
            })?;
            let path_atom = quote_atom(&path.display().to_string());
            // Syntax and built-in redefinitions first: a failed consult leaves nothing.
            let read = format!("catch(orchestrata_read_clauses({path_atom}, Clauses), E, true).");
            let heads = match run(machine, &read) {
                Answer::Bindings(b) => {
                    if let Some(e) = b.get("E") {
                        return Err(invalid(line_of(e), render(e)));
                    }
                    b.get("Clauses")
                        .and_then(term_list)
                        .map(|l| l.to_vec())
                        .unwrap_or_default()
                }
                Answer::Error(e) => return Err(invalid(0, e)),
                _ => return Err(invalid(0, "the file could not be read".into())),
            };
            let read = clause_lines(&file.name, &file.text, &heads);
            if !file.text.contains("discontiguous") {
                if let Some(c) = super::rules::split_predicate(&read) {
                    return Err(invalid(
                        c.line_number,
                        format!(
                            "clauses of {}/{} are split by other predicates; keep them together \
                             or declare `:- discontiguous({}/{}).`",
                            c.predicate, c.arity, c.predicate, c.arity
                        ),
                    ));
                }
            }
            clauses.extend(read);
            match run_caught(machine, &format!("consult({path_atom})")) {
                Ok(Some(_)) => {}
                Ok(None) => return Err(invalid(0, "consult failed".into())),
                Err(e) => return Err(invalid(0, e)),
            }
        }
        // Categories declared by the policy (rule_category/2), if any.
        let mut categories = BTreeMap::new();
        if let Ok(Some(b)) = run_caught(
            machine,
            "findall(N-A-C, catch(rule_category(N/A, C), _, fail), Cs)",
        ) {
            if let Some(items) = b.get("Cs").and_then(term_list) {
                for item in items {
                    if let Term::Compound(_, args) = item {
                        if let [Term::Compound(_, na), c] = args.as_slice() {
                            if let ([n, Term::Integer(a)], Some(c)) = (na.as_slice(), term_text(c))
                            {
                                if let Some(n) = term_text(n) {
                                    categories.insert((n, a.to_string()), c);
                                }
                            }
                        }
                    }
                }
            }
        }
        let mut rules: Vec<RuleInfo> = Vec::new();
        for mut rule in clauses {
            if rules
                .iter()
                .any(|r| r.predicate == rule.predicate && r.arity == rule.arity)
            {
                continue;
            }
            rule.category = categories
                .get(&(rule.predicate.clone(), rule.arity.to_string()))
                .cloned()
                .unwrap_or_else(|| "uncategorized".into());
            rules.push(rule);
        }
        Ok(rules)
    }

    /// The loaded policy.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The loaded predicates with their file, line and category.
    pub fn rules(&self) -> &[RuleInfo] {
        &self.rules
    }

    /// Evaluates `decide/5` for a request.
    ///
    /// The goal is `'$od'(Subject, Action, Resource, Context, O)` (see prelude.pl):
    /// as short as it can be, because scryer parses it from text for every decision,
    /// and with a single output so one answer term is converted back.
    ///
    /// A decision that read packet facts while changes waited is run again once what
    /// it read is compiled (`pending.rs`): the packet it named, or everything.
    pub fn decide(&mut self, request: &Request) -> Result<Outcome, GovernanceError> {
        self.settle()?;
        for _ in 0..BY_ID_RERUNS {
            match self.decide_now(request)? {
                Run::Done(outcome) => return Ok(outcome),
                Run::Stale(Some(id)) => {
                    self.packets_read = true;
                    self.compile_one(&id)?;
                }
                Run::Stale(None) => {
                    self.packets_read = true;
                    break;
                }
            }
        }
        self.flush_counted()?;
        match self.decide_now(request)? {
            Run::Done(outcome) => Ok(outcome),
            Run::Stale(_) => Err(GovernanceError::Prolog(format!(
                "{STALE} after applying the facts"
            ))),
        }
    }

    /// One run of `decide/5`.
    fn decide_now(&mut self, request: &Request) -> Result<Run, GovernanceError> {
        let mut goal = String::with_capacity(96);
        goal.push_str("'$od'(");
        request.write_args(&mut goal);
        goal.push_str(",O).");
        let out = match run(&mut self.machine, &goal) {
            Answer::Bindings(mut b) => b.remove("O"),
            Answer::Error(e) => return Err(GovernanceError::Prolog(e)),
            Answer::True | Answer::False => None,
        };
        let (result, trace, articles, traffic) = match out {
            Some(Term::Compound(f, args)) if f == "ok" && args.len() == 4 => {
                let mut args = args.into_iter();
                match (args.next(), args.next(), args.next(), args.next()) {
                    (Some(r), Some(t), Some(a), Some(read)) => (r, t, a, read),
                    _ => return Err(GovernanceError::Prolog("decide/5 failed".into())),
                }
            }
            Some(Term::Compound(f, args)) if f == "error" && args.len() == 1 => {
                if let Some(read) = stale_read(&args[0]) {
                    return Ok(Run::Stale(read));
                }
                return Err(GovernanceError::Prolog(render(&args[0])));
            }
            _ => return Err(GovernanceError::Prolog("decide/5 failed".into())),
        };
        // The prelude collects rules and articles newest first.
        let list = |term: &Term| -> Vec<String> {
            term_list(term)
                .map(|l| {
                    l.iter()
                        .rev()
                        .map(|t| term_text(t).unwrap_or_else(|| render(t)))
                        .collect()
                })
                .unwrap_or_default()
        };
        let result = match term_text(&result).as_deref() {
            Some("allow") => DecisionResult::Allow,
            Some("deny") => DecisionResult::Deny,
            Some("escalate") => DecisionResult::Escalate,
            other => {
                return Err(GovernanceError::Prolog(format!(
                    "decide/5 answered {other:?}, not allow, deny or escalate"
                )))
            }
        };
        // Reusable while the roster holds only if no traffic fact was read (anything
        // but a plain 0 counts as read).
        let read_traffic = term_text(&traffic).as_deref() != Some("0");
        let roster_keys = if read_traffic {
            None
        } else {
            self.roster_cacheable.keys(&request.action).cloned()
        };
        Ok(Run::Done(Outcome {
            result,
            trace: list(&trace),
            articles: list(&articles),
            cacheable: self.cacheable.is_cacheable(&request.action),
            roster_keys,
        }))
    }

    /// Whether a goal may have read packet facts on this machine since it was built:
    /// a decision that read them, or any query. A renewal compiles the packet window
    /// ahead only for a server where this ever held (see `renewal.rs`); where the
    /// policy never reads packets, their facts are never compiled at all.
    pub fn packets_read(&self) -> bool {
        self.packets_read
    }

    /// Runs any goal and returns the first answer's bindings rendered as text
    /// (`None` if it failed). For tests and operators querying the facts.
    pub fn query(
        &mut self,
        goal: &str,
    ) -> Result<Option<BTreeMap<String, String>>, GovernanceError> {
        // Any goal may read packet facts: apply what waits first.
        self.settle()?;
        self.packets_read = true;
        if !self.pending.is_empty() {
            self.flush_counted()?;
        }
        let answer = run_caught(&mut self.machine, goal).map_err(GovernanceError::Prolog)?;
        Ok(answer.map(|b| {
            b.into_iter()
                .map(|(k, v)| (k, term_text(&v).unwrap_or_else(|| render(&v))))
                .collect()
        }))
    }
}

/// What a decision's stale read asked for (`'$od'/5` in the prelude): `Some(None)` for
/// every packet, `Some(Some(id))` for one; `None` if `error` is another error.
fn stale_read(error: &Term) -> Option<Option<String>> {
    match error {
        Term::Compound(f, args) if f == STALE && args.len() == 1 => match &args[0] {
            id @ Term::Compound(g, parts) if g == "id" && parts.len() == 3 => {
                Some(Some(super::term::message_id_text(&render(id))))
            }
            _ => Some(None),
        },
        other => (term_text(other).as_deref() == Some(STALE)).then_some(None),
    }
}
