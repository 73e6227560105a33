//! A known secret fed through every input the tool reads one from (URL forms, well formed
//! or not, `-u`, secret headers, `Origin`/`Referer`, `-e`, `-b`, `--oauth2-bearer`, `-K`
//! lines valid and malformed, netrc, the environment, `-O` names, the server's answers)
//! never reaches any output the run writes besides the body asked for: stderr as text or
//! JSON at `-v`, stdout (`--explain`, `-w`), `-w` on stderr, and the state file. Each input
//! is run in every output mode; every output is searched for the input's secret (without
//! case). Secrets the server sends under a secret name (a Set-Cookie, a JSON `password`)
//! are searched for too, except in `-w` on stdout, which shows the answer's headers as
//! asked (that mode does not ask for them).

use crate::common::*;
use crate::scripted::{Server, Step};
use std::path::Path;

/// One way a secret enters: the arguments (with `{U}` for the server's base URL, `{D}`
/// for the run's folder), the environment, files to write in the folder first, and the
/// secret, whose text must appear in no output.
struct Input {
    name: &'static str,
    args: Vec<String>,
    env: Vec<(&'static str, String)>,
    files: Vec<(&'static str, String)>,
    secret: &'static str,
}

fn input(name: &'static str, secret: &'static str, args: &[&str]) -> Input {
    Input {
        name,
        args: args.iter().map(|a| a.to_string()).collect(),
        env: vec![],
        files: vec![],
        secret,
    }
}

/// Every input, with its secret. `{U}` is the server's `http://127.0.0.1:PORT`, `{H}` its
/// `127.0.0.1:PORT` alone, `{D}` the run's folder.
fn inputs() -> Vec<Input> {
    let mut all = vec![
        input(
            "userinfo password",
            "SKuipw01",
            &["http://bob:SKuipw01@{H}/p"],
        ),
        input("userinfo token", "SKuitk02", &["http://SKuitk02@{H}/p"]),
        input(
            "userinfo odd characters",
            "SKodd03",
            &["http://bob:a%40b%23SKodd03%3A!$@{H}/p"],
        ),
        input(
            "query token",
            "SKqtok04",
            &["{U}/p?access_token=SKqtok04&page=2"],
        ),
        input(
            "fragment token",
            "SKfrag05",
            &["{U}/p?page=2#id_token=SKfrag05"],
        ),
        input("path parameter", "SKjses06", &["{U}/p;jsessionid=SKjses06"]),
        input(
            "nested URL parameter",
            "SKnest07",
            &["{U}/p?next=%2Fcb%3Ftoken%3DSKnest07"],
        ),
        input(
            "URL that does not parse",
            "SKbadu08",
            &["http://bob:SKbadu08@exa mple.test/"],
        ),
        input("URL without a scheme", "SKnosc09", &["bob:SKnosc09@{H}/p"]),
        input(
            "port out of range",
            "SKport10",
            &["http://bob:SKport10@127.0.0.1:99999/"],
        ),
        input(
            "password with an unencoded #",
            "SKhash11",
            &["http://u:12#SKhash11@{H}/p"],
        ),
        input(
            "password with an unencoded ?",
            "SKqmrk12",
            &["http://u:SKqmrk12?x@{H}/p"],
        ),
        input("-u", "SKuser13", &["-u", "alice:SKuser13", "{U}/p"]),
        input(
            "Authorization",
            "SKbear14",
            &["-H", "Authorization: Bearer SKbear14", "{U}/p"],
        ),
        input(
            "Cookie header",
            "SKcook15",
            &["-H", "Cookie: a=1; sid=SKcook15", "{U}/p"],
        ),
        input(
            "X-Api-Key",
            "SKakey16",
            &["-H", "X-Api-Key: SKakey16", "{U}/p"],
        ),
        input(
            "Origin that does not parse",
            "SKorig17",
            &["-H", "Origin: http://bob:SKorig17@host:99999/", "{U}/p"],
        ),
        input(
            "Referer without a scheme",
            "SKrefh18",
            &["-H", "Referer: bob:SKrefh18@intranet/page", "{U}/p"],
        ),
        input(
            "-e",
            "SKrefe19",
            &["-e", "bob:SKrefe19@intranet/page", "{U}/p"],
        ),
        input(
            "-e URL with a token",
            "SKrefq20",
            &["-e", "http://h/?token=SKrefq20", "{U}/p"],
        ),
        input("-b", "SKbcok21", &["-b", "sid=SKbcok21", "{U}/p"]),
        input(
            "-b that names no file",
            "SKbfil22",
            &["-b", "SKbfil22", "{U}/p"],
        ),
        input(
            "--oauth2-bearer",
            "SKoaut23",
            &["--oauth2-bearer", "SKoaut23", "{U}/p"],
        ),
        input(
            "-x",
            "SKprox24",
            &["-x", "http://u:SKprox24@127.0.0.1:1", "{U}/p"],
        ),
        input(
            "-x that does not parse",
            "SKprox25",
            &["-x", "u:SKprox25@exa mple:1", "{U}/p"],
        ),
        input(
            "an unparsable header",
            "SKhdrx26",
            &["-H", "PRIVATE-TOKEN=SKhdrx26", "{U}/p"],
        ),
        input(
            "a stray word",
            "SKstry27",
            &["-H", "Authorization: Bearer", "SKstry27", "{U}/p"],
        ),
        input(
            "-O name",
            "SKonam28",
            &["-O", "{U}/report.csv;jsessionid=SKonam28"],
        ),
    ];
    all.extend([
        input("--url", "SKurlf39", &["--url", "http://bob:SKurlf39@{H}/p"]),
        input(
            "two @ in the userinfo",
            "SKtwoa40",
            &["http://bob:p@SKtwoa40@{H}/p"],
        ),
        input(
            "non-ASCII password",
            "SKutf841",
            &["http://bob:pä€SKutf841@{H}/p"],
        ),
        input(
            "--state redis://",
            "SKstfl42",
            &["--state", "redis://:SKstfl42@127.0.0.1:1/", "{U}/p"],
        ),
        input(
            "-G -d access_token",
            "SKgetd43",
            &["-G", "-d", "access_token=SKgetd43", "{U}/p"],
        ),
        input(
            "-G --data-urlencode",
            "SKgenc44",
            &["-G", "--data-urlencode", "api_key=SKgenc44", "{U}/p"],
        ),
        input(
            "-u with a bad flag after it",
            "SKubad45",
            &["-u", "alice:SKubad45", "--attempts", "x", "{U}/p"],
        ),
        input(
            "Referer with a bad port",
            "SKrefp46",
            &["-H", "Referer: http://bob:SKrefp46@h:99999/", "{U}/p"],
        ),
    ]);
    all.extend([
        input(
            "token holding '/', its head",
            "SKhead51",
            &["http://SKhead51/tail@{H}/p"],
        ),
        input(
            "token holding '/', its tail",
            "SKtail52",
            &["http://head/SKtail52@{H}/p"],
        ),
        input(
            "token holding '&', its tail",
            "SKtail53",
            &["{U}/p?token=head&SKtail53&a=1"],
        ),
        input(
            "token holding '#', its tail",
            "SKtail54",
            &["{U}/p?token=head#SKtail54"],
        ),
        input(
            "path parameter holding '?'",
            "SKtail55",
            &["{U}/p;jsessionid=head?SKtail55"],
        ),
    ]);
    let mut bundle = input("-K bundle", "SKkbun47", &["-K", "{D}/k", "{U}/p"]);
    bundle.files = vec![("k", "-su alice:SKkbun47\n".into())];
    all.push(bundle);
    let mut hfile = input("-H @file", "SKhfil59", &["-H", "@{D}/h", "{U}/p"]);
    hfile.files = vec![("h", "X-Api-Key: SKhfil59\nX-Bad SKhfil59\n".into())];
    all.push(hfile);
    let mut hfile = input("-H @file, valid", "SKhfil60", &["-H", "@{D}/h", "{U}/p"]);
    hfile.files = vec![("h", "Authorization: Bearer SKhfil60\n".into())];
    all.push(hfile);
    let mut jar = input("-b cookie file", "SKjar050", &["-b", "{D}/jar", "{U}/p"]);
    jar.files = vec![(
        "jar",
        "127.0.0.1\tFALSE\t/\tFALSE\t0\tsid\tSKjar050\n".into(),
    )];
    all.push(jar);
    let mut netrc = input(
        "netrc unterminated",
        "SKnetu48",
        &["--netrc-file", "{D}/netrc", "{U}/p"],
    );
    netrc.files = vec![(
        "netrc",
        "machine 127.0.0.1 login bob password \"SKnetu48\n".into(),
    )];
    all.push(netrc);
    for var in ["HTTPS_PROXY", "ALL_PROXY"] {
        let mut proxy = input("a proxy variable", "SKenvp49", &["{U}/p"]);
        proxy.env = vec![(var, "http://u:SKenvp49@exa mple:1".into())];
        all.push(proxy);
    }
    let mut k = input("-K valid", "SKkval29", &["-K", "{D}/k", "{U}/p"]);
    k.files = vec![(
        "k",
        "user = \"alice:SKkval29\"\nheader = \"X-Auth-Token: SKkval29\"\n".into(),
    )];
    all.push(k);
    for (name, line) in [
        ("-K retry", "retry = SKkbad30\n"),
        ("-K header", "header = \"SKkbad30 nocolon\"\n"),
        ("-K unknown", "SKkbad30\n"),
        ("-K unknown, lower case", "skkbad30\n"),
        ("-K bad URL", "url = \"http://u:SKkbad30@exa mple/\"\n"),
        ("-K trailing text", "user alice:SKkbad30 more\n"),
        ("-K bad -b", "cookie = SKkbad30\n"),
    ] {
        let mut k = input(name, "SKkbad30", &["-K", "{D}/k", "{U}/p"]);
        k.files = vec![("k", line.into())];
        all.push(k);
    }
    let mut netrc = input("netrc", "SKnetr31", &["--netrc-file", "{D}/netrc", "{U}/p"]);
    netrc.files = vec![(
        "netrc",
        "machine 127.0.0.1 login bob password SKnetr31\n".into(),
    )];
    all.push(netrc);
    let mut proxy = input("http_proxy", "SKenvp32", &["{U}/p"]);
    proxy.env = vec![("http_proxy", "http://u:SKenvp32@127.0.0.1:1".into())];
    all.push(proxy);
    let mut proxy = input("http_proxy that does not parse", "SKenvp33", &["{U}/p"]);
    proxy.env = vec![("http_proxy", "http://u:SKenvp33@exa mple:1".into())];
    all.push(proxy);
    let mut state = input("RETRY_HTTP_STATE", "SKstat34", &["{U}/p"]);
    state.env = vec![("RETRY_HTTP_STATE", "redis://:SKstat34@127.0.0.1:1/".into())];
    all.push(state);
    all.push(input(
        "readiness JSON object",
        "SKjson35",
        &["--until-json", "/user=alice", "{U}/p"],
    ));
    all.push(input(
        "readiness JSON member",
        "SKjson36",
        &["--until-json", "/auth/session/id=x", "{U}/p"],
    ));
    all.push(input(
        "readiness header",
        "SKhead37",
        &["--until-header", "X-Api-Token: ^ok$", "{U}/p"],
    ));
    all.push(input(
        "--until-json at a secret pointer",
        "SKwant56",
        &["--until-json", "/auth/token=SKwant56", "{U}/p"],
    ));
    all.push(input(
        "--until-header on a secret header",
        "SKwant57",
        &["--until-header", "X-Api-Token: ^SKwant57$", "{U}/p"],
    ));
    all.push(input(
        "unencoded # without a scheme",
        "SKhash58",
        &["u:12#SKhash58@{H}/p"],
    ));
    all.push(input("Set-Cookie answered", "SKsetc38", &["{U}/p"]));
    all
}

/// The server's answer: every secret the server gives is under a name that marks it.
fn answer() -> Step {
    let body =
        r#"{"user":{"name":"bob","password":"SKjson35"},"auth":{"session":{"id":"SKjson36"}}}"#;
    Step::Respond {
        status: 200,
        headers: vec![
            ("Content-Type".into(), "application/json".into()),
            ("X-Api-Token".into(), "SKhead37".into()),
            ("Set-Cookie".into(), "sid=SKsetc38; Path=/".into()),
        ],
        body: body.as_bytes().to_vec(),
    }
}

/// How the run's outputs are asked for: the text log at `-v`, the JSON log at `-v` (with
/// an attempt more), `--explain`, `-w` on stderr with every variable, and `-w` on stdout
/// with every variable but the answer's headers (shown as asked: the server's own).
const MODES: [(&str, &[&str]); 5] = [
    ("text -v", &["-v", "--attempts", "2", "--base", "1ms"]),
    (
        "json -v",
        &[
            "-v",
            "--log-format",
            "json",
            "--attempts",
            "3",
            "--base",
            "1ms",
        ],
    ),
    ("--explain", &["--explain"]),
    (
        "-w on stderr",
        &[
            "--attempts",
            "1",
            "-w",
            "%{stderr}%{url}|%{url_effective}|%{redirect_url}|%{referer}|%{errormsg}|%{filename_effective}|%header{set-cookie}|%header{x-api-token}|%{header_json}|%{json}\\n",
        ],
    ),
    (
        "-w on stdout",
        &[
            "-s",
            "--attempts",
            "1",
            "-w",
            "%{url}|%{url_effective}|%{redirect_url}|%{referer}|%{errormsg}|%{filename_effective}|%{json}\\n",
        ],
    ),
];

fn expand(arg: &str, base: &str, dir: &Path) -> String {
    arg.replace("{U}", base)
        .replace("{H}", base.trim_start_matches("http://"))
        .replace("{D}", &dir.display().to_string())
}

#[test]
fn a_secret_from_any_input_reaches_no_output() {
    let server = Server::start(vec![answer()]).unwrap();
    let base = server.url("");
    let (mut runs, mut checked, mut leaks) = (0, 0, Vec::new());
    for i in inputs() {
        for (mode, mode_args) in MODES {
            let dir = tempfile::tempdir().unwrap();
            for (name, text) in &i.files {
                std::fs::write(dir.path().join(name), text).unwrap();
            }
            // `-O`'s name is taken by a folder, so that writing it fails and says so.
            std::fs::create_dir(dir.path().join("report.csv;jsessionid=SKonam28")).unwrap();
            let mut cmd = command();
            cmd.current_dir(dir.path())
                .args(mode_args)
                .timeout(std::time::Duration::from_secs(60));
            let state_from_env = i.env.iter().any(|(k, _)| *k == "RETRY_HTTP_STATE");
            if !state_from_env {
                cmd.args(["--state", "state"]);
            }
            if !i.args.iter().any(|a| a == "-O") {
                cmd.args(["-o", "body"]);
            }
            cmd.args(i.args.iter().map(|a| expand(a, &base, dir.path())));
            for (k, v) in &i.env {
                cmd.env(k, v);
            }
            let out = cmd.output().expect("binary runs");
            runs += 1;
            assert_ne!(code(&out), 101, "{} / {mode}: a panic", i.name);
            let state = std::fs::read_to_string(dir.path().join("state")).unwrap_or_default();
            for (what, text) in [
                ("stderr", stderr(&out)),
                ("stdout", String::from_utf8_lossy(&out.stdout).into_owned()),
                ("state file", state),
            ] {
                checked += 1;
                // Without case: a secret may be typed in either (`-K`'s lower-case line).
                if text.to_lowercase().contains(&i.secret.to_lowercase()) {
                    leaks.push(format!("{} / {mode} / {what}:\n{text}", i.name));
                }
            }
        }
    }
    assert!(
        leaks.is_empty(),
        "{} leaks:\n{}",
        leaks.len(),
        leaks.join("\n---\n")
    );
    // The product ran in full: 67 inputs x 5 modes = 335 runs, three outputs each (1005
    // input x output combinations).
    // The inputs were used: the secrets that are meant to be sent reached the server.
    let seen: String = server
        .requests()
        .iter()
        .map(|r| format!("{} {:?}\n", r.target, r.headers))
        .collect();
    for sent in [
        "SKqtok04", "SKjses06", "SKbear14", "SKcook15", "SKakey16", "SKorig17", "SKrefh18",
        "SKrefe19", "SKbcok21", "SKoaut23", "SKgetd43", "SKgenc44", "SKjar050", "SKhfil60",
    ] {
        assert!(seen.contains(sent), "{sent} was never sent:\n{seen}");
    }
    assert_eq!(inputs().len(), 67);
    assert_eq!(runs, inputs().len() * MODES.len());
    assert_eq!(checked, runs * 3);
}
