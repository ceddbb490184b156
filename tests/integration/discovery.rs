//! Discovery and names: a scenario is named by its path below the folder argument (with several arguments,
//! below the folder they share), never by what lies above; same-named files in different folders keep
//! different names; a tree deeper than `MAX_DEPTH` is refused with an error naming the folder, and the walk
//! costs the same per entry at any depth.

use std::path::{Path, PathBuf};

use devsim::scenario::{CorpusError, MAX_DEPTH, find_named};
use tempfile::TempDir;

const SCENARIO: &str = "format = 1\ndescription = \"a scenario\"\n[host]\nprofile = \"h200\"\n[[step]]\naction = \"normalize\"\ndevice = \"cuda\"\n";

/// A scratch tree with a scenario at each of `files` (relative paths) and a folder at each of `folders`.
fn tree(files: &[&str], folders: &[&str]) -> TempDir {
    let scratch = TempDir::new().expect("a scratch folder");
    for folder in folders {
        std::fs::create_dir_all(scratch.path().join(folder)).expect("a folder");
    }
    for file in files {
        let path = scratch.path().join(file);
        std::fs::create_dir_all(path.parent().expect("a parent")).expect("its folder");
        std::fs::write(path, SCENARIO).expect("a scenario");
    }
    scratch
}

fn names(paths: &[PathBuf]) -> Vec<String> {
    find_named(paths)
        .expect("the tree lists")
        .into_iter()
        .map(|found| found.name)
        .collect()
}

#[test]
fn names_are_the_path_below_the_folder_argument_whatever_lies_above() {
    // `hosts/` above the folder given used to name files from there.
    let scratch = tree(&["corpus/a/x.toml", "corpus/b/x.toml"], &["hosts"]);
    let corpus = scratch.path().join("corpus");
    assert_eq!(
        names(std::slice::from_ref(&corpus)),
        ["a/x.toml", "b/x.toml"]
    );
    assert_eq!(names(&[corpus.join("a")]), ["x.toml"]);
    // Without any hosts/ the same.
    let bare = tree(&["a/x.toml", "b/x.toml"], &[]);
    assert_eq!(
        names(&[bare.path().to_path_buf()]),
        ["a/x.toml", "b/x.toml"]
    );
}

#[test]
fn several_arguments_are_named_below_the_folder_they_share_so_names_never_collide() {
    let scratch = tree(&["a/x.toml", "b/x.toml", "b/c/y.toml"], &[]);
    let root = scratch.path();
    assert_eq!(
        names(&[root.join("a"), root.join("b")]),
        ["a/x.toml", "b/c/y.toml", "b/x.toml"]
    );
    assert_eq!(
        names(&[root.join("a/x.toml"), root.join("b/x.toml")]),
        ["a/x.toml", "b/x.toml"],
        "file arguments count by their folder"
    );
    assert_eq!(names(&[root.join("b/c/y.toml")]), ["y.toml"]);
    assert_eq!(
        names(&[root.join("b/./c")]),
        ["y.toml"],
        "`.` parts are not part of a name"
    );
}

#[test]
fn a_filter_on_a_sub_folder_matches_with_and_without_hosts() {
    for folders in [&["hosts"][..], &[]] {
        let scratch = tree(&["sub/name.toml", "other/name.toml"], folders);
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_devsim"))
            .args(["check", "--filter", "sub/name.toml"])
            .arg(scratch.path())
            .output()
            .expect("devsim runs");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{folders:?}: {stdout}");
        assert!(
            stdout.contains("1 scenario(s) loaded"),
            "{folders:?}: {stdout}"
        );
    }
}

/// A chain of `depth` folders below `root`, with a scenario at the bottom; returns the bottom folder.
fn deep(root: &Path, depth: usize) -> PathBuf {
    let mut bottom = root.to_path_buf();
    for _ in 0..depth {
        bottom.push("d");
    }
    std::fs::create_dir_all(&bottom).expect("a deep folder");
    std::fs::write(bottom.join("x.toml"), SCENARIO).expect("a scenario");
    bottom
}

#[test]
fn a_tree_at_the_depth_limit_loads_and_one_deeper_is_refused_naming_the_folder() {
    let scratch = TempDir::new().expect("a scratch folder");
    deep(scratch.path(), MAX_DEPTH);
    let found = find_named(&[scratch.path().to_path_buf()]).expect("at the limit");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0].name.matches('/').count(), MAX_DEPTH);

    let too_deep = TempDir::new().expect("a scratch folder");
    deep(too_deep.path(), 2_000);
    let error = find_named(&[too_deep.path().to_path_buf()]).expect_err("too deep");
    assert!(
        error.to_string().contains("folders below the folder given"),
        "{error}"
    );
    let CorpusError::TooDeep { path, limit } = &error else {
        panic!("expected a depth error, got {error:?}");
    };
    assert_eq!(*limit, MAX_DEPTH);
    assert_eq!(
        path.strip_prefix(too_deep.path())
            .map(|p| p.components().count()),
        Ok(MAX_DEPTH + 1),
        "the first folder past the limit"
    );
}
