//! Freeing large temporary files without making the exit wait for it: on Windows, nothing
//! to do. There is no `fork`, and none is needed for the promise: a spool is freed when its
//! last handle closes, which the exit does after the exit status is set; the file system
//! frees its clusters without making `ExitProcess` wait for a trim. The functions of the
//! Unix module are here, doing nothing, so that the callers are the same everywhere.

use std::fs::File;

/// Nothing is kept on Windows (see the module's comment).
pub fn register(_: &File) {}

/// Nothing was kept on Windows.
pub fn forget(_: &File) {}

/// Nothing was kept on Windows.
pub fn forget_small() {}

/// Nothing to hand over on Windows.
pub fn release_at_exit() {}
