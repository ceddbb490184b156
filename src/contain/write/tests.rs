//! Tests of [`super`]: the write rule, and links planted between its checks and its writes.

use super::*;

type Hook = Box<dyn Fn(&Path)>;

thread_local! {
    /// Run by a Unix write on this thread between its checks and its writes, with the destination:
    /// what a racing process would do in that window.
    pub(super) static AFTER_CHECK: std::cell::RefCell<Option<Hook>> =
        const { std::cell::RefCell::new(None) };
}

/// [`write_file`] with `hook` run between its checks and its writes.
#[cfg(unix)]
fn write_racing(
    folder: &Path,
    below: &str,
    hook: impl Fn(&Path) + 'static,
) -> Result<PathBuf, WriteError> {
    AFTER_CHECK.set(Some(Box::new(hook)));
    let written = write_file(folder, Path::new(below), b"new\n", Permissions::Kept);
    AFTER_CHECK.set(None);
    written
}

#[cfg(unix)]
#[test]
fn a_link_planted_at_the_destination_after_the_check_is_replaced_not_followed() {
    let outside = tempfile::tempdir().expect("scratch");
    let tree = tempfile::tempdir().expect("scratch");
    let marker = outside.path().join("marker");
    std::fs::write(&marker, "kept").expect("marker");
    std::fs::write(tree.path().join("a.toml"), "old").expect("file");
    let planted = marker.clone();
    let path = write_racing(tree.path(), "a.toml", move |destination| {
        std::fs::remove_file(destination).expect("remove");
        std::os::unix::fs::symlink(&planted, destination).expect("link");
    })
    .expect("written");
    assert_eq!(std::fs::read_to_string(&marker).expect("read"), "kept");
    let metadata = std::fs::symlink_metadata(&path).expect("meta");
    assert!(metadata.file_type().is_file(), "the link was replaced");
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "new\n");
    assert_eq!(entries(tree.path()), ["a.toml"]);
}

#[cfg(unix)]
#[test]
fn a_link_planted_at_the_temporary_name_is_never_written_through() {
    let outside = tempfile::tempdir().expect("scratch");
    let tree = tempfile::tempdir().expect("scratch");
    let marker = outside.path().join("marker");
    std::fs::write(&marker, "kept").expect("marker");
    let missing = outside.path().join("created");
    let (to_marker, to_missing) = (marker.clone(), missing.clone());
    // The next temporary names this process will try (other tests may take some meanwhile), each a
    // link out: half to the marker, half dangling.
    let path = write_racing(tree.path(), "a.toml", move |destination| {
        let next = NEXT.load(Ordering::Relaxed);
        for n in next..next + 40 {
            let name = format!(".a.toml.{}-{n}.devsim-tmp", std::process::id());
            let target = if n % 2 == 0 { &to_marker } else { &to_missing };
            std::os::unix::fs::symlink(target, destination.with_file_name(name)).expect("link");
        }
    })
    .expect("written beside the links");
    assert_eq!(std::fs::read_to_string(&marker).expect("read"), "kept");
    assert!(
        !missing.exists(),
        "nothing is created through a dangling link"
    );
    assert_eq!(std::fs::read_to_string(&path).expect("read"), "new\n");
}

#[cfg(unix)]
#[test]
fn creating_the_temporary_file_fails_on_a_link_dangling_or_not() {
    let outside = tempfile::tempdir().expect("scratch");
    let tree = tempfile::tempdir().expect("scratch");
    let marker = outside.path().join("marker");
    std::fs::write(&marker, "kept").expect("marker");
    std::os::unix::fs::symlink(&marker, tree.path().join("to-marker")).expect("link");
    std::os::unix::fs::symlink(outside.path().join("created"), tree.path().join("dangling"))
        .expect("link");
    let dir = at::Dir::open(tree.path()).expect("open");
    for name in ["to-marker", "dangling"] {
        let error = dir
            .create_new(std::ffi::OsStr::new(name))
            .expect_err("a link is never opened");
        assert_eq!(error.kind(), std::io::ErrorKind::AlreadyExists, "{name}");
    }
    assert_eq!(std::fs::read_to_string(&marker).expect("read"), "kept");
    assert_eq!(entries(outside.path()), ["marker"]);
}

#[cfg(unix)]
#[test]
fn a_folder_swapped_for_a_link_after_it_was_opened_is_not_followed() {
    let outside = tempfile::tempdir().expect("scratch");
    let tree = tempfile::tempdir().expect("scratch");
    std::fs::create_dir(tree.path().join("hosts")).expect("folder");
    let target = outside.path().to_path_buf();
    let path = write_racing(tree.path(), "hosts/box.toml", move |destination| {
        let hosts = destination.parent().expect("folder");
        std::fs::rename(hosts, hosts.with_file_name("moved")).expect("move");
        std::os::unix::fs::symlink(&target, hosts).expect("link");
    })
    .expect("written in the folder opened");
    assert_eq!(path, tree.path().join("hosts/box.toml"));
    assert!(
        entries(outside.path()).is_empty(),
        "nothing written outside"
    );
    assert_eq!(
        std::fs::read_to_string(tree.path().join("moved/box.toml")).expect("read"),
        "new\n"
    );
}

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
    let error =
        write_file(tree.path(), Path::new("x.toml"), b"x", Permissions::Kept).expect_err("refused");
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
    let error =
        write_file(&folder, Path::new("b.toml"), b"x", Permissions::Kept).expect_err("no folder");
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
