//! Property tests on the parsers that read untrusted or user input (arbitrary input never
//! panics, and every accepted value round-trips), and on the deadline: the attempt loop's
//! plan, run on a simulated clock at every length from 1 s to 10 min, never crosses it.

use proptest::prelude::*;
use rand::SeedableRng;
use rand::rngs::StdRng;
use retry_http::cli::values;
use retry_http::policy::retry_after;
use retry_http::policy::{self, Backoff, Fit, Hint, Jitter};
use std::time::{Duration, SystemTime};

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

proptest! {
    #[test]
    fn retry_after_never_panics(s in any::<String>(), secs in 0u64..4_000_000_000) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(secs);
        let _ = retry_after::parse(&s, now);
    }

    #[test]
    fn retry_after_delta_seconds_round_trip(n in any::<u32>()) {
        let d = retry_after::parse(&n.to_string(), SystemTime::now()).unwrap();
        prop_assert_eq!(d, Duration::from_secs(u64::from(n).min(2_147_483_648)));
    }

    #[test]
    fn retry_after_dates_round_trip(ahead in 0u64..1_000_000) {
        let now = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let date = httpdate::fmt_http_date(now + Duration::from_secs(ahead));
        prop_assert_eq!(retry_after::parse(&date, now).unwrap(), Duration::from_secs(ahead));
    }

    #[test]
    fn duration_never_panics(s in any::<String>()) {
        let _ = values::duration(&s);
        let _ = values::seconds(&s);
        let _ = values::jitter(&s);
        let _ = values::size(&s);
        let _ = values::attempts(&s);
    }

    #[test]
    fn duration_round_trips(ms in 0u64..10_000_000_000) {
        let d = Duration::from_millis(ms);
        let text = humantime::format_duration(d).to_string().replace(' ', "");
        prop_assert_eq!(values::duration(&text).unwrap(), d);
    }

    #[test]
    fn status_list_never_panics(s in "[0-9x,\\- ]{0,20}|.*") {
        let _ = values::status_set(&s);
    }

    #[test]
    fn status_list_round_trips(items in prop::collection::vec((100u16..600, 0u16..50, 0u8..3), 1..6)) {
        let spec: Vec<String> = items
            .iter()
            .map(|&(lo, len, form)| match form {
                0 => lo.to_string(),
                1 => format!("{lo}-{}", (lo + len).min(599)),
                _ => format!("{}xx", lo / 100),
            })
            .collect();
        let set = values::status_list(&spec.join(","), "--until-status").unwrap();
        let again = values::status_list(&set.to_spec(), "--until-status").unwrap();
        for code in 100..600 {
            prop_assert_eq!(set.contains(code), again.contains(code));
        }
    }

    #[test]
    fn header_never_panics(s in any::<String>()) {
        let _ = values::header(&s);
    }

    #[test]
    fn header_round_trips(name in "[A-Za-z0-9!#$%&'*+.^_`|~-]{1,20}", value in "[ -~]{0,40}") {
        let parsed = values::header(&format!("{name}: {value}")).unwrap();
        let expected = if value.trim().is_empty() {
            values::HeaderArg::Remove(name)
        } else {
            values::HeaderArg::Set(name, value.trim().to_string())
        };
        prop_assert_eq!(parsed, expected);
    }

    /// The loop's schedule on an injected clock: each attempt takes what the server makes
    /// it take, cut to the time left (as the watchdog cuts it); each wait is planned and fitted
    /// by the same functions the loop calls. Nothing planned ends past the deadline, and a
    /// retry is never planned into less than the least attempt time.
    #[test]
    fn the_plan_never_crosses_the_deadline(
        deadline_ms in 1_000u64..=600_000,
        base_ms in 1u64..5_000,
        cap_ms in 1u64..120_000,
        jitter in 0u8..5,
        hint_ms in prop::option::of(0u64..300_000),
        spread_ms in 0u64..5_000,
        seed in any::<u64>(),
        took_ms in prop::collection::vec(0u64..120_000, 1..60),
    ) {
        let base = ms(base_ms);
        let backoff = Backoff {
            base,
            cap: (ms(cap_ms)).max(base),
            jitter: match jitter {
                0 => Jitter::Full,
                1 => Jitter::Equal,
                2 => Jitter::Decorrelated,
                3 => Jitter::None,
                _ => Jitter::Additive(ms(spread_ms)),
            },
        };
        let deadline = ms(deadline_ms);
        let mut rng = StdRng::seed_from_u64(seed);
        let mut now = Duration::ZERO;
        let mut previous = base;
        for (n, took) in took_ms.iter().enumerate() {
            let left = deadline.saturating_sub(now);
            prop_assert!(!left.is_zero(), "an attempt began at the deadline");
            now += ms(*took).min(left);
            let left = deadline.saturating_sub(now);
            let drawn = backoff.draw(n as u32, previous, &mut rng);
            previous = drawn.total();
            let hint = hint_ms.map(|h| Hint { wait: ms(h), clamped: false });
            let planned = policy::plan_wait(&backoff, drawn, hint, ms(spread_ms), &mut rng);
            match policy::fit_to_deadline(planned.draw, Some(left)) {
                Fit::Stop => break,
                Fit::Sleep(wait) => {
                    prop_assert!(wait >= planned.draw.floor, "the floor was cut");
                    now += wait;
                    prop_assert!(now + policy::MIN_ATTEMPT <= deadline, "{now:?} of {deadline:?}");
                }
            }
        }
    }
}
