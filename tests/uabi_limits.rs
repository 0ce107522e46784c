// SPDX-License-Identifier: GPL-2.0
//! Device-wide object limits: what the device reports as max_pd, max_cq,
//! max_srq and max_ah is what it lets a user create; the page sizes `map_mr_sg` accepts are
//! those page_size_cap reports.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rxe_sr::uabi::limits::{give_back, page_size_supported, take, RXE_PAGE_SIZE_CAP};

#[test]
fn a_quota_refuses_past_its_limit_and_frees_on_give_back() {
    let used = AtomicU32::new(0);
    for _ in 0..5 {
        assert!(take(&used, 5));
    }
    assert!(!take(&used, 5), "the sixth of five");
    assert_eq!(used.load(Ordering::Relaxed), 5, "a refusal takes nothing");
    give_back(&used);
    assert!(take(&used, 5));
    for _ in 0..10 {
        give_back(&used);
    }
    assert_eq!(used.load(Ordering::Relaxed), 0, "never below zero");
    assert!(!take(&used, 0));
}

#[test]
fn a_quota_holds_under_concurrent_takers() {
    let used = Arc::new(AtomicU32::new(0));
    let granted: u32 = (0..8)
        .map(|_| {
            let u = used.clone();
            std::thread::spawn(move || (0..1000).filter(|_| take(&u, 3000)).count() as u32)
        })
        .map(|h| h.join().unwrap())
        .sum();
    assert_eq!(granted, 3000);
    assert_eq!(used.load(Ordering::Relaxed), 3000);
}

#[test]
fn the_page_sizes_accepted_are_those_page_size_cap_reports() {
    for shift in 0..64 {
        let size = 1u64 << shift;
        assert_eq!(
            page_size_supported(size),
            (12..=31).contains(&shift),
            "2^{shift}"
        );
        assert_eq!(page_size_supported(size), size & RXE_PAGE_SIZE_CAP != 0);
    }
    for bad in [0, 4095, 3 * 4096, 4097, (1 << 20) + 4096, u64::MAX] {
        assert!(!page_size_supported(bad), "{bad}");
    }
    assert!(page_size_supported(4096));
    assert!(page_size_supported(1 << 21));
    assert!(!page_size_supported(2048), "below 4 KiB");
    assert!(!page_size_supported(1 << 32), "above 2 GiB");
}
