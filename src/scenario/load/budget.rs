//! The run-wide budget: what one corpus load ([`super::load_all_named`]) may ask of a run, summed over its
//! files in file order, so that many files each within their own limits cannot together exhaust memory.
//!
//! Each file asks for its step executions (repeat included; a matrix file for all of its cases) before it
//! is expanded or parsed. Files are loaded across cores, but they ask in file order ([`RunBudget::turn`]
//! waits for every earlier file to have asked), so the file that crosses the budget is the same on every
//! run. Once one crosses, the budget is closed: the files after it ask for nothing and stop early, and
//! the load is refused with an error naming the file that crossed.

use std::sync::{Condvar, Mutex, MutexGuard};

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
struct Spent {
    /// The index of the file whose turn it is.
    next: usize,
    executions: u64,
    matrix: u64,
    /// Whether a file has crossed the budget.
    closed: bool,
}

/// The budget of one corpus load, shared by the threads loading its files.
#[derive(Debug, Default)]
pub(crate) struct RunBudget {
    spent: Mutex<Spent>,
    turn: Condvar,
}

impl RunBudget {
    fn spent(&self) -> MutexGuard<'_, Spent> {
        // Only whole updates are made under the lock, so the counts are good after a panic elsewhere.
        self.spent.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The turn of the file at `index` (0-based, in file order): every file must be given one, in order.
    pub fn turn(&self, index: usize) -> Turn<'_> {
        Turn {
            budget: self,
            index,
            asked: false,
        }
    }

    /// Whether a file has crossed the budget: what is still being loaded will be thrown away.
    pub fn closed(&self) -> bool {
        self.spent().closed
    }

    fn ask(&self, index: usize, cost: Cost) -> Result<(), OverBudget> {
        let mut spent = self.spent();
        while spent.next < index {
            spent = self.turn.wait(spent).unwrap_or_else(|e| e.into_inner());
        }
        spent.next = index + 1;
        self.turn.notify_all();
        if spent.closed {
            return Ok(());
        }
        let executions = spent.executions.saturating_add(cost.executions);
        let matrix = match cost.matrix {
            true => spent.matrix.saturating_add(cost.executions),
            false => spent.matrix,
        };
        let over = if matrix > MAX_RUN_MATRIX_EXECUTIONS {
            Some(OverBudget {
                total: matrix,
                limit: MAX_RUN_MATRIX_EXECUTIONS,
                matrix: true,
            })
        } else if executions > MAX_RUN_EXECUTIONS {
            Some(OverBudget {
                total: executions,
                limit: MAX_RUN_EXECUTIONS,
                matrix: false,
            })
        } else {
            None
        };
        match over {
            Some(over) => {
                spent.closed = true;
                Err(over)
            }
            None => {
                spent.executions = executions;
                spent.matrix = matrix;
                Ok(())
            }
        }
    }
}

/// One file's turn to ask; a turn dropped without asking asks for nothing, so later files never wait on
/// a file that failed early.
pub(crate) struct Turn<'a> {
    budget: &'a RunBudget,
    index: usize,
    asked: bool,
}

impl Turn<'_> {
    /// Asks for `cost` once every earlier file has asked; refused when it would cross the budget.
    pub fn ask(&mut self, cost: Cost) -> Result<(), OverBudget> {
        if self.asked {
            return Ok(());
        }
        self.asked = true;
        self.budget.ask(self.index, cost)
    }

    /// Whether the budget is closed (this file's work will be thrown away).
    pub fn closed(&self) -> bool {
        self.budget.closed()
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if !self.asked {
            // Asking for nothing cannot cross the budget.
            let _ = self.ask(Cost::default());
        }
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
        let budget = RunBudget::default();
        assert_eq!(budget.turn(0).ask(matrix(200_000)), Ok(()));
        let refused = budget.turn(1).ask(matrix(200_000)).expect_err("crosses");
        assert_eq!(refused.total, 400_000);
        assert!(refused.matrix);
        assert!(budget.closed());
        assert_eq!(
            budget.turn(2).ask(matrix(1)),
            Ok(()),
            "after the budget closed a file is not refused again: the load is already refused"
        );
    }

    #[test]
    fn plain_files_count_against_the_whole_run() {
        let budget = RunBudget::default();
        let plain = |executions| Cost {
            executions,
            matrix: false,
        };
        assert_eq!(budget.turn(0).ask(plain(MAX_RUN_EXECUTIONS)), Ok(()));
        let refused = budget.turn(1).ask(plain(1)).expect_err("one more");
        assert_eq!(
            (refused.total, refused.matrix),
            (MAX_RUN_EXECUTIONS + 1, false)
        );
    }

    #[test]
    fn files_ask_in_order_whatever_thread_gets_there_first() {
        let budget = RunBudget::default();
        let refused: Vec<usize> = std::thread::scope(|scope| {
            let handles: Vec<_> = (0..8usize)
                .rev()
                .map(|index| {
                    let budget = &budget;
                    scope.spawn(move || budget.turn(index).ask(matrix(100_000)).is_err())
                })
                .collect();
            let mut refused: Vec<usize> = handles
                .into_iter()
                .enumerate()
                .filter_map(|(i, handle)| handle.join().expect("joins").then_some(7 - i))
                .collect();
            refused.sort_unstable();
            refused
        });
        assert_eq!(refused, [2], "the third file crosses 250,000, every time");
    }

    #[test]
    fn a_turn_dropped_unasked_lets_the_next_file_ask() {
        let budget = RunBudget::default();
        drop(budget.turn(0));
        assert_eq!(budget.turn(1).ask(matrix(1)), Ok(()));
    }
}
