//! Loading in batches is only a faster way to the same result: every file here loads (or fails, or warns)
//! exactly as it does whole.

use std::path::Path;

use super::{BATCH_BYTES, Batches, MIN_BYTES};
use crate::kernel::Catalog;
use crate::scenario::load::source::Source;
use crate::scenario::load::{ProfileSources, parse_scenario, parse_whole};

/// Steps that repeat to make a long file: one of each kind of table a step can hold, a warning included.
const STEPS: &str = r#"[[step]]
action = "normalize"
device = "cuda:1"

[[step]]
action = "validate"
kernel = "gptq_marlin"
device = "cuda"
description = "a 'quoted' # not a comment"
[step.expect]
ok = true

[[step]]
action = "discover"
[step.expect]
vendor = "nvidia"
[step.expect.trace]
never = ["extension_load"]

[[step]]
action = "validate"
kernel = "gptq_marlin"
device = "cuda"
[step.expect]
ok = false
"#;

const HEAD: &str = "# a long scenario\nformat = 1\ndescription = \"a long scenario\"\n\n[host]\nprofile = \"h200x2\"\n\n";

/// A file of `HEAD`, then `STEPS` repeated past [`MIN_BYTES`], with `middle` in its middle and `tail` at
/// its end.
fn long_file(middle: &str, tail: &str) -> String {
    let copies = MIN_BYTES / STEPS.len() + 2;
    let mut text = String::from(HEAD);
    for i in 0..copies {
        if i == copies / 2 {
            text.push_str(middle);
        }
        text.push_str(STEPS);
    }
    text.push_str(tail);
    text
}

/// What loading `text` gives, batched where it can and whole, as words to compare.
fn both_ways(text: &str) -> (String, String) {
    let path = Path::new("long.toml");
    let catalog = Catalog::reference();
    let profiles = ProfileSources::shipped();
    let batched = parse_scenario(path, text, &catalog, &profiles);
    let whole = parse_whole(&Source::new(path, text), &catalog, &profiles);
    (format!("{batched:#?}"), format!("{whole:#?}"))
}

#[test]
fn a_long_file_splits_into_batches_of_whole_steps_covering_its_steps() {
    let text = long_file("", "");
    let batches = Batches::of(&text).expect("a long plain file is batched");
    assert_eq!(&text[batches.head_end..][..8], "[[step]]");
    assert!(
        batches.batches.len() > 2,
        "{} batches",
        batches.batches.len()
    );
    let mut next = (batches.head_end, 1);
    for batch in &batches.batches {
        assert_eq!((batch.bytes.start, batch.first_number), next);
        assert!(text[batch.bytes.clone()].starts_with("[[step]]\n"));
        assert!(batch.bytes.len() < BATCH_BYTES + STEPS.len());
        next = (batch.bytes.end, batch.first_number + batch.headers);
    }
    assert_eq!(next.0, text.len());
    assert_eq!(next.1 - 1, text.matches("[[step]]").count());
}

#[test]
fn short_files_and_files_with_multi_line_strings_load_whole() {
    assert!(Batches::of(STEPS).is_none());
    for string in ["\"\"\"", "'''"] {
        let text = long_file(
            "",
            &format!("[[step]]\naction = \"discover\"\ndescription = {string}x{string}\n"),
        );
        assert!(Batches::of(&text).is_none(), "{string}");
    }
}

#[test]
fn a_long_file_loads_in_batches_as_it_loads_whole_warnings_included() {
    let text = long_file("", "");
    let batches = Batches::of(&text).expect("a long plain file is batched");
    let source = Source::new(Path::new("long.toml"), &text);
    assert!(batches.head(&source).is_some(), "the head parses alone");
    let loaded = batches.load(
        source.lines(),
        &Catalog::reference(),
        crate::vocab::TorchBuild::Cuda,
    );
    let (steps, warnings) = loaded.expect("every batch loads");
    assert_eq!(steps.len(), text.matches("[[step]]").count());
    // Per four steps: an `extension_load` rule without a level, and `ok = false` alone.
    assert_eq!(warnings.len(), steps.len() / 2);
    let (batched, whole) = both_ways(&text);
    assert!(
        batched.starts_with("Ok("),
        "{}",
        &batched[..batched.len().min(500)]
    );
    assert!(batched.contains("warnings: [\n"), "the file warns");
    assert_eq!(batched, whole);
}

/// Each case: what goes in the middle of a long file and what at its end. Each makes batching give up
/// (or, for the valid ones, take another way to the same steps); the result must be the whole load's.
const CASES: &[(&str, &str, &str)] = &[
    (
        "a syntax error in the last step",
        "",
        "[[step]]\naction = \"discover\"\ndevice = \n",
    ),
    (
        "an unknown action in the middle",
        "[[step]]\naction = \"dicsover\"\n",
        "",
    ),
    (
        "a TOML error after a step error",
        "[[step]]\naction = \"dicsover\"\n",
        "[[step]]\nx = = 1\n",
    ),
    (
        "the host table again at the end",
        "",
        "[host]\nprofile = \"mi300x\"\n",
    ),
    (
        "a scenario table after the steps",
        "",
        "[expect.trace]\nnever = [\"extension_load\"]\n",
    ),
    (
        "a header spelled with spaces",
        "[[ step ]]\naction = \"discover\"\n",
        "",
    ),
    (
        "an indented header",
        "  [[step]]\naction = \"discover\"\n",
        "",
    ),
    (
        "a step table not in an array",
        "[step]\naction = \"discover\"\n",
        "",
    ),
];

#[test]
fn a_long_file_batching_gives_up_on_loads_as_it_loads_whole() {
    let over_budget = "[[step]]\naction = \"discover\"\nrepeat = 10000\n".repeat(101);
    let cases = CASES.iter().copied().chain([(
        "steps past the execution budget",
        over_budget.as_str(),
        "",
    )]);
    for (what, middle, tail) in cases {
        let (batched, whole) = both_ways(&long_file(middle, tail));
        assert_eq!(batched, whole, "{what}");
    }
}

#[test]
fn a_head_with_steps_of_its_own_loads_whole() {
    // Even an empty inline array: the [[step]] headers after it cannot extend it.
    for head_steps in ["step = [{ action = \"discover\" }]\n", "step = []\n"] {
        let text = long_file("", "").replacen("[host]", &format!("{head_steps}\n[host]"), 1);
        let (batched, whole) = both_ways(&text);
        assert!(
            batched.starts_with("Err("),
            "{head_steps}: {}",
            &batched[..batched.len().min(300)]
        );
        assert_eq!(batched, whole, "{head_steps}");
    }
}
