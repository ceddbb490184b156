//! Containment of writes: every file devsim writes (`run --accept`'s pending copies, `review --accept`,
//! `migrate`, `probe --write`, `--write-baseline`, `--write-live-record`; `--repro` is in tests/subjects.rs)
//! goes to a temporary file renamed into place, never through a symbolic link and never outside the folder
//! named. Scenario trees are untrusted: each case plants a link where devsim would write, pointing at a
//! marker file outside the tree (or, dangling, at where one would be created), and asserts the marker is
//! untouched, nothing is created, and the error names the link.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::common::code_and_output;

const MARKER: &str = "DEVSIM-WRITE-MARKER-4c1e: nothing may overwrite this\n";

/// A tree to write in and, apart from it, a folder holding the marker file.
struct Trees {
    outside: TempDir,
    tree: TempDir,
}

impl Trees {
    fn new() -> Self {
        let outside = tempfile::tempdir().expect("temp dir");
        std::fs::write(outside.path().join("marker"), MARKER).expect("marker");
        Self {
            outside,
            tree: tempfile::tempdir().expect("temp dir"),
        }
    }

    fn marker(&self) -> PathBuf {
        self.outside.path().join("marker")
    }

    /// Where a dangling link points: outside, and not there.
    fn missing(&self) -> PathBuf {
        self.outside.path().join("created")
    }

    /// The marker is as it was, and nothing else appeared outside.
    fn outside_untouched(&self, what: &str, printed: &str) {
        assert_eq!(
            std::fs::read_to_string(self.marker()).expect("marker"),
            MARKER,
            "{what}: the marker outside was overwritten:\n{printed}"
        );
        assert!(
            !self.missing().exists(),
            "{what}: a file was created through a dangling link:\n{printed}"
        );
        let names: Vec<_> = std::fs::read_dir(self.outside.path())
            .expect("list")
            .map(|e| e.expect("entry").file_name())
            .collect();
        assert_eq!(names, ["marker"], "{what}: {printed}");
    }
}

fn link(target: &Path, at: &Path) {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).expect("folder");
    }
    std::os::unix::fs::symlink(target, at).expect("symlink");
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8")
}

/// Runs devsim in the repository root; its exit code and everything it printed.
fn devsim(args: &[&str]) -> (Option<i32>, String) {
    code_and_output(
        Command::new(env!("CARGO_BIN_EXE_devsim"))
            .args(args)
            .env_remove("CI")
            .env("DEVSIM_LIVE_RECORD_DATE", "2026-12-07")
            .current_dir(env!("CARGO_MANIFEST_DIR")),
    )
}

/// Exit 2, with an error that names `link` and says it is a link devsim does not write through.
fn refused_naming(what: &str, link: &Path, (code, printed): &(Option<i32>, String)) {
    assert_eq!(*code, Some(2), "{what}: expected exit 2:\n{printed}");
    assert!(
        printed.contains(&format!("{}: it is a symbolic link", link.display())),
        "{what}: the error must name {}:\n{printed}",
        link.display()
    );
}

const DRAFT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/accept/draft.toml"
);

#[test]
fn run_accept_never_writes_a_pending_copy_through_a_link_dangling_or_not() {
    let t = Trees::new();
    let root = t.tree.path();
    std::fs::copy(DRAFT, root.join("draft.toml")).expect("draft");
    for target in [t.marker(), t.missing()] {
        let pending = root.join("draft.toml.pending");
        let _ = std::fs::remove_file(&pending);
        link(&target, &pending);
        let ran = devsim(&["run", utf8(root), "--accept"]);
        refused_naming("run --accept", &pending, &ran);
        t.outside_untouched("run --accept", &ran.1);
        assert!(
            std::fs::symlink_metadata(&pending)
                .expect("still there")
                .file_type()
                .is_symlink(),
            "the link itself is left for the user to remove"
        );
    }
}

#[test]
fn review_accept_under_a_folder_argument_that_links_out_changes_nothing_there() {
    let t = Trees::new();
    std::fs::copy(t.marker(), t.outside.path().join("a.toml")).expect("scenario");
    std::fs::write(t.outside.path().join("a.toml.pending"), "format = 1\n").expect("pending");
    let scenarios = t.tree.path().join("scenarios");
    link(t.outside.path(), &scenarios);
    let (code, printed) = devsim(&["review", utf8(&scenarios), "--accept"]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        printed.contains(&format!(
            "failed to use the folder {}: it is a link that resolves outside",
            scenarios.display()
        )),
        "{printed}"
    );
    assert_eq!(
        std::fs::read_to_string(t.outside.path().join("a.toml")).expect("scenario"),
        MARKER,
        "{printed}"
    );
    assert!(
        t.outside.path().join("a.toml.pending").exists(),
        "{printed}"
    );
}

#[test]
fn review_accept_writes_the_scenario_in_place_and_removes_the_copy() {
    let t = Trees::new();
    let root = t.tree.path();
    std::fs::copy(DRAFT, root.join("draft.toml")).expect("draft");
    std::fs::write(root.join("draft.toml.pending"), "format = 1\n# accepted\n").expect("pending");
    let (code, printed) = devsim(&["review", utf8(root), "--accept"]);
    assert_eq!(code, Some(0), "{printed}");
    assert_eq!(
        std::fs::read_to_string(root.join("draft.toml")).expect("accepted"),
        "format = 1\n# accepted\n"
    );
    let mut names: Vec<_> = std::fs::read_dir(root)
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["draft.toml"], "no copy and no temporary file left");
}

/// A format-1 scenario `migrate` rewrites (an `extension_load` trace rule without a level).
const DEPRECATED: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/formats/format-1/seed/cuda_only_kernels_refused_on_hip.toml"
);

#[test]
fn migrate_of_a_folder_argument_that_links_out_rewrites_nothing_there() {
    let t = Trees::new();
    let outside_scenario = t.outside.path().join("old.toml");
    std::fs::copy(DEPRECATED, &outside_scenario).expect("scenario");
    let before = std::fs::read_to_string(&outside_scenario).expect("scenario");
    let scenarios = t.tree.path().join("scenarios");
    link(t.outside.path(), &scenarios);
    let (code, printed) = devsim(&["migrate", utf8(&scenarios)]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        printed.contains(&format!(
            "follow link {}: it resolves outside",
            scenarios.display()
        )),
        "{printed}"
    );
    assert!(!printed.contains("migrated "), "{printed}");
    assert_eq!(
        std::fs::read_to_string(&outside_scenario).expect("scenario"),
        before
    );
}

#[test]
fn migrate_with_a_leftover_migrating_file_migrates_and_leaves_it_alone() {
    let t = Trees::new();
    let root = t.tree.path();
    let file = root.join("old.toml");
    std::fs::copy(DEPRECATED, &file).expect("scenario");
    let before = std::fs::read_to_string(&file).expect("scenario");
    let leftover = root.join("old.toml.migrating");
    std::fs::write(&leftover, "half a file\n").expect("leftover");
    let (code, printed) = devsim(&["migrate", utf8(root)]);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("1 of 1 file(s) migrated"), "{printed}");
    assert_ne!(
        std::fs::read_to_string(&file).expect("migrated"),
        before,
        "{printed}"
    );
    assert_eq!(
        std::fs::read_to_string(&leftover).expect("left alone"),
        "half a file\n"
    );
    let (code, printed) = devsim(&["migrate", "--check", utf8(root)]);
    assert_eq!(code, Some(0), "nothing left to migrate:\n{printed}");
}

#[test]
fn migrate_never_rewrites_a_scenario_that_is_a_link() {
    let t = Trees::new();
    let root = t.tree.path();
    std::fs::create_dir(root.join("real")).expect("folder");
    std::fs::copy(DEPRECATED, root.join("real").join("old.toml")).expect("scenario");
    let before = std::fs::read_to_string(root.join("real").join("old.toml")).expect("scenario");
    // Sorted before its target, so the walk lists the link and not the file it names.
    let linked = root.join("a.toml");
    link(Path::new("real/old.toml"), &linked);
    let ran = devsim(&["migrate", utf8(root)]);
    refused_naming("migrate", &linked, &ran);
    assert!(!ran.1.contains("migrated "), "{}", ran.1);
    assert_eq!(
        std::fs::read_to_string(root.join("real").join("old.toml")).expect("scenario"),
        before
    );
}

#[test]
fn probe_write_never_writes_through_a_link_in_hosts_or_a_hosts_link() {
    let t = Trees::new();
    let root = t.tree.path();
    let profile = root.join("hosts").join("here.toml");
    for (target, force) in [
        (t.marker(), true),
        (t.missing(), false),
        (t.missing(), true),
    ] {
        let _ = std::fs::remove_file(&profile);
        link(&target, &profile);
        let mut args = vec!["probe", "--write", "here", "--root", utf8(root)];
        if force {
            args.push("--force");
        }
        let ran = devsim(&args);
        refused_naming("probe --write", &profile, &ran);
        t.outside_untouched("probe --write", &ran.1);
    }
    std::fs::remove_dir_all(root.join("hosts")).expect("clean");
    link(t.outside.path(), &root.join("hosts"));
    let ran = devsim(&["probe", "--write", "here", "--root", utf8(root)]);
    refused_naming("probe --write into a hosts link", &root.join("hosts"), &ran);
    t.outside_untouched("probe --write into a hosts link", &ran.1);
}

#[test]
fn probe_write_under_a_root_that_links_out_is_refused() {
    let t = Trees::new();
    let root = t.tree.path().join("scenarios");
    link(t.outside.path(), &root);
    let (code, printed) = devsim(&["probe", "--write", "here", "--root", utf8(&root)]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        printed.contains(&format!("failed to use --root {}", root.display())),
        "{printed}"
    );
    t.outside_untouched("probe --write --root LINK", &printed);
}

#[test]
fn write_baseline_and_live_record_never_write_through_a_link() {
    let t = Trees::new();
    let root = t.tree.path();
    // A link that stays inside its folder passes the read rule, but is still never written through.
    let real = root.join("real.toml");
    std::fs::write(&real, MARKER).expect("file");
    let linked = root.join("out.toml");
    link(Path::new("real.toml"), &linked);
    let cases: [&[&str]; 2] = [
        &[
            "run",
            "--filter",
            "normalization/cpu_selector_makes_no_runtime_call.toml",
            "--write-baseline",
        ],
        &[
            "run",
            "--live",
            "--filter",
            "live/cpu_moves_and_warmups.toml",
            "--write-live-record",
        ],
    ];
    for args in cases {
        let mut args = args.to_vec();
        args.push(utf8(&linked));
        let ran = devsim(&args);
        refused_naming(args[args.len() - 2], &linked, &ran);
        assert_eq!(
            std::fs::read_to_string(&real).expect("file"),
            MARKER,
            "{args:?}: {}",
            ran.1
        );
    }
}

#[test]
fn write_baseline_writes_a_fresh_file_and_leaves_no_temporary_file() {
    let t = Trees::new();
    let path = t.tree.path().join("baseline.toml");
    let (code, printed) = devsim(&[
        "run",
        "--filter",
        "normalization/cpu_selector_makes_no_runtime_call.toml",
        "--write-baseline",
        utf8(&path),
    ]);
    assert_eq!(code, Some(0), "{printed}");
    devsim::baseline::Baseline::read(&path).expect("a baseline");
    let names: Vec<_> = std::fs::read_dir(t.tree.path())
        .expect("list")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(names, ["baseline.toml"]);
}
