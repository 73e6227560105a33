//! Unit conversions shared by the log, the state file and the simulator, so each number is
//! computed one way everywhere, and every way a duration is written, each named for its
//! use: [`fmt_duration`] for people (the log, the summary, `--explain`, messages), in its
//! exact form [`fmt_given`] where the duration is a value the user gave (echoed in an
//! error, the jitter mode's name, a window or a bound), and curl's two forms where this tool speaks as curl does:
//! [`curl_seconds`] (a value for curl's seconds flags: `2.5`) and [`curl_time`] (`-w`'s
//! times: `0.042000`); and [`flag_value`], a duration written as this tool's own duration
//! flags take it back, to the millisecond (`simulate --search`'s flags to paste).

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

/// Formats a duration for people, compactly, as a duration flag takes it: 41ms, 1.42s, 2m03s, 2m,
/// 1h30m, 24h, 7d. Below a minute, to the hundredth of a second; below an hour, to the
/// second; up to 48 hours, to the minute, in hours (a day is 24h, as it is typed); beyond,
/// to the hour, in days (`2d03h`). A part that is zero is left out (`2m`, not `2m00s`).
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
        with_part(secs / 60, 'm', secs % 60, 's')
    } else if ms < 48 * 3_600_000 {
        let mins = d.as_secs() / 60;
        with_part(mins / 60, 'h', mins % 60, 'm')
    } else {
        let hours = d.as_secs() / 3600;
        with_part(hours / 24, 'd', hours % 24, 'h')
    }
}

/// A duration the user gave, written as [`fmt_duration`] writes it when that is exact, and
/// otherwise in the smallest form that is (`1500us`, `1.234s`, `90.5s`, `3601s`): an error
/// that quotes two values must never show them equal when they are not (`--base 1500us`
/// above `--cap 1ms`), and a label must read back as the value it names.
pub fn fmt_given(d: Duration) -> String {
    let nanos = d.subsec_nanos();
    if !nanos.is_multiple_of(1_000_000) {
        return if nanos.is_multiple_of(1000) {
            format!("{}us", d.as_micros())
        } else {
            format!("{}ns", d.as_nanos())
        };
    }
    let secs = d.as_secs();
    // Where fmt_duration rounds: to the hundredth below a minute, to the second below an
    // hour, to the minute up to 48 hours, to the hour beyond.
    let exact = match secs {
        0 => true,
        s if s < 60 => (nanos / 1_000_000).is_multiple_of(10),
        _ if nanos != 0 => false,
        s if s < 3600 => true,
        s if s < 48 * 3600 => s.is_multiple_of(60),
        s => s.is_multiple_of(3600),
    };
    if exact {
        fmt_duration(d)
    } else if nanos != 0 {
        format!("{}s", curl_seconds(d))
    } else {
        format!("{secs}s")
    }
}

/// `d` in curl's plain seconds, as its seconds flags (`--retry-delay`, `-m`) take them, to
/// the millisecond: `60`, `2.5`, `0.25`.
pub fn curl_seconds(d: Duration) -> String {
    let ms = d.as_millis();
    let text = format!("{}.{:03}", ms / 1000, ms % 1000);
    text.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// `d` as this tool's duration flags take it back, to the millisecond, for a command line
/// to paste: milliseconds below a second (`620ms`), seconds above with up to three
/// decimals (`1.1s`, `24s`, `90s`; never minutes, unlike [`fmt_duration`], which rounds to
/// the hundredth). Below a millisecond it is `0ms`.
pub fn flag_value(d: Duration) -> String {
    match d.as_millis() {
        ms if ms < 1000 => format!("{ms}ms"),
        _ => format!("{}s", curl_seconds(d)),
    }
}

/// `d` in seconds with six decimals, as curl's `-w` writes its times (`%{time_total}`):
/// `0.042000`.
pub fn curl_time(d: Duration) -> String {
    format!("{:.6}", d.as_secs_f64())
}

/// `12m`, or `12m05s` when the smaller part is not zero (two digits, so that it reads as
/// a clock does).
fn with_part(big: u64, unit: char, small: u64, small_unit: char) -> String {
    if small == 0 {
        format!("{big}{unit}")
    } else {
        format!("{big}{unit}{small:02}{small_unit}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_given_duration_is_written_exactly() {
        let ms = Duration::from_millis;
        let cases = [
            (Duration::from_micros(1500), "1500us"),
            (Duration::from_nanos(1_000_000_001), "1000000001ns"),
            (ms(1), "1ms"),
            (ms(1500), "1.5s"),
            (ms(1234), "1.234s"),
            (ms(90_500), "90.5s"),
            (ms(90_000), "1m30s"),
            (Duration::from_secs(3601), "3601s"),
            (Duration::from_secs(3600), "1h"),
            (Duration::from_secs(86_400), "24h"),
            (Duration::from_secs(49 * 3600 + 60), "176460s"),
            (Duration::from_secs(3 * 86_400), "3d"),
        ];
        for (d, want) in cases {
            assert_eq!(fmt_given(d), want, "{d:?}");
        }
        // Two values that differ never read the same.
        assert_ne!(fmt_given(Duration::from_micros(1500)), fmt_given(ms(1)));
    }

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
    fn curls_forms_are_plain_seconds() {
        assert_eq!(curl_seconds(Duration::from_millis(2500)), "2.5");
        assert_eq!(curl_seconds(Duration::from_millis(250)), "0.25");
        assert_eq!(curl_seconds(Duration::from_secs(3)), "3");
        assert_eq!(curl_seconds(Duration::ZERO), "0");
        let ms = Duration::from_millis;
        let flags = [ms(620), ms(1100), ms(24_000), ms(90_000), ms(1234)].map(flag_value);
        assert_eq!(flags, ["620ms", "1.1s", "24s", "90s", "1.234s"]);
        assert_eq!(curl_time(Duration::from_millis(42)), "0.042000");
        assert_eq!(curl_time(Duration::from_micros(1_500_001)), "1.500001");
    }

    #[test]
    fn durations_read_well() {
        assert_eq!(fmt_duration(Duration::from_millis(41)), "41ms");
        assert_eq!(fmt_duration(Duration::from_millis(1420)), "1.42s");
        assert_eq!(fmt_duration(Duration::from_millis(2000)), "2s");
        assert_eq!(fmt_duration(Duration::from_secs(123)), "2m03s");
        assert_eq!(fmt_duration(Duration::from_secs(60)), "1m");
        assert_eq!(fmt_duration(Duration::from_secs(7380)), "2h03m");
        assert_eq!(fmt_duration(Duration::from_secs(3600)), "1h");
        assert_eq!(fmt_duration(Duration::from_secs(24 * 3600)), "24h");
        assert_eq!(fmt_duration(Duration::from_secs(36 * 3600 + 60)), "36h01m");
        assert_eq!(fmt_duration(Duration::from_secs(7 * 24 * 3600)), "7d");
        assert_eq!(
            fmt_duration(Duration::from_secs(10 * 365 * 24 * 3600)),
            "3650d"
        );
        assert_eq!(
            fmt_duration(Duration::from_secs(2_147_483_648)),
            "24855d03h"
        );
    }
}
