//! Device-pool locks under real contention: real threads, real locks.

use std::sync::atomic::{AtomicI32, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::thread;
use std::time::Duration;

use devsim::Family;
use devsim::dispatch::selector::Scope;
use devsim::pool::{DevicePool, LockMode};
use devsim::vocab::Target;

fn device(n: u32) -> Scope {
    Scope::Target(Target::device(Family::Rocm, n))
}

fn family() -> Scope {
    Scope::Target(Target::family(Family::Rocm))
}

#[test]
fn a_family_write_lock_excludes_every_single_device_holder() {
    let pool = Arc::new(DevicePool::with_gpus(4));
    // Each device counter goes +1 while a single-device writer holds it; the family writer checks all are 0.
    let holders: Arc<Vec<AtomicI32>> = Arc::new((0..4).map(|_| AtomicI32::new(0)).collect());
    let violations = Arc::new(AtomicUsize::new(0));
    let threads: Vec<_> = (0..8)
        .map(|i| {
            let (pool, holders, violations) = (pool.clone(), holders.clone(), violations.clone());
            thread::spawn(move || {
                for round in 0..200 {
                    if (i + round) % 3 == 0 {
                        let _guard = pool.lock(family(), LockMode::Write).expect("family lock");
                        if holders.iter().any(|h| h.load(Ordering::SeqCst) != 0) {
                            violations.fetch_add(1, Ordering::SeqCst);
                        }
                    } else {
                        let n = (i + round) % 4;
                        let _guard = pool
                            .lock(device(n as u32), LockMode::Write)
                            .expect("device lock");
                        holders[n].fetch_add(1, Ordering::SeqCst);
                        thread::yield_now();
                        holders[n].fetch_sub(1, Ordering::SeqCst);
                    }
                }
            })
        })
        .collect();
    for t in threads {
        t.join().expect("no panic");
    }
    assert_eq!(violations.load(Ordering::SeqCst), 0);
}

#[test]
fn readers_share_a_device_and_writers_do_not() {
    let pool = Arc::new(DevicePool::with_gpus(2));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let barrier = Arc::new(Barrier::new(4));
    let readers: Vec<_> = (0..4)
        .map(|_| {
            let (pool, inside, most, barrier) =
                (pool.clone(), inside.clone(), most.clone(), barrier.clone());
            thread::spawn(move || {
                let _guard = pool.lock(device(1), LockMode::Read).expect("read lock");
                let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                most.fetch_max(now, Ordering::SeqCst);
                barrier.wait();
                inside.fetch_sub(1, Ordering::SeqCst);
            })
        })
        .collect();
    for r in readers {
        r.join().expect("no panic");
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        4,
        "all four readers held the device at once"
    );

    let writers_inside = Arc::new(AtomicUsize::new(0));
    let writer_overlap = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..4)
        .map(|_| {
            let (pool, inside, overlap) =
                (pool.clone(), writers_inside.clone(), writer_overlap.clone());
            thread::spawn(move || {
                for _ in 0..50 {
                    let _guard = pool.lock(device(1), LockMode::Write).expect("write lock");
                    if inside.fetch_add(1, Ordering::SeqCst) != 0 {
                        overlap.fetch_add(1, Ordering::SeqCst);
                    }
                    thread::yield_now();
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for w in writers {
        w.join().expect("no panic");
    }
    assert_eq!(writer_overlap.load(Ordering::SeqCst), 0);
}

#[test]
fn opposing_scopes_never_deadlock_because_keys_are_taken_in_one_order() {
    let pool = Arc::new(DevicePool::with_gpus(3));
    let done = Arc::new(AtomicUsize::new(0));
    let scopes = [
        Scope::All,
        family(),
        device(2),
        device(0),
        Scope::Target(Target::family(Family::Cpu)),
    ];
    let threads: Vec<_> = (0..10)
        .map(|i| {
            let (pool, done) = (pool.clone(), done.clone());
            let scope = scopes[i % scopes.len()];
            thread::spawn(move || {
                for _ in 0..100 {
                    let _guard = pool.lock(scope, LockMode::Write).expect("lock");
                    thread::yield_now();
                }
                done.fetch_add(1, Ordering::SeqCst);
            })
        })
        .collect();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while done.load(Ordering::SeqCst) < 10 {
        assert!(
            std::time::Instant::now() < deadline,
            "lock acquisition deadlocked"
        );
        thread::sleep(Duration::from_millis(5));
    }
    for t in threads {
        t.join().expect("no panic");
    }
}

#[test]
fn scopes_cover_the_right_keys_in_lock_order() {
    let pool = DevicePool::with_gpus(2);
    let keys = |scope| -> Vec<String> {
        pool.keys_for(scope)
            .expect("known scope")
            .iter()
            .map(ToString::to_string)
            .collect()
    };
    assert_eq!(keys(Scope::All), ["cpu", "cuda:0", "cuda:1"]);
    assert_eq!(keys(family()), ["cuda:0", "cuda:1"]);
    assert_eq!(
        keys(Scope::Target(Target::family(Family::Cuda))),
        ["cuda:0", "cuda:1"]
    );
    assert_eq!(keys(device(1)), ["cuda:1"]);
    assert_eq!(keys(Scope::Target(Target::family(Family::Cpu))), ["cpu"]);
}
