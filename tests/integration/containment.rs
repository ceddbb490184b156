//! Containment: every file devsim reads from a user's tree — a scenario given as a file argument, a host
//! profile, a baseline, a subject file — may be a link only when it resolves inside the folder it was given
//! under. A link that leaves it is refused before it is read, so not one byte of the file it names reaches
//! any output. Each case links to a file outside the tree holding a secret marker and asserts the marker
//! never appears, on stdout or stderr.

use std::path::{Path, PathBuf};
use std::process::Command;

use tempfile::TempDir;

use crate::common::code_and_output;

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
    let (code, printed) = devsim_code(args);
    (code == Some(0), printed)
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

/// Runs devsim and returns its exit code and everything it printed.
fn devsim_code(args: &[&str]) -> (Option<i32>, String) {
    code_and_output(
        Command::new(env!("CARGO_BIN_EXE_devsim"))
            .args(args)
            .env("DEVSIM_CONTAINMENT_TEST", MARKER),
    )
}

/// A path argument that is a link out of its folder: exit 2, an error naming the argument, and not one
/// byte of what it names printed.
fn argument_refused(flag: &str, args: &[&str]) {
    let (code, printed) = devsim_code(args);
    assert_eq!(code, Some(2), "{args:?}: expected exit 2:\n{printed}");
    assert!(
        printed.contains(&format!("error: failed to use {flag} ")),
        "{args:?}: the error must name {flag}:\n{printed}"
    );
    assert!(
        printed.contains("resolves outside"),
        "{args:?}: the error must say why:\n{printed}"
    );
    assert!(
        !printed.contains(MARKER),
        "{args:?}: something the link names was printed:\n{printed}"
    );
}

/// A folder outside the tree holding a valid host profile whose name, description and text carry the
/// marker: followed, `hosts` would list it.
fn outside_profiles(t: &Trees) -> PathBuf {
    let folder = t.secret.with_file_name("profiles");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(
        folder.join(format!("{MARKER}.toml")),
        format!("description = \"{MARKER}\"\ntorch = \"cuda\"\ngpus = [\"sm_90\"]\n"),
    )
    .expect("profile");
    folder
}

fn utf8(path: &Path) -> &str {
    path.to_str().expect("utf-8")
}

#[test]
fn a_hosts_folder_that_is_a_link_out_of_its_folder_is_refused() {
    let t = trees();
    let outside = outside_profiles(&t);
    let linked = t.tree.path().join("L");
    link(&outside, &linked);
    std::fs::write(t.tree.path().join("s.toml"), SCENARIO).expect("scenario");
    let (tree, linked) = (utf8(t.tree.path()), utf8(&linked));
    argument_refused("--hosts", &["hosts", "--hosts", linked]);
    argument_refused("--hosts", &["run", "--hosts", linked, tree]);
    argument_refused("--hosts", &["check", "--hosts", linked, tree]);
}

#[test]
fn a_hosts_folder_found_under_a_root_that_links_out_is_refused_by_hosts_too() {
    let t = trees();
    let outside = outside_profiles(&t);
    link(&outside, &t.tree.path().join("hosts"));
    let (code, printed) = devsim_code(&["hosts", utf8(t.tree.path())]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(printed.contains("resolves outside"), "{printed}");
    assert!(!printed.contains(MARKER), "{printed}");
}

#[test]
fn a_baseline_that_is_a_link_out_of_its_folder_is_refused_before_the_run() {
    let t = trees();
    let to_file = t.tree.path().join("baseline.toml");
    link(&t.secret, &to_file);
    let to_folder = t.tree.path().join("baselines");
    link(t.secret.parent().expect("a folder"), &to_folder);
    for baseline in [&to_file, &to_folder] {
        let args = ["run", "--filter", "seed/", "--baseline", utf8(baseline)];
        argument_refused("--baseline", &args);
        let (_, printed) = devsim_code(&args);
        assert!(
            !printed.contains("ok      seed/"),
            "refused before any scenario runs:\n{printed}"
        );
    }
}

#[test]
fn a_baseline_to_write_through_a_dangling_link_is_refused_and_nothing_is_created() {
    let t = trees();
    let target = t.secret.with_file_name("created.toml");
    let dangling = t.tree.path().join("new-baseline.toml");
    link(&target, &dangling);
    let (code, printed) = devsim_code(&[
        "run",
        "--filter",
        "seed/",
        "--write-baseline",
        utf8(&dangling),
    ]);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        printed.contains("failed to use --write-baseline"),
        "{printed}"
    );
    assert!(printed.contains("a link to nothing"), "{printed}");
    assert!(!target.exists(), "nothing is written where the link points");
}

#[test]
fn a_subject_file_that_is_a_link_out_of_its_folder_is_refused() {
    let t = trees();
    let subject = t.tree.path().join("subject.toml");
    link(&t.secret, &subject);
    let subject = utf8(&subject);
    argument_refused("--subject", &["run", "--subject", subject]);
    argument_refused("--subject", &["check", "--subject", subject]);
    argument_refused("--subject", &["bench", "--subject", subject]);
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

/// A folder outside the tree holding a valid scenario whose description carries the marker: followed,
/// `run` would print it.
fn outside_scenarios(t: &Trees) -> PathBuf {
    let folder = t.secret.with_file_name("scenarios");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::write(
        folder.join(format!("{MARKER}.toml")),
        format!(
            "format = 1\ndescription = \"{MARKER}\"\n[host]\nprofile = \"mi300x\"\n[[step]]\naction = \"resolve\"\ndevice = \"cpu\"\n[step.expect]\nfamily = \"{MARKER}\"\n"
        ),
    )
    .expect("scenario");
    folder
}

#[test]
fn a_folder_argument_that_is_a_link_out_of_its_folder_is_never_walked() {
    let t = trees();
    let outside = outside_scenarios(&t);
    std::fs::create_dir_all(outside.join("hosts")).expect("folder");
    std::fs::write(
        outside.join("hosts").join(format!("{MARKER}.toml")),
        format!("description = \"{MARKER}\"\ntorch = \"cuda\"\ngpus = [\"sm_90\"]\n"),
    )
    .expect("profile");
    let linked = t.tree.path().join("scenarios");
    link(&outside, &linked);
    for arg in [utf8(&linked).to_string(), format!("{}/", utf8(&linked))] {
        let (code, printed) = devsim_code(&["hosts", &arg]);
        assert_eq!(code, Some(2), "hosts {arg}: {printed}");
        assert!(
            printed.contains("failed to use the folder") && printed.contains("resolves outside"),
            "hosts {arg}: {printed}"
        );
        assert!(!printed.contains(MARKER), "hosts {arg}: {printed}");
        for command in ["run", "check", "migrate"] {
            let (code, printed) = devsim_code(&[command, &arg]);
            assert_eq!(code, Some(2), "{command} {arg}: {printed}");
            assert!(
                printed.contains("follow link") && printed.contains("resolves outside"),
                "{command} {arg}: the error must name the link and say why:\n{printed}"
            );
            assert!(
                !printed.contains(MARKER),
                "{command} {arg}: a file the link names was read:\n{printed}"
            );
        }
    }
}

#[test]
fn a_folder_argument_that_is_a_link_inside_its_folder_is_walked() {
    let t = trees();
    let real = t.tree.path().join("real");
    std::fs::create_dir_all(&real).expect("folder");
    std::fs::write(real.join("s.toml"), "format = 1\ndescription = \"in the tree\"\n[host]\nprofile = \"mi300x\"\n[[step]]\naction = \"resolve\"\ndevice = \"cpu\"\n[step.expect]\nfamily = \"cpu\"\n").expect("scenario");
    let linked = t.tree.path().join("scenarios");
    link(Path::new("real"), &linked);
    let (code, printed) = devsim_code(&["check", utf8(&linked)]);
    assert_eq!(code, Some(0), "{printed}");
    assert!(printed.contains("1 scenario(s) loaded"), "{printed}");
}

/// Runs `devsim coverage` in `dir` (which holds `scenarios/` and `inventory/`): exit code and output.
fn coverage_in(dir: &Path) -> (Option<i32>, String) {
    code_and_output(
        Command::new(env!("CARGO_BIN_EXE_devsim"))
            .arg("coverage")
            .current_dir(dir),
    )
}

#[test]
fn coverage_never_reads_its_threshold_through_a_link_out() {
    let t = trees();
    let root = t.tree.path();
    std::fs::create_dir_all(root.join("scenarios")).expect("folder");
    std::fs::write(root.join("scenarios").join("s.toml"), "format = 1\ndescription = \"in the tree\"\n[host]\nprofile = \"mi300x\"\n[[step]]\naction = \"resolve\"\ndevice = \"cpu\"\n[step.expect]\nfamily = \"cpu\"\n").expect("scenario");
    // The file a link out of inventory/, then inventory/ itself a link out.
    link(&t.secret, &root.join("inventory").join("coverage.toml"));
    let (code, printed) = coverage_in(root);
    assert_eq!(code, Some(2), "{printed}");
    assert!(
        printed.contains("read coverage threshold inventory/coverage.toml")
            && printed.contains("resolves outside"),
        "{printed}"
    );
    assert!(!printed.contains(MARKER), "{printed}");

    std::fs::remove_dir_all(root.join("inventory")).expect("clean");
    let folder = t.secret.with_file_name("inventory");
    std::fs::create_dir_all(&folder).expect("folder");
    std::fs::copy(&t.secret, folder.join("coverage.toml")).expect("threshold");
    link(&folder, &root.join("inventory"));
    let (code, printed) = coverage_in(root);
    assert_eq!(code, Some(2), "{printed}");
    assert!(printed.contains("resolves outside"), "{printed}");
    assert!(!printed.contains(MARKER), "{printed}");
}
