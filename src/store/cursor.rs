//! What a face keeps and hands back to a store without reading it: where
//! a feed resumes ([`Cursor`]), which tenure a fenced verb may end
//! ([`Fence`]), which member of a store a row came from ([`OriginIx`]).
//! Their meaning is the backend's; a face only keeps them and gives them
//! back, so a new store can mean what it needs by them.

use std::sync::Arc;

/// Where a feed resumes: etcd a revision, a file log its identity and byte
/// offset, a file root's claims nothing (no cursor: from now). Opaque
/// bytes, cheap to clone.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Cursor(Arc<[u8]>);

impl Cursor {
    pub fn new(bytes: &[u8]) -> Cursor {
        Cursor(Arc::from(bytes))
    }

    pub fn bytes(&self) -> &[u8] {
        &self.0
    }

    /// A cursor that is one number (a revision, an offset): the backend's
    /// own spelling, kept in one place so two backends never disagree on
    /// the byte order.
    pub fn of_u64(n: u64) -> Cursor {
        Cursor::new(&n.to_be_bytes())
    }

    /// The number [`Cursor::of_u64`] made, or None when the bytes are not
    /// one (another backend's cursor: start from now).
    pub fn as_u64(&self) -> Option<u64> {
        let bytes: [u8; 8] = self.0.as_ref().try_into().ok()?;
        Some(u64::from_be_bytes(bytes))
    }
}

/// A member's place in its store: stamped into every row it lists
/// (`claims::Loc::origin`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct OriginIx(pub u16);

/// A fencing token: strictly increasing across the tenures of one key
/// (etcd: the key's create revision), so a holder whose claim ran out and
/// was taken again can never end the newer tenure. Printed as `"revision"`
/// in JSON (the contract's name).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Fence(u64);

impl Fence {
    pub fn new(n: u64) -> Fence {
        Fence(n)
    }

    pub fn get(self) -> u64 {
        self.0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_cursor_reads_back_and_any_other_reads_as_none() {
        assert_eq!(Cursor::of_u64(812).as_u64(), Some(812));
        assert_eq!(Cursor::new(b"file:3:4096").as_u64(), None);
        assert_eq!(Cursor::of_u64(7), Cursor::of_u64(7));
    }
}
