//! Unit conversions shared by the log, the state file and the simulator, so each number is
//! computed one way everywhere, and the one way a duration is written for people.

use std::time::Duration;

/// `d` in whole milliseconds, rounded down (999µs is 0). Saturates at `u64::MAX` (about
/// 584 million years, far beyond any duration a flag accepts) instead of wrapping.
pub fn millis(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

/// `d` in whole microseconds, rounded down, saturating at `u64::MAX`.
pub fn micros(d: Duration) -> u64 {
    u64::try_from(d.as_micros()).unwrap_or(u64::MAX)
}

/// Formats a duration compactly: 41ms, 1.42s, 2m03s.
pub fn fmt_duration(d: Duration) -> String {
    let ms = d.as_millis();
    if ms == 0 && !d.is_zero() {
        format!("{}us", d.as_micros())
    } else if ms < 1000 {
        format!("{ms}ms")
    } else if ms < 60_000 {
        let s = format!("{:.2}", d.as_secs_f64());
        format!("{}s", s.trim_end_matches('0').trim_end_matches('.'))
    } else if ms < 3_600_000 {
        let secs = d.as_secs();
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else if ms < 86_400_000 {
        let mins = d.as_secs() / 60;
        format!("{}h{:02}m", mins / 60, mins % 60)
    } else {
        let hours = d.as_secs() / 3600;
        format!("{}d{:02}h", hours / 24, hours % 24)
    }
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
        assert_eq!(micros(Duration::from_nanos(1_999)), 1);
        assert_eq!(micros(Duration::MAX), u64::MAX);
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_duration(Duration::from_millis(41)), "41ms");
        assert_eq!(fmt_duration(Duration::from_millis(1420)), "1.42s");
        assert_eq!(fmt_duration(Duration::from_millis(2000)), "2s");
        assert_eq!(fmt_duration(Duration::from_secs(123)), "2m03s");
        assert_eq!(fmt_duration(Duration::from_secs(7380)), "2h03m");
        assert_eq!(
            fmt_duration(Duration::from_secs(2_147_483_648)),
            "24855d03h"
        );
    }
}
