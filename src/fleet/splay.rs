//! The splay of `--splay`: how long a host waits before its first attempt, so that a fleet
//! started by the same clock (every host's cron fires at second 0 of the minute) reaches
//! the target and the store spread over the splay instead of in one instant.
//!
//! The offset is a pure function of the host and the target: a host's job starts at the
//! same offset every tick (its schedule stays regular, and two ticks never overlap more
//! than the schedule says), while the offsets of many hosts are spread evenly over
//! `[0, splay)`. It is derived from the SHA-256 of both names (FIPS 180-4), so it is the
//! same on every platform and in every version of this tool that keeps this function.

use std::time::Duration;

/// The offset in `[0, splay)` of `host` for `target`, to the microsecond: the first 64
/// bits of SHA-256(host, NUL, target) scaled to the splay (multiply and shift, so every
/// offset is as likely as any other, to within one part in 2^64). A splay of zero (or
/// under a microsecond) gives zero.
///
/// `host` is what names the host (`RETRY_HTTP_HOST_ID`, else the host name); `target` is
/// the target's key (scheme://host:port), so one host's jobs towards different targets
/// start at different offsets too.
pub fn offset(host: &str, target: &str, splay: Duration) -> Duration {
    let span = u64::try_from(splay.as_micros()).unwrap_or(u64::MAX);
    if span == 0 {
        return Duration::ZERO;
    }
    let mut input = Vec::with_capacity(host.len() + target.len() + 1);
    input.extend_from_slice(host.as_bytes());
    input.push(0);
    input.extend_from_slice(target.as_bytes());
    let digest = ring::digest::digest(&ring::digest::SHA256, &input);
    let mut first = [0u8; 8];
    first.copy_from_slice(&digest.as_ref()[..8]);
    let h = u64::from_be_bytes(first);
    let micros = (u128::from(h) * u128::from(span)) >> 64;
    Duration::from_micros(micros as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);

    #[test]
    fn the_offset_is_stable_and_within_the_splay() {
        let a = offset("web-17", "https://api.example:443", MINUTE);
        assert_eq!(a, offset("web-17", "https://api.example:443", MINUTE));
        assert!(a < MINUTE);
        assert_ne!(a, offset("web-18", "https://api.example:443", MINUTE));
        assert_ne!(a, offset("web-17", "https://other.example:443", MINUTE));
        assert_eq!(offset("web-17", "x", Duration::ZERO), Duration::ZERO);
        assert_eq!(
            offset("web-17", "x", Duration::from_nanos(999)),
            Duration::ZERO
        );
        // The value itself is part of the contract: a host keeps its offset across
        // versions. (SHA-256 of "web-17\0https://api.example:443", scaled to a minute,
        // computed apart with Python's hashlib.)
        assert_eq!(a, Duration::from_micros(15_109_475));
        let huge = offset("h", "t", Duration::MAX);
        assert!(huge < Duration::MAX);
    }

    #[test]
    fn a_fleet_is_spread_evenly_over_the_splay() {
        // 100,000 hosts over 60 one-second slots: each slot holds about 1,667; with
        // offsets spread as uniformly random ones, the fullest slot stays within 10 %.
        let mut slots = [0u32; 60];
        for i in 0..100_000 {
            let o = offset(&format!("host-{i}"), "https://api.example:443", MINUTE);
            slots[o.as_secs() as usize] += 1;
        }
        let peak = *slots.iter().max().unwrap_or(&0);
        let least = *slots.iter().min().unwrap_or(&0);
        let mean = 100_000.0 / 60.0;
        assert!(f64::from(peak) / mean < 1.1, "peak {peak}, mean {mean:.0}");
        assert!(
            f64::from(least) / mean > 0.9,
            "least {least}, mean {mean:.0}"
        );
    }
}
