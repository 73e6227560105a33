//! The HTTP side. `transport` sends one attempt's exchange (and its redirects) on the ureq
//! agent that `agent` builds, adding the automatic request headers `headers` lists; it
//! follows redirects by `redirect`'s rules, sorts what went wrong into kinds (`failure`),
//! hands back the response's `head`, and reads its body (`receive`, gzip included; the bulk of
//! a plain body of known length moved by the kernel, `splice`). Around
//! it: where a connection goes (`network`) and the connections themselves (`connection`),
//! which proxy a request goes through (`proxy`), the masking of secrets in anything
//! printed (`redact`), the request body read once and replayed (`body`), and the rules for
//! resuming a broken download (`resume`), when each step of a request happened (`timing`, for
//! `-w`); for the cron flags, what a conditional or resuming answer means (`conditional`)
//! and the cookies of a cookie file (`cookies`). The transport's parts are private to it: the rest
//! of the crate names them through `transport`. Nothing here decides whether to retry;
//! `policy` does.

mod agent;
pub mod body;
pub mod conditional;
mod connection;
pub mod cookies;
mod failure;
mod head;
mod headers;
pub mod netrc;
mod network;
pub mod proxy;
mod receive;
mod redirect;
pub mod resume;
mod speed;
mod splice;
pub mod timing;
pub mod transport;
