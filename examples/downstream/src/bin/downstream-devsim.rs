//! A devsim-compatible command line that knows this crate's kernels: `downstream-devsim run scenarios`.

fn main() -> std::process::ExitCode {
    match downstream_kernels::catalog() {
        Ok(catalog) => devsim::cli::main(catalog),
        Err(error) => {
            eprintln!("error: failed to {error}");
            std::process::ExitCode::from(2)
        }
    }
}
