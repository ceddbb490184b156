//! Containment of paths given by a user. Reading: a path may be a symbolic link only when it resolves
//! inside the folder it was given under. The rule the scenario walk applies to every entry of a scenario
//! root, applied here to paths named one by one: a folder argument, a `--hosts` folder, a `--baseline` or
//! `--subject` file, a profile folder found as `<root>/hosts`. Writing ([`mod@write`]): never through a link,
//! never outside the folder named, always a temporary file renamed into place. Depends on nothing else in
//! devsim but [`crate::shown`], which escapes the paths its errors name (layer 1 of the README's table).

pub mod read;
pub mod write;

use std::path::{Path, PathBuf};

pub use read::{is_link_refused, read_no_follow};
pub use write::{Permissions, WriteError, write_beside, write_file};

/// The folder `path` was given under: its parent, or `.` for a bare name.
pub fn folder_of(path: &Path) -> &Path {
    match path.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    }
}

/// The resolved folder `path` leaves, when it resolves (links followed) outside `folder`; `None` when it
/// stays inside. Fails when either cannot be resolved (a missing path, a dangling link).
pub fn escapes(path: &Path, folder: &Path) -> std::io::Result<Option<PathBuf>> {
    let folder = if folder.as_os_str().is_empty() {
        Path::new(".")
    } else {
        folder
    };
    let inside = std::fs::canonicalize(folder)?;
    let resolved = std::fs::canonicalize(path)?;
    Ok((!resolved.starts_with(&inside)).then_some(inside))
}

/// [`escapes`] for a path given under its own folder ([`folder_of`]).
pub fn escapes_its_folder(path: &Path) -> std::io::Result<Option<PathBuf>> {
    escapes(path, folder_of(path))
}

/// [`escapes_its_folder`] for a path argument that is a link: the resolved folder it leaves, or `None` when
/// it is no link or stays inside. A path that is no link (`..`, `/`, a plain folder) is the user's own
/// choice and never refused; a trailing `/` does not hide a link. Fails when a link cannot be resolved.
pub fn link_escapes(path: &Path) -> std::io::Result<Option<PathBuf>> {
    let plain: PathBuf = path.components().collect();
    match std::fs::symlink_metadata(&plain) {
        Ok(metadata) if metadata.file_type().is_symlink() => escapes_its_folder(&plain),
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn a_link_is_contained_only_when_it_resolves_inside_its_folder() {
        let outside = tempfile::tempdir().expect("scratch");
        let tree = tempfile::tempdir().expect("scratch");
        std::fs::create_dir(tree.path().join("real")).expect("folder");
        std::os::unix::fs::symlink(outside.path(), tree.path().join("out")).expect("link");
        std::os::unix::fs::symlink("real", tree.path().join("in")).expect("link");

        let left = escapes_its_folder(&tree.path().join("out")).expect("resolves");
        assert_eq!(
            left,
            Some(std::fs::canonicalize(tree.path()).expect("resolves"))
        );
        assert_eq!(
            escapes_its_folder(&tree.path().join("in")).expect("resolves"),
            None
        );
        assert_eq!(
            escapes_its_folder(&tree.path().join("real")).expect("resolves"),
            None
        );
        assert!(escapes_its_folder(&tree.path().join("missing")).is_err());
    }

    #[cfg(unix)]
    #[test]
    fn only_a_link_argument_is_checked_and_a_trailing_slash_does_not_hide_it() {
        let outside = tempfile::tempdir().expect("scratch");
        let tree = tempfile::tempdir().expect("scratch");
        std::fs::create_dir(tree.path().join("real")).expect("folder");
        std::os::unix::fs::symlink(outside.path(), tree.path().join("out")).expect("link");
        let resolved = std::fs::canonicalize(tree.path()).expect("resolves");
        for out in ["out", "out/", "out/."] {
            let path = PathBuf::from(format!("{}/{out}", tree.path().display()));
            assert_eq!(
                link_escapes(&path).expect("resolves"),
                Some(resolved.clone()),
                "{out}"
            );
        }
        let up = tree.path().join("real").join("..").join("..");
        assert_eq!(link_escapes(&up).expect("no link"), None);
        assert_eq!(
            link_escapes(&tree.path().join("real")).expect("no link"),
            None
        );
    }

    #[test]
    fn a_bare_name_is_given_under_the_current_folder() {
        assert_eq!(folder_of(Path::new("hosts")), Path::new("."));
        assert_eq!(folder_of(Path::new("a/hosts")), Path::new("a"));
    }
}
