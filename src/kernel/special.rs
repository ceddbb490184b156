//! Kernels with behaviour beyond their contract. Each overrides only what differs.

use crate::dispatch::Dispatch;
use crate::dispatch::DispatchError;
use crate::kernel::{Kernel, KernelSpec};
use crate::runtime::LaunchOn;
use crate::vocab::Target;

/// AllSpark (GPTQ and AWQ): repacks its weights on the device, inside the target's context, before the
/// warmup launch and after a move. Its AMD rule is checked per selected target by the shared arch gate.
pub struct AllSpark(pub KernelSpec);

impl Kernel for AllSpark {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }

    fn prepare_on_device(&self, dispatch: &Dispatch) -> Result<(), DispatchError> {
        dispatch
            .runtime
            .launch(LaunchOn::CurrentDevice, "allspark_repack")?;
        Ok(())
    }
}

/// bitsandbytes: NF4/FP4 (4-bit) and INT8 on CPU, NVIDIA and AMD. Its ROCm support was hidden by a missing
/// declaration before the audit; the warmup launches the vendor path of the target's family.
pub struct Bitsandbytes(pub KernelSpec);

impl Kernel for Bitsandbytes {
    fn spec(&self) -> &KernelSpec {
        &self.0
    }

    fn launch_name(&self, target: Target) -> String {
        format!("bitsandbytes_{}", target.family)
    }
}
