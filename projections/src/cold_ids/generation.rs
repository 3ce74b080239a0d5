//! [`Generation`]: which ids may have an index row in one generation of rows.
//!
//! Rows are keyed by the generation of their entry's sequence (`cold_ids.rs`), so
//! finding an id's row means knowing its generation. Ids the server stamped (UUID v7,
//! [`LetGoKeys::believed_stamp`]) are written in time order by one writer: a
//! generation's stamped ids span a short stretch of time, and their earliest and latest
//! stamp say which generations an id can be in. Other ids go to a Bloom filter sized
//! for the previous generation's. A filter of every id in each generation would cost
//! bytes a `cxp.send` for the server's life.
//!
//! A client's id stamped long before its generation widens that generation's span: a
//! lookup of an old id whose stamp falls inside then reads one row too many (a
//! generation that does not hold it is ruled out, as for a filter's false positive).
//! Lookups of new ids never reach the generations (`LetGoKeys::may_hold` says "never").
//!
//! [`LetGoKeys::believed_stamp`]: crate::let_go::LetGoKeys::believed_stamp

use crate::seen::Seen;

/// The ids with a row in one generation; see the module docs.
#[derive(Debug, Clone, Default)]
pub(crate) struct Generation {
    /// Earliest and latest stamp (ms) of the stamped ids with a row here.
    stamped: Option<(u64, u64)>,
    /// The other ids with a row here.
    others: Seen,
}

impl Generation {
    /// A generation whose filter's first layer is sized for `others` ids.
    pub fn starting_at(others: usize) -> Self {
        Generation {
            stamped: None,
            others: Seen::starting_at(others),
        }
    }

    /// Notes a row of `id`, stamped at `stamp` (ms) when the server stamped it.
    pub fn insert(&mut self, id: &[u8], stamp: Option<u64>) {
        match stamp {
            Some(at) => {
                let (from, to) = self.stamped.unwrap_or((at, at));
                self.stamped = Some((from.min(at), to.max(at)));
            }
            None => self.others.insert(id),
        }
    }

    /// Whether a row of `id` (whose v7 stamp, if it has one, is `stamp`) may be here.
    pub fn may_hold(&self, id: &[u8], stamp: Option<u64>) -> bool {
        let within = stamp
            .zip(self.stamped)
            .is_some_and(|(at, (from, to))| from <= at && at <= to);
        within || self.others.may_hold(id)
    }

    /// How many rows of ids that are not stamped were noted.
    pub fn others(&self) -> usize {
        self.others.len()
    }

    /// The Bloom filter of the others.
    #[cfg(test)]
    pub fn filter(&self) -> &Seen {
        &self.others
    }
}
