//! The live runtime: real drivers through `libloading` (CUDA, HIP) and, with the `torch` feature, tensors
//! through `tch`.

pub mod cuda;
pub mod driver;
pub mod hip;
pub mod library;
pub mod machine;
pub mod masks;
pub mod runtime;
mod status;
mod symbols;
#[cfg(feature = "torch")]
pub mod torch;

pub use machine::RealMachine;
pub use runtime::LiveRuntime;
