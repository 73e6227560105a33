//! The system's side, shared by the command and the fleet's store: the file-system steps
//! taken the same way everywhere (`files`: the folder a path lives in, links, bounded
//! reads, the files the run owns, the system's certificates), which of the Linux-only calls
//! or their portable paths a step takes (`platform`), and work that may block for ever,
//! waited for at most a limit (`within`). It knows nothing of HTTP, the policy or the store.

pub mod files;
pub mod platform;
pub mod within;
