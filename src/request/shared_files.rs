//! The files every transfer of a run shares, checked before anything is sent: a batch
//! checks them once, before its first transfer, so that a wrong one is one usage line, not
//! one per URL; a run of one URL with its other paths (`prepare`).

use crate::config::Config;
use crate::files;

/// The files every transfer shares: the state file and `--etag-save` can be written where
/// they are (a setup that fails alike on every run is a usage error, not a store that
/// failed for a moment), `--etag-save` is a regular file. A batch checks them once.
pub fn check(cfg: &Config) -> Result<(), String> {
    if let Some(path) = cfg.state.as_ref().and_then(|s| s.location.file_path()) {
        files::check_writable(path, &format!("--state {}", path.display()))?;
    }
    if let Some(path) = &cfg.conditional.etag_save {
        let flag = format!("--etag-save {}", path.display());
        files::check_writable(path, &flag)?;
        if std::fs::metadata(path).is_ok_and(|m| !m.is_file()) {
            return Err(format!(
                "{flag} is not a regular file: it is replaced by a new file, so give a file path"
            ));
        }
    }
    Ok(())
}
