//! The claims' view of the mkdir mutex. The mechanics (and every mutex
//! name, the recovery mutex's included) live in the crate-level
//! [`crate::mutex`], which the events log shares without depending on the
//! claims; this keeps the paths code already names (`claims::mutex::...`).

pub use crate::mutex::*;
