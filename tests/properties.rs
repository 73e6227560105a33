//! Property tests on the parsers that read untrusted or user input: arbitrary input never
//! panics, and every accepted value round-trips.

use proptest::prelude::*;
use retry_http::{retry_after, values};
use std::time::{Duration, SystemTime};

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
        let set = values::status_set(&spec.join(",")).unwrap();
        let again = values::status_set(&set.to_spec()).unwrap();
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
}
