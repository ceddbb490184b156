//! Containment of paths given by a user: a path may be a symbolic link only when it resolves inside the
//! folder it was given under. The rule the scenario walk applies to every entry of a scenario root, applied
//! here to paths named one by one: a `--hosts` folder, a `--baseline` or `--subject` file, a profile folder
//! found as `<root>/hosts`. Depends on nothing else in devsim.

use std::path::{Path, PathBuf};

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

    #[test]
    fn a_bare_name_is_given_under_the_current_folder() {
        assert_eq!(folder_of(Path::new("hosts")), Path::new("."));
        assert_eq!(folder_of(Path::new("a/hosts")), Path::new("a"));
    }
}
