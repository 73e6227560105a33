//! Entry point: everything is in the library (`retry_http::main`), so the tests reach it.

fn main() -> std::process::ExitCode {
    retry_http::main()
}
