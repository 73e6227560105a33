//! The splay of `--splay`: how long a host waits before its first attempt, so that a fleet
//! started by the same clock (every host's cron fires at second 0 of the minute) reaches
//! the target and the store spread over the splay instead of in one instant.
//!
//! The offset is a pure function of the host and the target: a host's job starts at the
//! same offset every tick (its schedule stays regular, and two ticks never overlap more
//! than the schedule says), while the offsets of many hosts are spread evenly over
//! `[0, splay)`. It is derived from the SHA-256 of both names (FIPS 180-4), so it is the
//! same on every platform and in every version of this tool that keeps this function.
//!
//! A run's [`plan`] fits the splay inside its `--deadline` (see [`room`]): the offset is
//! counted from start-up, and the splay is shrunk when the deadline would otherwise leave
//! the first attempt too little time. Nothing here waits: the request's run does.

use crate::units::fmt_duration;
use std::time::Duration;

/// Where a run's first attempt starts under `--splay`, counted from start-up: the offset,
/// and the splay it was drawn in once the deadline had its say. `--explain` shows it, the
/// run logs it and waits it out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// The splay asked for (`--splay`, more than zero).
    pub asked: Duration,
    /// The splay the offset is drawn in: `asked`, or less when the deadline cuts it
    /// (see [`room`]).
    pub span: Duration,
    /// The deadline that cut the splay, when one did (`span < asked`).
    pub cut_by: Option<Duration>,
    /// The offset, in `[0, span)`: [`offset`] of the host and the target in `span`.
    pub offset: Duration,
}

impl Plan {
    /// The plan in words, for the log and `--explain`: "offset 15.11s of 1m for host web-17
    /// (the host name) and https://api.example:443", the cut said when there is one ("of
    /// 25s (the 1m splay cut to leave the run 25s of its 50s deadline)"). `source` says
    /// where the host's name came from.
    pub fn words(&self, host: &str, source: &str, target: &str) -> String {
        let cut = match self.cut_by {
            Some(deadline) => format!(
                " (the {} splay cut to leave the run {} of its {} deadline)",
                fmt_duration(self.asked),
                fmt_duration(deadline.saturating_sub(self.span)),
                fmt_duration(deadline)
            ),
            None => String::new(),
        };
        format!(
            "offset {} of {}{cut} for host {host} ({source}) and {target}",
            fmt_duration(self.offset),
            fmt_duration(self.span)
        )
    }
}

/// The longest splay a run may wait before its first attempt, within its `deadline`
/// (`None`: no deadline, no limit): what leaves the run, after the splay, half of its
/// deadline, or only its attempt `timeout` when that is shorter (the first attempt then
/// fits whole, and retries get what is left). So a splay never takes more than half the
/// deadline unless `--timeout` says an attempt needs less than that.
pub fn room(deadline: Option<Duration>, timeout: Option<Duration>) -> Option<Duration> {
    let deadline = deadline?;
    let keep = timeout.map_or(deadline / 2, |t| t.min(deadline / 2));
    Some(deadline - keep)
}

/// The plan of a run of `host` towards `target` that asked for a splay of `asked`, within
/// its `deadline` and attempt `timeout` (see [`room`]). A splay cut to fit is the same
/// splay shrunk, not clipped: the offset keeps its place in it (the same fraction of the
/// span), so a fleet whose deadline cuts its splay stays evenly spread over what is left,
/// rather than piling up at the cut.
pub fn plan(
    host: &str,
    target: &str,
    asked: Duration,
    (deadline, timeout): (Option<Duration>, Option<Duration>),
) -> Plan {
    let (span, cut_by) = match room(deadline, timeout) {
        Some(room) if room < asked => (room, deadline),
        _ => (asked, None),
    };
    Plan {
        asked,
        span,
        cut_by,
        offset: offset(host, target, span),
    }
}

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
    fn the_deadline_cuts_the_splay_to_leave_half_of_it_or_the_attempts_timeout() {
        let s = Duration::from_secs;
        assert_eq!(room(None, Some(s(10))), None);
        assert_eq!(room(Some(s(50)), None), Some(s(25)));
        assert_eq!(room(Some(s(55)), Some(s(5))), Some(s(50)));
        assert_eq!(room(Some(s(50)), Some(s(40))), Some(s(25)));
        let host = "web-17";
        let target = "https://api.example:443";
        let free = plan(host, target, MINUTE, (None, None));
        assert_eq!((free.span, free.cut_by), (MINUTE, None));
        assert_eq!(free.offset, offset(host, target, MINUTE));
        let fits = plan(host, target, s(20), (Some(s(50)), None));
        assert_eq!((fits.span, fits.cut_by), (s(20), None));
        let cut = plan(host, target, MINUTE, (Some(s(50)), None));
        assert_eq!((cut.span, cut.cut_by), (s(25), Some(s(50))));
        assert!(cut.offset < s(25));
        // The same place in the shrunk splay: 15.109475s of 60s is 6.295614s of 25s.
        assert_eq!(cut.offset, Duration::from_micros(6_295_614));
        assert_eq!(
            cut.words(host, "the host name", target),
            "offset 6.3s of 25s (the 1m splay cut to leave the run 25s of its 50s deadline) \
             for host web-17 (the host name) and https://api.example:443"
        );
        assert_eq!(
            fits.words(host, "$RETRY_HTTP_HOST_ID", target),
            format!(
                "offset {} of 20s for host web-17 ($RETRY_HTTP_HOST_ID) and https://api.example:443",
                fmt_duration(fits.offset)
            )
        );
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
