//! Protocol versioning (US-010): semver, same-major compatibility, negotiation, upgrade.

use semver::Version;

use super::error::CxpError;

/// The CXP protocol version this implementation writes.
pub const CURRENT_VERSION: Version = Version::new(1, 0, 0);

/// Every version this implementation can read, oldest first (handshake offer).
pub const SUPPORTED_VERSIONS: [Version; 1] = [CURRENT_VERSION];

/// Parse a protocol version, naming `protocol_version` on malformed input.
pub fn parse_version(s: &str) -> Result<Version, CxpError> {
    Version::parse(s)
        .map_err(|e| CxpError::invalid("protocol_version", format!("`{s}` is not semver: {e}")))
}

/// How a peer's or packet's version relates to [`CURRENT_VERSION`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Compatibility {
    /// Same major and minor: fully compatible.
    Compatible,
    /// Same major, different minor: accepted; the warning says what may be missing.
    CompatibleWithWarning(String),
}

/// Decide whether a packet written in `version` can be handled here: the same major
/// version is compatible (a newer minor is accepted with a warning, since it may carry
/// fields we ignore; an older minor with a note that we may fill defaults); any other
/// major is refused with [`CxpError::IncompatibleVersion`].
pub fn check_compatibility(version: &Version) -> Result<Compatibility, CxpError> {
    check_compatibility_with(version, &CURRENT_VERSION)
}

/// [`check_compatibility`] against an explicit local version `ours` (what a peer speaking
/// `ours` would decide).
pub fn check_compatibility_with(
    version: &Version,
    ours: &Version,
) -> Result<Compatibility, CxpError> {
    if version.major != ours.major {
        return Err(CxpError::IncompatibleVersion {
            version: version.to_string(),
            supported: ours.to_string(),
        });
    }
    if version.minor > ours.minor {
        Ok(Compatibility::CompatibleWithWarning(format!(
            "packet version {version} is newer than {ours}; unknown fields are ignored"
        )))
    } else if version.minor < ours.minor {
        Ok(Compatibility::CompatibleWithWarning(format!(
            "packet version {version} is older than {ours}; new fields take defaults"
        )))
    } else {
        Ok(Compatibility::Compatible)
    }
}

/// Pick the version two sides will speak: the highest version both list; failing that,
/// the highest version that is compatible across the lists (same major; the lower of the
/// two so the older side understands it). Refused when no major version is shared.
pub fn negotiate(ours: &[Version], theirs: &[Version]) -> Result<Version, CxpError> {
    let common = ours.iter().filter(|v| theirs.contains(v)).max();
    if let Some(v) = common {
        return Ok(v.clone());
    }
    ours.iter()
        .flat_map(|o| {
            theirs
                .iter()
                .filter(move |t| t.major == o.major)
                .map(move |t| o.clone().min(t.clone()))
        })
        .max()
        .ok_or_else(|| CxpError::IncompatibleVersion {
            version: theirs
                .iter()
                .map(Version::to_string)
                .collect::<Vec<_>>()
                .join(", "),
            supported: ours
                .iter()
                .map(Version::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        })
}

/// Upgrade a packet document (JSON) written in an older protocol version to `target`:
/// every existing field (known or not) is preserved, optional fields added since are
/// filled with their defaults (`priority` 5, `metadata` {}), and `protocol_version`
/// becomes `target`. Downgrades and major-version changes are refused.
pub fn upgrade_packet(
    mut doc: serde_json::Value,
    target: &Version,
) -> Result<serde_json::Value, CxpError> {
    check_compatibility(target)?;
    let obj = doc
        .as_object_mut()
        .ok_or_else(|| CxpError::invalid("packet", "a packet document must be a JSON object"))?;
    let from = match obj.get("protocol_version") {
        Some(serde_json::Value::String(s)) => parse_version(s)?,
        Some(_) => return Err(CxpError::invalid("protocol_version", "expected a string")),
        None => return Err(CxpError::MissingField("protocol_version")),
    };
    if from.major != target.major {
        return Err(CxpError::IncompatibleVersion {
            version: from.to_string(),
            supported: target.to_string(),
        });
    }
    if from > *target {
        return Err(CxpError::invalid(
            "protocol_version",
            format!("cannot downgrade {from} to {target}"),
        ));
    }
    obj.entry("priority").or_insert(serde_json::json!(5));
    obj.entry("metadata").or_insert(serde_json::json!({}));
    obj.insert(
        "protocol_version".into(),
        serde_json::Value::String(target.to_string()),
    );
    Ok(doc)
}
