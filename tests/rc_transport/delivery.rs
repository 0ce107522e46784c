// SPDX-License-Identifier: GPL-2.0
//! Data delivered exactly once, lossless and over links that lose, duplicate and reorder: the
//! mixed workload on RC and UC, long WRITEs and READs, egress refusals, moderated completions.

use super::common::{check_mixed_data, mixed, mixed_with};
use super::*;
use rxe_sr::uabi::cqe::WcOpcode;

#[test]
fn rc_lossless_mixed_operations() {
    let mut n = mixed(Service::Rc, Link::CLEAN);
    check_mixed_data(&mut n, true);
    assert_eq!(n.a.req.counters.retries, 0);
    assert_eq!(n.lost, 0);
}

#[test]
fn rc_survives_loss_duplication_and_reordering() {
    for (seed, loss, dup, reorder) in [
        (7, 10_000, 0, 0),
        (9, 50_000, 0, 0),
        (11, 20_000, 20_000, 20_000),
        (13, 0, 50_000, 50_000),
    ] {
        let link = Link {
            loss_ppm: loss,
            dup_ppm: dup,
            reorder_ppm: reorder,
            seed,
        };
        let mut n = mixed(Service::Rc, link);
        check_mixed_data(&mut n, true);
        if loss > 0 {
            assert!(
                n.lost > 0 && n.a.req.counters.retries > 0,
                "loss {loss}: lost {} retries {}",
                n.lost,
                n.a.req.counters.retries
            );
        }
        assert!(!n.a.error && !n.b.error);
    }
}

#[test]
fn uc_lossless_delivers_and_lossy_drops_whole_messages() {
    let mut n = mixed(Service::Uc, Link::CLEAN);
    check_mixed_data(&mut n, false);
    // With loss, UC still completes every send; a message B got is whole and correct. A
    // receive WQE whose message broke off is reused for the next one, so the message is
    // recognised by its (unique) length.
    let msgs = [1usize, 1024, 1025, 5000, 0, 65536];
    let link = Link {
        loss_ppm: 20_000,
        dup_ppm: 0,
        reorder_ppm: 0,
        seed: 5,
    };
    let mut n = mixed(Service::Uc, link);
    assert_eq!(n.a.send_cqes.len(), 13);
    assert!(n.lost > 0 && n.b.resp.counters.uc_dropped > 0);
    let mut whole = 0;
    for c in n.b.recv_cqes.clone() {
        if c.wr_id < 6 && c.status == WcStatus::Success && c.opcode == WcOpcode::Recv {
            let j = msgs
                .iter()
                .position(|&l| l == c.byte_len as usize)
                .unwrap_or_else(|| panic!("{c:?} {:?}", n.b.resp.counters));
            let off = c.wr_id as usize * 0x2_0000;
            assert!(
                n.b.mem.region(0x100)[off..off + msgs[j]] == pattern(j as u8, msgs[j])[..],
                "UC SEND data"
            );
            whole += 1;
        }
    }
    assert!(whole > 0 && whole < 6, "{whole} of 6 SENDs arrived whole");
}

#[test]
fn rc_many_seeds_at_five_percent_loss_with_duplicates_and_reordering() {
    let (mut retries, mut lost) = (0, 0);
    for seed in 1..40u64 {
        let link = Link {
            loss_ppm: 50_000,
            dup_ppm: 10_000,
            reorder_ppm: 10_000,
            seed: seed * 7919,
        };
        let mut n = mixed(Service::Rc, link);
        check_mixed_data(&mut n, true);
        retries += n.a.req.counters.retries;
        lost += n.lost;
    }
    assert!(lost > 100 && retries > 50, "lost {lost} retries {retries}");
}

#[test]
fn a_burst_of_long_writes_completes_under_every_scheme_at_one_percent_loss() {
    // ib_write_bw's pattern: 20 WRITEs of 64 KiB posted at once (1280 PSNs behind a window
    // of 128), every one completing successfully.
    for s in SR_SCHEMES {
        for seed in 1..30u64 {
            let link = Link {
                loss_ppm: 10_000,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, s, s);
            let len = 65536usize;
            for _ in 0..20 {
                let op = SendOp::RdmaWrite {
                    remote: Remote {
                        addr: 0x20_0000,
                        rkey: 0x200,
                    },
                };
                n.post(
                    true,
                    wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, len as u32),
                )
                .unwrap();
            }
            let ok = n.run(4_000_000);
            assert!(
                ok && n.a.send_cqes.len() == 20
                    && n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
                "{s:?} seed {seed}: {:?} {:?}",
                n.a.req.counters,
                n.a.send_cqes.first()
            );
        }
    }
}

#[test]
fn long_reads_complete_with_every_byte_under_loss_in_every_scheme() {
    // 12 READs of 64 KiB (64 responses each, 4 outstanding) from B's memory under loss and
    // reordering: every byte right, every READ completed. (In the SR format responses are
    // placed out of order, and a missing run of them asked for again alone.)
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for seed in [2u64, 4, 6] {
            let link = Link {
                loss_ppm: 20_000,
                dup_ppm: 0,
                reorder_ppm: 10_000,
                seed,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            let len = 65536usize;
            n.b.mem.region(0x100)[..len].copy_from_slice(&pattern(91, len));
            for i in 0..12u64 {
                let op = SendOp::RdmaRead {
                    remote: Remote {
                        addr: 0x10_0000,
                        rkey: 0x100,
                    },
                };
                let dst = 0x20_0000 + (i % 4) * 0x1_0000;
                n.post(true, wqe(op, SendOpcode::RdmaRead, 0x200, dst, len as u32))
                    .unwrap();
            }
            assert!(n.run(4_000_000), "{scheme:?} seed {seed} stalled");
            assert!(
                n.a.send_cqes.len() == 12
                    && n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
                "{scheme:?} seed {seed}: {:?}",
                n.a.send_cqes.first()
            );
            for i in 0..4usize {
                assert!(
                    n.a.mem.region(0x200)[i * 0x1_0000..][..len] == pattern(91, len)[..],
                    "{scheme:?} seed {seed}: READ {i} data"
                );
            }
            if scheme != Scheme::Gbn {
                release_and_check_pools(&mut n);
            }
        }
    }
}

#[test]
fn a_packet_the_egress_queue_refuses_is_offered_again_not_lost() {
    // A full local queue refuses every 30th request packet offered (each refusal pauses
    // the requester well inside the retransmission timeout): nothing is lost, so nothing
    // may need resending (a refusal taken for a loss would be resent after a timeout or a
    // NAK), and every byte arrives once, in every scheme.
    BUSY_EVERY.set(30);
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        BUSY_REFUSED.set(0);
        let mut n = mixed_with(Service::Rc, Link::CLEAN, scheme, scheme);
        check_mixed_data(&mut n, true);
        assert!(
            BUSY_REFUSED.get() >= 4,
            "{scheme:?}: the queue refused {}",
            BUSY_REFUSED.get()
        );
        let c = n.a.req.counters;
        assert_eq!(
            (c.resent_pkts, c.timeouts, c.retries),
            (0, 0, 0),
            "{scheme:?}: {c:?}"
        );
        if scheme != Scheme::Gbn {
            release_and_check_pools(&mut n);
        }
    }
    // Under loss too, the refusals and the losses together: exactly once.
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for seed in [3u64, 5, 8] {
            let link = Link {
                loss_ppm: 30_000,
                dup_ppm: 10_000,
                reorder_ppm: 10_000,
                seed,
            };
            let mut n = mixed_with(Service::Rc, link, scheme, scheme);
            check_mixed_data(&mut n, true);
        }
    }
    BUSY_EVERY.set(0);
}

#[test]
fn moderated_completions_all_arrive_under_loss() {
    // perftest's ib_write_bw -n 40 -t 16 with its completion moderation of 16: WRs 15, 31
    // and 39 signaled, the rest not, posted 16 at a time as completions come back, over a
    // link losing 1%: each signaled WR completes once, whatever was resent.
    for seed in 1..200u64 {
        for scheme in [Scheme::Gbn, Scheme::Fasr] {
            let link = Link {
                loss_ppm: 10_000,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            n.a.cfg.sig_all = false;
            let len = 4096u32;
            let mut posted = 0u64;
            let mut cqes = 0usize;
            let mut rounds = 0;
            while posted < 40 {
                rounds += 1;
                assert!(
                    rounds < 100,
                    "{scheme:?} seed {seed}: no progress at {posted}, cqes {cqes}"
                );
                let ccnt = cqes as u64 * 16;
                while posted < 40 && posted - ccnt.min(posted) < 16 {
                    let off = (posted % 16) * u64::from(len);
                    let op = SendOp::RdmaWrite {
                        remote: Remote {
                            addr: 0x20_0000 + off,
                            rkey: 0x200,
                        },
                    };
                    let mut w = wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000 + off, len);
                    let signaled = posted % 16 == 15 || posted == 39;
                    w.flags = if signaled {
                        SendFlags::from_bits_truncate(SendFlags::SIGNALED)
                    } else {
                        SendFlags::from_bits_truncate(0)
                    };
                    n.post(true, w).unwrap();
                    posted += 1;
                }
                assert!(n.run(1_000_000), "{scheme:?} seed {seed}: stalled");
                cqes = n.a.send_cqes.len();
            }
            assert!(n.run(1_000_000), "{scheme:?} seed {seed}: stalled");
            assert_eq!(n.a.send_cqes.len(), 3, "{scheme:?} seed {seed}");
        }
    }
}
