//! `-w/--write-out`: the variables after a success and after a run with no response at all.

use crate::common::*;

#[test]
fn write_out_after_success_and_failure() {
    let s = Server::start(vec![Step::status(503, ""), Step::status(200, "body")]).unwrap();
    let url = s.url("/w");
    let (out, _) = run_fast(
        &[
            "-w",
            "\\n%{http_code} %{num_retries} %{exitcode} %{size_download} %{url_effective}\\n",
        ],
        &url,
    );
    assert_eq!(code(&out), 0);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("body\n200 1 0 4 {url}\n")
    );

    let dead = closed_port_url();
    let (out, _) = run(&[
        "-o",
        "/dev/null",
        "-s",
        "--attempts",
        "1",
        "-w",
        "%{http_code}",
        &dead,
    ]);
    assert_eq!(code(&out), 4);
    assert_eq!(out.stdout, b"000", "no response at all is 000, as in curl");
}
