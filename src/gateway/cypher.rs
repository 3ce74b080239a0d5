//! Read-only Cypher: the check `knowledge.query` runs before anything reaches Neo4j
//! (REQ-014-152, REQ-014-153, ERR-007).
//!
//! The query is tokenized the way Cypher reads it — string literals (`'…'`, `"…"`, where
//! a backslash escapes any one character), backtick-quoted names (` `` ` inside), `//`
//! comments (ending at `\r` or `\n`, as Neo4j's grammar says) and `/* */` comments,
//! identifiers, parameters (`$name`) — so a keyword inside a string, a comment or a
//! quoted name is data, not a clause: `MATCH (p:Packet) WHERE p.subject = 'CREATE user'
//! RETURN p` is read-only. Keywords are case-insensitive (Unicode upper-casing). A word is
//! a *clause keyword* unless it is a property (`n.set`), a label or relationship type
//! (`:Create`, `[:SET]`), a map key (`{delete: 1}`) or a parameter (`$remove`).
//!
//! Where a reader could split differently, the check splits *more*: every Unicode
//! whitespace character (U+00A0, U+2028, U+3000...) and every control character
//! separates tokens, and a word is only ASCII letters, digits, `_` and Unicode letters
//! and digits, so `MATCH (n)\u{a0}DETACH\u{a0}DELETE n` is refused like its ASCII form.
//! A query with non-ASCII text is also read with every non-ASCII character ending a
//! word, and a `//` comment that holds another line end (U+2028, NEL...) is read both
//! ways (see [`validate`]). The check is a first line of defence: `knowledge.query` also runs
//! the query in a transaction that is always rolled back.
//!
//! Accepted: queries that begin with `MATCH`, `OPTIONAL MATCH`, `WITH`, `UNWIND` or
//! `RETURN` and use only reading clauses (`WHERE`, `ORDER BY`, `SKIP`, `LIMIT`, `UNION`
//! and expressions). Refused with [`CypherError::Mutation`]: any of
//! [`WRITE_KEYWORDS`] (`CREATE`, `MERGE`, `DELETE`, `DETACH`, `SET`, `REMOVE`, `DROP`,
//! `CALL`, `LOAD CSV`, `FOREACH`, and the administration commands). One statement per
//! query: a `;` may only end it.
//!
//! ```
//! use orchestrata::gateway::cypher::{validate, CypherError};
//!
//! let ok = validate("MATCH (v:Volk) WHERE v.note = 'DELETE me' RETURN v // SET").unwrap();
//! assert_eq!(ok.pattern, "MATCH (v:Volk) WHERE v.note = ? RETURN v");
//! assert!(matches!(
//!     validate("match (v) detach delete v"),
//!     Err(CypherError::Mutation { ref keyword, .. }) if keyword == "DETACH"
//! ));
//! ```

/// Words that make a query write or administer the database, as clause keywords.
pub const WRITE_KEYWORDS: &[&str] = &[
    "CREATE",
    "MERGE",
    "DELETE",
    "DETACH",
    "SET",
    "REMOVE",
    "DROP",
    "CALL",
    "LOAD",
    "FOREACH",
    "ALTER",
    "GRANT",
    "DENY",
    "REVOKE",
    "RENAME",
    "START",
    "STOP",
    "TERMINATE",
    "USE",
];

/// Words a read-only query may begin with.
pub const FIRST_CLAUSES: &[&str] = &["MATCH", "OPTIONAL", "WITH", "UNWIND", "RETURN"];

/// Why a query is not accepted. Each variant names the byte offset in the query.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CypherError {
    /// The query writes (or administers) the database.
    #[error("cypher: `{keyword}` at byte {offset} writes to the graph; knowledge.query is read-only (MATCH, OPTIONAL MATCH, WITH, UNWIND, RETURN, WHERE, ORDER BY, SKIP, LIMIT)")]
    Mutation {
        /// The keyword, upper-cased.
        keyword: String,
        /// Where it starts.
        offset: usize,
    },
    /// Nothing but whitespace and comments.
    #[error("cypher: the query is empty")]
    Empty,
    /// It does not begin with a reading clause.
    #[error("cypher: a query must begin with MATCH, OPTIONAL MATCH, WITH, UNWIND or RETURN, not `{first}`")]
    NotReadClause {
        /// The first word (or character).
        first: String,
    },
    /// A string, quoted name or comment is not closed.
    #[error("cypher: unterminated {what} starting at byte {offset}")]
    Unterminated {
        /// `string`, `quoted name` or `comment`.
        what: &'static str,
        /// Where it starts.
        offset: usize,
    },
    /// More than one statement.
    #[error("cypher: `;` at byte {offset} starts a second statement; send one query at a time")]
    MultipleStatements {
        /// Where the `;` is.
        offset: usize,
    },
}

impl CypherError {
    /// The `data.reason` of the JSON-RPC error: `mutation_not_allowed` (ERR-007) or
    /// `invalid_cypher`.
    pub fn reason(&self) -> &'static str {
        match self {
            CypherError::Mutation { .. } => "mutation_not_allowed",
            _ => "invalid_cypher",
        }
    }
}

/// A query that passed: what governance is asked about.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadOnly {
    /// The query with comments removed and every string literal replaced by `?`
    /// (whitespace runs collapsed): its shape, without the data in it. This is the
    /// `QueryPattern` of `gateway_can_query_kg/2`, so a policy that looks for write
    /// words is not fooled by (or does not trip on) a string that contains one.
    pub pattern: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Word,
    Param,
    Str,
    Quoted,
    Punct(char),
}

#[derive(Debug, Clone, Copy)]
struct Token<'a> {
    kind: Kind,
    text: &'a str,
    offset: usize,
}

/// Whether `c` ends a `//` comment as Cypher reads it (`'//' ~[\r\n]*` in Neo4j's
/// Cypher 5 and Cypher 25 grammars).
fn cypher_line_end(c: char) -> bool {
    c == '\n' || c == '\r'
}

/// Every character some reader may take for a line end: Cypher's two, plus vertical
/// tab, form feed, NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR.
fn any_line_end(c: char) -> bool {
    matches!(
        c,
        '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{85}' | '\u{2028}' | '\u{2029}'
    )
}

/// Whether `c` separates tokens: any Unicode whitespace (U+00A0, U+2028, U+3000...)
/// and any control character. Cypher's `SPACE` set is a subset; treating more
/// characters as separators can only make the check see more keywords, never fewer.
fn is_separator(c: char) -> bool {
    c.is_whitespace() || c.is_control()
}

/// How a reading splits words and ends `//` comments (see [`validate`]).
#[derive(Clone, Copy)]
struct Reading {
    /// Whether a character ends a `//` comment.
    line_end: fn(char) -> bool,
    /// Whether a character continues a word.
    word: fn(char) -> bool,
}

/// Cypher's own reading: comments end at `\r`/`\n`; words are ASCII letters, digits,
/// `_`, and Unicode letters and digits (symbols, marks and format characters are
/// tokens of their own, so a keyword is never glued to one).
const CYPHER: Reading = Reading {
    line_end: cypher_line_end,
    word: unicode_word_char,
};

/// Words of ASCII letters, digits and `_` only: every non-ASCII character is a
/// boundary, in case Neo4j does not take one for a letter (e.g. `²`).
const ASCII_WORDS: Reading = Reading {
    line_end: cypher_line_end,
    word: ascii_word_char,
};

fn unicode_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || (!c.is_ascii() && c.is_alphanumeric())
}

fn ascii_word_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The character at byte `i` of `q` (`None` at the end).
fn char_at(q: &str, i: usize) -> Option<char> {
    q.get(i..).and_then(|rest| rest.chars().next())
}

/// Splits `q` into tokens as `reading` says, dropping separators and comments.
fn tokenize(q: &str, reading: Reading) -> Result<Vec<Token<'_>>, CypherError> {
    let Reading { line_end, word } = reading;
    let mut tokens = Vec::new();
    let mut i = 0;
    while let Some(c) = char_at(q, i) {
        let start = i;
        let rest = &q[i..];
        if is_separator(c) {
            i += c.len_utf8();
        } else if rest.starts_with("//") {
            i = rest.find(line_end).map_or(q.len(), |n| i + n);
        } else if let Some(body) = rest.strip_prefix("/*") {
            let end = body.find("*/").ok_or(CypherError::Unterminated {
                what: "comment",
                offset: start,
            })?;
            i += 2 + end + 2;
        } else if c == '\'' || c == '"' {
            // `'` (~['\\] | '\\' .)* `'`: a backslash escapes any one character.
            i += 1;
            loop {
                match char_at(q, i) {
                    None => {
                        return Err(CypherError::Unterminated {
                            what: "string",
                            offset: start,
                        })
                    }
                    Some('\\') => {
                        i += 1;
                        match char_at(q, i) {
                            Some(escaped) => i += escaped.len_utf8(),
                            None => {
                                return Err(CypherError::Unterminated {
                                    what: "string",
                                    offset: start,
                                })
                            }
                        }
                    }
                    Some(b) if b == c => {
                        i += 1;
                        break;
                    }
                    Some(b) => i += b.len_utf8(),
                }
            }
            tokens.push(Token {
                kind: Kind::Str,
                text: &q[start..i],
                offset: start,
            });
        } else if c == '`' {
            // `` ` `` (~'`' | '``')* `` ` ``
            i += 1;
            loop {
                match char_at(q, i) {
                    None => {
                        return Err(CypherError::Unterminated {
                            what: "quoted name",
                            offset: start,
                        })
                    }
                    Some('`') if q[i + 1..].starts_with('`') => i += 2,
                    Some('`') => {
                        i += 1;
                        break;
                    }
                    Some(b) => i += b.len_utf8(),
                }
            }
            tokens.push(Token {
                kind: Kind::Quoted,
                text: &q[start..i],
                offset: start,
            });
        } else if c == '$' || word(c) {
            i += c.len_utf8();
            while let Some(w) = char_at(q, i).filter(|w| word(*w)) {
                i += w.len_utf8();
            }
            let kind = if c == '$' { Kind::Param } else { Kind::Word };
            tokens.push(Token {
                kind,
                text: &q[start..i],
                offset: start,
            });
        } else {
            i += c.len_utf8();
            tokens.push(Token {
                kind: Kind::Punct(c),
                text: &q[start..i],
                offset: start,
            });
        }
    }
    Ok(tokens)
}

/// Whether the word at `i` is used as a clause keyword (not a property, label,
/// relationship type or map key).
fn is_keyword_position(tokens: &[Token<'_>], i: usize) -> bool {
    let before = i.checked_sub(1).map(|b| tokens[b].kind);
    let after = tokens.get(i + 1).map(|t| t.kind);
    !matches!(before, Some(Kind::Punct('.') | Kind::Punct(':')))
        && !matches!(after, Some(Kind::Punct(':')))
}

/// Checks that `cypher` only reads (see the module docs) and returns its pattern.
///
/// Where readers of Cypher could differ, the query must pass every reading: Cypher's
/// own (a `//` comment ends at `\r` or `\n`; words of Unicode letters and digits), one
/// where every non-ASCII character ends a word, and — when a `//` comment also holds
/// another line end (NEL, U+2028, U+2029, VT, FF) that some reader might stop at — both
/// again with comments ending there. Whichever way Neo4j reads it, no writing keyword
/// hides in a comment or behind a character taken for a letter.
pub fn validate(cypher: &str) -> Result<ReadOnly, CypherError> {
    let tokens = tokenize(cypher, CYPHER)?;
    check(&tokens)?;
    if !cypher.is_ascii() {
        check(&tokenize(cypher, ASCII_WORDS)?)?;
    }
    let ambiguous = cypher.contains("//")
        && cypher
            .chars()
            .any(|c| any_line_end(c) && !cypher_line_end(c));
    if ambiguous {
        for reading in [CYPHER, ASCII_WORDS] {
            let wide = Reading {
                line_end: any_line_end,
                ..reading
            };
            check(&tokenize(cypher, wide)?)?;
        }
    }
    Ok(ReadOnly {
        pattern: pattern(cypher, &tokens),
    })
}

/// Refuses writing keywords, a second statement and a query that does not begin with
/// a reading clause.
fn check(tokens: &[Token<'_>]) -> Result<(), CypherError> {
    let Some(first) = tokens.first() else {
        return Err(CypherError::Empty);
    };
    for (i, t) in tokens.iter().enumerate() {
        match t.kind {
            Kind::Word if is_keyword_position(tokens, i) => {
                // Unicode upper-casing, so `ſet` (long s) is SET as a case-folding
                // reader would take it.
                let upper = t.text.to_uppercase();
                if WRITE_KEYWORDS.contains(&upper.as_str()) {
                    return Err(CypherError::Mutation {
                        keyword: upper,
                        offset: t.offset,
                    });
                }
            }
            Kind::Punct(';') if i + 1 < tokens.len() => {
                return Err(CypherError::MultipleStatements { offset: t.offset });
            }
            _ => {}
        }
    }
    let upper = first.text.to_uppercase();
    if first.kind != Kind::Word || !FIRST_CLAUSES.contains(&upper.as_str()) {
        return Err(CypherError::NotReadClause {
            first: first.text.chars().take(40).collect(),
        });
    }
    Ok(())
}

/// The query's tokens re-joined with single spaces where the source had whitespace,
/// string literals as `?`, comments dropped, a trailing `;` dropped.
fn pattern(cypher: &str, tokens: &[Token<'_>]) -> String {
    let mut out = String::with_capacity(cypher.len());
    let mut end = 0;
    for t in tokens {
        if t.kind == Kind::Punct(';') {
            continue;
        }
        if !out.is_empty() && t.offset > end {
            out.push(' ');
        }
        match t.kind {
            Kind::Str => out.push('?'),
            _ => out.push_str(t.text),
        }
        end = t.offset + t.text.len();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keyword(q: &str) -> Option<String> {
        match validate(q) {
            Err(CypherError::Mutation { keyword, .. }) => Some(keyword),
            _ => None,
        }
    }

    // REQ-014-153 ERR-007
    #[test]
    fn every_write_clause_is_refused_in_any_case() {
        for (q, k) in [
            ("CREATE (n:Volk {alias: 'x'})", "CREATE"),
            ("MATCH (n) create (m)", "CREATE"),
            ("MERGE (n:Volk {alias: 'x'}) RETURN n", "MERGE"),
            ("MATCH (n) DELETE n", "DELETE"),
            ("MATCH (n) Detach Delete n", "DETACH"),
            ("MATCH (n) SET n.x = 1", "SET"),
            ("MATCH (n) REMOVE n.x", "REMOVE"),
            ("DROP INDEX volk_alias", "DROP"),
            ("CALL db.labels()", "CALL"),
            ("MATCH (n) CALL { WITH n RETURN n } RETURN n", "CALL"),
            ("LOAD CSV FROM 'file:///x' AS row RETURN row", "LOAD"),
            ("MATCH (n) FOREACH (x IN [1] | SET n.y = x)", "FOREACH"),
            ("MATCH (n) WITH n /* ok */ SET n.k = 2", "SET"),
            ("USE system SHOW USERS", "USE"),
        ] {
            assert_eq!(keyword(q).as_deref(), Some(k), "{q}");
            assert_eq!(
                validate(q).map_err(|e| e.reason()),
                Err("mutation_not_allowed")
            );
        }
    }

    // REQ-014-152
    #[test]
    fn reading_queries_pass_even_when_data_or_comments_contain_write_words() {
        for q in [
            "MATCH (p:Packet) WHERE p.subject = 'CREATE user' RETURN p",
            "MATCH (p:Packet) WHERE p.subject = \"it's a MERGE \\\" DELETE\" RETURN p",
            "MATCH (v:Volk) RETURN v // then SET everything",
            "MATCH (v:Volk) /* DETACH DELETE v */ RETURN v.alias AS alias",
            "MATCH (v:`CREATE`) RETURN v",
            "MATCH (n) WHERE n.set = 1 AND n.delete IS NULL RETURN {create: n.merge}",
            "MATCH (a)-[:SET]->(b) RETURN a, b",
            "MATCH (n) WHERE n.x = $remove RETURN n",
            "optional match (v:Volk)-[r:CHILD_OF]->(p) return v, p order by v.alias skip 1 limit 5",
            "WITH 1 AS x RETURN x",
            "UNWIND [1, 2] AS x RETURN x;",
            "RETURN 'a' UNION RETURN 'b'",
            "MATCH (n) WHERE n.offset > 1 RETURN n",
        ] {
            assert!(validate(q).is_ok(), "{q}: {:?}", validate(q));
        }
    }

    // REQ-014-152
    #[test]
    fn malformed_or_non_reading_queries_are_refused_with_a_reason() {
        assert_eq!(validate("  // nothing\n"), Err(CypherError::Empty));
        assert_eq!(
            validate("MATCH (n) WHERE n.s = 'open RETURN n"),
            Err(CypherError::Unterminated {
                what: "string",
                offset: 22
            })
        );
        assert!(matches!(
            validate("MATCH (n) /* RETURN n"),
            Err(CypherError::Unterminated {
                what: "comment",
                ..
            })
        ));
        assert!(matches!(
            validate("MATCH (`n) RETURN 1"),
            Err(CypherError::Unterminated {
                what: "quoted name",
                ..
            })
        ));
        assert_eq!(
            validate("MATCH (n) RETURN n; MATCH (m) RETURN m"),
            Err(CypherError::MultipleStatements { offset: 18 })
        );
        assert!(matches!(
            validate("EXPLAIN MATCH (n) RETURN n"),
            Err(CypherError::NotReadClause { first }) if first == "EXPLAIN"
        ));
        assert_eq!(
            validate("(n)").map_err(|e| e.reason()),
            Err("invalid_cypher")
        );
        assert!(validate("MATCH (n) WHERE n.name = 'é' RETURN n").is_ok());
    }

    // REQ-014-162
    #[test]
    fn the_pattern_hides_literals_and_comments() {
        let ok = validate("MATCH (p)  WHERE p.s = 'SET x' // c\n RETURN p;").expect("valid");
        assert_eq!(ok.pattern, "MATCH (p) WHERE p.s = ? RETURN p");
    }
}
