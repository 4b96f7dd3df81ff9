//! The prefixes a user allows in their environment and configuration, beside those given
//! with each call: what `vzarr verify`, `vzarr cat` and `vzarr.open_dataset` may read.

use std::path::PathBuf;

use crate::ReadError;

/// The environment variable of allowed prefixes (comma-separated).
pub const PREFIXES_ENV: &str = "VZARR_ALLOW_PREFIXES";

/// The prefixes allowed by the environment (`VZARR_ALLOW_PREFIXES`, comma-separated) and by
/// the file `$XDG_CONFIG_HOME/vzarr/allowed-prefixes` (or `~/.config/vzarr/allowed-prefixes`;
/// one prefix per line, `#` starts a comment). A missing file allows nothing more; an
/// unreadable one is an error.
pub fn configured_prefixes() -> Result<Vec<String>, ReadError> {
    let mut out: Vec<String> = std::env::var(PREFIXES_ENV)
        .unwrap_or_default()
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(str::to_string)
        .collect();
    let dir = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|d| !d.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    if let Some(path) = dir.map(|d| d.join("vzarr/allowed-prefixes")) {
        match std::fs::read_to_string(&path) {
            Ok(text) => out.extend(
                text.lines()
                    .map(|l| l.split('#').next().unwrap_or("").trim())
                    .filter(|l| !l.is_empty())
                    .map(str::to_string),
            ),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(source) => return Err(ReadError::Config { path, source }),
        }
    }
    Ok(out)
}
