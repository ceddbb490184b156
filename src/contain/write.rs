//! The one way devsim writes a file: [`write_file`]. Every file it writes (a pending scenario copy, an
//! accepted one, a migrated scenario, a probed profile, a reproduction script and its index, a baseline, a
//! live record) goes through it, so one rule holds for all of them:
//!
//! - The file is named by a folder (the one the user named, or the one a scenario was found in) and a
//!   relative path below it made only of plain names: no `..`, no root, so nothing lands outside the folder.
//! - No symbolic link is written through: neither the file itself nor any folder on the way below the folder
//!   named may be a link, dangling or not; a link there is [`WriteError::Link`], naming it. Anything else
//!   that is not a regular file (a folder, a FIFO) where the file goes is [`WriteError::NotRegular`].
//! - The text goes to a temporary file created exclusively (`O_EXCL`, which never follows a link) beside the
//!   destination, then is renamed over it: a reader never sees half a file, an interrupted write leaves the
//!   old file whole, and a rename replaces a link that appeared meanwhile instead of writing through it. On
//!   any failure the temporary file is removed.
//!
//! Scenario trees are untrusted: a tree may ship a link where devsim would write (`x.toml.pending`,
//! `hosts/`, a file named like a reproduction script); this rule is what keeps such a tree from directing a
//! write outside itself.

use std::io::Write as _;
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use thiserror::Error;

use crate::shown::escape_controls;

#[cfg(unix)]
mod at;

/// Why a file was not written.
#[derive(Debug, Error)]
pub enum WriteError {
    /// A symbolic link stands where the file, or a folder on the way to it, would be.
    #[error(
        "write {}: it is a symbolic link; devsim never writes through a link (remove it, or name another path)",
        shown(path)
    )]
    Link {
        /// The link.
        path: PathBuf,
    },
    /// Something else than the expected kind stands there (a folder where the file goes, a file where a
    /// folder on the way should be, a FIFO).
    #[error("write {}: it is {found}, expected {expected}", shown(path))]
    NotRegular {
        /// What stands in the way.
        path: PathBuf,
        /// What it is, in words.
        found: &'static str,
        /// What was expected there, in words.
        expected: &'static str,
    },
    /// The relative path is not made of plain names below the folder (`..`, a root, nothing at all).
    #[error(
        "write {}: it is not a path below {}, the folder it is written under",
        shown(path),
        shown(folder)
    )]
    Outside {
        /// The path asked for.
        path: PathBuf,
        /// The folder it had to stay in.
        folder: PathBuf,
    },
    /// The file system refused (a missing or unwritable folder, a full disk).
    #[error("write {}: {source}", shown(path))]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The I/O error.
        source: std::io::Error,
    },
}

impl WriteError {
    /// The path the error names.
    pub fn path(&self) -> &Path {
        match self {
            Self::Link { path }
            | Self::NotRegular { path, .. }
            | Self::Outside { path, .. }
            | Self::Io { path, .. } => path,
        }
    }
}

fn shown(path: &Path) -> String {
    escape_controls(&path.display().to_string()).into_owned()
}

/// The permissions a written file gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Permissions {
    /// Those of the file it replaces; for a new file, the default for new files (the umask's).
    #[default]
    Kept,
    /// `rwxr-xr-x`: a script to run (on Unix; elsewhere as [`Permissions::Kept`]).
    Executable,
}

/// Writes `contents` to `folder/below` under the module's rule and returns that path. `below` is made of
/// plain names; the folders on the way below `folder` are created when missing (never `folder` itself,
/// which must exist), and none of them, nor the file, may be a symbolic link.
pub fn write_file(
    folder: &Path,
    below: &Path,
    contents: &[u8],
    permissions: Permissions,
) -> Result<PathBuf, WriteError> {
    let destination = folder.join(below);
    let mut names = Vec::new();
    for part in below.components() {
        match part {
            Component::Normal(name) => names.push(name),
            _ => {
                return Err(WriteError::Outside {
                    path: destination,
                    folder: folder.to_path_buf(),
                });
            }
        }
    }
    let Some((file_name, on_the_way)) = names.split_last() else {
        return Err(WriteError::Outside {
            path: destination,
            folder: folder.to_path_buf(),
        });
    };
    write_below(folder, on_the_way, file_name, contents, permissions)
}

/// The writing itself on Unix: the folder named is opened once, each folder on the way is opened (or
/// made) below the last one without following a link, and the temporary file is created and renamed in
/// the last one by its open descriptor, so no link swapped in after a check is ever followed.
#[cfg(unix)]
fn write_below(
    folder: &Path,
    on_the_way: &[&std::ffi::OsStr],
    file_name: &std::ffi::OsStr,
    contents: &[u8],
    permissions: Permissions,
) -> Result<PathBuf, WriteError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mut path = folder.to_path_buf();
    let mut dir = at::Dir::open(folder).map_err(|source| WriteError::Io {
        path: path.join(on_the_way.first().copied().unwrap_or(file_name)),
        source,
    })?;
    for name in on_the_way {
        dir = folder_below(&dir, name, &path.join(name))?;
        path.push(name);
    }
    path.push(file_name);
    let kept = match dir.kind(file_name) {
        Ok(None) => None,
        Ok(Some(at::Kind::File(mode))) => Some(std::fs::Permissions::from_mode(mode)),
        Ok(Some(at::Kind::Link)) => return Err(WriteError::Link { path }),
        Ok(Some(at::Kind::Folder)) => return Err(not_regular(path, "a folder")),
        Ok(Some(at::Kind::Other(found))) => return Err(not_regular(path, found)),
        Err(source) => return Err(WriteError::Io { path, source }),
    };
    #[cfg(test)]
    tests::AFTER_CHECK.with_borrow(|hook| hook.as_ref().map(|hook| hook(&path)));
    let (temporary, mut file) =
        create_temporary(file_name, |name| dir.create_new(name)).map_err(|source| {
            WriteError::Io {
                path: path.clone(),
                source,
            }
        })?;
    let written = file
        .write_all(contents)
        .and_then(|()| match (permissions, kept) {
            (Permissions::Executable, _) => {
                file.set_permissions(std::fs::Permissions::from_mode(0o755))
            }
            (Permissions::Kept, Some(kept)) => file.set_permissions(kept),
            (Permissions::Kept, None) => Ok(()),
        })
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            // rename(2) replaces the name, never what a link there points at.
            dir.rename(&temporary, file_name)
        });
    match written {
        Ok(()) => Ok(path),
        Err(source) => {
            let _ = dir.remove(&temporary);
            Err(WriteError::Io { path, source })
        }
    }
}

fn not_regular(path: PathBuf, found: &'static str) -> WriteError {
    WriteError::NotRegular {
        path,
        found,
        expected: "a regular file",
    }
}

/// Opens (or makes) one folder on the way to a file below `parent`: a real folder, never a link.
#[cfg(unix)]
fn folder_below(
    parent: &at::Dir,
    name: &std::ffi::OsStr,
    path: &Path,
) -> Result<at::Dir, WriteError> {
    let io = |source| WriteError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut made = false;
    loop {
        match parent.open_below(name) {
            Ok(dir) => return Ok(dir),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound && !made => {
                // mkdirat(2) never follows a link; one made meanwhile makes it fail, and is then refused.
                match parent.make_dir(name) {
                    Ok(()) => {}
                    Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {}
                    Err(source) => return Err(io(source)),
                }
                made = true;
            }
            Err(error) => {
                return Err(match parent.kind(name) {
                    Ok(Some(at::Kind::Link)) => WriteError::Link {
                        path: path.to_path_buf(),
                    },
                    Ok(Some(at::Kind::File(_))) => WriteError::NotRegular {
                        path: path.to_path_buf(),
                        found: "a regular file",
                        expected: "a folder",
                    },
                    Ok(Some(at::Kind::Other(found))) => WriteError::NotRegular {
                        path: path.to_path_buf(),
                        found,
                        expected: "a folder",
                    },
                    _ => io(error),
                });
            }
        }
    }
}

/// The writing itself elsewhere than Unix: checked by path, then a temporary file renamed into place.
#[cfg(not(unix))]
fn write_below(
    folder: &Path,
    on_the_way: &[&std::ffi::OsStr],
    file_name: &std::ffi::OsStr,
    contents: &[u8],
    permissions: Permissions,
) -> Result<PathBuf, WriteError> {
    let _ = permissions;
    let mut dir = folder.to_path_buf();
    for name in on_the_way {
        dir.push(name);
        folder_on_the_way(&dir)?;
    }
    let path = dir.join(file_name);
    let kept = match std::fs::symlink_metadata(&path) {
        Ok(metadata) if metadata.file_type().is_symlink() => {
            return Err(WriteError::Link { path });
        }
        Ok(metadata) if !metadata.file_type().is_file() => {
            return Err(not_regular(path, kind_of(&metadata)));
        }
        Ok(metadata) => Some(metadata.permissions()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(WriteError::Io { path, source }),
    };
    let (temporary, mut file) =
        create_temporary(file_name, |name| std::fs::File::create_new(dir.join(name))).map_err(
            |source| WriteError::Io {
                path: path.clone(),
                source,
            },
        )?;
    let temporary = dir.join(temporary);
    let written = file
        .write_all(contents)
        .and_then(|()| match kept {
            Some(kept) => file.set_permissions(kept),
            None => Ok(()),
        })
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            std::fs::rename(&temporary, &path)
        });
    match written {
        Ok(()) => Ok(path),
        Err(source) => {
            let _ = std::fs::remove_file(&temporary);
            Err(WriteError::Io { path, source })
        }
    }
}

/// [`write_file`] for a file named as one path (`--write-baseline out/b.toml`): written under the folder
/// it was given in ([`super::folder_of`]).
pub fn write_beside(
    path: &Path,
    contents: &[u8],
    permissions: Permissions,
) -> Result<PathBuf, WriteError> {
    let folder = super::folder_of(path);
    match path.file_name() {
        Some(name) => write_file(folder, Path::new(name), contents, permissions),
        None => Err(WriteError::Outside {
            path: path.to_path_buf(),
            folder: folder.to_path_buf(),
        }),
    }
}

/// Checks (or makes) one folder on the way to a file: a real folder, never a link.
#[cfg(not(unix))]
fn folder_on_the_way(dir: &Path) -> Result<(), WriteError> {
    let check = |metadata: std::fs::Metadata| {
        if metadata.file_type().is_symlink() {
            Err(WriteError::Link {
                path: dir.to_path_buf(),
            })
        } else if metadata.is_dir() {
            Ok(())
        } else {
            Err(WriteError::NotRegular {
                path: dir.to_path_buf(),
                found: kind_of(&metadata),
                expected: "a folder",
            })
        }
    };
    let io = |source| WriteError::Io {
        path: dir.to_path_buf(),
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(metadata) => check(metadata),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            // mkdir(2) never follows a link; one made meanwhile makes it fail, and is then refused.
            match std::fs::create_dir(dir) {
                Ok(()) => Ok(()),
                Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                    check(std::fs::symlink_metadata(dir).map_err(io)?)
                }
                Err(source) => Err(io(source)),
            }
        }
        Err(source) => Err(io(source)),
    }
}

/// The number the next temporary file's name takes.
static NEXT: AtomicU64 = AtomicU64::new(0);

/// A fresh hidden file beside the destination, created exclusively by `create` (which never follows a
/// link): `.<name>.<pid>-<n>.devsim-tmp`, returned by its name. Its name ends neither in `.toml` nor
/// `.pending`, so no scenario walk or review takes it.
fn create_temporary(
    file_name: &std::ffi::OsStr,
    create: impl Fn(&std::ffi::OsStr) -> std::io::Result<std::fs::File>,
) -> std::io::Result<(std::ffi::OsString, std::fs::File)> {
    let mut tries = 0;
    loop {
        let mut name = std::ffi::OsString::from(".");
        name.push(file_name);
        name.push(format!(
            ".{}-{}.devsim-tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        match create(&name) {
            Ok(file) => return Ok((name, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => {
                tries += 1;
            }
            Err(error) => return Err(error),
        }
    }
}

#[cfg(not(unix))]
/// What a non-regular entry is, in words.
fn kind_of(metadata: &std::fs::Metadata) -> &'static str {
    let kind = metadata.file_type();
    if kind.is_dir() {
        return "a folder";
    }
    if kind.is_file() {
        return "a regular file";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if kind.is_fifo() {
            return "a fifo";
        }
        if kind.is_socket() {
            return "a socket";
        }
        if kind.is_block_device() || kind.is_char_device() {
            return "a device";
        }
    }
    "not a regular file"
}

#[cfg(test)]
mod tests;
