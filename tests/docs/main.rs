//! Every example in the documentation runs, as doctests do for code: one trial per ```` ```toml ```` block
//! of `README.md`, `AGENTS.md`, `docs/**/*.md` and `.agents/skills/**/*.md` (a scenario is loaded with
//! devsim's loader and run on the simulated runtime with the reference catalog, a host profile or subject
//! file is loaded as one, a fragment must be marked ```` ```toml fragment ````), and one trial per
//! ```` ```sh ```` block of the README (each command run here or mapped to the CI step or test that runs
//! it). The convention is in docs/scenario-format.md, "Examples in the documentation".

mod ci_plan;
mod commands;
mod markdown;
mod selfcheck;
mod toml_blocks;

use std::path::{Path, PathBuf};

use libtest_mimic::{Arguments, Trial};

use markdown::Block;

/// A check of the checks (tests/docs/selfcheck.rs).
type SelfCheck = fn() -> Result<(), String>;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The files the README tells the reader to save: a ```` ```toml ```` block whose nearest line of prose
/// above says "Save this as `PATH`".
fn saved_files(readme: &str, blocks: &[Block]) -> Vec<(String, String)> {
    let lines: Vec<&str> = readme.lines().collect();
    blocks
        .iter()
        .filter(|block| block.file == "README.md" && block.language() == "toml")
        .filter_map(|block| {
            let above = lines[..block.line - 1]
                .iter()
                .rev()
                .find(|line| !line.trim().is_empty())?;
            let path = above.split("Save this as `").nth(1)?.split('`').next()?;
            Some((path.to_string(), block.body.clone()))
        })
        .collect()
}

fn trials(root: &Path) -> Result<Vec<Trial>, String> {
    let blocks = markdown::all_blocks(root)?;
    let readme = std::fs::read_to_string(root.join("README.md"))
        .map_err(|e| format!("read README.md: {e}"))?;
    let saved = saved_files(&readme, &blocks);
    let mut trials = Vec::new();
    let mut readme_commands = Vec::new();
    for block in blocks {
        match block.language().as_str() {
            "toml" => {
                let kind = toml_blocks::classify(&block);
                trials.push(
                    Trial::test(block.at(), move || {
                        toml_blocks::check(&block).map_err(Into::into)
                    })
                    .with_kind(kind.word()),
                );
            }
            "sh" | "bash" | "shell" if block.file == "README.md" => {
                readme_commands.extend(commands::commands(&block));
                let (root, saved) = (root.to_path_buf(), saved.clone());
                trials.push(
                    Trial::test(block.at(), move || {
                        commands::check_block(&root, &block, &saved).map_err(Into::into)
                    })
                    .with_kind("sh"),
                );
            }
            _ => {}
        }
    }
    trials.push(
        Trial::test(
            "every command of the table is a README command",
            move || commands::stale_entries(&readme_commands).map_err(Into::into),
        )
        .with_kind("sh"),
    );
    let checks: [(&str, SelfCheck); 8] = [
        (
            "an unmarked partial block fails",
            selfcheck::an_unmarked_partial_block_fails,
        ),
        ("markers are checked", selfcheck::markers_are_checked),
        (
            "a scenario that does not load names the markdown line",
            selfcheck::a_scenario_that_does_not_load_names_the_markdown_line,
        ),
        (
            "a scenario that fails when run fails",
            selfcheck::a_scenario_that_fails_when_run_fails,
        ),
        (
            "a scenario in a deprecated form fails",
            selfcheck::a_scenario_in_a_deprecated_form_fails,
        ),
        (
            "a profile that does not load names the markdown line",
            selfcheck::a_profile_that_does_not_load_names_the_markdown_line,
        ),
        (
            "an unclosed fence is an error",
            selfcheck::an_unclosed_fence_is_an_error,
        ),
        (
            "commands are extracted as the shell reads them",
            selfcheck::commands_are_extracted_as_the_shell_reads_them,
        ),
    ];
    for (name, check) in checks {
        trials.push(Trial::test(name, move || check().map_err(Into::into)).with_kind("self"));
    }
    let root = root.to_path_buf();
    trials.push(
        Trial::test("uncovered and stale commands fail", move || {
            selfcheck::uncovered_and_stale_commands_fail(&root).map_err(Into::into)
        })
        .with_kind("self"),
    );
    Ok(trials)
}

fn main() {
    let args = Arguments::from_args();
    let trials = trials(&root()).unwrap_or_else(|error| {
        eprintln!("error: failed to list the documentation's examples: {error}");
        std::process::exit(2);
    });
    libtest_mimic::run(&args, trials).exit();
}
