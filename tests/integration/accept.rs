//! `devsim run --accept` and `devsim review`: observed values become pending expectations, comments and
//! layout kept, and only what the run can vouch for is written (tests/fixtures/accept/).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use tempfile::TempDir;

const FIXTURES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/accept");

fn devsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .env_remove("CI")
        .output()
        .expect("devsim runs")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// A scratch scenario root holding the drafts (not their expected results).
fn drafts() -> (TempDir, PathBuf) {
    let dir = tempfile::tempdir().expect("scratch dir");
    for name in ["draft.toml", "matrix_draft.toml", "trace_draft.toml"] {
        std::fs::copy(Path::new(FIXTURES).join(name), dir.path().join(name)).expect("copy draft");
    }
    let root = dir.path().to_path_buf();
    (dir, root)
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("read {}: {e}", path.display()))
}

#[test]
fn accepted_values_land_in_a_pending_copy_with_comments_kept_and_review_settles_it() {
    let (_dir, root) = drafts();
    let root_arg = root.to_str().expect("utf-8");
    let draft = root.join("draft.toml");
    let before = read(&draft);
    let run = devsim(&["run", root_arg, "--accept"]);
    let out = text(&run);
    assert_eq!(run.status.code(), Some(1), "the failures still fail: {out}");
    assert_eq!(
        read(&draft),
        before,
        "the scenario itself is untouched until review"
    );
    assert_eq!(
        read(&root.join("draft.toml.pending")),
        read(&Path::new(FIXTURES).join("draft.accepted.toml")),
        "{out}"
    );
    for line in [
        "step 1 family: cuda -> \"rocm\"",
        "step 1 ordinal: 0 -> 1",
        "step 2 ran_on: 0 -> 1",
        "not accepted: matrix_draft.toml[host=r9700x2] step 1 family: a [matrix] file's table serves every case",
        "not accepted: trace_draft.toml step 1 message: a message fragment is written by hand",
        "not accepted: trace_draft.toml step 1 trace.once: a trace rule is written by hand",
        "accept: 1 pending file(s) written",
    ] {
        assert!(out.contains(line), "missing {line:?} in:\n{out}");
    }
    assert!(!root.join("matrix_draft.toml.pending").exists());
    assert!(!root.join("trace_draft.toml.pending").exists());

    let listed = devsim(&["review", root_arg]);
    assert_eq!(
        listed.status.code(),
        Some(1),
        "undecided changes stay pending"
    );
    assert!(text(&listed).contains("-family = \"cuda\"   # a guess, to be accepted"));
    assert!(text(&listed).contains("+family = \"rocm\"   # a guess, to be accepted"));
    assert!(text(&listed).contains("settle 1 pending change(s)"));

    let rejected = devsim(&["review", root_arg, "--reject"]);
    assert!(rejected.status.success(), "{}", text(&rejected));
    assert_eq!(read(&draft), before);
    assert!(!root.join("draft.toml.pending").exists());

    assert_eq!(
        devsim(&["run", root_arg, "--accept"]).status.code(),
        Some(1)
    );
    let accepted = devsim(&["review", root_arg, "--accept"]);
    assert!(accepted.status.success(), "{}", text(&accepted));
    let draft_arg = draft.to_str().expect("utf-8");
    let rerun = devsim(&["run", draft_arg]);
    assert!(
        rerun.status.success(),
        "the accepted draft passes: {}",
        text(&rerun)
    );
    assert_eq!(
        text(&devsim(&["review", root_arg])).trim(),
        format!("review: nothing pending under {root_arg}")
    );
}

#[test]
fn a_level_the_run_does_not_accept_is_left_alone() {
    let (_dir, root) = drafts();
    let root_arg = root.to_str().expect("utf-8");
    let out = text(&devsim(&[
        "run",
        root_arg,
        "--accept",
        "--accept-level",
        "contract",
    ]));
    assert!(
        out.contains("not accepted: draft.toml step 1 family: a policy:normalize-aliases expectation, not a level this run accepts"),
        "{out}"
    );
    assert!(!root.join("draft.toml.pending").exists(), "{out}");
}

#[test]
fn a_subjects_observations_are_never_accepted() {
    let output = devsim(&[
        "run",
        FIXTURES,
        "--accept",
        "--subject",
        "python3 -m anything",
    ]);
    assert_eq!(output.status.code(), Some(2));
    assert!(
        text(&output).contains("cannot be used with"),
        "{}",
        text(&output)
    );
}
