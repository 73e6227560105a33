//! `-w/--write-out`: curl's variables, written on stdout after the run (on failure too).
//! Pure formatting.

use std::time::Duration;

/// The values `-w` can show.
#[derive(Debug, Clone, Default)]
pub struct Vars {
    /// The final response's status; None when no response arrived (shown as 000, as curl).
    pub http_code: Option<u16>,
    /// Attempts made minus one.
    pub num_retries: u32,
    /// Whole run, in seconds with microseconds.
    pub time_total: Duration,
    /// The URL that answered last (after redirects), or the one requested.
    pub url_effective: String,
    /// The exit status.
    pub exitcode: u8,
    /// Body bytes delivered.
    pub size_download: u64,
}

/// Expands `%{name}`, `%%`, `\n`, `\r`, `\t` and `\\`. Unknown variables are left as
/// written and returned, so the caller can warn about them.
pub fn render(format: &str, v: &Vars) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut unknown = Vec::new();
    let mut rest = format;
    while let Some(c) = rest.chars().next() {
        if let Some(after) = rest.strip_prefix("%{")
            && let Some(end) = after.find('}')
        {
            let name = &after[..end];
            match value(name, v) {
                Some(val) => out.push_str(&val),
                None => {
                    unknown.push(name.to_string());
                    out.push_str(&rest[..end + 3]);
                }
            }
            rest = &after[end + 1..];
            continue;
        }
        let two: String = rest.chars().take(2).collect();
        let replaced = match two.as_str() {
            "%%" => Some('%'),
            "\\n" => Some('\n'),
            "\\r" => Some('\r'),
            "\\t" => Some('\t'),
            "\\\\" => Some('\\'),
            _ => None,
        };
        match replaced {
            Some(r) => {
                out.push(r);
                rest = &rest[2..];
            }
            None => {
                out.push(c);
                rest = &rest[c.len_utf8()..];
            }
        }
    }
    (out, unknown)
}

fn value(name: &str, v: &Vars) -> Option<String> {
    Some(match name {
        "http_code" | "response_code" => format!("{:03}", v.http_code.unwrap_or(0)),
        "num_retries" => v.num_retries.to_string(),
        "time_total" => format!("{:.6}", v.time_total.as_secs_f64()),
        "url_effective" | "url" => v.url_effective.clone(),
        "exitcode" => v.exitcode.to_string(),
        "size_download" => v.size_download.to_string(),
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn curl_variables() {
        let v = Vars {
            http_code: Some(200),
            num_retries: 2,
            time_total: Duration::from_millis(1500),
            url_effective: "http://h/x".into(),
            exitcode: 0,
            size_download: 42,
        };
        let (s, unknown) = render(
            "%{http_code} %{num_retries} %{time_total} %{url_effective} %{exitcode} %{size_download}\\n",
            &v,
        );
        assert_eq!(s, "200 2 1.500000 http://h/x 0 42\n");
        assert!(unknown.is_empty());
    }

    #[test]
    fn no_response_is_000_and_unknown_is_kept() {
        let (s, unknown) = render("%{http_code} %{nope} 100%%", &Vars::default());
        assert_eq!(s, "000 %{nope} 100%");
        assert_eq!(unknown, vec!["nope"]);
    }
}
