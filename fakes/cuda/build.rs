//! Gives the library the SONAME the real one has, so the loader records it as `libcuda.so.1`.

fn main() {
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,libcuda.so.1");
}
