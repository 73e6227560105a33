//! Unit conversions used in more than one place.

use std::time::Duration;

/// Whole milliseconds in `d`, saturating at `u64::MAX` (about 584 million years).
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}
