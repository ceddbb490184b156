//! The C interface of the GPU drivers devsim talks to, declared once.
//!
//! Each driver module holds the C types, the numbers (status codes, attribute numbers, copy kinds,
//! struct layouts) and one function-pointer type per symbol, named as the symbol in the module's
//! `fns` (`cuda::fns::cuInit`, `hip::fns::hipSetDevice` ...), all transcribed from the vendor
//! headers. Three users share these declarations, as cudarc's `sys` layer is shared by its `result`
//! and `safe` layers:
//!
//! - devsim's live client (`devsim::runtime::live::{cuda, hip}`) resolves every symbol as its
//!   `fns` type, from a symbol table that names each symbol once;
//! - the fake drivers (`fakes/cuda`, `fakes/hip`) check each export against the same type at compile
//!   time (`const _: cuda::fns::cuInit = cuInit;`);
//! - the ABI tests call the fakes through the same types.
//!
//! Nothing here loads a library or calls a driver: this crate is declarations only.

#![no_std]

pub mod cuda;
pub mod hip;
