//! The `moverctl` binary: the command line ([`cli`]) on the library.

mod cli;

fn main() -> std::process::ExitCode {
    tune_allocator();
    cli::main()
}

/// glibc raises its mmap threshold to the size of the largest block freed, after which 1 MiB
/// read buffers come from per-thread arenas that keep freed memory: peak RSS drifted 40-60 MB
/// above `--max-buffer`. A fixed threshold maps every large buffer on its own and returns it on
/// free (4 x 256 MiB local -> S3: 151 MB peak instead of 178-192 MB). It is 512 KiB, above the
/// HTTP client's read buffers (at most ~408 KiB), and the heap keeps up to 8 MiB free at its top:
/// with 256 KiB and the default 128 KiB trim, every socket read buffer was a fresh mapping,
/// faulted in and zeroed page by page (8 x 256 MiB S3 -> local: 400k page faults and 3.0-3.4 s
/// system CPU; now 16-20k and 1.4-2.2 s; local -> S3 peak RSS unchanged, 154-156 MB).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn tune_allocator() {
    // SAFETY: mallopt only sets an allocator parameter; it is called once, before any other
    // thread exists.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, 512 * 1024);
        libc::mallopt(libc::M_TRIM_THRESHOLD, 8 << 20);
    }
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn tune_allocator() {}
