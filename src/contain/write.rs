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
            return Err(WriteError::NotRegular {
                path,
                found: kind_of(&metadata),
                expected: "a regular file",
            });
        }
        Ok(metadata) => Some(metadata.permissions()),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
        Err(source) => return Err(WriteError::Io { path, source }),
    };
    let (temporary, mut file) = create_temporary(&dir, file_name)?;
    let written = file
        .write_all(contents)
        .and_then(|()| match (permissions, kept) {
            (Permissions::Executable, _) => set_executable(&file),
            (Permissions::Kept, Some(kept)) => file.set_permissions(kept),
            (Permissions::Kept, None) => Ok(()),
        })
        .and_then(|()| file.sync_all())
        .and_then(|()| {
            drop(file);
            // rename(2) replaces the name, never what a link there points at.
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

/// A fresh hidden file beside the destination, created exclusively: `.<name>.<pid>-<n>.devsim-tmp`. Its
/// name ends neither in `.toml` nor `.pending`, so no scenario walk or review takes it.
fn create_temporary(
    dir: &Path,
    file_name: &std::ffi::OsStr,
) -> Result<(PathBuf, std::fs::File), WriteError> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let mut tries = 0;
    loop {
        let mut name = std::ffi::OsString::from(".");
        name.push(file_name);
        name.push(format!(
            ".{}-{}.devsim-tmp",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let temporary = dir.join(name);
        match std::fs::File::create_new(&temporary) {
            Ok(file) => return Ok((temporary, file)),
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists && tries < 100 => {
                tries += 1;
            }
            // Named by the file it was for: the temporary name means nothing to a user.
            Err(source) => {
                return Err(WriteError::Io {
                    path: dir.join(file_name),
                    source,
                });
            }
        }
    }
}

#[cfg(unix)]
fn set_executable(file: &std::fs::File) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    file.set_permissions(std::fs::Permissions::from_mode(0o755))
}

#[cfg(not(unix))]
fn set_executable(_file: &std::fs::File) -> std::io::Result<()> {
    Ok(())
}

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
mod tests {
    use super::*;

    fn entries(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("list")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn a_file_is_written_whole_and_no_temporary_file_is_left() {
        let tree = tempfile::tempdir().expect("scratch");
        let path = write_file(
            tree.path(),
            Path::new("hosts/box.toml"),
            b"torch = \"cuda\"\n",
            Permissions::Kept,
        )
        .expect("written");
        assert_eq!(path, tree.path().join("hosts/box.toml"));
        assert_eq!(
            std::fs::read_to_string(&path).expect("read"),
            "torch = \"cuda\"\n"
        );
        write_file(
            tree.path(),
            Path::new("hosts/box.toml"),
            b"again\n",
            Permissions::Kept,
        )
        .expect("replaced");
        assert_eq!(std::fs::read_to_string(&path).expect("read"), "again\n");
        assert_eq!(entries(&tree.path().join("hosts")), ["box.toml"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_link_where_the_file_goes_is_refused_dangling_or_not_and_its_target_is_untouched() {
        let outside = tempfile::tempdir().expect("scratch");
        let tree = tempfile::tempdir().expect("scratch");
        let marker = outside.path().join("marker");
        std::fs::write(&marker, "kept").expect("marker");
        std::os::unix::fs::symlink(&marker, tree.path().join("a.toml.pending")).expect("link");
        let missing = outside.path().join("created");
        std::os::unix::fs::symlink(&missing, tree.path().join("b.toml")).expect("link");
        for name in ["a.toml.pending", "b.toml"] {
            let error = write_file(tree.path(), Path::new(name), b"x", Permissions::Kept)
                .expect_err("a link is refused");
            assert!(
                matches!(&error, WriteError::Link { path } if *path == tree.path().join(name)),
                "{error:?}"
            );
            assert!(error.to_string().contains(name), "{error}");
        }
        assert_eq!(std::fs::read_to_string(&marker).expect("read"), "kept");
        assert!(
            !missing.exists(),
            "nothing is created through a dangling link"
        );
        assert_eq!(entries(tree.path()), ["a.toml.pending", "b.toml"]);
    }

    #[cfg(unix)]
    #[test]
    fn a_folder_on_the_way_that_is_a_link_is_refused() {
        let outside = tempfile::tempdir().expect("scratch");
        let tree = tempfile::tempdir().expect("scratch");
        std::os::unix::fs::symlink(outside.path(), tree.path().join("hosts")).expect("link");
        let error = write_file(
            tree.path(),
            Path::new("hosts/box.toml"),
            b"x",
            Permissions::Kept,
        )
        .expect_err("a folder link is refused");
        assert!(
            matches!(&error, WriteError::Link { path } if *path == tree.path().join("hosts")),
            "{error:?}"
        );
        assert!(entries(outside.path()).is_empty());
    }

    #[test]
    fn a_path_that_leaves_the_folder_is_refused() {
        let tree = tempfile::tempdir().expect("scratch");
        std::fs::create_dir(tree.path().join("in")).expect("folder");
        for below in ["../x.toml", "/tmp/x.toml", "", "a/../../x"] {
            let error = write_file(
                &tree.path().join("in"),
                Path::new(below),
                b"x",
                Permissions::Kept,
            )
            .expect_err("refused");
            assert!(
                matches!(error, WriteError::Outside { .. }),
                "{below}: {error:?}"
            );
        }
        assert_eq!(entries(tree.path()), ["in"]);
        assert!(entries(&tree.path().join("in")).is_empty());
    }

    #[test]
    fn a_folder_where_the_file_goes_is_refused() {
        let tree = tempfile::tempdir().expect("scratch");
        std::fs::create_dir(tree.path().join("x.toml")).expect("folder");
        let error = write_file(tree.path(), Path::new("x.toml"), b"x", Permissions::Kept)
            .expect_err("refused");
        assert!(
            error
                .to_string()
                .ends_with("x.toml: it is a folder, expected a regular file"),
            "{error}"
        );
        assert_eq!(entries(tree.path()), ["x.toml"]);
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_file_not_the_temporary_one() {
        let tree = tempfile::tempdir().expect("scratch");
        let folder = tree.path().join("none");
        let error = write_file(&folder, Path::new("b.toml"), b"x", Permissions::Kept)
            .expect_err("no folder");
        assert!(
            matches!(&error, WriteError::Io { path, .. } if *path == folder.join("b.toml")),
            "{error:?}"
        );
        assert!(!folder.exists(), "the folder named is never made");
    }

    #[cfg(unix)]
    #[test]
    fn permissions_are_kept_or_made_executable() {
        use std::os::unix::fs::PermissionsExt;
        let tree = tempfile::tempdir().expect("scratch");
        let path = tree.path().join("a.toml");
        std::fs::write(&path, "old").expect("file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("mode");
        write_file(tree.path(), Path::new("a.toml"), b"new", Permissions::Kept).expect("written");
        let mode = std::fs::metadata(&path).expect("meta").permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
        let script = write_file(
            tree.path(),
            Path::new("r.py"),
            b"#!",
            Permissions::Executable,
        )
        .expect("written");
        let mode = std::fs::metadata(&script)
            .expect("meta")
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o755);
    }
}
