//! The static build's allocator (Linux with musl). musl's own malloc takes one lock for
//! every allocation, so a batch's workers queue on it: 20,000 GETs under `-Z` took 1.7x
//! the CPU of the same build on mimalloc. mimalloc in its place for every run, though,
//! doubled the CPU of a lone small GET (it maps and commits its arenas at the first
//! allocation), and a lone call started every few seconds is what this build is for. So
//! the process starts on musl's malloc, and a batch switches to mimalloc before it starts
//! its threads ([`many_threads`]); a block is freed by the allocator that holds it
//! (`mi_is_in_heap_region`), so what was allocated before the switch is returned to musl.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, Ordering};

/// Whether new blocks come from mimalloc; set once, never cleared.
static MIMALLOC: AtomicBool = AtomicBool::new(false);

/// The process's allocator: musl's, then mimalloc's once [`many_threads`] was called.
pub struct Chosen;

/// New blocks come from mimalloc from now on: for a batch, called before its workers and
/// helper threads start.
pub fn many_threads() {
    MIMALLOC.store(true, Ordering::Release);
}

/// Whether mimalloc holds `p` (always false before the switch: nothing was allocated there).
fn mimalloc_holds(p: *mut u8) -> bool {
    // SAFETY: mi_is_in_heap_region only looks `p` up in mimalloc's map of its segments.
    MIMALLOC.load(Ordering::Acquire) && unsafe { libmimalloc_sys::mi_is_in_heap_region(p.cast()) }
}

// SAFETY: every block is freed or resized by the allocator that made it (see
// `mimalloc_holds`); each one upholds GlobalAlloc's contract for its own blocks.
unsafe impl GlobalAlloc for Chosen {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match MIMALLOC.load(Ordering::Acquire) {
            // SAFETY: the caller's contract, passed on.
            true => unsafe { mimalloc::MiMalloc.alloc(layout) },
            // SAFETY: as above.
            false => unsafe { System.alloc(layout) },
        }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match MIMALLOC.load(Ordering::Acquire) {
            // SAFETY: the caller's contract, passed on.
            true => unsafe { mimalloc::MiMalloc.alloc_zeroed(layout) },
            // SAFETY: as above.
            false => unsafe { System.alloc_zeroed(layout) },
        }
    }

    unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
        match mimalloc_holds(p) {
            // SAFETY: `p` was made by mimalloc with `layout` (the caller's contract).
            true => unsafe { mimalloc::MiMalloc.dealloc(p, layout) },
            // SAFETY: `p` was made by musl's malloc with `layout`.
            false => unsafe { System.dealloc(p, layout) },
        }
    }

    unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if mimalloc_holds(p) {
            // SAFETY: `p` is mimalloc's, with `layout` (the caller's contract).
            return unsafe { mimalloc::MiMalloc.realloc(p, layout, new_size) };
        }
        if !MIMALLOC.load(Ordering::Acquire) {
            // SAFETY: `p` is musl's, and new blocks still are.
            return unsafe { System.realloc(p, layout, new_size) };
        }
        // A block made before the switch moves to mimalloc.
        // SAFETY: the caller guarantees new_size, rounded to the alignment, fits isize.
        let new = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        // SAFETY: a valid non-zero layout (new_size is non-zero by the contract).
        let q = unsafe { mimalloc::MiMalloc.alloc(new) };
        if !q.is_null() {
            // SAFETY: both blocks are valid for the bytes copied and do not overlap.
            unsafe { std::ptr::copy_nonoverlapping(p, q, layout.size().min(new_size)) };
            // SAFETY: `p` is musl's, with `layout`.
            unsafe { System.dealloc(p, layout) };
        }
        q
    }
}
