//! curl's body flags beyond `-d`: `-G` (the data in the query string), `--data-urlencode`
//! and `-F` (multipart/form-data). Also the parse that keeps the command-line order of the
//! data flags, which clap's derive does not: curl joins `-d`, `--data-binary` and
//! `--data-urlencode` with `&` in the order given.

use clap::Args;

/// The flags under "Request" that make a body (or a query) the way curl does.
#[derive(Debug, Args, Default)]
#[group(skip)]
#[command(next_help_heading = "Request")]
pub struct BodyFlags {
    /// Send the -d/--data-binary/--data-urlencode data in the URL's query instead of a
    /// body (joined with &, after a ? or an & as the URL needs): GET, or HEAD with -I.
    #[arg(hide_short_help = true, short = 'G', long = "get")]
    pub get: bool,

    /// Body part URL-encoded as curl does (repeatable; joined with & with -d in order):
    /// CONTENT or =CONTENT encodes it all, NAME=CONTENT keeps NAME and encodes CONTENT,
    /// @FILE and NAME@FILE encode a file's bytes (@- for stdin). Spaces become +.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "DATA",
        conflicts_with = "json",
        allow_hyphen_values = true
    )]
    pub data_urlencode: Vec<String>,

    /// A multipart/form-data field (repeatable; POST by default): NAME=VALUE,
    /// NAME=@FILE (a file upload, with its file name), NAME=<FILE (a field read from a
    /// file), @- and <- for stdin; ;type=MIME and ;filename=NAME after the value; "..."
    /// quotes a value holding ; or ,. Not with another body flag, -G or -I.
    #[arg(
        hide_short_help = true,
        short = 'F',
        long = "form",
        value_name = "NAME=VALUE",
        allow_hyphen_values = true,
        conflicts_with_all = ["data", "data_binary", "json", "data_urlencode", "get", "head"]
    )]
    pub form: Vec<String>,

    /// The data flags' values in command-line order (filled by [`parse`], not by clap).
    #[arg(skip)]
    pub ordered: Vec<DataArg>,
}

/// One value of a data flag, by flag.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DataArg {
    /// `-d`: `@FILE` has CR and LF removed.
    Data(String),
    /// `--data-binary`: sent byte for byte.
    Binary(String),
    /// `--data-urlencode`: encoded as curl does.
    UrlEncode(String),
    /// `--data-raw`: sent as given, a leading `@` included.
    Raw(String),
}

/// The data flags' values in the order they were given on the command line, read from
/// clap's matches before they are moved into the fields (clap's derive keeps no order
/// between flags).
pub(super) fn ordered_data(matches: &clap::ArgMatches) -> Vec<DataArg> {
    let mut indexed: Vec<(usize, DataArg)> = Vec::new();
    let mut take = |id: &str, make: fn(String) -> DataArg| {
        let (Some(values), Some(at)) = (matches.get_many::<String>(id), matches.indices_of(id))
        else {
            return;
        };
        indexed.extend(at.zip(values.map(|v| make(v.clone()))));
    };
    take("data", DataArg::Data);
    take("data_binary", DataArg::Binary);
    take("data_urlencode", DataArg::UrlEncode);
    take("data_raw", DataArg::Raw);
    indexed.sort_by_key(|(i, _)| *i);
    indexed.into_iter().map(|(_, d)| d).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(args: &[&str]) -> Vec<DataArg> {
        use std::ffi::OsString;
        let mut all = vec![OsString::from("retry-http")];
        all.extend(args.iter().map(OsString::from));
        super::super::parse(&all)
            .expect("parses")
            .request
            .bodies
            .ordered
    }

    #[test]
    fn data_flags_keep_their_order() {
        let got = parsed(&[
            "--data-urlencode",
            "a=1",
            "http://h/",
            "-d",
            "b=2",
            "--data-urlencode",
            "c=3",
        ]);
        assert_eq!(
            got,
            vec![
                DataArg::UrlEncode("a=1".into()),
                DataArg::Data("b=2".into()),
                DataArg::UrlEncode("c=3".into()),
            ]
        );
    }

    #[test]
    fn no_data_no_order() {
        assert!(parsed(&["http://h/"]).is_empty());
    }
}
