//! Writing Prolog terms from outside input, and reading answers back.
//!
//! Every value that reaches the engine from outside (a client id, a Volk alias, a thread
//! id, a context value) is written as a *quoted atom* in pure ASCII, with every quote
//! and backslash escaped and every control or non-ASCII character written as `\xHH\`,
//! so it is inert data: `x'), halt, ('` becomes the atom `'x\'), halt, (\''` and can
//! never close the term it sits in, and no character can make the reader fail. Goals are built only
//! from [`PlTerm`] values, never by pasting raw strings into Prolog source.

use std::fmt::{self, Write as _};

use scryer_prolog::Term;

/// A Prolog term to be written into a goal.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PlTerm {
    /// An atom; written quoted and escaped.
    Atom(String),
    /// A string (`"…"`, a list of characters to the policy); written escaped like an
    /// atom. For values unique to one packet or thread (thread ids, payload
    /// references): scryer 0.10 copies its whole atom table to add one atom, so an atom
    /// per packet made every new packet cost more than the last (see
    /// `docs/governance.md`, "Facts that do not grow the atom table").
    Str(String),
    /// An integer.
    Int(i64),
    /// `name(args...)`; the functor is written quoted and escaped too.
    Compound(String, Vec<PlTerm>),
    /// A proper list.
    List(Vec<PlTerm>),
    /// A named variable, for the outputs of a goal. Only names made of ASCII letters,
    /// digits and `_` starting with an uppercase letter are written; others are refused
    /// by [`PlTerm::var`].
    Var(String),
}

impl PlTerm {
    /// An atom from any text.
    pub fn atom(text: impl Into<String>) -> Self {
        PlTerm::Atom(text.into())
    }

    /// A string from any text (see [`PlTerm::Str`]).
    pub fn string(text: impl Into<String>) -> Self {
        PlTerm::Str(text.into())
    }

    /// A message id as policies see it: `id(A, B, C)`, the UUID's 128 bits as three
    /// integers (48, 48 and 32 bits). One id per packet, so it must be neither an atom
    /// (scryer 0.10 copies its whole atom table to add one: each packet would cost more
    /// than the last), nor a string (scryer does not index strings: a lookup by id would
    /// scan every packet), nor one big integer (scryer 0.10's clause index does not find
    /// big integers). The facts store the three parts as their first arguments
    /// ([`message_id_parts`]), so a lookup by id is indexed on `A`. Text that is not a
    /// UUID is `id(Text, 0, 0)`. [`message_id_text`] reads it back.
    pub fn message_id(text: &str) -> Self {
        PlTerm::compound("id", message_id_parts(text).to_vec())
    }

    /// `name(args...)`.
    pub fn compound(name: impl Into<String>, args: Vec<PlTerm>) -> Self {
        PlTerm::Compound(name.into(), args)
    }

    /// `Key-Value`, the pair form context lists use.
    pub fn pair(key: impl Into<String>, value: PlTerm) -> Self {
        PlTerm::Compound("-".into(), vec![PlTerm::atom(key), value])
    }

    /// A variable; `None` unless `name` is a valid Prolog variable name.
    pub fn var(name: &str) -> Option<Self> {
        let mut chars = name.chars();
        let first = chars.next()?;
        let valid =
            first.is_ascii_uppercase() && chars.all(|c| c.is_ascii_alphanumeric() || c == '_');
        valid.then(|| PlTerm::Var(name.to_owned()))
    }
}

/// Writes `text` as a quoted Prolog atom in pure ASCII: `'…'` where printable ASCII
/// stands for itself, `'` and `\` are escaped (`\'`, `\\`) and every other character
/// — control characters, and every non-ASCII one (U+00A0, U+2028, a lone combining
/// mark...) — is written as the ISO escape `\xHH\` of its code point. No input can end
/// the atom early, and the goal holds no character scryer's reader could refuse (a
/// refused goal can panic the engine), while the atom read back is exactly `text`.
///
/// ```
/// use orchestrata::governance::term::quote_atom;
///
/// assert_eq!(quote_atom("U:Vz"), "'U:Vz'");
/// assert_eq!(quote_atom("it's"), "'it\\x27\\s'");
/// assert_eq!(quote_atom("\\"), "('\\x5c\\')");
/// assert_eq!(quote_atom("a\u{a0}b\u{2028}"), "'a\\xa0\\b\\x2028\\'");
/// ```
pub fn quote_atom(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 4);
    push_atom(&mut out, text);
    out
}

/// Appends [`quote_atom`]`(text)` to `out`, with no string of its own.
pub fn push_atom(out: &mut String, text: &str) {
    let parens = may_be_operator(text);
    if parens {
        out.push('(');
    }
    push_quoted(out, text);
    if parens {
        out.push(')');
    }
}

/// Whether an atom spelled `text` may be an operator of the reader: quoting does not
/// take an operator's status away, and a prefix operator such as `\` or `-` followed by
/// `,` does not read as an operand. Such atoms are written in parentheses, `('\x5c\')`,
/// which reads as the plain atom whatever the operator table says. Operators are symbol
/// sequences (`\`, `:-`, `=..`), the solo `,`, `|`, `;`, and lower-case names (`is`,
/// `dynamic`, `mod`).
fn may_be_operator(text: &str) -> bool {
    let symbolic = |c: char| "#$&*+-./:<=>?@^~\\".contains(c);
    let mut chars = text.chars();
    let Some(first) = chars.next() else {
        return false;
    };
    text.chars().all(symbolic)
        || matches!(text, "," | "|" | ";" | "!" | "[]" | "{}")
        || (first.is_ascii_lowercase() && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
}

/// `'…'` in pure ASCII (see [`quote_atom`]), without parentheses: for a functor name,
/// which must touch its `(`.
fn push_quoted(out: &mut String, text: &str) {
    push_delimited(out, text, '\'');
}

/// `text` between `quote`s in pure ASCII: printable ASCII stands for itself except the
/// quote and `\`, everything else is the ISO escape `\xHH\` (see [`quote_atom`]).
fn push_delimited(out: &mut String, text: &str, quote: char) {
    out.push(quote);
    for c in text.chars() {
        match c {
            ' '..='~' if c != quote && c != '\\' => out.push(c),
            c => {
                let _ = write!(out, "\\x{:x}\\", u32::from(c));
            }
        }
    }
    out.push(quote);
}

/// Writes `text` as a double-quoted Prolog string in pure ASCII, escaped like
/// [`quote_atom`]: no input can end the string early.
///
/// ```
/// use orchestrata::governance::term::quote_string;
///
/// assert_eq!(quote_string("t-1"), "\"t-1\"");
/// assert_eq!(quote_string("say \"hi\""), "\"say \\x22\\hi\\x22\\\"");
/// ```
pub fn quote_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    push_delimited(&mut out, text, '"');
    out
}

impl PlTerm {
    /// Appends the term's text to `out`: what `Display` writes, without the
    /// formatter's indirection per term or a string per atom (goals are written for
    /// every decision, and recorded with it).
    pub fn write_to(&self, out: &mut String) {
        match self {
            PlTerm::Atom(a) => push_atom(out, a),
            PlTerm::Str(s) => push_delimited(out, s, '"'),
            // A negative literal directly after `(` or `,` parses as a number.
            PlTerm::Int(i) => {
                let _ = write!(out, "{i}");
            }
            PlTerm::Var(v) => out.push_str(v),
            PlTerm::List(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    item.write_to(out);
                }
                out.push(']');
            }
            PlTerm::Compound(name, args) if args.is_empty() => push_atom(out, name),
            PlTerm::Compound(name, args) => {
                if is_plain_name(name) {
                    out.push_str(name);
                } else {
                    push_quoted(out, name);
                }
                out.push('(');
                for (i, arg) in args.iter().enumerate() {
                    if i > 0 {
                        out.push(',');
                    }
                    arg.write_to(out);
                }
                out.push(')');
            }
        }
    }
}

impl fmt::Display for PlTerm {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        self.write_to(&mut out);
        f.write_str(&out)
    }
}

/// A name that needs no quotes as a functor: a lowercase letter, then letters, digits
/// or `_`.
fn is_plain_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars.next().is_some_and(|c| c.is_ascii_lowercase())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A JSON value as a Prolog term: strings become atoms, integers integers, booleans
/// `true`/`false`, `null` the atom `null`, arrays lists, objects lists of `Key-Value`;
/// other numbers become atoms of their JSON text (policies compare them as text).
pub fn json_to_term(value: &serde_json::Value) -> PlTerm {
    use serde_json::Value;
    match value {
        Value::Null => PlTerm::atom("null"),
        Value::Bool(b) => PlTerm::atom(if *b { "true" } else { "false" }),
        Value::Number(n) => n
            .as_i64()
            .map_or_else(|| PlTerm::atom(n.to_string()), PlTerm::Int),
        Value::String(s) => PlTerm::atom(s.clone()),
        Value::Array(items) => PlTerm::List(items.iter().map(json_to_term).collect()),
        Value::Object(map) => PlTerm::List(
            map.iter()
                .map(|(k, v)| PlTerm::pair(k.clone(), json_to_term(v)))
                .collect(),
        ),
    }
}

/// Appends [`json_to_term`]`(value)`'s text to `out`, writing scalars straight away.
pub fn push_json(out: &mut String, value: &serde_json::Value) {
    use serde_json::Value;
    match value {
        Value::Null => push_atom(out, "null"),
        Value::Bool(b) => push_atom(out, if *b { "true" } else { "false" }),
        Value::Number(n) => match n.as_i64() {
            Some(i) => {
                let _ = write!(out, "{i}");
            }
            None => push_atom(out, &n.to_string()),
        },
        Value::String(s) => push_atom(out, s),
        Value::Array(_) | Value::Object(_) => json_to_term(value).write_to(out),
    }
}

/// Appends the double-quoted Prolog string [`quote_string`]`(text)` to `out`.
pub fn push_string(out: &mut String, text: &str) {
    push_delimited(out, text, '"');
}

/// Text of an answer term that should be an atom (or a string, or a number).
pub fn term_text(term: &Term) -> Option<String> {
    match term {
        Term::Atom(a) => Some(a.clone()),
        Term::String(s) => Some(s.clone()),
        Term::Integer(i) => Some(i.to_string()),
        Term::List(items) if items.is_empty() => Some("[]".into()),
        _ => None,
    }
}

/// The elements of an answer term that should be a list (`[]` included).
pub fn term_list(term: &Term) -> Option<&[Term]> {
    match term {
        Term::List(items) => Some(items),
        Term::Atom(a) if a == "[]" => Some(&[]),
        _ => None,
    }
}

/// The three parts of a message id as the packet facts store them (see
/// [`PlTerm::message_id`]).
pub fn message_id_parts(text: &str) -> [PlTerm; 3] {
    match uuid::Uuid::parse_str(text) {
        Ok(id) => {
            let v = id.as_u128();
            let part = |shift: u32, bits: u32| {
                let mask = (1u128 << bits) - 1;
                PlTerm::Int(i64::try_from((v >> shift) & mask).unwrap_or_default())
            };
            [part(80, 48), part(32, 48), part(0, 32)]
        }
        Err(_) => [PlTerm::atom(text), PlTerm::Int(0), PlTerm::Int(0)],
    }
}

/// A message id as an answer renders it (`id(A, B, C)`, see [`PlTerm::message_id`])
/// back to its text; anything else is returned as it is.
pub fn message_id_text(rendered: &str) -> String {
    let parts: Option<Vec<&str>> = rendered
        .strip_prefix("id(")
        .and_then(|r| r.strip_suffix(')'))
        .map(|r| r.split(',').map(str::trim).collect());
    let Some(parts) = parts.filter(|p| p.len() == 3) else {
        return rendered.to_owned();
    };
    let numbers: Option<Vec<u128>> = parts.iter().map(|p| p.parse::<u128>().ok()).collect();
    match numbers.as_deref() {
        Some([a, b, c]) if *a < 1 << 48 && *b < 1 << 48 && *c < 1 << 32 => {
            uuid::Uuid::from_u128((a << 80) | (b << 32) | c).to_string()
        }
        _ if parts[1] == "0" && parts[2] == "0" => parts[0].trim_matches('\'').to_owned(),
        _ => rendered.to_owned(),
    }
}

/// A readable rendering of any answer term, e.g. for Prolog error messages.
pub fn render(term: &Term) -> String {
    let mut out = String::new();
    render_into(&mut out, term);
    out
}

fn render_into(out: &mut String, term: &Term) {
    match term {
        Term::Integer(i) => {
            let _ = write!(out, "{i}");
        }
        Term::Rational(r) => {
            let _ = write!(out, "{r}");
        }
        Term::Float(x) => {
            let _ = write!(out, "{x}");
        }
        Term::Atom(a) => out.push_str(a),
        Term::String(s) => {
            let _ = write!(out, "{s:?}");
        }
        Term::List(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render_into(out, item);
            }
            out.push(']');
        }
        Term::Compound(name, args) => {
            out.push_str(name);
            out.push('(');
            for (i, arg) in args.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                render_into(out, arg);
            }
            out.push(')');
        }
        Term::Var(v) => out.push_str(v),
        _ => out.push_str("<term>"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_id_is_three_integers_and_reads_back() {
        for id in [
            uuid::Uuid::nil(),
            uuid::Uuid::max(),
            uuid::Uuid::new_v4(),
            uuid::Uuid::new_v4(),
        ] {
            let written = PlTerm::message_id(&id.to_string()).to_string();
            assert!(written.starts_with("id("), "{written}");
            // As an answer renders it: `id(A, B, C)`.
            let rendered = written.replace(',', ", ");
            assert_eq!(message_id_text(&rendered), id.to_string(), "{rendered}");
        }
        assert_eq!(PlTerm::message_id("m-1").to_string(), "id('m-1',0,0)");
        assert_eq!(message_id_text("id(m-1, 0, 0)"), "m-1");
        assert_eq!(message_id_text("not an id"), "not an id");
        assert_eq!(message_id_text("id(1, 2)"), "id(1, 2)");
    }
}
