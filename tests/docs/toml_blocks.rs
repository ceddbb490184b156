//! The ```` ```toml ```` blocks: each is a whole scenario (run on the simulated runtime with the reference
//! catalog), a host profile or a subject file (loaded as one), or marked ```` ```toml fragment ```` (then it
//! must still be TOML). Any other block fails, naming its `file:line`: no example escapes unchecked.

use std::path::Path;

use devsim::Catalog;
use devsim::report;
use devsim::runner::Status;
use devsim::scenario::{ProfileSources, expand_scenarios, load_profile, render};
use devsim::subject::{CatalogSubject, SubjectSpec};
use devsim::suite::run_suite;

use crate::markdown::Block;

/// The one marker a ```` ```toml ```` block may carry: a piece of a file, checked as TOML only.
pub const FRAGMENT: &str = "fragment";

/// What a ```` ```toml ```` block is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// It has a top-level `format` or a `[[step]]`: loaded and run.
    Scenario,
    /// It has a top-level `torch` (and is no scenario): loaded as a host profile.
    Profile,
    /// It has a top-level `command` (and is no scenario): loaded as a subject file.
    Subject,
    /// Marked ```` ```toml fragment ````.
    Fragment,
    /// None of the above: a failure.
    Unknown,
}

impl Kind {
    /// The word in the trial's name.
    pub fn word(self) -> &'static str {
        match self {
            Kind::Scenario => "scenario",
            Kind::Profile => "profile",
            Kind::Subject => "subject",
            Kind::Fragment => "fragment",
            Kind::Unknown => "toml",
        }
    }
}

/// The keys set before the first table header, and whether a `[[step]]` header appears.
fn top_level(body: &str) -> (Vec<String>, bool) {
    let mut keys = Vec::new();
    let mut in_root = true;
    let mut steps = false;
    for line in body.lines().map(str::trim) {
        if line.starts_with('[') {
            in_root = false;
            steps |= line.split('#').next().unwrap_or_default().trim() == "[[step]]";
        } else if in_root
            && !line.starts_with('#')
            && let Some((key, _)) = line.split_once('=')
        {
            keys.push(key.trim().to_string());
        }
    }
    (keys, steps)
}

/// The block's kind, from its marker or else its content.
pub fn classify(block: &Block) -> Kind {
    if block.markers().iter().any(|m| m == FRAGMENT) {
        return Kind::Fragment;
    }
    let (keys, steps) = top_level(&block.body);
    let has = |key: &str| keys.iter().any(|k| k == key);
    if has("format") || steps {
        Kind::Scenario
    } else if has("torch") {
        Kind::Profile
    } else if has("command") {
        Kind::Subject
    } else {
        Kind::Unknown
    }
}

/// The trial's check for one block.
pub fn check(block: &Block) -> Result<(), String> {
    let at = block.at();
    if let Some(other) = block.markers().iter().find(|m| *m != FRAGMENT) {
        return Err(format!(
            "{at}: unknown marker `{other}` after ```toml; the only one is `{FRAGMENT}` (docs/scenario-format.md, \
             \"Examples in the documentation\")"
        ));
    }
    match classify(block) {
        Kind::Scenario => scenario(block),
        Kind::Profile => profile(block),
        Kind::Subject => subject(block),
        Kind::Fragment => fragment(block),
        Kind::Unknown => Err(format!(
            "{at}: this ```toml block is not a whole scenario (a top-level `format =` or a `[[step]]`), a host \
             profile (a top-level `torch =`) or a subject file (a top-level `command =`): complete it, or mark it \
             ```toml {FRAGMENT} (docs/scenario-format.md, \"Examples in the documentation\")"
        )),
    }
}

/// Loaded as devsim loads a scenario file (every case of a `[matrix]`), then run through the reference
/// catalog as `devsim run` does; anything but a pass fails, with the report.
fn scenario(block: &Block) -> Result<(), String> {
    let at = block.at();
    let catalog = Catalog::reference();
    let loaded = expand_scenarios(
        Path::new(&block.file),
        &block.aligned(),
        &catalog,
        &ProfileSources::shipped(),
    );
    let mut scenarios = Vec::new();
    let mut problems = Vec::new();
    for (name, result) in loaded {
        match result {
            Ok(scenario) => scenarios.push(scenario),
            Err(error) => problems.push(format!(
                "{at}: the scenario{} does not load:\n{}",
                case(&name),
                render(&error)
            )),
        }
    }
    // The docs teach the current form: an example that loads only through a deprecated form fails.
    for scenario in &scenarios {
        for warning in &scenario.warnings {
            problems.push(format!(
                "{at}: the scenario{} loads with a deprecation warning; write it in the current form:\n{}",
                case(&scenario.name),
                render(warning)
            ));
        }
    }
    if !problems.is_empty() {
        return Err(problems.join("\n"));
    }
    let mut subject = CatalogSubject::reference();
    let run = run_suite(&mut subject, &scenarios, 0, &mut ());
    if run.reports.len() != scenarios.len() {
        return Err(format!(
            "{at}: {} scenario(s) loaded but {} reported",
            scenarios.len(),
            run.reports.len()
        ));
    }
    let failed: Vec<String> = run
        .reports
        .iter()
        .filter(|(report, _)| report.status != Status::Passed)
        .map(|(report, _)| {
            format!(
                "{at}: the scenario{} loads but does not pass with the reference catalog ({}):\n{}",
                case(&report.name),
                report.status.reason().unwrap_or_else(|| "failed".into()),
                report::human(report)
            )
        })
        .collect();
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n"))
    }
}

/// ` (case)` for one case of a `[matrix]` (`file[k=v]`), else nothing.
fn case(name: &str) -> String {
    name.find('[')
        .map(|at| format!(" {}", &name[at..]))
        .unwrap_or_default()
}

/// A copy of the block at `scratch/<file>`, its lines where they are in the markdown: loaders that read a
/// file then name the markdown's line (the scratch prefix is cut from their messages).
fn scratch_copy(block: &Block) -> Result<(tempfile::TempDir, std::path::PathBuf), String> {
    let scratch = tempfile::tempdir().map_err(|e| format!("a scratch folder: {e}"))?;
    let path = scratch.path().join(&block.file);
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    std::fs::write(&path, block.aligned()).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok((scratch, path))
}

fn unscratched(message: String, scratch: &tempfile::TempDir) -> String {
    message.replace(&format!("{}/", scratch.path().display()), "")
}

/// Loaded as devsim loads a host profile file.
fn profile(block: &Block) -> Result<(), String> {
    let (scratch, path) = scratch_copy(block)?;
    load_profile(&path).map(|_| ()).map_err(|error| {
        let shown = render(&error);
        format!(
            "{}: the host profile does not load:\n{}",
            block.at(),
            unscratched(shown, &scratch)
        )
    })
}

/// Loaded as devsim loads a subject file (`--subject FILE`), without starting it.
fn subject(block: &Block) -> Result<(), String> {
    let (scratch, path) = scratch_copy(block)?;
    SubjectSpec::load(&path).map(|_| ()).map_err(|error| {
        format!(
            "{}: the subject file does not load:\n{}",
            block.at(),
            unscratched(error.to_string(), &scratch)
        )
    })
}

/// A fragment is still TOML, and is not a whole scenario (that one must be checked as such).
fn fragment(block: &Block) -> Result<(), String> {
    toml::from_str::<toml::Table>(&block.aligned())
        .map_err(|error| format!("{}: the fragment is not TOML:\n{error}", block.at()))?;
    let (keys, steps) = top_level(&block.body);
    if keys.iter().any(|k| k == "format") && steps {
        return Err(format!(
            "{}: a whole scenario (`format =` and `[[step]]`) marked `{FRAGMENT}`: remove the marker, so it is \
             loaded and run",
            block.at()
        ));
    }
    Ok(())
}
