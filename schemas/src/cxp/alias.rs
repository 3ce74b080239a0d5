//! Volk aliases: the addresses of agents, `U:` followed by two letters.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::error::CxpError;

/// A validated Volk alias matching `^U:[A-Z][A-Za-z]$` (e.g. `U:Ox`, `U:Vz`, `U:PS`).
///
/// The spec writes the pattern `U:[A-Z][a-z]` but lists Volks such as `U:PS`; we accept
/// an upper- or lower-case second letter. The alias is stored inline (4 bytes), so a
/// packet's addresses cost no heap.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct VolkAlias([u8; 4]);

impl VolkAlias {
    /// Parse an alias, naming `field` in the error when it does not match the pattern.
    pub fn parse_field(s: &str, field: &'static str) -> Result<Self, CxpError> {
        let b = s.as_bytes();
        if b.len() == 4
            && b[0] == b'U'
            && b[1] == b':'
            && b[2].is_ascii_uppercase()
            && b[3].is_ascii_alphabetic()
        {
            Ok(VolkAlias([b[0], b[1], b[2], b[3]]))
        } else {
            Err(CxpError::invalid(
                field,
                format!("`{s}` is not a Volk alias (expected ^U:[A-Z][A-Za-z]$)"),
            ))
        }
    }

    /// Parse an alias (errors name the field `alias`).
    pub fn parse(s: &str) -> Result<Self, CxpError> {
        Self::parse_field(s, "alias")
    }

    /// The alias as text, e.g. `"U:Ox"`.
    pub fn as_str(&self) -> &str {
        // The four bytes were checked to be ASCII at construction.
        std::str::from_utf8(&self.0).unwrap_or("U:??")
    }
}

impl fmt::Display for VolkAlias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl fmt::Debug for VolkAlias {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "VolkAlias({})", self.as_str())
    }
}

impl FromStr for VolkAlias {
    type Err = CxpError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Self::parse(s)
    }
}

impl TryFrom<&str> for VolkAlias {
    type Error = CxpError;
    fn try_from(s: &str) -> Result<Self, Self::Error> {
        Self::parse(s)
    }
}

impl Serialize for VolkAlias {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for VolkAlias {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        VolkAlias::parse(&s).map_err(serde::de::Error::custom)
    }
}
