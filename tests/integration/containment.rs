//! Containment: every file devsim reads from a user's tree — a scenario given as a file argument, a host
//! profile, a baseline, a subject file — may be a link only when it resolves inside the folder it was given
//! under. A link that leaves it is refused before it is read, so not one byte of the file it names reaches
//! any output. Each case links to a file outside the tree holding a secret marker and asserts the marker
//! never appears, on stdout or stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

const MARKER: &str = "DEVSIM-SECRET-MARKER-7f3a";

/// A secret outside the tree (its first line a TOML-looking key, as a profile or baseline would start), and
/// the tree that links to it.
struct Trees {
    _outside: TempDir,
    secret: PathBuf,
    tree: TempDir,
}

fn trees() -> Trees {
    let outside = tempfile::tempdir().expect("temp dir");
    let secret = outside.path().join("secret.toml");
    std::fs::write(&secret, format!("{MARKER} = \"{MARKER}\"\n[{MARKER}]\n"))
        .expect("write secret");
    Trees {
        _outside: outside,
        secret,
        tree: tempfile::tempdir().expect("temp dir"),
    }
}

fn link(target: &Path, at: &Path) {
    if let Some(parent) = at.parent() {
        std::fs::create_dir_all(parent).expect("folder");
    }
    std::os::unix::fs::symlink(target, at).expect("symlink");
}

/// Runs devsim and returns (success, everything it printed).
fn devsim(args: &[&str]) -> (bool, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .env("DEVSIM_CONTAINMENT_TEST", MARKER)
        .output()
        .expect("devsim runs");
    let printed = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    (output.status.success(), printed)
}

fn refused_without_a_byte(what: &str, (ok, printed): (bool, String)) {
    assert!(
        !ok,
        "{what}: a link out of its folder must be refused:\n{printed}"
    );
    assert!(
        !printed.contains(MARKER),
        "{what}: the linked file's content was printed:\n{printed}"
    );
}

const SCENARIO: &str = "format = 1\ndescription = \"a scenario\"\n[host]\nprofile = \"leak\"\n[[step]]\naction = \"discover\"\n";

#[test]
fn a_host_profile_linking_out_of_hosts_is_never_read() {
    let t = trees();
    std::fs::write(t.tree.path().join("s.toml"), SCENARIO).expect("scenario");
    link(&t.secret, &t.tree.path().join("hosts").join("leak.toml"));
    let root = t.tree.path().to_str().expect("utf-8");
    refused_without_a_byte("check", devsim(&["check", root]));
    refused_without_a_byte(
        "hosts --hosts",
        devsim(&["hosts", "--hosts", &format!("{root}/hosts")]),
    );
}

#[test]
fn a_scenario_file_argument_linking_out_of_its_folder_is_never_read() {
    let t = trees();
    let at = t.tree.path().join("x").join("s.toml");
    link(&t.secret, &at);
    refused_without_a_byte(
        "check FILE",
        devsim(&["check", at.to_str().expect("utf-8")]),
    );
    refused_without_a_byte("run FILE", devsim(&["run", at.to_str().expect("utf-8")]));
}

#[test]
fn a_baseline_or_subject_file_linking_out_of_its_folder_is_never_read() {
    let t = trees();
    let baseline = t.tree.path().join("baseline.toml");
    link(&t.secret, &baseline);
    let (ok, printed) = devsim(&[
        "run",
        "--filter",
        "seed/",
        "--baseline",
        baseline.to_str().expect("utf-8"),
    ]);
    refused_without_a_byte("--baseline", (ok, printed));
    let subject = t.tree.path().join("subject.toml");
    link(&t.secret, &subject);
    refused_without_a_byte(
        "--subject FILE",
        devsim(&["run", "--subject", subject.to_str().expect("utf-8")]),
    );
}

#[test]
fn a_link_that_stays_inside_its_folder_is_followed() {
    let t = trees();
    let profiles = t.tree.path().join("hosts");
    std::fs::create_dir_all(&profiles).expect("hosts");
    std::fs::write(
        profiles.join("real.toml"),
        "description = \"one H200\"\ntorch = \"cuda\"\ngpus = [\"sm_90\"]\n",
    )
    .expect("profile");
    link(Path::new("real.toml"), &profiles.join("leak.toml"));
    std::fs::write(t.tree.path().join("s.toml"), SCENARIO).expect("scenario");
    let (ok, printed) = devsim(&["check", t.tree.path().to_str().expect("utf-8")]);
    assert!(ok, "{printed}");
}
