//! Memory placement for the tables: huge pages for large arrays, and cache-line prefetches
//! that let the misses of independent probes overlap.

/// Allocations at least this large ask for transparent huge pages.
const HUGE_BYTES: usize = 4 << 20;

/// An empty vector with room for `capacity` elements, backed by huge pages where the OS
/// allows it: probes touch random places of tables much larger than what the TLB maps
/// with 4 KiB pages, and a page walk per probe costs as much as the cache miss itself
/// (more under virtualisation). Asked before the first write, so pages fault in huge.
pub(super) fn huge_capacity<T>(capacity: usize) -> Vec<T> {
    let v: Vec<T> = Vec::with_capacity(capacity);
    advise_huge_pages(v.as_ptr().cast::<u8>(), capacity * std::mem::size_of::<T>());
    v
}

/// `len` copies of `value` in a [`huge_capacity`] vector.
pub(super) fn huge_vec<T: Clone>(len: usize, value: T) -> Vec<T> {
    let mut v = huge_capacity(len);
    v.resize(len, value);
    v
}

#[cfg(target_os = "linux")]
fn advise_huge_pages(ptr: *const u8, bytes: usize) {
    const HUGE_PAGE: usize = 2 << 20;
    if bytes < HUGE_BYTES {
        return;
    }
    let start = (ptr as usize).next_multiple_of(HUGE_PAGE);
    let end = (ptr as usize + bytes) & !(HUGE_PAGE - 1);
    if end > start {
        // SAFETY: the range lies inside an allocation we own; MADV_HUGEPAGE only changes
        // how the kernel backs it, never its contents. Failure (no THP) is harmless.
        unsafe {
            libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
        }
    }
}

#[cfg(not(target_os = "linux"))]
fn advise_huge_pages(_ptr: *const u8, _bytes: usize) {}

/// Asks for the cache line holding `items[at]` (a directory entry, a row number, an id):
/// one line only, since every line in flight holds one of the core's few fill buffers.
#[inline(always)]
pub(super) fn prefetch<T>(items: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < items.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        // SAFETY: prefetching has no effect on memory and never faults.
        unsafe { _mm_prefetch(items[at..].as_ptr().cast::<i8>(), _MM_HINT_T0) };
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, at);
}

/// Asks for the cache lines holding `items[at]` and the next one (a run of ~15
/// fingerprints spans two): the multi-index probe loop, where measured against whole-run
/// prefetching this was faster (fewer fill buffers held per probe ahead).
#[inline(always)]
pub(super) fn prefetch_pair<T>(items: &[T], at: usize) {
    #[cfg(target_arch = "x86_64")]
    if at < items.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let line = items[at..].as_ptr().cast::<i8>();
        // SAFETY: prefetching has no effect on memory; the second line may lie past the
        // slice, which a prefetch tolerates (it never faults), and `wrapping_add` keeps the
        // pointer arithmetic defined.
        unsafe {
            _mm_prefetch(line, _MM_HINT_T0);
            _mm_prefetch(line.wrapping_add(64), _MM_HINT_T0);
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, at);
}

/// Asks for every cache line of `items[start..end]`, up to four (a longer run is read
/// sequentially, which the hardware prefetcher follows).
#[inline(always)]
pub(super) fn prefetch_run<T>(items: &[T], start: usize, end: usize) {
    #[cfg(target_arch = "x86_64")]
    if start < end && end <= items.len() {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let first = items[start..].as_ptr().cast::<i8>();
        let bytes = (end - start) * std::mem::size_of::<T>();
        // Lines touched: from the one holding the first byte to the one holding the last.
        let lines = ((first as usize & 63) + bytes).div_ceil(64).min(4);
        for line in 0..lines {
            // SAFETY: prefetching has no effect on memory and never faults; the address
            // lies inside (or in the last line of) the slice, and `wrapping_add` keeps the
            // pointer arithmetic defined.
            unsafe { _mm_prefetch(first.wrapping_add(line * 64), _MM_HINT_T0) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (items, start, end);
}
