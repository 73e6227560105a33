//! The stderr log's settings ([`LogConfig`]) made from the logging flags: `-s`, `-v`,
//! `--log-format`, `--color`, `--no-progress-meter`. Made before the rest of the
//! configuration, since the errors found while building that are written through the
//! reporter built from it.

use crate::cli::RequestArgs;
use crate::report::{LogConfig, Verbosity};

/// The log a request's flags ask for: `-s`, `-v`, `--log-format`, `--color`,
/// `--no-progress-meter`.
pub fn of(a: &RequestArgs) -> LogConfig {
    let l = &a.logging;
    let verbosity = match (l.silent, l.verbose) {
        (_, true) => Verbosity::Verbose,
        (true, false) => Verbosity::Quiet,
        (false, false) => Verbosity::Normal,
    };
    LogConfig {
        format: l.log_format,
        verbosity,
        live: !l.silent,
        progress: !a.protocols.logging.no_progress_meter,
        color: l.color,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn log_of(args: &[&str]) -> LogConfig {
        let mut all = vec!["retry-http"];
        all.extend_from_slice(args);
        all.push("http://h/");
        let all: Vec<std::ffi::OsString> = all.into_iter().map(Into::into).collect();
        super::of(&crate::cli::parse(&all).expect("parses").request)
    }

    /// `-s` hides the messages and the live lines; `-v` wins over `-s` for the messages
    /// only, as in curl.
    #[test]
    fn silent_and_verbose_make_the_verbosity() {
        assert_eq!(log_of(&[]).verbosity, Verbosity::Normal);
        assert!(log_of(&[]).live);
        assert_eq!(log_of(&["-s"]).verbosity, Verbosity::Quiet);
        assert!(!log_of(&["-s"]).live);
        assert_eq!(log_of(&["-v"]).verbosity, Verbosity::Verbose);
        let sv = log_of(&["-sv"]);
        assert_eq!((sv.verbosity, sv.live), (Verbosity::Verbose, false));
    }

    #[test]
    fn no_progress_meter_hides_the_progress_only() {
        let c = log_of(&["--no-progress-meter"]);
        assert!(!c.progress);
        assert!(c.live);
        assert_eq!(c.verbosity, Verbosity::Normal);
    }
}
