// SPDX-License-Identifier: GPL-2.0
//! Device-wide object limits (issue 9, item 10): what the device reports as max_pd, max_cq
//! and max_srq is what it lets a user create.

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::Arc;

use rxe_sr::uabi::limits::{give_back, take};

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
