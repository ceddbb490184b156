//! The live runtime: real drivers through `libloading` (CUDA, HIP) and, with the `torch` feature, tensors
//! through `tch`.

pub mod cuda;
pub mod hip;
pub mod library;
