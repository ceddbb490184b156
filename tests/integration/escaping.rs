//! Text from a tree reaches a terminal escaped: a `[matrix]` value or a file name holding newlines, ESC or
//! BEL cannot forge an `ok` line or a summary line, nor restyle the terminal, in any command's human output;
//! JSON keeps the text exactly (escaped as JSON escapes), and JUnit stays well-formed XML with every control
//! character shown escaped.

use std::path::Path;
use std::process::Command;

use devsim::output::{CheckOutput, RunOutput};

/// A value that tries to forge a passing scenario and a summary line, then clear the screen and ring.
const FORGE: &str = "a\nok      placement/x.toml\n5 passed, 0 failed\r\u{1b}[2J\u{7}";

/// A file name that tries to restyle the terminal.
const EVIL_FILE: &str = "e\u{1b}[31mvil\u{7}.toml";

/// A scenario that passes; its description and its case name carry the value.
const PASSES: &str = r#"format = 1
description = "forge {note}"

[matrix]
note = ["a\nok      placement/x.toml\n5 passed, 0 failed\r\u001b[2J\u0007"]

[host]
torch = "cuda"
gpus = ["sm_90"]

[[step]]
action = "discover"
"#;

/// A scenario that fails (a HIP build never stores `cuda`), so the value reaches the failure's report and
/// the findings summary.
const FAILS: &str = r#"format = 1
description = "forge {note}"

[matrix]
note = ["a\nok      placement/x.toml\n5 passed, 0 failed\r\u001b[2J\u0007"]

[host]
torch = "hip"
gpus = ["gfx942"]

[[step]]
action = "warmup"
kernel = "gptq_allspark"
device = "cuda:0"

[step.expect]
family = "cuda"
"#;

/// The file that fails to load: an OSC title sequence, and U+FFFE, which XML 1.0 forbids.
const LOAD_ERROR_FILE: &str = "load\u{1b}]0;title\u{7}\u{fffe}.toml";

/// A scenario that fails to load: the value names a profile that does not exist.
const LOAD_ERROR: &str = r#"format = 1
description = "x"

[matrix]
note = ["a\nok      placement/x.toml\n5 passed, 0 failed\r\u001b[2J\u0007"]

[host]
profile = "{note}"

[[step]]
action = "discover"
"#;

fn tree() -> tempfile::TempDir {
    let tree = tempfile::tempdir().expect("temp dir");
    for (name, text) in [
        ("forge.toml", PASSES),
        (EVIL_FILE, FAILS),
        (LOAD_ERROR_FILE, LOAD_ERROR),
    ] {
        std::fs::write(tree.path().join(name), text).expect("scenario");
    }
    tree
}

/// Runs devsim on the tree: exit code, stdout, stderr.
fn devsim(args: &[&str], tree: &Path) -> (Option<i32>, String, String) {
    let output = Command::new(env!("CARGO_BIN_EXE_devsim"))
        .args(args)
        .arg(tree)
        .output()
        .expect("devsim runs");
    (
        output.status.code(),
        String::from_utf8(output.stdout).expect("utf-8 stdout"),
        String::from_utf8(output.stderr).expect("utf-8 stderr"),
    )
}

/// No line of `text` is one the value tried to forge, and no control character but a newline is raw.
fn nothing_forged(what: &str, text: &str) {
    for line in text.lines() {
        assert!(
            !line.starts_with("ok      placement/x.toml") && !line.starts_with("5 passed"),
            "{what}: a forged line:\n{line}\nin:\n{text}"
        );
        if line.starts_with("ok ") {
            assert!(
                line.starts_with("ok      forge.toml[note=a\\nok"),
                "{what}: an `ok` line that is not the passing case's:\n{line}"
            );
        }
    }
    let raw: Vec<char> = text
        .chars()
        .filter(|&c| c != '\n' && devsim::shown::is_unsafe(c))
        .collect();
    assert!(raw.is_empty(), "{what}: raw {raw:?} in:\n{text}");
}

/// A line without the styling of its first word (`ESC[..m word ESC[0m`), the only styling devsim adds.
fn unstyled(line: &str) -> String {
    let Some(reset) = line
        .find("\u{1b}[0m")
        .filter(|_| line.starts_with('\u{1b}'))
    else {
        return line.to_string();
    };
    let (styled, rest) = line.split_at(reset);
    let mut word = String::new();
    let mut chars = styled.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            // Skip `[` parameters up to the final `m`.
            for d in chars.by_ref() {
                if d == 'm' {
                    break;
                }
            }
        } else {
            word.push(c);
        }
    }
    format!("{word}{}", &rest["\u{1b}[0m".len()..])
}

#[test]
fn human_output_of_every_command_escapes_what_the_tree_holds() {
    let tree = tree();
    for args in [
        &["run", "--color", "never"][..],
        &["run", "--color", "always"],
        &["run", "--quiet", "--color", "never"],
        &["check"],
    ] {
        let (code, stdout, stderr) = devsim(args, tree.path());
        assert_eq!(
            code,
            Some(2),
            "{args:?}: a file failed to load:\n{stdout}{stderr}"
        );
        let what = format!("{args:?}");
        if args.contains(&"always") {
            // The styling of the status word is the only escape left: strip it, then nothing may remain.
            let plain: Vec<String> = stdout.lines().map(unstyled).collect();
            nothing_forged(&what, &plain.join("\n"));
        } else {
            nothing_forged(&what, &stdout);
        }
        nothing_forged(&what, &stderr);
        assert!(
            stderr.contains("load\\u{1b}]0;title\\u{7}\u{fffe}.toml"),
            "{what}: the load error names the file, escaped:\n{stderr}"
        );
    }
    let (_, stdout, _) = devsim(&["run", "--color", "never"], tree.path());
    assert!(
        stdout.contains("ok      forge.toml[note=a\\nok      placement/x.toml\\n5 passed, 0 failed\\r\\u{1b}[2J\\u{7}]"),
        "the passing case, on one line, every control escaped:\n{stdout}"
    );
    assert!(
        stdout.contains("shown by 1 scenario(s): e\\u{1b}[31mvil\\u{7}.toml[note=a\\nok"),
        "the findings summary names the failing case escaped:\n{stdout}"
    );
}

#[test]
fn json_keeps_every_value_exactly() {
    let tree = tree();
    let (_, stdout, _) = devsim(&["run", "--format", "json"], tree.path());
    let run: RunOutput = serde_json::from_str(&stdout).expect("run json parses");
    assert_eq!(run.scenarios.len(), 2, "{stdout}");
    for scenario in &run.scenarios {
        assert_eq!(scenario.params.get("note").map(String::as_str), Some(FORGE));
        assert_eq!(scenario.description, format!("forge {FORGE}"));
    }
    assert!(
        run.scenarios
            .iter()
            .any(|s| s.name.starts_with(EVIL_FILE) && s.path.ends_with(EVIL_FILE)),
        "{stdout}"
    );
    assert!(
        run.findings
            .iter()
            .flat_map(|f| &f.scenarios)
            .any(|name| name.starts_with(EVIL_FILE)),
        "{stdout}"
    );
    assert_eq!(run.load_errors.len(), 1, "{stdout}");
    assert!(run.load_errors[0].path.contains(LOAD_ERROR_FILE));
    let back = serde_json::to_string_pretty(&run).expect("serializes");
    assert_eq!(
        serde_json::from_str::<RunOutput>(&back).expect("parses"),
        run
    );

    let (_, stdout, _) = devsim(&["check", "--format", "json"], tree.path());
    let check: CheckOutput = serde_json::from_str(&stdout).expect("check json parses");
    assert!(
        check
            .scenarios
            .iter()
            .any(|s| s.name == format!("forge.toml[note={FORGE}]")),
        "{stdout}"
    );
}

#[test]
fn junit_shows_every_control_escaped_and_stays_well_formed_xml() {
    let tree = tree();
    let (_, stdout, _) = devsim(&["run", "--format", "junit"], tree.path());
    // XML 1.0 allows tab, newline and carriage return of the C0 controls; devsim escapes even those inside
    // names and messages, so only the document's own newlines remain.
    let forbidden: Vec<char> = stdout
        .chars()
        .filter(|&c| {
            (c != '\n' && devsim::shown::is_unsafe(c)) || c == '\u{FFFE}' || c == '\u{FFFF}'
        })
        .collect();
    assert!(forbidden.is_empty(), "raw {forbidden:?} in:\n{stdout}");
    for line in stdout.lines() {
        assert!(
            !line.starts_with("ok ") && !line.starts_with("5 passed"),
            "a forged line in the JUnit document:\n{line}"
        );
    }
    assert!(
        stdout.contains("name=\"forge.toml[note=a\\nok      placement/x.toml\\n5 passed, 0 failed\\r\\u{1b}[2J\\u{7}]\""),
        "the case keeps its whole name, escaped:\n{stdout}"
    );
    assert!(stdout.contains("e\\u{1b}[31mvil\\u{7}.toml"), "{stdout}");
    assert!(
        stdout.contains("/load\\u{1b}]0;title\\u{7}\\u{fffe}.toml\" classname=\"load\""),
        "the load error's case, U+FFFE escaped:\n{stdout}"
    );
}
