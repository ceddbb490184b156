//! `devsim`: run, check and list device-dispatch scenarios against the reference catalog.

fn main() -> std::process::ExitCode {
    devsim::cli::main(devsim::Catalog::reference())
}
