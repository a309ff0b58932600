//! The `kopf-audit` binary: the command line lives in the library (`cli`).

fn main() -> std::process::ExitCode {
    keep_the_heap_small();
    return_freed_memory_periodically();
    kopf_audit::main()
}

/// Tunes glibc's malloc for a long-running process whose large allocations are
/// transient (list pages, log chunks, SubjectAccessReview bodies): at most two arenas
/// (glibc's default is eight per core, each keeping its own free memory), and a fixed
/// 128 KiB mmap threshold, so that a freed large buffer goes back to the system at
/// once instead of raising the thresholds and staying in the heap. Measured on the
/// scale bench (BENCHMARKS.md, "Scale"). With `MALLOC_ARENA_MAX`,
/// `MALLOC_MMAP_THRESHOLD_` or `GLIBC_TUNABLES` in the environment, glibc's own reading
/// of them stands and nothing is changed here.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn keep_the_heap_small() {
    const ARENAS: libc::c_int = 2;
    const MMAP_THRESHOLD: libc::c_int = 128 * 1024;
    let tuned_by_environment = [
        "MALLOC_ARENA_MAX",
        "MALLOC_MMAP_THRESHOLD_",
        "GLIBC_TUNABLES",
    ]
    .iter()
    .any(|name| std::env::var_os(name).is_some());
    if tuned_by_environment {
        return;
    }
    // SAFETY: mallopt only sets allocator parameters; it runs first in main, before any
    // other thread exists.
    unsafe {
        libc::mallopt(libc::M_ARENA_MAX, ARENAS);
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Other allocators keep their defaults.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn keep_the_heap_small() {}

/// How often freed heap memory is handed back to the system.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const TRIM_EVERY: std::time::Duration = std::time::Duration::from_secs(10);

/// Hands the heap's free pages back to the system every [`TRIM_EVERY`], from a thread
/// of its own. glibc returns memory only from the top of an arena; the pages freed
/// below a live allocation stay resident. After the initial lists (thousands of pods
/// and RBAC objects parsed, most of it dropped at once) that was 21 of 49 MiB of RSS
/// on the scale bench (BENCHMARKS.md, "Scale"). `malloc_trim` releases every free
/// page; there its thread used no measurable CPU (0 clock ticks in 12 runs).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn return_freed_memory_periodically() {
    let spawned = std::thread::Builder::new()
        .name("heap-trim".into())
        .stack_size(64 * 1024)
        .spawn(|| {
            loop {
                std::thread::sleep(TRIM_EVERY);
                // SAFETY: malloc_trim only returns free pages to the system; it takes
                // the arenas' locks like any allocation.
                unsafe {
                    libc::malloc_trim(0);
                }
            }
        });
    if let Err(error) = spawned {
        eprintln!("kopf-audit: heap trimming is off (no thread: {error})");
    }
}

/// Other allocators return memory their own way.
#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
fn return_freed_memory_periodically() {}
