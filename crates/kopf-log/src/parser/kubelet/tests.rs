use super::*;

/// The remembered second changes no result of `strip_kubelet`.
#[test]
fn a_warm_cache_strips_what_a_cold_one_strips() {
    let warm = HourCache::default();
    let mut next = crate::test_rng(0x2545_f491_4f6c_dd1d);
    for round in 0..30_000 {
        let mut l = b"2026-11-30T02:41:55.039412345Z [x] y".to_vec();
        if round % 3 == 0 {
            l[18] = b'6';
        }
        for _ in 0..(next() % 3) {
            let r = next();
            l[(r % 34) as usize] = b"0123456789Tt -:.Z/\xb0"[((r >> 8) % 19) as usize];
        }
        assert_eq!(
            strip_kubelet(&l, &warm),
            strip_kubelet(&l, &HourCache::default()),
            "{}",
            String::from_utf8_lossy(&l)
        );
    }
}
