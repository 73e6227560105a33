//! The masking rules, by example: URLs parsed or not, headers, `-H` and `-u` arguments,
//! the names that mark a secret, and what a URL's secrets are.

use super::names::is_secret_param;
use super::urls::{untrusted, url_secrets};
use super::*;
use url::Url;

#[test]
fn a_secret_holding_a_delimiter_is_masked_whole() {
    // A token holding '/' or '\\': the parser reads its first part as the host.
    for typed in ["http://tokA/tokB@h.test:8/p", "http://tokA\\tokB@h.test/p"] {
        let shown = url_text(typed);
        assert_eq!(
            shown.split_once('@').map(|(a, _)| a),
            Some("http://***"),
            "{shown}"
        );
        assert!(!shown.to_lowercase().contains("tok"), "{shown}");
    }
    // A secret value holding '&', ';', '?' or '#': its rest is a bare item, masked too.
    for (typed, shown) in [
        ("http://h/?token=S1&S2&a=1", "http://h/?token=***&***&a=1"),
        (
            "http://h/?token=S1;S2?S3&a=1",
            "http://h/?token=***;***?***&a=1",
        ),
        ("http://h/?token=S1#S2&a=1", "http://h/?token=***#***&a=1"),
        (
            "http://h/p;jsessionid=S1?S2",
            "http://h/p;jsessionid=***?***",
        ),
        ("http://h/?a=1&b&token=S1", "http://h/?a=1&b&token=***"),
    ] {
        assert_eq!(url_text(typed), shown, "{typed}");
    }
    assert_eq!(
        url_secrets("http://h/?token=S1&S2#S3&a=1"),
        ["S1", "S2", "S3"]
    );
    // Ordinary paths with an '@' stay readable.
    for typed in [
        "http://h/@scope/pkg",
        "http://h/users/bob@example.test",
        "http://h/p;email=a@b",
        "http://h/a@b%2Fc",
    ] {
        assert_eq!(url_text(typed), typed);
    }
}

#[test]
fn a_userinfo_behind_a_question_mark_or_hash_is_masked() {
    for typed in [
        "http://u:12#pw@h/",
        "http://u:12?pw@h/",
        "http://u:a#b?c@h:8/x",
    ] {
        assert!(hides_userinfo(typed), "{typed}");
        let shown = url_text(typed);
        assert!(shown.starts_with("http://***@h"), "{typed}: {shown}");
        assert!(!shown.contains("12") && !shown.contains("pw"), "{shown}");
    }
    for typed in [
        "http://h/?email=a@b",
        "http://u:pw@h/?x=1#y",
        "http://h:8/#a",
        "http://a@b/?c",
    ] {
        assert!(!hides_userinfo(typed), "{typed}");
    }
}

#[test]
fn referer_and_origin_values_that_do_not_parse_are_masked_as_urls() {
    assert_eq!(
        header_value("Referer", "bob:PW1@intranet/page"),
        "***@intranet/page"
    );
    assert_eq!(
        header_value("Origin", "http://bob:PW2@host:99999/"),
        "http://***@host:99999/"
    );
    assert_eq!(
        header_value("X-Back", "ftp://bob:PW3@h/"),
        "ftp://bob:***@h/"
    );
    assert_eq!(header_value("X-Where", "u:PW4@h"), "***@h");
    assert_eq!(header_value("From", "bob@example.test"), "bob@example.test");
    assert_eq!(header_value("Referer", "intranet/page"), "intranet/page");
}

#[test]
fn path_parameters_are_among_a_url_s_secrets() {
    assert_eq!(
        url_secrets("http://h/d/report.csv;jsessionid=S1;v=2/x;token=S2?page=1"),
        ["S1", "S2"]
    );
    assert_eq!(url_secrets("http://bob:pw@exa mple/?token=S3&a=1"), ["S3"]);
}

#[test]
fn path_parameters_are_masked_in_relative_and_unparsable_urls_too() {
    for shown in [
        header_value("Content-Location", "/a;jsessionid=S1"),
        header_value("Referer", "http://h/c;jsessionid=S2"),
        url_text("http://exa mple/app;jsessionid=S3"),
    ] {
        assert!(
            !shown.contains("S1") && !shown.contains("S2") && !shown.contains("S3"),
            "{shown}"
        );
    }
    assert_eq!(header_value("Referer", "http://h/plain"), "http://h/plain");
}

#[test]
fn path_parameters_are_masked_like_query_parameters() {
    let u = Url::parse("http://h/app;jsessionid=S1/x;v=2;token=S2?q=1").unwrap();
    let shown = url(&u);
    assert!(!shown.contains("S1") && !shown.contains("S2"), "{shown}");
    assert!(shown.contains(";v=2"), "{shown}");
}

#[test]
fn secret_names() {
    for n in [
        "Authorization",
        "X-Api-Key",
        "X-Amz-Signature",
        "cookie",
        "access_token",
        "sig",
    ] {
        assert!(is_secret_name(n), "{n}");
    }
    for n in ["Accept", "Content-Type", "page"] {
        assert!(!is_secret_name(n), "{n}");
    }
}

#[test]
fn url_masks_password_and_query() {
    let u = Url::parse("https://bob:hunter2@h.test/p?api_key=abc&page=2").unwrap();
    let shown = url(&u);
    assert!(
        !shown.contains("hunter2") && !shown.contains("abc"),
        "{shown}"
    );
    assert!(shown.contains("page=2") && shown.contains("bob"), "{shown}");
}

#[test]
fn unparseable_urls_and_header_args_are_masked() {
    let shown = url_text("http://user:pw9secret@127.0.0.1:99999/?access_token=tok7&x=1");
    assert_eq!(shown, "http://***@127.0.0.1:99999/?access_token=***&x=***");
    assert_eq!(
        header_arg("Authorization Bearer s3cret"),
        "Authorization ***"
    );
    assert_eq!(header_arg("X-Plain nocolon"), "X-Plain ***");
}

#[test]
fn secret_names_by_kind() {
    for n in [
        "PRIVATE-TOKEN",
        "X-Session-Id",
        "X-Cookie-Jar",
        "X-Password",
    ] {
        assert!(is_secret_name(n), "{n}");
    }
    for n in ["Idempotency-Key", "idempotency-key", "Accept", "X-Trace"] {
        assert!(!is_secret_name(n), "{n}");
    }
    for n in [
        "access_token",
        "id_token",
        "refresh_token",
        "token",
        "code",
        "CODE",
        "api_key",
        "apikey",
        "key",
        "secret",
        "password",
        "sig",
        "signature",
        "my_token_2",
        "client_secret",
        "db_password",
    ] {
        assert!(is_secret_param(n), "{n}");
    }
    for n in ["state", "page", "zipcode", "id"] {
        assert!(!is_secret_param(n), "{n}");
    }
}

#[test]
fn semicolons_and_fragments_are_parameters_too() {
    let u = Url::parse("http://h.test/p?state=1;access_token=S1&page=2#id_token=S2&x=y").unwrap();
    assert_eq!(
        url(&u),
        "http://h.test/p?state=1;access_token=***&page=2#id_token=***&x=y"
    );
    // Encoded names are read as the server reads them; encodings are kept.
    let u = Url::parse("http://h.test/?access%5Ftoken=S1&q=a%20b+c").unwrap();
    assert_eq!(url(&u), "http://h.test/?access%5Ftoken=***&q=a%20b+c");
    // Nothing to hide: the URL is shown as it is.
    let u = Url::parse("http://h.test/p?a=1;b=2#frag").unwrap();
    assert_eq!(url(&u), "http://h.test/p?a=1;b=2#frag");
    // An empty value stays empty.
    let u = Url::parse("http://h.test/?token=&a=1").unwrap();
    assert_eq!(url(&u), "http://h.test/?token=&a=1");
}

#[test]
fn every_userinfo_is_masked() {
    let u = Url::parse("http://bob:hunter2@h.test/").unwrap();
    assert_eq!(url(&u), "http://bob:***@h.test/");
    let u = Url::parse("https://ghp_T0KEN@h.test/").unwrap();
    assert_eq!(url(&u), "https://***@h.test/");
}

#[test]
fn urls_that_do_not_parse_mask_every_value() {
    // Parses, as scheme "bob" with no host: not to be trusted.
    assert_eq!(
        url_text("bob:hunter2@127.0.0.1:9/path"),
        "***@127.0.0.1:9/path"
    );
    assert_eq!(
        url_text("http://bob:hunter2@exa mple.test/"),
        "http://***@exa mple.test/"
    );
    // A password holding '/', '?' or '#' is masked whole.
    assert_eq!(
        url_text("http://bob:pa/ss?wo#rd@exa mple/"),
        "http://***@exa mple/"
    );
    assert_eq!(
        untrusted("http://exa mple/?state=1;access_token=S&flag#id_token=S2"),
        "http://exa mple/?state=***;access_token=***&***#id_token=***"
    );
    assert_eq!(untrusted("http://exa mple/#S2"), "http://exa mple/#***");
    assert_eq!(untrusted("plain"), "plain");
    // Any header whose value is a URL; others as they are.
    assert_eq!(
        header_value("Referer", "http://u:pw@h.test/?token=t"),
        "http://u:***@h.test/?token=***"
    );
    assert_eq!(header_value("Accept", "text/html"), "text/html");
    assert_eq!(header_value("Origin", "http://h.test"), "http://h.test");
    assert_eq!(
        header_value("Link", "<http://h.test/?page=2>; rel=next"),
        "<http://h.test/?page=2>; rel=next"
    );
    // A Refresh value holding a URL.
    assert_eq!(
        header_value("Refresh", "5; url=http://u:pw@h.test/?a=1"),
        "5; url=http://***@h.test/?a=***"
    );
}

#[test]
fn header_args_that_do_not_parse() {
    assert_eq!(
        header_arg("PRIVATE-TOKEN=glpat-SECRET"),
        "PRIVATE-TOKEN=***"
    );
    assert_eq!(header_arg("X Api-Key: SECRET"), "X ***");
    assert_eq!(header_arg("X-A: a\nb"), "X-A:***");
    // The first word may be the secret: masked whole.
    assert_eq!(header_arg("glpat-SECRET"), "***");
    assert_eq!(header_arg("glpat9SECRET value"), "***");
    assert_eq!(header_arg(&format!("{} x", "A".repeat(33))), "***");
    assert_eq!(header_arg(": v"), "***");
    assert_eq!(header_arg(""), "");
}

#[test]
fn question_marks_separate_parameters_too() {
    let u = Url::parse("http://h/?a=1?token=SECRET").unwrap();
    assert_eq!(url(&u), "http://h/?a=1?token=***");
    let u = Url::parse("http://h/?a=1?b=2;c=3&sig=S#x=1?id_token=S2?y=2").unwrap();
    assert_eq!(
        url(&u),
        "http://h/?a=1?b=2;c=3&sig=***#x=1?id_token=***?y=2"
    );
    // A leading or repeated '?' is a separator, no more.
    let u = Url::parse("http://h/??token=S??page=2").unwrap();
    assert_eq!(url(&u), "http://h/??token=***??page=2");
    let s = url_secrets("http://h/?a=1?token=S3CRET#b=2?jwt=S3CRET2");
    assert_eq!(s, ["S3CRET", "S3CRET2"]);
    // Text that does not parse: every value is masked, split the same way.
    assert_eq!(
        untrusted("http://exa mple/?a=1?b=2"),
        "http://exa mple/?a=***?b=***"
    );
}

#[test]
fn values_that_hold_secrets_of_their_own_are_masked() {
    for q in [
        "a=1%3Ftoken%3DSECRET",
        "a=1%26token%3DSECRET",
        "a=token=SECRET",
        "next=%2Fcb%3Faccess_token%3DSECRET",
        "next=https%3A%2F%2Fh%2Fcb%3Fpage%3D2%26code%3DSECRET",
        // Encoded twice.
        "next=%252Fcb%253Ftoken%253DSECRET",
        "next=https%3A%2F%2Fu%3ASECRET%40h%2F",
        "next=https://TOKSECRET@h/",
    ] {
        let u = Url::parse(&format!("http://h/?{q}&page=2")).unwrap();
        let shown = url(&u);
        assert!(!shown.contains("SECRET"), "{q}: {shown}");
        assert!(shown.ends_with("=***&page=2"), "{q}: {shown}");
        assert!(
            url_secrets(u.as_str()).iter().any(|s| s.contains("SECRET")),
            "{q}"
        );
    }
    // A bare item that is a URL with a userinfo.
    let u = Url::parse("http://h/r?https://u:SECRET@x/&page=2").unwrap();
    assert_eq!(url(&u), "http://h/r?***&page=2");
    // Ordinary nested values stay visible.
    for q in [
        "next=%2Fcb%3Fpage%3D2",
        "email=bob%40example.test",
        "q=a%3Db",
        "next=https%3A%2F%2Fh%2Fv1%2Fusers%2F%40me",
        "t=10:30",
    ] {
        let u = Url::parse(&format!("http://h/?{q}")).unwrap();
        assert_eq!(url(&u), format!("http://h/?{q}"), "{q}");
    }
}

#[test]
fn userinfo_in_the_path_is_masked() {
    // A Location that does not parse as a URL resolves as a relative path.
    let base = Url::parse("http://127.0.0.1:9/").unwrap();
    let u = base.join("ht!tp://u:SECRET@x y/?token=S").unwrap();
    assert_eq!(url(&u), "http://127.0.0.1:9/ht!tp://***@x%20y/?token=***");
    for (path, shown) in [
        ("/a/u:SECRET@h/b", "/a/***@h/b"),
        ("/a//TSECRET@h/b", "/a//***@h/b"),
        ("//TSECRET@h", "//***@h"),
        ("/x:u:SECRET@h", "/***@h"),
        ("/p/u%3ASECRET%40h", "/p/***%40h"),
        ("/p/u%3ASECRET@h", "/p/***@h"),
        ("/p/ht%3A%2F%2Fu%3ASECRET%40h", "/p/***%40h"),
        ("/u:SE@CRET@h", "/***@h"),
    ] {
        let u = Url::parse(&format!("http://h.test{path}")).unwrap();
        assert_eq!(url(&u), format!("http://h.test{shown}"), "{path}");
        let found = url_secrets(u.as_str());
        assert!(
            found
                .iter()
                .any(|s| s.contains("SECRET") || s.contains("SE@CRET")),
            "{path}: {found:?}"
        );
    }
    // Ordinary paths stay readable.
    for path in [
        "/a:b/c",
        "/v1/users/@me",
        "/@scope/pkg",
        "/users/bob@example.test",
        "/a//b",
        "/files/2024-01-01T10:30:00Z",
        "/",
    ] {
        let u = Url::parse(&format!("http://h.test{path}")).unwrap();
        assert_eq!(url(&u), format!("http://h.test{path}"), "{path}");
        assert!(url_secrets(u.as_str()).is_empty(), "{path}");
    }
    // The Location header itself, unresolved, as -v shows it.
    assert_eq!(
        header_value("Location", "ht!tp://u:SECRET@x y/?token=S"),
        "ht!tp://***@x y/?token=***"
    );
    assert_eq!(
        header_value("Location", "/ht!tp://u:SECRET@x/"),
        "/ht!tp://***@x/"
    );
}

#[test]
fn secret_words_and_names() {
    for n in [
        "jwt",
        "JWT",
        "pwd",
        "passwd",
        "pass",
        "session",
        "sessionid",
        "auth",
        "key",
        "apikey",
        "api-key",
        "x_jwt_assertion",
        "monkey",
        "auth_code",
        "code",
    ] {
        assert!(is_secret_param(n), "{n}");
    }
    for n in ["idempotency_key", "Idempotency-Key", "page", "state"] {
        assert!(!is_secret_param(n), "{n}");
    }
    for n in [
        "X-Jwt",
        "X-Pwd",
        "X-Auth-Token",
        "PRIVATE-TOKEN",
        "X-Api-Key",
    ] {
        assert!(is_secret_name(n), "{n}");
    }
}

#[test]
fn secret_headers_do_not_follow_a_redirect() {
    for n in [
        "Authorization",
        "proxy-authorization",
        "Cookie",
        "X-Api-Key",
        "PRIVATE-TOKEN",
        "X-Auth-Token",
        "X-Session-Id",
        "X-Amz-Signature",
        "X-Client-Secret",
        "X-Jwt",
    ] {
        assert!(is_credential_header(n), "{n}");
    }
    for n in [
        "Idempotency-Key",
        "idempotency-key",
        "Accept",
        "X-Trace",
        "Content-Type",
    ] {
        assert!(!is_credential_header(n), "{n}");
    }
}

#[test]
fn user_credentials() {
    assert_eq!(credentials("alice:pa55"), "alice:***");
    assert_eq!(credentials("t0ken"), "***");
    assert_eq!(credentials(""), "");
}

#[test]
fn url_secrets_are_found() {
    let s = url_secrets("http://u:pw9@h.test/?token=t0k&page=2#sig=s1g");
    assert_eq!(s, ["pw9", "t0k", "s1g"]);
    assert_eq!(url_secrets("http://tok3n@h.test/"), ["tok3n"]);
    assert!(url_secrets("not a url").is_empty());
}
