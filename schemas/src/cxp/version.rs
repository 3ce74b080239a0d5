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
    if version.major != CURRENT_VERSION.major {
        return Err(CxpError::IncompatibleVersion {
            version: version.to_string(),
            supported: CURRENT_VERSION.to_string(),
        });
    }
    if version.minor > CURRENT_VERSION.minor {
        Ok(Compatibility::CompatibleWithWarning(format!(
            "packet version {version} is newer than {CURRENT_VERSION}; unknown fields are ignored"
        )))
    } else if version.minor < CURRENT_VERSION.minor {
        Ok(Compatibility::CompatibleWithWarning(format!(
            "packet version {version} is older than {CURRENT_VERSION}; new fields take defaults"
        )))
    } else {
        Ok(Compatibility::Compatible)
    }
}
