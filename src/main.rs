//! `devsim`: run, check and list device-dispatch scenarios against the reference catalog.

use std::alloc::{GlobalAlloc, Layout};
use std::ffi::c_void;

use libmimalloc_sys::{mi_free, mi_malloc, mi_malloc_aligned, mi_realloc, mi_realloc_aligned};
use libmimalloc_sys::{mi_zalloc, mi_zalloc_aligned};

/// Loading and the kernel sweep allocate many small values; mimalloc serves them faster than the system's.
#[global_allocator]
static ALLOCATOR: MiMalloc = MiMalloc;

/// The most alignment every mimalloc block has: its blocks are whole machine words.
const WORD: usize = std::mem::size_of::<usize>();

/// mimalloc as the global allocator. Nearly every Rust allocation asks for word alignment or less, which
/// every mimalloc block has: those take mimalloc's plain `malloc` path, and only larger alignments its
/// aligned one (which looks for a suitably aligned block first and over-allocates when it finds none).
struct MiMalloc;

// SAFETY: each method hands mimalloc a layout or a block it gave out, and returns what mimalloc returns:
// a block of at least the asked size at the asked alignment (word-aligned blocks for alignments up to a
// word, the aligned calls above that), or null on failure.
unsafe impl GlobalAlloc for MiMalloc {
    #[inline]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: plain mimalloc calls; any size is accepted, and the alignment is a power of two.
        unsafe {
            if layout.align() <= WORD {
                mi_malloc(layout.size()).cast()
            } else {
                mi_malloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as in `alloc`.
        unsafe {
            if layout.align() <= WORD {
                mi_zalloc(layout.size()).cast()
            } else {
                mi_zalloc_aligned(layout.size(), layout.align()).cast()
            }
        }
    }

    #[inline]
    unsafe fn dealloc(&self, ptr: *mut u8, _layout: Layout) {
        // SAFETY: `ptr` came from this allocator, so from mimalloc.
        unsafe { mi_free(ptr.cast::<c_void>()) }
    }

    #[inline]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `ptr` came from this allocator with `layout`; the new block keeps its alignment.
        unsafe {
            if layout.align() <= WORD {
                mi_realloc(ptr.cast::<c_void>(), new_size).cast()
            } else {
                mi_realloc_aligned(ptr.cast::<c_void>(), new_size, layout.align()).cast()
            }
        }
    }
}

fn main() -> std::process::ExitCode {
    devsim::cli::main(devsim::Catalog::reference())
}
