//! A "Redis server" for the tests of what the store shows of a password: it takes any
//! `AUTH` and `SELECT` and answers every other command with what a test makes of all it was
//! sent on the connection (the password among it), as a server that quotes its input would.
//! One thread a connection; one answer for each command of a write, since `AUTH` and
//! `SELECT` come pipelined with the first command.
//!
//! The library's unit tests include it with `#[path]`, as the integration tests do.

// Each includer uses only part of it.
#![allow(dead_code)]

use std::io::{Read, Write};

/// The password of the quoting tests: long, so that a server quotes only its beginning.
pub const LONG_PASSWORD: &str = "Correct-horse-battery-staple-and-then-some-more-words-past-forty";

/// Starts the server on a free port of 127.0.0.1 and returns the port; `answer` makes the
/// answer (a whole RESP reply) to a command other than `AUTH` and `SELECT` from all that
/// was sent on the connection before it.
pub fn start(answer: fn(&str) -> String) -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("addr").port();
    std::thread::spawn(move || {
        for c in listener.incoming() {
            let Ok(c) = c else { return };
            std::thread::spawn(move || serve(c, answer));
        }
    });
    port
}

/// Answers one connection until it ends.
fn serve(mut c: std::net::TcpStream, answer: fn(&str) -> String) {
    let mut sent = String::new();
    let mut buf = [0u8; 65536];
    while let Ok(n) = c.read(&mut buf) {
        if n == 0 {
            return;
        }
        let text = String::from_utf8_lossy(&buf[..n]).into_owned();
        sent.push_str(&text);
        let mut reply = String::new();
        for name in command_names(&text) {
            if name == "AUTH" || name == "SELECT" {
                reply.push_str("+OK\r\n");
            } else {
                reply.push_str(&answer(&sent));
            }
        }
        if c.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

/// The names of the RESP commands in `text` (arrays of bulk strings, whole), in order.
fn command_names(text: &str) -> Vec<String> {
    let mut names = Vec::new();
    let mut lines = text.split("\r\n");
    while let Some(head) = lines.next() {
        let Some(n) = head.strip_prefix('*').and_then(|n| n.parse::<usize>().ok()) else {
            continue;
        };
        let mut args = Vec::new();
        for _ in 0..n {
            lines.next();
            args.push(lines.next().unwrap_or_default().to_string());
        }
        names.push(args.first().cloned().unwrap_or_default().to_uppercase());
    }
    names
}

/// The first 40 characters of the password in what the server was sent.
pub fn password_start(sent: &str) -> &str {
    let at = sent.find("Correct").unwrap_or(0);
    &sent[at..(at + 40).min(sent.len())]
}
