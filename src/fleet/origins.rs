//! The careful client per origin, in process: what the transfers of one run to one origin
//! (scheme, host, port of the server that answered) share besides `--state`: a Retry-After
//! hold on the monotonic clock, pacing from the server's RateLimit fields, and the
//! transfers in flight. A run of one URL has a table of its own; a batch shares one
//! between its transfers.

use std::sync::Mutex;

/// The table of origins of one run, shared by its transfers (bounded; entries expire).
#[derive(Debug, Default)]
pub struct Origins {
    #[allow(dead_code)] // Filled in with the hold and pacing rules (being built).
    table: Mutex<()>,
}

impl Origins {
    /// An empty table.
    pub fn new() -> Origins {
        Origins::default()
    }
}
