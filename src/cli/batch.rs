//! The flags of a run of several URLs: how its transfers are scheduled (`-Z`,
//! `--parallel-max`, `--parallel-max-host`, `--rate`, `--fail-early`, and curl's
//! `--parallel-immediate`, accepted with no effect), and the parse that keeps the
//! command-line order of the URLs and of the output flags (`-o`, `-O`), which clap's
//! derive does not: URLs are taken in the order given, positionals and `--url` mixed, and
//! each output flag pairs with the next URL, as in curl. The checks are in `config::batch`.

use clap::Args;
use std::time::Duration;

/// `--parallel-max`'s largest value: each transfer in flight is a thread and a connection.
pub const MOST_PARALLEL: u64 = 1000;

/// The flags under "Transfers".
#[derive(Debug, Args, Default)]
#[group(skip)]
#[command(next_help_heading = "Transfers")]
pub struct BatchFlags {
    /// Run the transfers of several URLs at the same time (curl's -Z), up to --parallel-max
    /// at once and --parallel-max-host to one origin; without it they run one after the
    /// other, in URL order.
    #[arg(short = 'Z', long = "parallel", hide_short_help = true)]
    pub parallel: bool,

    /// With -Z: the most transfers in flight at once, from 1 to 1000 [default: 50, as curl's].
    ///
    /// curl takes up to 65535 (300 before 8.x); here each transfer in flight holds a thread
    /// and a connection, so 1000 is the ceiling.
    #[arg(long, value_name = "N", default_value = "50", hide_short_help = true, value_parser = clap::value_parser!(u64).range(1..=MOST_PARALLEL))]
    pub parallel_max: u64,

    /// With -Z: the most transfers in flight at once to one origin (scheme, host, port),
    /// from 1 to 1000 [default: 6].
    ///
    /// Six is what browsers open to one host at most; curl has no limit by default. The
    /// server of an origin sees at most this many connections from one run.
    #[arg(long, value_name = "N", default_value = "6", hide_short_help = true, value_parser = clap::value_parser!(u64).range(1..=MOST_PARALLEL))]
    pub parallel_max_host: u64,

    /// Start no new transfer after the first one that fails (those in flight finish).
    #[arg(long = "fail-early", hide_short_help = true)]
    pub fail_early: bool,

    /// Start at most N transfers per unit of time, as curl's --rate: N/s, N/m, N/h, N/d, or
    /// N/5m (5 minutes; curl 8.10's form); N alone is per hour, as in curl.
    ///
    /// For servers that announce no quota. N is from 1 to the number of milliseconds in the
    /// period (at most one start per millisecond). Unlike curl's, it also applies under -Z.
    #[arg(long, value_name = "N/UNIT", hide_short_help = true, value_parser = rate)]
    pub rate: Option<RateArg>,

    /// Accepted, with no effect: curl's way to open connections at once rather than wait to
    /// multiplex; HTTP/1.1 never multiplexes, so each transfer in flight has its own.
    #[arg(long = "parallel-immediate", hide_short_help = true)]
    pub parallel_immediate: bool,

    /// The URLs and output flags in command-line order (filled by [`ordered`], not by
    /// clap).
    #[arg(skip)]
    pub order: Order,

    /// The URL lists `--url @FILE` read (`config_file::Expanded::lists`, set once the
    /// line is parsed): the `--url` value `@N` stands for the URLs of list N; a value
    /// `@N` with no list N is a URL as typed (arguments that were not expanded).
    #[arg(skip)]
    pub lists: Vec<String>,
}

/// `--rate`'s value: at most `count` transfers started per `per`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateArg {
    /// Transfers started per period (at least 1).
    pub count: u32,
    /// The period (at least 1 second).
    pub per: Duration,
}

/// Where a URL was given: the index of a positional word, or of a `--url` value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UrlAt {
    /// `RequestArgs::target[i]`.
    Positional(usize),
    /// `UrlFlags::url[i]`.
    Flag(usize),
}

/// One output flag: `-o` (`RequestArgs::output.output[i]`) or `-O`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputAt {
    /// `-o FILE`: the index of its value.
    File(usize),
    /// `-O`: the next URL's remote name.
    RemoteName,
}

/// The command-line order of the URLs and of the output flags.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Order {
    /// Every URL word, positionals and `--url` values, in the order given (empty when the
    /// arguments were not parsed by `cli::parse`: then positionals come first).
    pub urls: Vec<UrlAt>,
    /// Every `-o` and `-O`, in the order given.
    pub outputs: Vec<OutputAt>,
}

/// The order of the URLs and output flags in `matches`.
pub(super) fn ordered(matches: &clap::ArgMatches) -> Order {
    let at = |id: &str| -> Vec<usize> {
        matches
            .indices_of(id)
            .map(Iterator::collect)
            .unwrap_or_default()
    };
    let mut urls: Vec<(usize, UrlAt)> = at("target")
        .into_iter()
        .enumerate()
        .map(|(i, at)| (at, UrlAt::Positional(i)))
        .collect();
    urls.extend(
        at("url")
            .into_iter()
            .enumerate()
            .map(|(i, at)| (at, UrlAt::Flag(i))),
    );
    urls.sort_by_key(|(at, _)| *at);
    let mut outputs: Vec<(usize, OutputAt)> = at("output")
        .into_iter()
        .enumerate()
        .map(|(i, at)| (at, OutputAt::File(i)))
        .collect();
    outputs.extend(
        at("remote_name")
            .into_iter()
            .map(|at| (at, OutputAt::RemoteName)),
    );
    outputs.sort_by_key(|(at, _)| *at);
    Order {
        urls: urls.into_iter().map(|(_, u)| u).collect(),
        outputs: outputs.into_iter().map(|(_, o)| o).collect(),
    }
}

/// What `--rate` accepts, for its errors.
const RATE_FORMS: &str = "expected N/UNIT: a count of transfers from 1, then /s, /m, /h or /d, or a number of units such as /5m (N alone is per hour, as in curl)";

/// `--rate N/U` as curl 8.10 reads it: N transfers per unit (`s`, `m`, `h`, `d`), the unit
/// optionally preceded by a count of units (`5/15s`); N alone is per hour. No spaces. A
/// count above the milliseconds of the period is refused (curl refuses it too).
pub fn rate(s: &str) -> Result<RateArg, String> {
    let bad = || format!("invalid rate {s:?}: {RATE_FORMS}");
    let (n, unit) = s.split_once('/').unwrap_or((s, "h"));
    let count: u32 = digits(n).ok_or_else(bad)?;
    let split = unit.find(|c: char| !c.is_ascii_digit()).ok_or_else(bad)?;
    let (times, letter) = unit.split_at(split);
    let times: u64 = if times.is_empty() {
        1
    } else {
        digits(times).ok_or_else(bad)?
    };
    let seconds: u64 = match letter {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86_400,
        _ => return Err(bad()),
    };
    if count == 0 || times == 0 {
        return Err(format!(
            "invalid rate {s:?}: the count and the period must be at least 1 ({RATE_FORMS})"
        ));
    }
    let per = times
        .checked_mul(seconds)
        .filter(|s| *s <= 10 * 365 * 86_400)
        .map(Duration::from_secs)
        .ok_or_else(|| format!("invalid rate {s:?}: the period is over 10 years"))?;
    if u128::from(count) > per.as_millis() {
        return Err(format!(
            "invalid rate {s:?}: more than one transfer per millisecond; give at most {}/{unit}",
            per.as_millis()
        ));
    }
    Ok(RateArg { count, per })
}

/// A number of ASCII digits only (no sign, no space), if it fits.
fn digits<T: std::str::FromStr>(s: &str) -> Option<T> {
    if s.is_empty() || !s.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    s.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn r(count: u32, secs: u64) -> Result<RateArg, String> {
        Ok(RateArg {
            count,
            per: Duration::from_secs(secs),
        })
    }

    /// curl's forms: N/U, N/XU (8.10), N alone per hour.
    #[test]
    fn rates_as_curl_reads_them() {
        assert_eq!(rate("2/s"), r(2, 1));
        assert_eq!(rate("14/m"), r(14, 60));
        assert_eq!(rate("3/h"), r(3, 3600));
        assert_eq!(rate("1/d"), r(1, 86_400));
        assert_eq!(rate("25"), r(25, 3600));
        assert_eq!(rate("5/15s"), r(5, 15));
        assert_eq!(rate("3/4h"), r(3, 4 * 3600));
        assert_eq!(rate("1000/s"), r(1000, 1));
    }

    #[test]
    fn bad_rates_say_what_is_accepted() {
        for bad in [
            "", "/s", "0/s", "2/0s", "-1/s", "2/x", "2/", "2 /s", "2/ s", "2/s ", "1.5/s", "2/sec",
            "2/5", "1001/s", "a/s", "2/m/s",
        ] {
            let e = rate(bad).expect_err(bad);
            assert!(e.starts_with("invalid rate"), "{bad:?}: {e}");
        }
        assert!(rate("2/x").unwrap_err().contains("N/UNIT"));
        assert!(rate("1001/s").unwrap_err().contains("at most 1000/s"));
    }
}
