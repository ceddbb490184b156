//! Independent pieces of work (a corpus's files, a long scenario's batches of steps, the kernel sweep's
//! hosts) shared out over the machine's cores.

use std::num::NonZeroUsize;
use std::sync::atomic::{AtomicUsize, Ordering};

/// `load` applied to every item, on up to one thread per core (one thread when there are fewer than
/// `per_worker` items per core), the results in the order of `items`: each item is loaded on its own, so
/// only the wall time depends on how they are shared out. A panic in a worker is resumed on the caller.
pub(crate) fn in_parallel<I: Sync, T: Send>(
    items: &[I],
    per_worker: usize,
    load: impl Fn(&I) -> T + Sync,
) -> Vec<T> {
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    let workers = cores.min(items.len() / per_worker.max(1));
    if workers <= 1 {
        return items.iter().map(load).collect();
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let at = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(at) else {
                return done;
            };
            done.push((at, load(item)));
        }
    };
    let mut done: Vec<(usize, T)> = std::thread::scope(|scope| {
        let helpers: Vec<_> = (1..workers).map(|_| scope.spawn(work)).collect();
        let mut done = work();
        for helper in helpers {
            match helper.join() {
                Ok(theirs) => done.extend(theirs),
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        done
    });
    done.sort_unstable_by_key(|(at, _)| *at);
    done.into_iter().map(|(_, loaded)| loaded).collect()
}

#[cfg(test)]
mod tests {
    use super::in_parallel;

    #[test]
    fn results_keep_the_order_of_the_items_however_they_are_shared_out() {
        let items: Vec<usize> = (0..1000).collect();
        for per_worker in [1, 16, 2000] {
            assert_eq!(
                in_parallel(&items, per_worker, |i| i * 2),
                items.iter().map(|i| i * 2).collect::<Vec<_>>()
            );
        }
    }
}
