//! The huge-page allocator (`HugePageAlloc`), installed as this test binary's global allocator:
//! large allocations behave as ordinary memory, and where the kernel offers transparent huge
//! pages on request they are backed by them.

use ps_runtime::HugePageAlloc;

#[global_allocator]
static ALLOC: HugePageAlloc = HugePageAlloc;

/// The kernel's THP mode (the bracketed word of `.../transparent_hugepage/enabled`).
fn thp_mode() -> Option<String> {
    let s = std::fs::read_to_string("/sys/kernel/mm/transparent_hugepage/enabled").ok()?;
    Some(s.split_whitespace().find(|w| w.starts_with('['))?.trim_matches(['[', ']']).to_string())
}

fn anon_huge_kb() -> u64 {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").unwrap_or_default();
    s.lines()
        .find(|l| l.starts_with("AnonHugePages:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

#[test]
fn large_allocations_are_ordinary_memory_on_huge_pages_where_offered() {
    // Zeroed, written, grown (realloc keeps the contents), read back.
    let mut v = vec![0u64; 8 << 20];
    assert!(v.iter().all(|&x| x == 0));
    v.iter_mut().enumerate().for_each(|(i, x)| *x = i as u64);
    v.reserve(16 << 20);
    v.extend(0..(16u64 << 20));
    assert_eq!(v[12345], 12345);
    assert_eq!(v[(8 << 20) + 777], 777);
    // Small allocations are untouched by the hint and work as usual.
    let small: Vec<Box<[u8; 100]>> = (0..1000).map(|_| Box::new([7u8; 100])).collect();
    assert!(small.iter().all(|b| b[99] == 7));
    match thp_mode().as_deref() {
        Some("madvise" | "always") => {
            let kb = anon_huge_kb();
            eprintln!("AnonHugePages: {kb} kB");
            assert!(kb >= 2048, "a 192 MiB allocation got no huge page (AnonHugePages {kb} kB)");
        }
        mode => eprintln!("THP mode {mode:?}: huge pages are not offered here, nothing more to check"),
    }
}

#[test]
fn ps_huge_pages_zero_turns_the_hint_off() {
    use ps_runtime::huge_pages_enabled_by as on;
    assert!(on(None) && on(Some(b"1")) && on(Some(b"yes")));
    assert!(!on(Some(b"0")) && !on(Some(b"off")) && !on(Some(b"false")) && !on(Some(b"no")));
}
