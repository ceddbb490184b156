//! The run-wide budget: what one corpus load ([`super::load_all_named`]) may ask of a run, summed over its
//! files in file order, so that many files each within their own limits cannot together exhaust memory.
//!
//! Every file's step executions (repeat included; a matrix file's for all of its cases) are counted from
//! its text before any file is expanded or parsed ([`cost_of`]), so a corpus over the budget is refused
//! at once, naming the first file that takes it over, whatever loading the files before it would cost.

use crate::kernel::Catalog;
use crate::kernel::audit::Inventory;
use crate::scenario::error::LoadError;
use crate::scenario::load::corpus::{Found, read_bounded};
use crate::scenario::load::hosts::ProfileSources;
use crate::scenario::load::source::Source;
use crate::scenario::matrix::{self, MatrixContext};
use crate::scenario::model::Step;

/// The most step executions (repeat included) every scenario of one run may ask for together: what one
/// scenario may ask for alone ([`Step::MAX_EXECUTIONS`]).
pub const MAX_RUN_EXECUTIONS: u64 = Step::MAX_EXECUTIONS;

/// The most step executions every matrix case of one run may ask for together: what one matrix may ask
/// for alone ([`Step::MAX_MATRIX_EXECUTIONS`]), since every case's report is kept.
pub const MAX_RUN_MATRIX_EXECUTIONS: u64 = Step::MAX_MATRIX_EXECUTIONS;

/// What one file asks of the run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cost {
    /// Step executions, repeat included, every case of a matrix counted.
    pub executions: u64,
    /// Whether they are a matrix's cases.
    pub matrix: bool,
}

/// Why a file does not fit: the run's total with it, and the limit it crosses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct OverBudget {
    /// What the run would ask for with this file.
    pub total: u64,
    /// The limit crossed.
    pub limit: u64,
    /// Whether the limit is the one on matrix cases.
    pub matrix: bool,
}

impl OverBudget {
    /// The message, a fragment after "failed to".
    pub fn message(&self) -> String {
        let what = match self.matrix {
            true => "matrix cases' step executions",
            false => "step executions",
        };
        format!(
            "load this file: with the files before it the run asks for {} {what} (repeat included), more than the limit of {} for a whole run",
            self.total, self.limit
        )
    }
}

/// What the files so far have asked for.
#[derive(Debug, Default)]
pub(crate) struct RunBudget {
    executions: u64,
    matrix: u64,
}

impl RunBudget {
    /// Takes the next file's `cost`, in file order; refused, taking nothing, when it would cross the budget.
    pub fn ask(&mut self, cost: Cost) -> Result<(), OverBudget> {
        let executions = self.executions.saturating_add(cost.executions);
        let matrix = match cost.matrix {
            true => self.matrix.saturating_add(cost.executions),
            false => self.matrix,
        };
        if matrix > MAX_RUN_MATRIX_EXECUTIONS {
            return Err(OverBudget {
                total: matrix,
                limit: MAX_RUN_MATRIX_EXECUTIONS,
                matrix: true,
            });
        }
        if executions > MAX_RUN_EXECUTIONS {
            return Err(OverBudget {
                total: executions,
                limit: MAX_RUN_EXECUTIONS,
                matrix: false,
            });
        }
        self.executions = executions;
        self.matrix = matrix;
        Ok(())
    }
}

/// What a file asks of the run, and the byte offset its refusal points at (its `[matrix]` header, or its
/// start); `None` for a file that cannot be read or whose matrix cannot be expanded: loading it says why,
/// and it asks for nothing.
pub(crate) fn cost_of(
    found: &Found,
    catalog: &Catalog,
    profiles: &ProfileSources,
) -> Option<(Cost, usize)> {
    let text = read_bounded(&found.path).ok()?;
    let plain = || {
        let cost = Cost {
            executions: matrix::executions_of(&text),
            matrix: false,
        };
        Some((cost, 0))
    };
    if !matrix::has_matrix(&text) {
        return plain();
    }
    match matrix::plan(&text, &matrix_context(catalog, profiles)) {
        Ok(None) => plain(),
        Ok(Some(plan)) => Some((
            Cost {
                executions: plan.executions(),
                matrix: true,
            },
            plan.header(),
        )),
        Err(_) => None,
    }
}

/// The refusal of the file that crosses the budget, located at `at` in it.
pub(crate) fn refusal(found: &Found, at: usize, over: &OverBudget) -> LoadError {
    match read_bounded(&found.path) {
        Ok(text) => Source::new(&found.path, &text).error(at..at, over.message()),
        Err(_) => LoadError::new(&found.path, 1, 1, over.message()),
    }
}

/// What a matrix may draw on: the catalog, the reference inventory, and every profile with its family.
pub(crate) fn matrix_context<'a>(
    catalog: &'a Catalog,
    profiles: &ProfileSources,
) -> MatrixContext<'a> {
    MatrixContext {
        catalog,
        inventory: Some(Inventory::reference()),
        profiles: profiles
            .names()
            .unwrap_or_default()
            .into_iter()
            .map(|name| {
                let family = profiles
                    .load(&name)
                    .ok()
                    .and_then(|host| host.torch.gpu_family())
                    .map(|family| family.to_string());
                (name, family)
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matrix(executions: u64) -> Cost {
        Cost {
            executions,
            matrix: true,
        }
    }

    #[test]
    fn files_add_up_and_the_one_that_crosses_is_refused() {
        let mut budget = RunBudget::default();
        assert_eq!(budget.ask(matrix(200_000)), Ok(()));
        let refused = budget.ask(matrix(200_000)).expect_err("crosses");
        assert_eq!(refused.total, 400_000);
        assert!(refused.matrix);
        assert_eq!(
            budget.ask(matrix(50_000)),
            Ok(()),
            "a refused file took nothing"
        );
    }

    #[test]
    fn plain_files_count_against_the_whole_run() {
        let mut budget = RunBudget::default();
        let plain = |executions| Cost {
            executions,
            matrix: false,
        };
        assert_eq!(budget.ask(plain(MAX_RUN_EXECUTIONS)), Ok(()));
        let refused = budget.ask(plain(1)).expect_err("one more");
        assert_eq!(
            (refused.total, refused.matrix),
            (MAX_RUN_EXECUTIONS + 1, false)
        );
    }
}
