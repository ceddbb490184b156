//! `devsim`: run, check and list device-dispatch scenarios against the reference catalog.

/// Loading and the kernel sweep allocate many small values; mimalloc serves them faster than the system's.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    devsim::cli::main(devsim::Catalog::reference())
}
