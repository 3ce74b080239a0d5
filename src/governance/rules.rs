//! The loaded predicates, for `governance.rules` (REQ-014-046..050).
//!
//! Each predicate is listed once with the file and line of its first clause and the
//! category the policy gives it with `rule_category(Name/Arity, Category)`
//! (`routing`, `permission`, `escalation`, `budget`; `uncategorized` otherwise).

use scryer_prolog::Term;
use serde::Serialize;

use super::term::term_text;

/// One loaded predicate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RuleInfo {
    /// Predicate name.
    pub predicate: String,
    /// Its arity.
    pub arity: u32,
    /// The policy file defining it.
    pub source_file: String,
    /// 1-based line of its first clause.
    pub line_number: u64,
    /// routing, permission, escalation, budget or uncategorized.
    pub category: String,
}

/// The rules matching `category` (exact) and `search` (case-insensitive substring of
/// the predicate name), grouped by category (sorted), then by file and line.
pub fn filter_rules(
    rules: &[RuleInfo],
    category: Option<&str>,
    search: Option<&str>,
) -> Vec<RuleInfo> {
    let search = search.map(str::to_lowercase);
    let mut out: Vec<RuleInfo> = rules
        .iter()
        .filter(|r| category.is_none_or(|c| r.category == c))
        .filter(|r| {
            search
                .as_deref()
                .is_none_or(|s| r.predicate.to_lowercase().contains(s))
        })
        .cloned()
        .collect();
    out.sort_by(|a, b| {
        (&a.category, &a.source_file, a.line_number).cmp(&(
            &b.category,
            &b.source_file,
            b.line_number,
        ))
    });
    out
}

/// Pairs the clause heads the reader found (`clause(Name, Arity, LinesReadAfter)` or
/// `directive(LinesReadAfter)`) with the line each clause starts on: the first line
/// after the previous term that is neither blank nor a `%` comment.
pub fn clause_lines(file: &str, text: &str, heads: &[Term]) -> Vec<RuleInfo> {
    let lines: Vec<&str> = text.lines().collect();
    let mut out = Vec::new();
    let mut previous_end = 0usize; // lines fully read before this term
    for head in heads {
        let Term::Compound(kind, args) = head else {
            continue;
        };
        let end = match args.last() {
            Some(Term::Integer(i)) => i.to_string().parse::<usize>().unwrap_or(0),
            _ => 0,
        };
        let mut start = previous_end;
        while start < lines.len() {
            let line = lines[start].trim();
            if line.is_empty() || line.starts_with('%') {
                start += 1;
            } else {
                break;
            }
        }
        // The previous term's terminating line may hold nothing else.
        previous_end = end;
        if kind != "clause" || args.len() != 3 {
            continue;
        }
        let (Some(name), Term::Integer(arity)) = (term_text(&args[0]), &args[1]) else {
            continue;
        };
        out.push(RuleInfo {
            predicate: name,
            arity: arity.to_string().parse().unwrap_or(0),
            source_file: file.to_owned(),
            line_number: start as u64 + 1,
            category: String::new(),
        });
    }
    out
}

/// The first clause of `clauses` (one file's, in order) whose predicate already had
/// clauses before another predicate's: scryer does not take such a split predicate
/// the way its author meant (in our tests the rest of the file was lost and every
/// decision that needed it failed closed), so the policy is refused at load instead.
/// `None` when every predicate's clauses are together.
pub fn split_predicate(clauses: &[RuleInfo]) -> Option<&RuleInfo> {
    let mut finished = std::collections::HashSet::new();
    let mut current: Option<(&str, u32)> = None;
    for clause in clauses {
        let key = (clause.predicate.as_str(), clause.arity);
        if current == Some(key) {
            continue;
        }
        if finished.contains(&key) {
            return Some(clause);
        }
        if let Some(previous) = current {
            finished.insert(previous);
        }
        current = Some(key);
    }
    None
}

#[cfg(test)]
mod split_tests {
    use super::{split_predicate, RuleInfo};

    fn clause(predicate: &str, line: u64) -> RuleInfo {
        RuleInfo {
            predicate: predicate.into(),
            arity: 1,
            source_file: "site.pl".into(),
            line_number: line,
            category: String::new(),
        }
    }

    #[test]
    fn a_predicate_split_by_another_is_found_at_its_second_group() {
        let together = [clause("a", 1), clause("a", 2), clause("b", 3)];
        assert!(split_predicate(&together).is_none());
        let split = [clause("a", 1), clause("b", 2), clause("a", 3)];
        assert_eq!(split_predicate(&split).map(|c| c.line_number), Some(3));
    }
}
