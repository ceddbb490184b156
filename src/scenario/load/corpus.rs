//! Finding scenario files and reading them, contained.
//!
//! Discovery takes regular `*.toml` files only. A symbolic link is followed only when it resolves inside
//! the folder being walked (the scenario root); one that leaves it is an error and is never opened. FIFOs,
//! sockets and devices are refused from their metadata, without opening them. Every folder is walked once
//! (by its resolved path), so link loops terminate and no file is listed twice. `hosts/` folders hold
//! profiles, not scenarios, and are skipped. A file is read through a bounded reader: more than
//! [`MAX_FILE_BYTES`] is an error naming the file and the limit.

use std::collections::HashSet;
use std::fs::Metadata;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::scenario::error::{CorpusError, LoadError};
use crate::scenario::load::hosts::HOSTS_DIR;
use crate::scenario::load::source::Source;

/// The largest scenario or profile file devsim reads: 4 MiB.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// The scenario root for naming a file: the nearest ancestor folder holding `hosts/`, else the file's
/// folder. Used for names only; profiles come from [`super::ProfileSources`].
pub fn root_of(path: &Path) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("."));
    parent
        .ancestors()
        .find(|dir| dir.join(HOSTS_DIR).is_dir())
        .unwrap_or(parent)
        .to_path_buf()
}

/// A scenario's name in reports and test lists: its path relative to its scenario root, `/`-separated.
pub fn scenario_name(path: &Path) -> String {
    path.strip_prefix(root_of(path))
        .unwrap_or(path)
        .to_string_lossy()
        .replace('\\', "/")
}

/// Every scenario file under `paths`, sorted, host profiles excluded. A file argument is taken as given
/// (it must be a regular file); a folder is walked under the containment rules of this module.
pub fn find_scenarios(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CorpusError> {
    let mut walk = Walk::default();
    for path in paths {
        let metadata = std::fs::metadata(path).map_err(|source| CorpusError::Io {
            path: path.clone(),
            source,
        })?;
        if metadata.is_dir() {
            let root = canonical(path)?;
            walk.root = root.clone();
            walk.dir(path, &root)?;
        } else {
            regular(path, &metadata)?;
            // A file argument is given under its own folder: a link that leaves it is not followed.
            let folder = match path.parent() {
                Some(parent) if !parent.as_os_str().is_empty() => parent,
                _ => Path::new("."),
            };
            let folder = canonical(folder)?;
            if !canonical(path)?.starts_with(&folder) {
                return Err(CorpusError::Escapes {
                    path: path.clone(),
                    root: folder,
                });
            }
            if walk.files.insert(canonical(path)?) {
                walk.found.push(path.clone());
            }
        }
    }
    walk.found.sort();
    Ok(walk.found)
}

/// The state of one discovery: what was found, and what was already seen (by resolved path).
#[derive(Default)]
struct Walk {
    root: PathBuf,
    dirs: HashSet<PathBuf>,
    files: HashSet<PathBuf>,
    found: Vec<PathBuf>,
}

impl Walk {
    fn dir(&mut self, dir: &Path, resolved: &Path) -> Result<(), CorpusError> {
        if !self.dirs.insert(resolved.to_path_buf()) {
            return Ok(());
        }
        let io = |source| CorpusError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut entries = std::fs::read_dir(dir)
            .map_err(io)?
            .map(|entry| entry.map(|e| e.path()))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io)?;
        entries.sort();
        for path in entries {
            let toml = path.extension().is_some_and(|ext| ext == "toml");
            let link = std::fs::symlink_metadata(&path)
                .map_err(|source| CorpusError::Io {
                    path: path.clone(),
                    source,
                })?
                .file_type()
                .is_symlink();
            let resolved = match canonical(&path) {
                Ok(resolved) => resolved,
                // A dangling link that is not a scenario is none of our business.
                Err(_) if link && !toml => continue,
                Err(error) => return Err(error),
            };
            if link && !resolved.starts_with(&self.root) {
                if toml || resolved.is_dir() {
                    return Err(CorpusError::Escapes {
                        path,
                        root: self.root.clone(),
                    });
                }
                continue;
            }
            let metadata = std::fs::metadata(&resolved).map_err(|source| CorpusError::Io {
                path: path.clone(),
                source,
            })?;
            if metadata.is_dir() {
                if path.file_name().is_some_and(|name| name == HOSTS_DIR) {
                    continue;
                }
                self.dir(&path, &resolved)?;
            } else if toml {
                regular(&path, &metadata)?;
                if self.files.insert(resolved) {
                    self.found.push(path);
                }
            }
        }
        Ok(())
    }
}

fn canonical(path: &Path) -> Result<PathBuf, CorpusError> {
    std::fs::canonicalize(path).map_err(|source| CorpusError::Io {
        path: path.to_path_buf(),
        source,
    })
}

/// Refuses anything but a regular file, from its metadata alone.
fn regular(path: &Path, metadata: &Metadata) -> Result<(), CorpusError> {
    match kind_of(metadata) {
        None => Ok(()),
        Some(kind) => Err(CorpusError::NotRegular {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

/// What a non-regular file is, in words; `None` for a regular file.
fn kind_of(metadata: &Metadata) -> Option<&'static str> {
    if metadata.is_file() {
        return None;
    }
    if metadata.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        let kind = metadata.file_type();
        if kind.is_fifo() {
            return Some("a fifo");
        }
        if kind.is_socket() {
            return Some("a socket");
        }
        if kind.is_block_device() || kind.is_char_device() {
            return Some("a device");
        }
    }
    Some("not a regular file")
}

/// [`read_bounded`], for a file that must resolve inside `root` (links included): one that leaves it is
/// refused before it is opened.
pub fn read_contained(path: &Path, root: &Path) -> Result<String, LoadError> {
    let refuse = |message: String| LoadError::new(path, 1, 1, message);
    let root = if root.as_os_str().is_empty() {
        Path::new(".")
    } else {
        root
    };
    let resolved =
        std::fs::canonicalize(path).map_err(|e| refuse(format!("read the file: {e}")))?;
    let inside = std::fs::canonicalize(root).map_err(|e| refuse(format!("read the file: {e}")))?;
    if !resolved.starts_with(&inside) {
        // Refused before a byte is read, so nothing of the file can reach any output.
        return Err(refuse(format!(
            "read the file: it resolves outside {}; links are followed only inside the folder they were given under",
            crate::scenario::error::escape_controls(&root.display().to_string())
        )));
    }
    read_bounded(path)
}

/// [`read_contained`] within the file's own folder: for files named one by one (a profile, a baseline, a
/// subject file, a scenario given as a file argument).
pub fn read_in_folder(path: &Path) -> Result<String, LoadError> {
    read_contained(path, path.parent().unwrap_or(Path::new(".")))
}

/// Reads a scenario or profile file: regular files only (checked before opening, and again on the opened
/// handle), at most [`MAX_FILE_BYTES`], UTF-8 (an invalid byte is located at its line and column).
pub fn read_bounded(path: &Path) -> Result<String, LoadError> {
    let refuse = |message: String| LoadError::new(path, 1, 1, message);
    let metadata = std::fs::metadata(path).map_err(|e| refuse(format!("read the file: {e}")))?;
    if let Some(kind) = kind_of(&metadata) {
        return Err(refuse(format!(
            "read the file: it is {kind}, expected a regular file"
        )));
    }
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(target_os = "linux")]
    {
        // O_NONBLOCK: a file swapped for a FIFO after the check above must not block the open.
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(0o4000);
    }
    let file = options
        .open(path)
        .map_err(|e| refuse(format!("read the file: {e}")))?;
    let opened = file
        .metadata()
        .map_err(|e| refuse(format!("read the file: {e}")))?;
    if let Some(kind) = kind_of(&opened) {
        return Err(refuse(format!(
            "read the file: it is {kind}, expected a regular file"
        )));
    }
    let mut bytes = Vec::new();
    file.take(MAX_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| refuse(format!("read the file: {e}")))?;
    if bytes.len() as u64 > MAX_FILE_BYTES {
        return Err(refuse(format!(
            "read the file: it is larger than the {MAX_FILE_BYTES}-byte (4 MiB) limit"
        )));
    }
    decode(path, bytes)
}

/// A file's bytes as text: UTF-8 only, an invalid byte located at its line and column.
pub fn decode(path: &Path, bytes: Vec<u8>) -> Result<String, LoadError> {
    String::from_utf8(bytes).map_err(|error| {
        let valid = error.utf8_error().valid_up_to();
        let bytes = error.as_bytes();
        // The lossy text matches the file up to the bad byte, which becomes one U+FFFD.
        let lossy = String::from_utf8_lossy(bytes);
        Source::new(path, &lossy).error(
            valid..valid + '\u{FFFD}'.len_utf8(),
            format!(
                "read the file: expected UTF-8 text, found the byte 0x{:02x}",
                bytes.get(valid).copied().unwrap_or_default()
            ),
        )
    })
}
