//! The HTTP side: the ureq agent and one exchange per call (`transport`), which proxy a
//! request goes through (`proxy`), the masking of secrets in anything printed (`redact`),
//! the request body read once and replayed (`body`), and the rules for resuming a broken
//! download (`resume`). Nothing here decides whether to retry; `policy` does.

pub mod body;
pub mod proxy;
pub mod redact;
pub mod resume;
pub mod transport;
