// SPDX-License-Identifier: GPL-2.0
//! Every SR scheme on the mixed workload: exactly once over lossy links, a standard or
//! different peer kept on standard RoCE, and the fallback to go-back-N when the pools run short.

use super::common::{check_mixed_data, mixed_with, post_mixed};
use super::*;
use rxe_sr::proto::pool::bits_pool::{BitsBlock, BitsPool};
use rxe_sr::proto::pool::sr_pool::{BitmapBlock, SrPool, SrUnit};
use rxe_sr::proto::recovery::any::SharedIn;
use rxe_sr::proto::recovery::srnic;
use rxe_sr::proto::wire::caps::RequesterState;

#[test]
fn every_sr_scheme_delivers_the_mixed_workload_exactly_once_over_a_lossy_link() {
    for scheme in SR_SCHEMES {
        let (mut resent, mut placed_ooo, mut sacks) = (0, 0, 0);
        for (seed, loss, dup, reorder) in [
            (7, 10_000, 0, 0),
            (9, 50_000, 0, 0),
            (11, 20_000, 20_000, 20_000),
            (13, 0, 50_000, 50_000),
            (15, 50_000, 10_000, 10_000),
        ] {
            let link = Link {
                loss_ppm: loss,
                dup_ppm: dup,
                reorder_ppm: reorder,
                seed,
            };
            let mut n = mixed_with(Service::Rc, link, scheme, scheme);
            check_mixed_data(&mut n, true);
            assert!(!n.a.error && !n.b.error, "{scheme:?} seed {seed}");
            let sr = n.a.req.sr().expect("SR state");
            assert!(
                matches!(sr.state(), RequesterState::Sr(_)),
                "{scheme:?}: {:?}",
                sr.state()
            );
            assert!(
                n.a.sr_packets > 0 && n.b.sr_packets > 0,
                "{scheme:?}: SR format on the wire both ways"
            );
            resent += sr.counters.selective_resent;
            let rs = n.b.resp.sr().expect("responder SR state");
            assert!(rs.active());
            placed_ooo += rs.counters.ooo_placed;
            sacks += rs.counters.sacks_sent + rs.counters.holes_sent;
            release_and_check_pools(&mut n);
        }
        // Over these links every scheme had holes to fill, out of order, one by one.
        assert!(
            resent > 0 && placed_ooo > 0 && sacks > 0,
            "{scheme:?}: resent {resent} placed {placed_ooo} sacks {sacks}"
        );
    }
}

#[test]
fn sr_schemes_over_many_seeds_at_five_percent_loss() {
    for scheme in SR_SCHEMES {
        for seed in 1..12u64 {
            let link = Link {
                loss_ppm: 50_000,
                dup_ppm: 10_000,
                reorder_ppm: 10_000,
                seed: seed * 7919,
            };
            let mut n = mixed_with(Service::Rc, link, scheme, scheme);
            check_mixed_data(&mut n, true);
            release_and_check_pools(&mut n);
        }
    }
}

#[test]
fn a_standard_or_different_peer_keeps_the_qp_on_standard_roce() {
    for (sa, sb) in [
        (Scheme::Fasr, Scheme::Gbn),
        (Scheme::Gbn, Scheme::Fasr),
        (Scheme::Fasr, Scheme::Irn),
        (Scheme::Srnic, Scheme::Melo),
    ] {
        let link = Link {
            loss_ppm: 20_000,
            dup_ppm: 0,
            reorder_ppm: 10_000,
            seed: 21,
        };
        let mut n = mixed_with(Service::Rc, link, sa, sb);
        check_mixed_data(&mut n, true);
        assert_eq!(
            (n.a.sr_packets, n.b.sr_packets),
            (0, 0),
            "{sa:?} -> {sb:?}: no TVer=1 packet"
        );
        if let Some(sr) = n.a.req.sr() {
            assert_eq!(sr.state(), RequesterState::Standard, "{sa:?} -> {sb:?}");
        }
        if let Some(rs) = n.b.resp.sr() {
            assert!(!rs.active());
        }
        release_and_check_pools(&mut n);
    }
}

#[test]
fn a_tiny_pool_falls_back_to_go_back_n_and_keeps_every_byte() {
    // FaSR over a pool of 2 units and 3 blocks, MELO over 4 bits blocks: loss recovery
    // outgrows them, the QP sides fall back to go-back-N, and the data is still right.
    for scheme in [Scheme::Fasr, Scheme::Melo] {
        let (mut fallbacks, mut exhaustions) = (0, 0);
        for seed in [3u64, 5, 7, 11] {
            let link = Link {
                loss_ppm: 50_000,
                dup_ppm: 0,
                reorder_ppm: 10_000,
                seed,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            for s in [&mut n.a, &mut n.b] {
                let tiny: SharedIn<[SrUnit; 2], [BitmapBlock; 3], [BitsBlock; 4]> = SharedIn {
                    sr_pool: SrPool::new(),
                    bits_pool: BitsPool::new(),
                };
                s.shared = Box::new(tiny);
            }
            let len = 8192usize;
            for i in 0..60u64 {
                let off = (i as usize % 30) * len;
                n.a.mem.region(0x100)[off..off + len].copy_from_slice(&pattern(i as u8, len));
                let op = SendOp::RdmaWrite {
                    remote: Remote {
                        addr: 0x20_0000 + off as u64,
                        rkey: 0x200,
                    },
                };
                n.post(
                    true,
                    wqe(
                        op,
                        SendOpcode::RdmaWrite,
                        0x100,
                        0x10_0000 + off as u64,
                        len as u32,
                    ),
                )
                .unwrap();
            }
            assert!(n.run(4_000_000), "{scheme:?} seed {seed} stalled");
            assert!(
                n.b.mem.region(0x200)[..30 * len] == n.a.mem.region(0x100)[..30 * len],
                "{scheme:?} seed {seed}: data"
            );
            assert!(
                n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success)
                    && n.a.send_cqes.len() == 60
            );
            fallbacks += n.b.resp.sr().unwrap().engine_counters().gbn_fallbacks
                + n.a.req.sr().unwrap().engine_counters().gbn_fallbacks;
            exhaustions += n.b.shared.sr_pool().usage().exhaustions
                + n.b.shared.bits_pool().usage().exhaustions;
            release_and_check_pools(&mut n);
        }
        assert!(
            fallbacks > 0 && exhaustions > 0,
            "{scheme:?}: fallbacks {fallbacks} exhaustions {exhaustions}"
        );
    }
}

#[test]
fn a_tiny_pool_shared_by_both_directions_keeps_every_byte() {
    // FaSR over a pool of 1 unit and 1 block per side, each side a requester and a
    // responder at once (the mixed workload A to B, WRITEs and READs B to A), then fetch-adds
    // both ways with the responder keeping 4 results (rc_verify's QPs): the roles fight over
    // the unit, fall back to go-back-N, and every byte and every fetch-add's result is right.
    let (mut fb, mut lost) = (0, 0);
    for seed in 0..100u64 {
        let link = Link {
            loss_ppm: 50_000,
            dup_ppm: 0,
            reorder_ppm: 10_000,
            seed: seed * 7919 + 1,
        };
        let mut n = Net::with_schemes(Service::Rc, 1024, link, Scheme::Fasr, Scheme::Fasr);
        for s in [&mut n.a, &mut n.b] {
            let tiny: SharedIn<[SrUnit; 1], [BitmapBlock; 1], [BitsBlock; 1]> = SharedIn {
                sr_pool: SrPool::new(),
                bits_pool: BitsPool::new(),
            };
            s.shared = Box::new(tiny);
        }
        n.a.cfg.max_dest_rd_atomic = 4;
        n.b.cfg.max_dest_rd_atomic = 4;
        post_mixed(&mut n, Service::Rc);
        // B to A at once: WRITEs of 16 KiB and READs of 12 KiB.
        for i in 0..8u64 {
            let off = 0xc_0000 + i * 0x4000;
            n.b.mem.region(0x100)[off as usize..][..0x4000]
                .copy_from_slice(&pattern(100 + i as u8, 0x4000));
            let op = SendOp::RdmaWrite {
                remote: Remote {
                    addr: 0x10_0000 + off,
                    rkey: 0x100,
                },
            };
            n.post(
                false,
                wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000 + off, 0x4000),
            )
            .unwrap();
            let op = SendOp::RdmaRead {
                remote: Remote {
                    addr: 0x10_0000 + (i % 4) * 0x2_0000,
                    rkey: 0x100,
                },
            };
            n.post(
                false,
                wqe(
                    op,
                    SendOpcode::RdmaRead,
                    0x200,
                    0x20_0000 + 0xc_0000 + i * 0x3000,
                    0x3000,
                ),
            )
            .unwrap();
        }
        let ok = n.run(2_000_000);
        assert!(
            ok && !n.b.error,
            "seed {seed}: b {:?} cqes {:?}",
            n.b.req.counters,
            n.b.send_cqes
        );
        for i in 0..8u64 {
            let off = (0xc_0000 + i * 0x4000) as usize;
            assert!(
                n.a.mem.region(0x100)[off..off + 0x4000] == pattern(100 + i as u8, 0x4000)[..],
                "seed {seed}: B's WRITE {i}"
            );
        }
        assert!(
            ok && !n.a.error,
            "seed {seed}: a {:?} cqes {:?}",
            n.a.req.counters,
            n.a.send_cqes
        );
        check_mixed_data(&mut n, true);
        // Then 8 fetch-adds each way at once, nothing else.
        for k in 0..(8 + seed % 50) {
            for a_side in [true, false] {
                let remote = Remote {
                    addr: 0x20_0000 + 0xe_0100,
                    rkey: 0x200,
                };
                let op = SendOp::AtomicFetchAndAdd { remote, add: 1 };
                n.post(
                    a_side,
                    wqe(
                        op,
                        SendOpcode::AtomicFetchAndAdd,
                        0x200,
                        0x20_0000 + 0xe_0200 + 8 * (k % 32),
                        8,
                    ),
                )
                .unwrap();
            }
        }
        let ok = n.run(2_000_000);
        assert!(
            ok && !n.a.error && !n.b.error,
            "seed {seed}: atomics: a {:?} {:?} b {:?} {:?}",
            n.a.req.counters,
            n.a.send_cqes.last(),
            n.b.req.counters,
            n.b.send_cqes.last()
        );
        for s in [&mut n.a, &mut n.b] {
            assert_eq!(
                &s.mem.region(0x200)[0xe_0100..0xe_0108],
                &(8 + seed % 50).to_le_bytes(),
                "seed {seed}"
            );
        }
        fb += n.b.resp.sr().unwrap().engine_counters().gbn_fallbacks
            + n.a.req.sr().unwrap().engine_counters().gbn_fallbacks
            + n.a.resp.sr().unwrap().engine_counters().gbn_fallbacks
            + n.b.req.sr().unwrap().engine_counters().gbn_fallbacks;
        lost += n.lost;
        release_and_check_pools(&mut n);
    }
    assert!(fb > 0 && lost > 0, "fallbacks {fb}, lost {lost}");
}

/// Runs the mixed workload over `link` with both sides on `scheme`, over FaSR's and MELO's
/// smallest pools when `tiny` (loss recovery outgrows them: go-back-N fallbacks).
fn mixed_over_pools(scheme: Scheme, link: Link, tiny: bool) -> Net {
    let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
    if tiny {
        for s in [&mut n.a, &mut n.b] {
            let pools: SharedIn<[SrUnit; 1], [BitmapBlock; 1], [BitsBlock; 1]> = SharedIn {
                sr_pool: SrPool::new(),
                bits_pool: BitsPool::new(),
            };
            s.shared = Box::new(pools);
        }
    }
    post_mixed(&mut n, Service::Rc);
    assert!(n.run(2_000_000), "{scheme:?} seed {}: stalled", link.seed);
    check_mixed_data(&mut n, true);
    n
}

/// The events the SR engines count, in [`engine_counts`]'s order.
const ENGINE_EVENTS: [RcEvent; 7] = [
    RcEvent::FastPath,
    RcEvent::SlowPath,
    RcEvent::GbnFallback,
    RcEvent::LostCntOverflow,
    RcEvent::OnloadServed,
    RcEvent::OnloadDelayUs,
    RcEvent::OnloadQueuePeak,
];

/// What `s`'s two engines (its requester's and its responder's) counted of
/// [`ENGINE_EVENTS`]; only a responder's engine reports lost-cnt overflows and the onload
/// queue.
fn engine_counts(s: &Side) -> [u64; 7] {
    let req = *s.req.sr().expect("SR requester").engine_counters();
    let resp = *s.resp.sr().expect("SR responder").engine_counters();
    [
        req.fast_path + resp.fast_path,
        req.slow_path + resp.slow_path,
        req.gbn_fallbacks + resp.gbn_fallbacks,
        resp.lost_cnt_overflows,
        resp.onload_served,
        resp.onload_delay_total,
        resp.onload_queue_peak,
    ]
}

#[test]
fn every_engine_event_is_reported_once_as_the_engine_counts_it() {
    // Over lossy links, with SRNIC's slow path answering late and FaSR's and MELO's pools
    // too small, each side's environment counted over the whole run exactly what its two
    // engines counted: an event counted in an engine and not reported, or reported twice,
    // shows here. Each event the scheme has must have happened, or the check says nothing.
    SRNIC_DELAY_US.set(20);
    for scheme in SR_SCHEMES {
        let mut seen = [0u64; 7];
        for (seed, loss, tiny) in [(3, 50_000, false), (5, 100_000, false), (7, 50_000, true)] {
            let link = Link {
                loss_ppm: loss,
                dup_ppm: 0,
                reorder_ppm: 10_000,
                seed,
            };
            let mut n = mixed_over_pools(scheme, link, tiny);
            for s in [&n.a, &n.b] {
                let counts = engine_counts(s);
                for (k, ev) in ENGINE_EVENTS.into_iter().enumerate() {
                    let (got, want) = (s.counted[ev as usize], counts[k]);
                    assert_eq!(got, want, "{scheme:?} seed {seed}: {ev:?} reported");
                    seen[k] += want;
                }
            }
            release_and_check_pools(&mut n);
        }
        for (k, ev) in ENGINE_EVENTS.into_iter().enumerate() {
            let has = match ev {
                RcEvent::FastPath => matches!(scheme, Scheme::Fasr | Scheme::Srnic),
                RcEvent::GbnFallback => matches!(scheme, Scheme::Fasr | Scheme::Melo),
                RcEvent::LostCntOverflow => scheme == Scheme::Fasr,
                RcEvent::SlowPath => true,
                _ => scheme == Scheme::Srnic,
            };
            assert_eq!(seen[k] > 0, has, "{scheme:?}: {ev:?} counted {}", seen[k]);
        }
    }
    SRNIC_DELAY_US.set(0);
}

#[test]
fn srnic_goes_back_for_what_its_full_slow_path_dropped() {
    // rc_verify's SEND round both ways at 5% loss, SRNIC's slow path answering after 400 us:
    // its queue of metadata fills and the responder drops packets past ePSN unrecorded. The
    // requester's timeout resent UNACK alone, and each timeout then moved UNACK one PSN
    // (some seeds took over a hundred timeouts); it goes back to UNACK instead.
    const SIZES: [u32; 12] = [
        1, 7, 100, 1023, 1024, 1025, 4096, 5000, 65536, 204800, 0, 333,
    ];
    let (mut full, mut most) = (0, 0);
    for seed in 0..40u64 {
        SRNIC_DELAY_US.set(400);
        let link = Link {
            loss_ppm: 50_000,
            dup_ppm: 0,
            reorder_ppm: 0,
            seed: seed * 7919 + 3,
        };
        let mut n = Net::with_schemes(Service::Rc, 1024, link, Scheme::Srnic, Scheme::Srnic);
        SRNIC_DELAY_US.set(0);
        for a_side in [true, false] {
            let mut off = 0u64;
            for (i, &len) in SIZES.iter().enumerate() {
                let s = if a_side { &mut n.a } else { &mut n.b };
                let bytes = pattern(i as u8 ^ u8::from(a_side), len as usize);
                s.mem.region(0x100)[off as usize..][..len as usize].copy_from_slice(&bytes);
                s.rq.push_back(recv_wqe(i as u64, 0x200, 0x20_0000 + off, len.max(1)));
                let mut w = wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000 + off, len);
                w.wr_id = i as u64;
                n.post(a_side, w).unwrap();
                off += u64::from(len) + 64;
            }
        }
        assert!(n.run(3_000_000), "seed {seed}: stalled");
        for (a_side, s) in [(true, &mut n.b), (false, &mut n.a)] {
            assert!(!s.error, "seed {seed}");
            assert_eq!(s.recv_cqes.len(), SIZES.len(), "seed {seed}");
            let mut off = 0usize;
            for (i, (&len, c)) in SIZES.iter().zip(&s.recv_cqes).enumerate() {
                assert_eq!(
                    (c.status, c.byte_len),
                    (WcStatus::Success, len),
                    "seed {seed}"
                );
                let want = pattern(i as u8 ^ u8::from(a_side), len as usize);
                assert!(
                    s.mem.region(0x200)[off..][..len as usize] == want[..],
                    "seed {seed}: {i}"
                );
                off += len as usize + 64;
            }
        }
        for s in [&n.a, &n.b] {
            let c = s.resp.sr().expect("SR responder").engine_counters();
            full += u64::from(c.onload_queue_peak == srnic::DEFAULT_QUEUE as u64);
        }
        most = most.max(n.a.req.counters.timeouts + n.b.req.counters.timeouts);
        release_and_check_pools(&mut n);
    }
    assert!(full > 0, "no slow-path queue filled");
    assert!(most <= 15, "{most} timeouts in one round");
}
