//! Finding scenario files and reading them, contained.
//!
//! Discovery takes regular `*.toml` files only. A symbolic link is followed only when it resolves inside
//! the folder being walked (the scenario root); one that leaves it is an error and is never opened. A
//! folder or file argument that is itself a link is followed only when it resolves inside the folder it
//! was given under. FIFOs,
//! sockets and devices are refused from their metadata, without opening them. Every folder is walked once
//! (by its resolved path), so link loops terminate and no file is listed twice; a folder more than
//! [`MAX_DEPTH`] below its argument is an error naming it. `hosts/` folders hold
//! profiles, not scenarios, and are skipped. A file is read through a bounded reader: more than
//! [`MAX_FILE_BYTES`] is an error naming the file and the limit.

use std::collections::HashSet;
use std::fs::FileType;
use std::io::Read;
use std::path::{Path, PathBuf};

use crate::scenario::error::{CorpusError, LoadError};
use crate::scenario::load::hosts::HOSTS_DIR;
use crate::scenario::load::source::Source;

/// The largest scenario or profile file devsim reads: 4 MiB.
pub const MAX_FILE_BYTES: u64 = 4 * 1024 * 1024;

/// How many folders deep below a folder argument discovery goes; a deeper folder is an error naming it.
pub const MAX_DEPTH: usize = 64;

/// A scenario file found under the path arguments, with its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The file, as reached from its argument (readable from the current folder).
    pub path: PathBuf,
    /// Its name in reports, baselines, filters and test lists: the path below the folder argument, `/`-separated
    /// (with several arguments, below the folder they share).
    pub name: String,
}

impl Found {
    /// A file loaded on its own: named by the path below its own folder (its file name).
    pub fn alone(path: &Path) -> Self {
        Self {
            path: path.to_path_buf(),
            name: scenario_name(path),
        }
    }
}

/// The scenario root for naming a file: the nearest ancestor folder holding `hosts/`, else the file's
/// folder.
#[deprecated(
    since = "0.2.0",
    note = "names no longer depend on an ancestor: a scenario is named by its path below the folder argument (`find_named`)"
)]
pub fn root_of(path: &Path) -> PathBuf {
    let parent = path.parent().unwrap_or(Path::new("."));
    parent
        .ancestors()
        .find(|dir| dir.join(HOSTS_DIR).is_dir())
        .unwrap_or(parent)
        .to_path_buf()
}

/// The name of a scenario file loaded on its own: the path below its own folder, i.e. its file name.
/// Files found under folder arguments are named by [`find_named`].
pub fn scenario_name(path: &Path) -> String {
    path.file_name()
        .map_or_else(|| path.to_string_lossy(), |name| name.to_string_lossy())
        .into_owned()
}

/// Every scenario file under `paths`, sorted, host profiles excluded. A file argument is taken as given
/// (it must be a regular file); a folder is walked under the containment rules of this module.
pub fn find_scenarios(paths: &[PathBuf]) -> Result<Vec<PathBuf>, CorpusError> {
    Ok(find_named(paths)?
        .into_iter()
        .map(|found| found.path)
        .collect())
}

/// [`find_scenarios`] with each file's name: its path below its folder argument, or with several arguments
/// below the folder they all lie in (a file argument counts by its folder), so two files never share a
/// name and no folder above the arguments changes one.
pub fn find_named(paths: &[PathBuf]) -> Result<Vec<Found>, CorpusError> {
    let mut walk = Walk::default();
    let mut bases = Vec::new();
    for path in paths {
        let metadata = std::fs::metadata(path).map_err(|source| CorpusError::Io {
            path: path.clone(),
            source,
        })?;
        if metadata.is_dir() {
            // A folder argument that is a link is followed only when it resolves inside the folder it was
            // given under, like every link below it.
            let escapes = crate::contain::link_escapes(path).map_err(|source| CorpusError::Io {
                path: path.clone(),
                source,
            })?;
            if let Some(root) = escapes {
                return Err(CorpusError::Escapes {
                    path: path.clone(),
                    root,
                });
            }
            bases.push(lexical(path));
            let root = canonical(path)?;
            walk.root = root.clone();
            walk.dir(path, &root, 0)?;
        } else {
            regular(path, metadata.file_type())?;
            // A file argument is given under its own folder: a link that leaves it is not followed.
            bases.push(lexical(crate::contain::folder_of(path)));
            let io = |source| CorpusError::Io {
                path: path.clone(),
                source,
            };
            if let Some(root) = crate::contain::escapes_its_folder(path).map_err(io)? {
                return Err(CorpusError::Escapes {
                    path: path.clone(),
                    root,
                });
            }
            if walk.files.insert(canonical(path)?) {
                walk.found.push(path.clone());
            }
        }
    }
    let base = shared_prefix(&bases);
    let mut found: Vec<Found> = walk
        .found
        .into_iter()
        .map(|path| {
            let parts = lexical(&path);
            // Every found path lies under an argument, so it has at least the `base` shared parts.
            let name = parts
                .get(base..)
                .unwrap_or_default()
                .iter()
                .map(|part| part.to_string_lossy())
                .collect::<Vec<_>>()
                .join("/");
            Found { path, name }
        })
        .collect();
    found.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(found)
}

/// A path's parts, with `.` dropped (`./a/./b` is `a/b`); `..` is kept, so distinct paths stay distinct.
fn lexical(path: &Path) -> Vec<std::ffi::OsString> {
    path.components()
        .filter(|part| !matches!(part, std::path::Component::CurDir))
        .map(|part| part.as_os_str().to_os_string())
        .collect()
}

/// How many leading parts every one of `paths` shares.
fn shared_prefix(paths: &[Vec<std::ffi::OsString>]) -> usize {
    let Some((first, rest)) = paths.split_first() else {
        return 0;
    };
    let mut shared = first.len();
    for path in rest {
        shared = shared.min(first.iter().zip(path).take_while(|(a, b)| a == b).count());
    }
    shared
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
    /// Walks `dir` (resolved: `resolved`, `depth` folders below its argument). Only links are resolved by
    /// the file system; any other entry's resolved path is its folder's plus its name, so each entry costs
    /// the same at any depth.
    fn dir(&mut self, dir: &Path, resolved: &Path, depth: usize) -> Result<(), CorpusError> {
        if depth > MAX_DEPTH {
            return Err(CorpusError::TooDeep {
                path: dir.to_path_buf(),
                limit: MAX_DEPTH,
            });
        }
        if !self.dirs.insert(resolved.to_path_buf()) {
            return Ok(());
        }
        let io = |source| CorpusError::Io {
            path: dir.to_path_buf(),
            source,
        };
        let mut entries = std::fs::read_dir(dir)
            .map_err(io)?
            .map(|entry| entry.and_then(|e| Ok((e.file_name(), e.file_type()?))))
            .collect::<Result<Vec<_>, _>>()
            .map_err(io)?;
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, kind) in entries {
            let path = dir.join(&name);
            let toml = Path::new(&name)
                .extension()
                .is_some_and(|ext| ext == "toml");
            let (resolved, kind) = if kind.is_symlink() {
                let target = match canonical(&path) {
                    Ok(target) => target,
                    // A dangling link that is not a scenario is none of our business.
                    Err(_) if !toml => continue,
                    Err(error) => return Err(error),
                };
                if !target.starts_with(&self.root) {
                    if toml || target.is_dir() {
                        return Err(CorpusError::Escapes {
                            path,
                            root: self.root.clone(),
                        });
                    }
                    continue;
                }
                let kind = std::fs::metadata(&target)
                    .map_err(|source| CorpusError::Io {
                        path: path.clone(),
                        source,
                    })?
                    .file_type();
                (target, kind)
            } else {
                (resolved.join(&name), kind)
            };
            if kind.is_dir() {
                if name == HOSTS_DIR {
                    continue;
                }
                self.dir(&path, &resolved, depth + 1)?;
            } else if toml {
                regular(&path, kind)?;
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

/// Refuses anything but a regular file, from its type alone.
fn regular(path: &Path, kind: FileType) -> Result<(), CorpusError> {
    match kind_of(kind) {
        None => Ok(()),
        Some(kind) => Err(CorpusError::NotRegular {
            path: path.to_path_buf(),
            kind,
        }),
    }
}

/// What a non-regular file is, in words; `None` for a regular file.
fn kind_of(kind: FileType) -> Option<&'static str> {
    if kind.is_file() {
        return None;
    }
    if kind.is_dir() {
        return Some("a folder");
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
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
    match crate::contain::escapes(path, root) {
        Err(e) => Err(refuse(format!("read the file: {e}"))),
        // Refused before a byte is read, so nothing of the file can reach any output.
        Ok(Some(_)) => Err(refuse(format!(
            "read the file: it resolves outside {}; links are followed only inside the folder they were given under",
            crate::scenario::error::escape_controls(&root.display().to_string())
        ))),
        Ok(None) => read_bounded(path),
    }
}

/// [`read_contained`] within the file's own folder: for files named one by one (a profile, a baseline, a
/// subject file, a scenario given as a file argument).
pub fn read_in_folder(path: &Path) -> Result<String, LoadError> {
    read_contained(path, crate::contain::folder_of(path))
}

/// Reads a scenario or profile file: regular files only (checked before opening, and again on the opened
/// handle), at most [`MAX_FILE_BYTES`], UTF-8 (an invalid byte is located at its line and column).
pub fn read_bounded(path: &Path) -> Result<String, LoadError> {
    let refuse = |message: String| LoadError::new(path, 1, 1, message);
    let metadata = std::fs::metadata(path).map_err(|e| refuse(format!("read the file: {e}")))?;
    if let Some(kind) = kind_of(metadata.file_type()) {
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
    if let Some(kind) = kind_of(opened.file_type()) {
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
