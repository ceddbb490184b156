//! The checks themselves fail where they should: on markdown written here, never on the repository's.

use std::path::Path;

use crate::commands::{self, Command};
use crate::markdown::{self, Block};
use crate::toml_blocks::{self, Kind};

/// The one block of `text`, as if it were the file `file`.
fn only_block(file: &str, text: &str) -> Result<Block, String> {
    let mut blocks = markdown::blocks(file, text)?;
    match (blocks.pop(), blocks.is_empty()) {
        (Some(block), true) => Ok(block),
        _ => Err(format!("expected one block in {text:?}")),
    }
}

/// `check` fails, and its message holds every one of `fragments`.
fn fails_with(result: Result<(), String>, fragments: &[&str]) -> Result<(), String> {
    let message = match result {
        Ok(()) => return Err(format!("passed, but should fail naming {fragments:?}")),
        Err(message) => message,
    };
    match fragments.iter().find(|f| !message.contains(**f)) {
        Some(missing) => Err(format!("expected {missing:?} in:\n{message}")),
        None => Ok(()),
    }
}

const PROSE: &str = "# Title\n\nSome prose.\n\n";

fn toml_block(info: &str, body: &str) -> Result<Block, String> {
    only_block("docs/x.md", &format!("{PROSE}```{info}\n{body}```\n"))
}

/// An unmarked block that is no whole file fails, naming its `file:line` and the fragment marker.
pub fn an_unmarked_partial_block_fails() -> Result<(), String> {
    let block = toml_block(
        "toml",
        "[expect.levels]\n\"trace.never.extension_load\" = \"reference\"\n",
    )?;
    if toml_blocks::classify(&block) != Kind::Unknown {
        return Err("classified as a whole file".into());
    }
    fails_with(
        toml_blocks::check(&block),
        &["docs/x.md:5:", "```toml fragment"],
    )?;
    let marked = toml_block("toml fragment", &block.body)?;
    toml_blocks::check(&marked)
}

/// A marker other than `fragment` fails; a fragment must be TOML and cannot be a whole scenario.
pub fn markers_are_checked() -> Result<(), String> {
    fails_with(
        toml_blocks::check(&toml_block("toml fragmnet", "[host]\n")?),
        &["docs/x.md:5", "unknown marker `fragmnet`"],
    )?;
    fails_with(
        toml_blocks::check(&toml_block("toml fragment", "[host\n")?),
        &["docs/x.md:5", "not TOML"],
    )?;
    let whole = "format = 1\ndescription = \"d\"\n[host]\nprofile = \"h200x2\"\n[[step]]\naction = \"discover\"\n";
    fails_with(
        toml_blocks::check(&toml_block("toml fragment", whole)?),
        &["a whole scenario", "remove the marker"],
    )
}

/// A scenario the loader refuses fails with devsim's own error at the markdown's line and column.
pub fn a_scenario_that_does_not_load_names_the_markdown_line() -> Result<(), String> {
    let body = "format = 1\ndescription = \"d\"\n\n[host]\nprofile = \"h200x2\"\n\n[[step]]\naction = \"discover\"\nkernal = \"gptq_marlin\"\n";
    // the fence is line 5, so the misspelt key (the body's ninth line) is line 14
    fails_with(
        toml_blocks::check(&toml_block("toml", body)?),
        &[
            "docs/x.md:5: the scenario does not load",
            "docs/x.md:14:1",
            "kernal",
        ],
    )
}

/// A scenario that loads but does not pass fails with the report; the same scenario, right, passes.
pub fn a_scenario_that_fails_when_run_fails() -> Result<(), String> {
    let body = "format = 1\ndescription = \"a warmup on GPU 1 runs on GPU 1\"\n\n[host]\nprofile = \"h200x2\"\n\n\
                [[step]]\naction = \"warmup\"\nkernel = \"gptq_marlin\"\ndevice = \"cuda:1\"\n\n[step.expect]\nran_on = 1\n";
    toml_blocks::check(&toml_block("toml", body)?)?;
    let wrong = body.replace("ran_on = 1", "ran_on = 0");
    fails_with(
        toml_blocks::check(&toml_block("toml", &wrong)?),
        &[
            "does not pass with the reference catalog",
            "ran_on",
            "expected 0, got 1",
        ],
    )
}

/// A scenario that loads only through a deprecated form (an `extension_load` rule with no level) fails:
/// the docs teach the current form.
pub fn a_scenario_in_a_deprecated_form_fails() -> Result<(), String> {
    let body = "format = 1\ndescription = \"d\"\n[host]\nprofile = \"mi300x\"\n[[step]]\naction = \"validate\"\n\
                kernel = \"gptq_marlin\"\ndevice = \"cuda\"\n[step.expect]\nerror = \"unsupported-family\"\n\
                [step.expect.trace]\nnever = [\"extension_load\"]\n";
    fails_with(
        toml_blocks::check(&toml_block("toml", body)?),
        &["deprecation warning", "devsim migrate"],
    )?;
    let leveled =
        format!("{body}[step.expect.levels]\n\"trace.never.extension_load\" = \"reference\"\n");
    toml_blocks::check(&toml_block("toml", &leveled)?)
}

/// A host profile the loader refuses fails at the markdown's line, without the scratch folder's path.
pub fn a_profile_that_does_not_load_names_the_markdown_line() -> Result<(), String> {
    let block = toml_block("toml", "torch = \"hip\"\ngpus = [\"gfx9999\"]\n")?;
    if toml_blocks::classify(&block) != Kind::Profile {
        return Err("not classified as a host profile".into());
    }
    fails_with(
        toml_blocks::check(&block),
        &[
            "docs/x.md:5: the host profile does not load",
            "docs/x.md:7:",
        ],
    )?;
    let message = toml_blocks::check(&block).err().unwrap_or_default();
    if message.contains(&std::env::temp_dir().display().to_string()) {
        return Err(format!("the scratch path shows: {message}"));
    }
    Ok(())
}

/// A fence never closed is an error naming its line (the rest of the file would escape).
pub fn an_unclosed_fence_is_an_error() -> Result<(), String> {
    match markdown::blocks("docs/x.md", "text\n\n```toml\nformat = 1\n") {
        Ok(_) => Err("an unclosed fence was accepted".into()),
        Err(message) if message.contains("docs/x.md:3") => Ok(()),
        Err(message) => Err(format!("not located: {message}")),
    }
}

/// Commands: continuations joined, comments and comment-only lines dropped, quotes kept.
pub fn commands_are_extracted_as_the_shell_reads_them() -> Result<(), String> {
    let block = only_block(
        "README.md",
        "```sh\ndevsim run --filter 'a #b'   # a comment\n\ndevsim bench --rounds 1 \\\n  --subject x.toml\n   \
         # what it prints\n```\n",
    )?;
    let got = commands::commands(&block);
    let want = vec![
        Command {
            line: 2,
            text: "devsim run --filter 'a #b'".into(),
        },
        Command {
            line: 4,
            text: "devsim bench --rounds 1 --subject x.toml".into(),
        },
    ];
    if got == want {
        Ok(())
    } else {
        Err(format!("got {got:?}"))
    }
}

/// A README command in no table fails its block, naming its line; a table entry the README lacks fails.
pub fn uncovered_and_stale_commands_fail(root: &Path) -> Result<(), String> {
    let block = only_block("README.md", "```sh\ndevsim frobnicate --all\n```\n")?;
    fails_with(
        commands::check_block(root, &block, &[]),
        &["README.md:2", "devsim frobnicate --all", "add it to COVERS"],
    )?;
    fails_with(
        commands::stale_entries(&commands::commands(&block)),
        &["no longer has", "cargo test"],
    )
}
