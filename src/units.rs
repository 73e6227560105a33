//! Unit conversions shared by the log, the state file and the simulator, so each number is
//! computed one way everywhere.

use std::time::Duration;

/// `d` in whole milliseconds, rounded down (999µs is 0). Saturates at `u64::MAX` (about
/// 584 million years, far beyond any duration a flag accepts) instead of wrapping.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn millis_rounds_down_and_saturates() {
        assert_eq!(millis(Duration::ZERO), 0);
        assert_eq!(millis(Duration::from_micros(999)), 0);
        assert_eq!(millis(Duration::from_micros(1_500)), 1);
        assert_eq!(millis(Duration::from_secs(90)), 90_000);
        assert_eq!(millis(Duration::MAX), u64::MAX);
    }
}
