//! Long scenario files loaded in batches of steps, across the machine's cores.
//!
//! A file of many steps spends most of its load in the TOML parser, on one core. When every line that
//! starts with `[[step]]` must be a step's header (the file holds no multi-line string, the only place such
//! a line could be anything else), the text before the first header is parsed as the scenario's head and
//! the rest in batches of whole steps, each parsed and checked on its own ([`in_parallel`]), with offsets
//! counted from the batch and lines and excerpts from the whole file.
//!
//! Batching only ever gives up: a head that does not parse or holds steps, a batch that does not parse, a
//! step that does not load, a batch of more steps than `[[step]]` lines. Then the caller loads the file
//! whole, so what it says is exactly what it says for any file; a file that loads comes out the same
//! either way (the tests load the same text both ways).

use std::ops::Range;

use serde::Deserialize;
use toml::Spanned;

use super::source::{Lines, Source};
use super::steps::load_step;
use crate::kernel::Catalog;
use crate::parallel::in_parallel;
use crate::scenario::error::{LoadError, LoadWarning};
use crate::scenario::format::{ScenarioFile, StepFields};
use crate::scenario::model::Step;
use crate::vocab::TorchBuild;

/// Files shorter than this load whole: below it, batching saves less than starting threads costs.
const MIN_BYTES: usize = 256 * 1024;
/// Where a batch ends: at the first step header at or past this many bytes from its start.
const BATCH_BYTES: usize = 64 * 1024;
/// Batches per core below which they are loaded on one thread.
const BATCHES_PER_WORKER: usize = 2;
/// A step's header, as batching recognizes it: at the start of a line, spelled exactly so.
const HEADER: &str = "[[step]]";

/// Where a long file's steps start and how they split into batches.
#[derive(Debug)]
pub(super) struct Batches {
    /// The byte where the first step's header starts: everything before it is the head.
    head_end: usize,
    /// The batches, in file order, covering the text from `head_end` to the end.
    batches: Vec<Batch>,
}

/// Whole steps of a file: a byte range starting at a header, the number of its first step and how many
/// headers it holds.
#[derive(Debug, PartialEq)]
struct Batch {
    bytes: Range<usize>,
    first_number: usize,
    headers: usize,
}

/// What a batch of steps parses into.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BatchFile {
    #[serde(rename = "step")]
    steps: Vec<Spanned<StepFields>>,
}

impl Batches {
    /// The batches of a long file, or `None` when it is short, has no `[[step]]` line or could hold such a
    /// line that is not a header.
    pub fn of(text: &str) -> Option<Self> {
        if text.len() < MIN_BYTES || text.contains("\"\"\"") || text.contains("'''") {
            return None;
        }
        let mut headers = header_starts(text);
        let head_end = headers.next()?;
        let mut batches = Vec::new();
        let mut open = Batch {
            bytes: head_end..text.len(),
            first_number: 1,
            headers: 1,
        };
        for at in headers {
            if at - open.bytes.start >= BATCH_BYTES {
                let next = Batch {
                    bytes: at..text.len(),
                    first_number: open.first_number + open.headers,
                    headers: 1,
                };
                open.bytes.end = at;
                batches.push(std::mem::replace(&mut open, next));
            } else {
                open.headers += 1;
            }
        }
        batches.push(open);
        Some(Self { head_end, batches })
    }

    /// The file's head (everything before the first step) parsed, or `None` when it does not parse or
    /// names `step` itself: even `step = []` there makes the whole file invalid TOML (the `[[step]]`
    /// headers after it cannot extend an inline array), which the parsed head, whose steps default to
    /// none, could not tell.
    pub fn head(&self, source: &Source) -> Option<ScenarioFile> {
        let keys: toml::Table = source.parse_part(self.head_end).ok()?;
        if keys.contains_key("step") {
            return None;
        }
        source.parse_part(self.head_end).ok()
    }

    /// Every step loaded, in order, with the warnings loading them found in order; the first error any
    /// batch met (the caller loads the file whole instead, to say what a whole load says).
    pub fn load(
        &self,
        lines: Lines<'_>,
        catalog: &Catalog,
        build: TorchBuild,
    ) -> Result<(Vec<Step>, Vec<LoadWarning>), LoadError> {
        let loaded = in_parallel(&self.batches, BATCHES_PER_WORKER, |batch| {
            load_batch(lines.part(batch.bytes.start), batch, catalog, build)
        });
        let mut steps = Vec::with_capacity(self.batches.iter().map(|b| b.headers).sum());
        let mut warnings = Vec::new();
        for batch in loaded {
            let (batch_steps, batch_warnings) = batch?;
            steps.extend(batch_steps);
            warnings.extend(batch_warnings);
        }
        Ok((steps, warnings))
    }
}

/// One batch's steps parsed and checked through `part`, a source whose offsets count from the batch.
fn load_batch(
    part: Source<'_>,
    batch: &Batch,
    catalog: &Catalog,
    build: TorchBuild,
) -> Result<(Vec<Step>, Vec<LoadWarning>), LoadError> {
    let parsed: BatchFile = part.parse_part(batch.bytes.end)?;
    if parsed.steps.len() != batch.headers {
        return Err(part.error(
            0..HEADER.len(),
            format!(
                "load steps in batches: a batch of {} `[[step]]` lines holds {} steps",
                batch.headers,
                parsed.steps.len()
            ),
        ));
    }
    let steps = parsed
        .steps
        .into_iter()
        .enumerate()
        .map(|(i, step)| load_step(&part, catalog, batch.first_number + i, &step, build))
        .collect::<Result<Vec<_>, _>>()?;
    Ok((steps, part.take_warnings()))
}

/// The byte offsets of the lines that start with [`HEADER`], in order.
fn header_starts(text: &str) -> impl Iterator<Item = usize> + '_ {
    let first = text.starts_with(HEADER).then_some(0);
    let rest = text.match_indices("\n[[step]]").map(|(at, _)| at + 1);
    first.into_iter().chain(rest)
}

#[cfg(test)]
mod tests;
