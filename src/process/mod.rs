//! How the process ends, whatever ends it: the agents to shut down to stop the exchanges
//! in flight (`abort`), the deadline kept by a watchdog thread
//! (`deadline`), signals and the temporary files they must not leak (`interrupt`), and
//! large spools freed after the exit rather than before it (`release`); and work that may
//! block for ever, waited for at most a limit (`within`, the system crate's). Beside them,
//! the clock the attempt loop reads the time from and sleeps its waits with (`clock`).

pub mod abort;
#[cfg(all(target_os = "linux", target_env = "musl"))]
pub mod allocator;
pub mod clock;
pub mod deadline;
pub mod interrupt;
#[cfg(unix)]
pub mod release;
#[cfg(not(unix))]
#[path = "release_windows.rs"]
pub mod release;
pub use retry_http_system::within;
