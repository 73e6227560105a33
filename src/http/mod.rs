//! The HTTP side. `transport` sends one attempt's exchange (and its redirects) on the ureq
//! agent that `agent` builds, adding the automatic request headers `headers` lists; it
//! follows redirects by `redirect`'s rules, sorts what went wrong into kinds (`failure`),
//! hands back the response's `head`, and reads its body (`receive`, gzip included; the bulk
//! of a plain body of known length moved by the kernel, `splice`). Under the agent: how
//! connections are made (`network`: the resolver, the connector chain, the probes of
//! `timing`) and the connections themselves (`connection`), the only two files that use
//! ureq's unversioned API; the certificates and TLS versions (`tls`); which proxy a request
//! goes through (`proxy`). Beside it: the request body read once and replayed (`body`), the
//! rules for resuming a broken download (`resume`), when each step of a request happened
//! (`timing`, for `-w`); for the conditional flags, what a conditional or resuming answer
//! means (`conditional`), the cookies of a cookie file (`cookies`) and the `.netrc`
//! (`netrc`). The `tap` on the connection hands a plain body's socket over to `splice`
//! (Linux only). The files form a one-way graph: `transport` -> `agent` -> `tls` ->
//! `network` -> `connection` -> `tap`, and `receive` -> `splice` -> `failure`. The
//! transport's parts are private to it: the rest of the crate names them through
//! `transport`. Nothing here decides whether to retry;
//! `policy` does.

mod agent;
pub mod body;
pub mod carrier;
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
#[cfg(target_os = "linux")]
mod splice;
mod tap;
pub mod timing;
mod tls;
pub mod transport;
