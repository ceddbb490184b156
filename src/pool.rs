//! The device thread pool's locks: one read/write lock per torch device key.
//!
//! A lock on one ordinal covers that device; a lock on a family covers every device of it (on a HIP build
//! ROCM and "cuda" are the same family); a lock on `all` covers every key. Keys are always taken in one
//! fixed order (cpu, then cuda:0, cuda:1 ...), so no two callers can deadlock.

use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::dispatch::selector::{Scope, Selector};
use crate::runtime::DriverError;
use crate::runtime::Runtime;
use crate::trace::{Call, Entry, Text};
use crate::vocab::Family;
use crate::vocab::{TorchDevice, TorchType};

/// Whether a lock shares its keys with other readers: the protocol's own type, one name for one thing.
pub use devsim_metadata::protocol::LockMode;

enum Held<'a> {
    Read(#[allow(dead_code)] RwLockReadGuard<'a, ()>),
    Write(#[allow(dead_code)] RwLockWriteGuard<'a, ()>),
}

/// Locks held on a set of keys; released when dropped.
pub struct PoolGuard<'a> {
    keys: Vec<TorchDevice>,
    _held: Vec<Held<'a>>,
}

impl PoolGuard<'_> {
    /// The keys held, in acquisition order.
    pub fn covers(&self) -> &[TorchDevice] {
        &self.keys
    }
}

/// A lock per torch device the runtime sees.
pub struct DevicePool {
    keys: Vec<TorchDevice>,
    locks: Vec<RwLock<()>>,
}

impl DevicePool {
    /// A pool keyed by `cpu` and each GPU torch counts as `cuda:N`.
    pub fn new(runtime: &dyn Runtime) -> Result<Self, DriverError> {
        let gpus = match runtime.build().gpu_family() {
            Some(_) => runtime.torch_device_count()?,
            None => 0,
        };
        Ok(Self::with_gpus(gpus))
    }

    /// A pool keyed by `cpu` and `cuda:0..gpus`.
    pub fn with_gpus(gpus: u32) -> Self {
        let mut keys = vec![TorchDevice::CPU];
        keys.extend((0..gpus).map(TorchDevice::cuda));
        keys.sort();
        let locks = keys.iter().map(|_| RwLock::new(())).collect();
        Self { keys, locks }
    }

    /// Every key, in lock order.
    pub fn keys(&self) -> &[TorchDevice] {
        &self.keys
    }

    /// The keys a scope covers, in lock order.
    pub fn keys_for(&self, scope: Scope) -> Result<Vec<TorchDevice>, DispatchError> {
        let target = match scope {
            Scope::All => return Ok(self.keys.clone()),
            Scope::Target(target) => target,
        };
        let kind = match target.family {
            Family::Cpu => TorchType::Cpu,
            Family::Cuda | Family::Rocm => TorchType::Cuda,
            Family::Xpu => TorchType::Xpu,
            Family::Mps => TorchType::Mps,
            Family::All => return Ok(self.keys.clone()),
        };
        Ok(self
            .keys
            .iter()
            .copied()
            .filter(|key| key.kind == kind)
            .filter(|key| target.ordinal.is_none() || key.index == target.ordinal)
            .collect())
    }

    /// Takes every key of `scope` in `mode`, in lock order, blocking until all are held.
    pub fn lock(&self, scope: Scope, mode: LockMode) -> Result<PoolGuard<'_>, DispatchError> {
        let keys = self.keys_for(scope)?;
        let held = keys
            .iter()
            // The keys are sorted (lock order): a lookup, not a scan, so `all` on N GPUs costs N log N.
            .filter_map(|key| self.keys.binary_search(key).ok())
            .map(|index| {
                let lock = &self.locks[index];
                match mode {
                    LockMode::Read => Held::Read(lock.read().unwrap_or_else(|e| e.into_inner())),
                    LockMode::Write => Held::Write(lock.write().unwrap_or_else(|e| e.into_inner())),
                }
            })
            .collect();
        Ok(PoolGuard { keys, _held: held })
    }

    /// Normalizes a selector (family enums, `all`, any CUDA spelling), locks, records one `lock` entry per
    /// key, and returns the guard.
    pub fn lock_selector<'p>(
        &'p self,
        dispatch: &Dispatch,
        selector: &Selector,
        mode: LockMode,
    ) -> Result<PoolGuard<'p>, DispatchError> {
        let scope = dispatch.normalize_scope(selector)?;
        let guard = self.lock(scope, mode)?;
        for key in guard.covers() {
            dispatch.trace.push(Entry::Call {
                call: Call::Lock,
                device: Some(key.to_string().into()),
                detail: Some(Text::fixed(match mode {
                    LockMode::Read => "read",
                    LockMode::Write => "write",
                })),
                ok: true,
            });
        }
        Ok(guard)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_cpu_then_every_gpu_in_lock_order() {
        let keys: Vec<String> = DevicePool::with_gpus(2)
            .keys()
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(keys, ["cpu", "cuda:0", "cuda:1"]);
    }

    #[test]
    fn a_lock_on_all_holds_every_key_and_a_lock_on_one_ordinal_holds_that_key() {
        use crate::vocab::Target;
        let pool = DevicePool::with_gpus(300);
        let all = pool.lock(Scope::All, LockMode::Write).expect("locks");
        assert_eq!(all.covers(), pool.keys());
        assert_eq!(all._held.len(), 301, "every key's lock is held");
        drop(all);
        let one = pool
            .lock(
                Scope::Target(Target::device(Family::Cuda, 257)),
                LockMode::Read,
            )
            .expect("locks");
        assert_eq!(one.covers(), [TorchDevice::cuda(257)]);
        assert_eq!(one._held.len(), 1);
    }
}
