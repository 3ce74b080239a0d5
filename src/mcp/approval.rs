//! Approval tokens: what stands between a language model and a mutating gateway call
//! (REQ-014-205).
//!
//! A mutating tool runs only when its call carries an `approval_token` that the `approve`
//! tool issued for **that tool** and **those exact arguments**, less than 300 s ago, and
//! that was never presented before. The MCP client shows every tool call to its user
//! before running it, so `approve` is the human's explicit "yes" for one specific action.
//!
//! The book never keeps a token itself, only its SHA-256 digest: a token cannot be read
//! back out of memory dumps or logs, and a forged token is simply a digest the book has
//! never seen. A token presented for the wrong tool or the wrong arguments is burnt as
//! well as refused (fail closed: it was shown where it did not belong).

use std::collections::{HashMap, VecDeque};
use std::fmt;
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use uuid::Uuid;

/// How long an approval stays valid.
pub const APPROVAL_TTL: Duration = Duration::from_secs(300);

/// At most this many grants are kept (used ones included, until they are forgotten);
/// issuing one more forgets the oldest, whose token then reads as unknown.
pub const MAX_GRANTS: usize = 4096;

/// Why a presented token does not let the call through. Each carries the stable word
/// ([`Refusal::reason`]) that goes into the ledger and the refusal the client sees.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    /// A mutating call without `approval_token`.
    #[error("`{tool}` changes state and needs an approval token: call `approve` with {{\"tool\":\"{tool}\",\"arguments\":<the same arguments>}}, then call `{tool}` again with the same arguments plus \"approval_token\"")]
    Missing {
        /// The tool called.
        tool: String,
    },
    /// `approval_token` is present but not a non-empty string.
    #[error("approval_token: must be a non-empty string")]
    Malformed,
    /// No such token was ever issued (forged, mistyped, or issued by another server).
    #[error("approval_token: unknown token (never issued by this server)")]
    Unknown,
    /// The token was already redeemed (or burnt by a misuse).
    #[error("approval_token: already used (tokens are single-use)")]
    Reused,
    /// The token is older than [`APPROVAL_TTL`].
    #[error("approval_token: expired ({}s after it was issued)", APPROVAL_TTL.as_secs())]
    Expired,
    /// The token was issued for another tool.
    #[error("approval_token: issued for `{approved}`, not `{called}`")]
    WrongTool {
        /// The tool the token is bound to.
        approved: String,
        /// The tool it was presented to.
        called: String,
    },
    /// The token was issued for different arguments.
    #[error("approval_token: the arguments differ from the approved ones (approve these exact arguments)")]
    WrongArguments,
}

impl Refusal {
    /// The stable snake_case word for ledgers and clients.
    pub fn reason(&self) -> &'static str {
        match self {
            Refusal::Missing { .. } => "approval_required",
            Refusal::Malformed => "approval_token_malformed",
            Refusal::Unknown => "approval_token_unknown",
            Refusal::Reused => "approval_token_reused",
            Refusal::Expired => "approval_token_expired",
            Refusal::WrongTool { .. } => "approval_token_wrong_tool",
            Refusal::WrongArguments => "approval_token_wrong_arguments",
        }
    }
}

/// A freshly issued token. Its `Debug` hides the secret.
pub struct Issued {
    /// The secret to hand to the caller (64 hex characters, 244 random bits).
    pub token: String,
    /// Seconds until it expires.
    pub expires_in: Duration,
}

impl fmt::Debug for Issued {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Issued")
            .field("token", &"<secret>")
            .field("expires_in", &self.expires_in)
            .finish()
    }
}

struct Grant {
    tool: String,
    arguments_hash: String,
    issued_at: Instant,
    used: bool,
}

/// The outstanding approvals of one MCP server process.
#[derive(Default)]
pub struct ApprovalBook {
    grants: HashMap<[u8; 32], Grant>,
    /// Digests in issue order (issue times never decrease), for expiry and the cap.
    order: VecDeque<(Instant, [u8; 32])>,
}

fn digest(token: &str) -> [u8; 32] {
    Sha256::digest(token.as_bytes()).into()
}

impl ApprovalBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// Issues a single-use token for `tool` with arguments whose
    /// [`arguments_hash`](super::tools::arguments_hash) is `arguments_hash`, valid for
    /// [`APPROVAL_TTL`] from `now`.
    pub fn issue(&mut self, tool: &str, arguments_hash: &str, now: Instant) -> Issued {
        self.forget_expired(now);
        while self.order.len() >= MAX_GRANTS {
            if let Some((_, oldest)) = self.order.pop_front() {
                self.grants.remove(&oldest);
            }
        }
        let token = format!("{}{}", Uuid::new_v4().simple(), Uuid::new_v4().simple());
        let key = digest(&token);
        self.order.push_back((now, key));
        self.grants.insert(
            key,
            Grant {
                tool: tool.to_owned(),
                arguments_hash: arguments_hash.to_owned(),
                issued_at: now,
                used: false,
            },
        );
        Issued {
            token,
            expires_in: APPROVAL_TTL,
        }
    }

    /// Redeems `token` for a call of `tool` with arguments hashing to `arguments_hash`.
    /// Success consumes the token; so does a presentation to the wrong tool or with the
    /// wrong arguments.
    pub fn redeem(
        &mut self,
        token: &str,
        tool: &str,
        arguments_hash: &str,
        now: Instant,
    ) -> Result<(), Refusal> {
        let grant = self
            .grants
            .get_mut(&digest(token))
            .ok_or(Refusal::Unknown)?;
        if grant.used {
            return Err(Refusal::Reused);
        }
        if now.saturating_duration_since(grant.issued_at) >= APPROVAL_TTL {
            return Err(Refusal::Expired);
        }
        grant.used = true;
        if grant.tool != tool {
            return Err(Refusal::WrongTool {
                approved: grant.tool.clone(),
                called: tool.to_owned(),
            });
        }
        if grant.arguments_hash != arguments_hash {
            return Err(Refusal::WrongArguments);
        }
        Ok(())
    }

    /// Drops grants expired for longer than a TTL (until then a late reuse still reads
    /// "expired" or "already used" rather than "unknown").
    fn forget_expired(&mut self, now: Instant) {
        while let Some((issued_at, key)) = self.order.front().copied() {
            if now.saturating_duration_since(issued_at) < APPROVAL_TTL * 2 {
                break;
            }
            self.order.pop_front();
            self.grants.remove(&key);
        }
    }

    /// Outstanding grants (used or not, not yet forgotten).
    pub fn len(&self) -> usize {
        self.grants.len()
    }

    /// Whether no grant is outstanding.
    pub fn is_empty(&self) -> bool {
        self.grants.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    // REQ-014-205
    #[test]
    fn a_token_lets_exactly_one_call_of_its_tool_through() {
        let mut book = ApprovalBook::new();
        let now = Instant::now();
        let issued = book.issue("cxp_send", "h1", now);
        assert_eq!(issued.token.len(), 64);
        assert_eq!(book.redeem(&issued.token, "cxp_send", "h1", now), Ok(()));
        assert_eq!(
            book.redeem(&issued.token, "cxp_send", "h1", now),
            Err(Refusal::Reused)
        );
    }

    // REQ-014-205
    #[test]
    fn a_token_expires_after_300_seconds() {
        let mut book = ApprovalBook::new();
        let now = Instant::now();
        let issued = book.issue("cxp_send", "h1", now);
        let late = now + APPROVAL_TTL;
        let refusal = book.redeem(&issued.token, "cxp_send", "h1", late);
        assert_eq!(refusal, Err(Refusal::Expired));
        assert_eq!(refusal.unwrap_err().reason(), "approval_token_expired");
        let just_in_time = book.issue("cxp_send", "h1", now);
        assert_eq!(
            book.redeem(
                &just_in_time.token,
                "cxp_send",
                "h1",
                now + APPROVAL_TTL - Duration::from_millis(1)
            ),
            Ok(())
        );
    }

    // REQ-014-205
    #[test]
    fn wrong_tool_and_wrong_arguments_are_refused_and_burn_the_token() {
        let mut book = ApprovalBook::new();
        let now = Instant::now();
        let t = book.issue("cxp_send", "h1", now).token;
        assert_eq!(
            book.redeem(&t, "volk_register", "h1", now),
            Err(Refusal::WrongTool {
                approved: "cxp_send".into(),
                called: "volk_register".into()
            })
        );
        assert_eq!(book.redeem(&t, "cxp_send", "h1", now), Err(Refusal::Reused));
        let t = book.issue("cxp_send", "h1", now).token;
        assert_eq!(
            book.redeem(&t, "cxp_send", "h2", now),
            Err(Refusal::WrongArguments)
        );
        assert_eq!(book.redeem(&t, "cxp_send", "h1", now), Err(Refusal::Reused));
    }

    // REQ-014-205
    #[test]
    fn forged_tokens_are_unknown_and_the_book_keeps_no_secret() {
        let mut book = ApprovalBook::new();
        let now = Instant::now();
        let issued = book.issue("cxp_send", "h1", now);
        let forged = "0".repeat(64);
        assert_eq!(
            book.redeem(&forged, "cxp_send", "h1", now),
            Err(Refusal::Unknown)
        );
        assert!(!format!("{issued:?}").contains(&issued.token));
        // Old grants are forgotten once expired for a full TTL.
        book.issue("cxp_ack", "h", now + APPROVAL_TTL * 3);
        assert_eq!(book.len(), 1);
    }

    // REQ-014-205
    #[test]
    fn the_book_is_bounded_and_forgets_the_oldest_first() {
        let mut book = ApprovalBook::new();
        let now = Instant::now();
        let first = book.issue("cxp_send", "h", now).token;
        let second = book.issue("cxp_send", "h", now).token;
        for _ in 2..MAX_GRANTS {
            book.issue("cxp_send", "h", now);
        }
        assert_eq!(book.len(), MAX_GRANTS);
        book.issue("cxp_send", "h", now);
        assert_eq!(book.len(), MAX_GRANTS);
        assert_eq!(
            book.redeem(&first, "cxp_send", "h", now),
            Err(Refusal::Unknown)
        );
        assert_eq!(book.redeem(&second, "cxp_send", "h", now), Ok(()));
    }
}
