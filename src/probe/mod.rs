//! The real machine as a host profile (`devsim probe [--write NAME [--force]]`): its text, headed by the
//! probe date and the driver version as comments, and writing it to `<root>/hosts/NAME.toml` (through
//! [`crate::contain::write_file`]: never through a link in place of the file or of `hosts/`); and
//! devsim's visible-device model checked against the real driver ([`masks`], `probe --check-masks`).

pub mod masks;

use std::path::{Path, PathBuf};
use std::time::SystemTime;

use thiserror::Error;

use crate::runtime::live::RealMachine;
use crate::runtime::live::machine::mapped_path;
use crate::scenario::load::HOSTS_DIR;

/// Why a probed profile could not be written.
#[derive(Debug, Error)]
pub enum ProbeError {
    /// The name is not a plain file stem.
    #[error(
        "name the profile `{name}`: expected letters, digits, `_` or `-` (it becomes hosts/<name>.toml)"
    )]
    BadName {
        /// The name as given.
        name: String,
    },
    /// A profile of that name exists and `--force` was not given.
    #[error("write {}: the profile exists (pass --force to replace it)", path.display())]
    Exists {
        /// The existing file.
        path: PathBuf,
    },
    /// The profile would be written through a link (the file, or `hosts/`) or outside the root.
    #[error(transparent)]
    Write(#[from] crate::contain::WriteError),
    /// The file or its folder could not be written.
    #[error("write {}: {source}", path.display())]
    Io {
        /// The file.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

/// The driver's version as its mapped file name tells it (`libcuda.so.580.95.05` → `580.95.05`).
pub fn driver_version(mapped: &str) -> Option<String> {
    let file = mapped.rsplit('/').next()?;
    let (_, version) = file.split_once(".so.")?;
    version
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit())
        .then(|| version.to_string())
}

/// The profile text for `machine`, headed by the probe date (UTC) and the driver version.
pub fn profile_text(machine: &RealMachine, probed_at: SystemTime) -> String {
    let mapped = machine.library.as_deref().and_then(mapped_path);
    let version = match (&machine.library, mapped.as_deref().and_then(driver_version)) {
        (None, _) => "none (no GPU driver loaded)".to_string(),
        (Some(_), Some(version)) => version,
        (Some(library), None) => format!("unknown ({library} names no version)"),
    };
    format!(
        "# probed by devsim {} on {}\n# driver version: {version}\n{}",
        env!("CARGO_PKG_VERSION"),
        humantime::format_rfc3339_seconds(probed_at),
        machine.to_profile()
    )
}

/// Writes `text` as `<root>/hosts/<name>.toml`, refusing to replace a profile unless `force`.
pub fn write_profile(
    root: &Path,
    name: &str,
    text: &str,
    force: bool,
) -> Result<PathBuf, ProbeError> {
    let plain = !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if !plain {
        return Err(ProbeError::BadName {
            name: name.to_string(),
        });
    }
    let below = Path::new(HOSTS_DIR).join(format!("{name}.toml"));
    let path = root.join(&below);
    // A regular file only: a link there (dangling or not) is refused by the write itself, --force or not.
    if !force && std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file()) {
        return Err(ProbeError::Exists { path });
    }
    // The root is the folder the user named: made when missing; `hosts/` below it never follows a link.
    std::fs::create_dir_all(root).map_err(|source| ProbeError::Io {
        path: root.to_path_buf(),
        source,
    })?;
    Ok(crate::contain::write_file(
        root,
        &below,
        text.as_bytes(),
        crate::contain::Permissions::Kept,
    )?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_driver_version_is_the_mapped_file_names_suffix() {
        assert_eq!(
            driver_version("/usr/lib/x86_64-linux-gnu/libcuda.so.580.95.05").as_deref(),
            Some("580.95.05")
        );
        assert_eq!(driver_version("/opt/rocm/lib/libamdhip64.so"), None);
        assert_eq!(
            driver_version("/opt/rocm/lib/libamdhip64.so.6"),
            Some("6".into())
        );
    }
}
