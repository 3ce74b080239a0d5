//! Environment overrides of the YAML config, and finding a key's line in the file.
//!
//! The rule: a variable named `ORCHESTRATA_<SECTION>__<KEY>[__<SUBKEY>...]` sets the key
//! `<section>.<key>[.<subkey>...]` of the file (names are lower-cased; `__`, two
//! underscores, separates levels, so single underscores stay inside a key name:
//! `ORCHESTRATA_LOG__DATA_DIR` sets `log.data_dir`). The value is read as YAML: `100` is
//! a number, `true` a boolean, `[a, b]` a list, `{k: v}` a map, anything else text. When
//! the file already holds text at that key, a number or boolean stays text (so a token of
//! digits is not turned into a number); quote the value (`'"0123"'`) to force text anywhere.
//! Variables without `__` (`ORCHESTRATA_CONFIG`, `ORCHESTRATA_LISTEN`, `ORCHESTRATA_LOG`,
//! `ORCHESTRATA_TEST_KAFKA`) are flags of their own, not overrides.

use serde_yaml_ng::{Mapping, Value};

use super::system::SystemConfigError;

/// Prefix of every override variable.
pub const ENV_PREFIX: &str = "ORCHESTRATA_";
/// Separator of key levels inside a variable name.
pub const ENV_SEPARATOR: &str = "__";

/// One override taken from the environment.
#[derive(Debug, Clone, PartialEq)]
pub struct EnvOverride {
    /// The variable, e.g. `ORCHESTRATA_LOG__KAFKA`.
    pub var: String,
    /// The key path it sets, e.g. `["log", "kafka"]`.
    pub path: Vec<String>,
    /// The raw value.
    pub value: String,
}

impl EnvOverride {
    /// The dotted key, e.g. `log.kafka`.
    pub fn key(&self) -> String {
        self.path.join(".")
    }
}

/// The overrides among `vars` (e.g. `std::env::vars()`), sorted by variable name so the
/// result does not depend on the environment's order.
pub fn overrides(
    vars: impl IntoIterator<Item = (String, String)>,
) -> Result<Vec<EnvOverride>, SystemConfigError> {
    let mut found = Vec::new();
    for (var, value) in vars {
        let Some(rest) = var.strip_prefix(ENV_PREFIX) else {
            continue;
        };
        if !rest.contains(ENV_SEPARATOR) {
            continue;
        }
        let path: Vec<String> = rest
            .split(ENV_SEPARATOR)
            .map(|s| s.to_ascii_lowercase())
            .collect();
        if path.iter().any(String::is_empty) {
            return Err(SystemConfigError::Env {
                var,
                reason: "empty key level (three or more underscores in a row, or a trailing `__`)"
                    .into(),
            });
        }
        found.push(EnvOverride { var, path, value });
    }
    found.sort_by(|a, b| a.var.cmp(&b.var));
    Ok(found)
}

/// Sets each override in `doc` (a YAML mapping; created when null).
pub fn apply(doc: &mut Value, overrides: &[EnvOverride]) -> Result<(), SystemConfigError> {
    for o in overrides {
        let mut node = &mut *doc;
        for (depth, level) in o.path.iter().enumerate() {
            if node.is_null() {
                *node = Value::Mapping(Mapping::new());
            }
            let Value::Mapping(map) = node else {
                return Err(SystemConfigError::Env {
                    var: o.var.clone(),
                    reason: format!(
                        "`{}` is not a map in the file, so it has no key `{level}`",
                        o.path[..depth].join(".")
                    ),
                });
            };
            node = map
                .entry(Value::String(level.clone()))
                .or_insert(Value::Null);
        }
        let parsed: Value =
            serde_yaml_ng::from_str(&o.value).unwrap_or_else(|_| Value::String(o.value.clone()));
        let keep_text = node.is_string() && (parsed.is_number() || parsed.is_bool());
        *node = if keep_text || (parsed.is_null() && !o.value.trim().is_empty()) {
            Value::String(o.value.clone())
        } else {
            parsed
        };
    }
    Ok(())
}

/// The 1-based line of the dotted `key` (e.g. `gateway.tokens[0].token`) in the YAML
/// `text`, found by indentation; `None` when the key is not written in the file.
pub fn line_of(text: &str, key: &str) -> Option<usize> {
    let levels: Vec<&str> = key
        .split('.')
        .map(|l| l.split('[').next().unwrap_or(l))
        .filter(|l| !l.is_empty())
        .collect();
    let lines: Vec<&str> = text.lines().collect();
    let mut from = 0;
    let mut parent_indent: Option<usize> = None;
    let mut found = None;
    for level in levels {
        let mut hit = None;
        for (i, line) in lines.iter().enumerate().skip(from) {
            let trimmed = line.trim_start().trim_start_matches("- ");
            if trimmed.is_empty() || trimmed.starts_with('#') {
                continue;
            }
            let indent = line.len() - line.trim_start().len();
            if i > from && parent_indent.is_some_and(|p| indent <= p) {
                break;
            }
            let name = trimmed.trim_start_matches(['"', '\'']);
            if name.starts_with(level)
                && name[level.len()..]
                    .trim_start_matches(['"', '\''])
                    .starts_with(':')
            {
                hit = Some((i, indent));
                break;
            }
        }
        let (i, indent) = hit?;
        found = Some(i + 1);
        from = i + 1;
        parent_indent = Some(indent);
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(list: &[(&str, &str)]) -> Vec<(String, String)> {
        list.iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn names_map_to_lower_case_key_paths_and_plain_flags_are_skipped() {
        let found = overrides(vars(&[
            ("ORCHESTRATA_LOG__DATA_DIR", "/d"),
            ("ORCHESTRATA_CONFIG", "x.yaml"),
            ("ORCHESTRATA_LOG", "debug"),
            ("PATH", "/bin"),
        ]))
        .expect("valid");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].key(), "log.data_dir");
        assert!(overrides(vars(&[("ORCHESTRATA_LOG____X", "1")])).is_err());
    }

    #[test]
    fn values_are_yaml_but_text_stays_text() {
        let mut doc: Value =
            serde_yaml_ng::from_str("gateway:\n  static_token: abc\n").expect("yaml");
        let o = overrides(vars(&[
            ("ORCHESTRATA_GATEWAY__STATIC_TOKEN", "0123"),
            ("ORCHESTRATA_GATEWAY__MAX_CLIENTS", "7"),
        ]))
        .expect("valid");
        apply(&mut doc, &o).expect("applies");
        assert_eq!(doc["gateway"]["static_token"], Value::String("0123".into()));
        assert_eq!(doc["gateway"]["max_clients"], Value::from(7));
    }

    #[test]
    fn overriding_inside_a_scalar_is_an_error() {
        let mut doc: Value = serde_yaml_ng::from_str("log: 5\n").expect("yaml");
        let o = overrides(vars(&[("ORCHESTRATA_LOG__KAFKA", "h:1")])).expect("valid");
        assert!(apply(&mut doc, &o).is_err());
    }

    #[test]
    fn lines_are_found_by_indentation() {
        let text =
            "log:\n  fsync: x\ngateway:\n  # c\n  max_clients: 0\n  tokens:\n    - token: ''\n";
        assert_eq!(line_of(text, "log.fsync"), Some(2));
        assert_eq!(line_of(text, "gateway.max_clients"), Some(5));
        assert_eq!(line_of(text, "gateway.tokens[0].token"), Some(7));
        assert_eq!(line_of(text, "gateway.listen"), None);
    }
}
