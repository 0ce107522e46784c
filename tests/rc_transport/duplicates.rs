// SPDX-License-Identifier: GPL-2.0
//! Duplicate requests at the responder: atomics answered from saved results, a duplicate WRITE
//! acknowledged at its own PSN, and duplicate READs served only from a saved READ.

use super::common::{read_request, to_b};
use super::*;

#[test]
fn duplicate_atomic_is_answered_from_the_saved_result() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let remote = Remote {
        addr: 0x20_0000,
        rkey: 0x200,
    };
    n.post(
        true,
        wqe(
            SendOp::AtomicFetchAndAdd { remote, add: 1 },
            SendOpcode::AtomicFetchAndAdd,
            0x100,
            0x10_0000,
            8,
        ),
    )
    .unwrap();
    let mut out = vec![];
    let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    let req = out[0].clone();
    for _ in 0..3 {
        let p = PacketRepr::parse(&req).unwrap();
        let mut back = vec![];
        let _ =
            n.b.with_env(1, &mut back, |_, r, c, e| r.on_request(e, c, &p));
        let ack = PacketRepr::parse(&back[0]).unwrap();
        assert_eq!(ack.ext.atomic_ack_eth.unwrap().orig_rem_data, 0);
    }
    assert_eq!(
        &n.b.mem.region(0x200)[..8],
        &1u64.to_le_bytes(),
        "executed once"
    );
}

/// A WRITE, then a READ; the WRITE comes again (its ACK was late). The re-acknowledgement
/// must name the WRITE's PSN: an ACK at the READ's last PSN would tell the requester the READ
/// is complete (rdma_rxe's completer then completes it with no data) or, past it, that its
/// responses were lost. Either derails the requester's retry.
#[test]
fn duplicate_write_after_a_read_is_acknowledged_at_the_write() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let write = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    n.post(
        true,
        wqe(write, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 100),
    )
    .unwrap();
    let read = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    n.post(
        true,
        wqe(read, SendOpcode::RdmaRead, 0x100, 0x10_1000, 4096),
    )
    .unwrap();
    let mut out = vec![];
    let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    assert_eq!(out.len(), 2, "the WRITE and the READ request");
    let write_psn = PacketRepr::parse(&out[0]).unwrap().bth.psn;
    let mut back = vec![];
    for pkt in [&out[0], &out[1]] {
        let p = PacketRepr::parse(pkt).unwrap();
        let _ =
            n.b.with_env(1, &mut back, |_, r, c, e| r.on_request(e, c, &p));
    }
    assert_eq!(
        back.len(),
        1 + 4,
        "an ACK for the WRITE, four READ responses"
    );
    let dup = PacketRepr::parse(&out[0]).unwrap();
    assert!(dup.bth.ack_req);
    let mut again = vec![];
    let _ =
        n.b.with_env(1, &mut again, |_, r, c, e| r.on_request(e, c, &dup));
    assert_eq!(again.len(), 1);
    let ack = PacketRepr::parse(&again[0]).unwrap();
    assert_eq!(ack.bth.opcode.info().unwrap().kind, OpKind::Acknowledge);
    assert_eq!(
        ack.bth.psn, write_psn,
        "the duplicate WRITE is acknowledged at the WRITE, not at the READ"
    );
}

/// 40 FETCH_ADDs in flight at once (max_rd_atomic 64), all executed by the responder, all
/// their ACKs lost: the requester's retry sends 40 duplicates, and each is answered from the
/// saved result (the responder keeps as many as max_dest_rd_atomic may ask), none executed
/// twice.
#[test]
fn a_window_of_duplicate_atomics_is_answered_from_saved_results() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.a.cfg.max_rd_atomic = 64;
    n.b.cfg.max_dest_rd_atomic = 64;
    let remote = Remote {
        addr: 0x20_0000,
        rkey: 0x200,
    };
    for i in 0..40u64 {
        let w = wqe(
            SendOp::AtomicFetchAndAdd { remote, add: 1 },
            SendOpcode::AtomicFetchAndAdd,
            0x100,
            0x10_0000 + 8 * i,
            8,
        );
        n.post(true, w).unwrap();
    }
    let mut out = vec![];
    let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    assert_eq!(out.len(), 40, "all 40 atomics go out at once");
    for pkt in &out {
        let p = PacketRepr::parse(pkt).unwrap();
        let mut lost_acks = vec![];
        let _ =
            n.b.with_env(1, &mut lost_acks, |_, r, c, e| r.on_request(e, c, &p));
    }
    assert!(n.run(2_000_000), "stalled after the lost ACKs");
    assert_eq!(n.a.send_cqes.len(), 40);
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{:?}",
        n.a.send_cqes
    );
    let mut olds: Vec<u64> = (0..40)
        .map(|i| u64::from_le_bytes(n.a.mem.region(0x100)[8 * i..8 * i + 8].try_into().unwrap()))
        .collect();
    olds.sort();
    assert_eq!(
        olds,
        (0..40).collect::<Vec<u64>>(),
        "each atomic saw its own original value"
    );
    assert_eq!(
        &n.b.mem.region(0x200)[..8],
        &40u64.to_le_bytes(),
        "executed once each"
    );
    assert!(n.a.req.counters.retries > 0);
}

/// A duplicate READ is served again only from a saved READ: the same R_Key, a
/// sub-range of its memory, PSNs inside its range. Forged ones (another key, a longer or
/// shifted range, a PSN far back, a resume that would run past the original's PSNs) draw
/// nothing and are counted; the requester's genuine resume is served.
#[test]
fn duplicate_reads_are_served_only_from_a_saved_read() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let epsn = n.b.resp.epsn();
    let va = 0x10_0000 + 0x4000;
    let (o, back) = to_b(&mut n, &read_request(epsn, 0x100, va, 4096));
    assert_eq!(
        (o, back.len()),
        (Ok(()), 4),
        "the READ itself: four responses"
    );
    // Something in sequence after it, so the READ is in the past.
    let (_, back) = to_b(&mut n, &read_request(epsn.add(4), 0x100, va, 16));
    assert_eq!(back.len(), 1);
    let forged = [
        ("another R_Key", read_request(epsn, 0x200, 0x20_0000, 4096)),
        ("a longer range", read_request(epsn, 0x100, va, 8192)),
        (
            "memory before it",
            read_request(epsn, 0x100, va - 1024, 1024),
        ),
        (
            "memory after it",
            read_request(epsn.add(2), 0x100, va + 4096, 2048),
        ),
        (
            "a PSN 1000 back",
            read_request(epsn.sub(1000), 0x100, va, 4096),
        ),
        (
            "a resume past its PSNs",
            read_request(epsn.add(2), 0x100, va, 4096),
        ),
    ];
    for (what, pkt) in &forged {
        let before = n.b.resp.counters.dup_unmatched;
        let (o, back) = to_b(&mut n, pkt);
        assert_eq!(o, Ok(()), "{what}");
        assert!(back.is_empty(), "{what}: {} packets sent", back.len());
        assert_eq!(
            n.b.resp.counters.dup_unmatched,
            before + 1,
            "{what}: not counted"
        );
    }
    // The requester's resume after losing the first two responses.
    let (_, back) = to_b(&mut n, &read_request(epsn.add(2), 0x100, va + 2048, 2048));
    let psns: Vec<u32> = back.iter().map(|p| p.bth.psn.get()).collect();
    assert_eq!(psns, vec![epsn.add(2).get(), epsn.add(3).get()]);
    assert_eq!(
        back[0].payload,
        &n.b.mem.region(0x100)[0x4000 + 2048..0x4000 + 3072]
    );
    // The whole READ again, as a requester that lost everything sends it.
    let (_, back) = to_b(&mut n, &read_request(epsn, 0x100, va, 4096));
    assert_eq!(back.len(), 4);
}

#[test]
fn atomics_answered_ahead_of_a_lost_response_keep_their_responder_resources() {
    // 20 fetch-adds each way at once at 5% loss, the responder keeping the results of its
    // last 4 (rc_verify's max_dest_rd_atomic) and the requester sending at most 4. When an
    // atomic's ACK is lost and the later ones' ACKs arrive, the later ones keep their places
    // until the lost one is answered: new ones sent in their stead would push its saved
    // result out of the responder's memory, its resend would get no answer, and the QP
    // would end in RETRY_EXC_ERR.
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for seed in 0..200u64 {
            let link = Link {
                loss_ppm: 50_000,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed: seed * 7919 + 1,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            n.a.cfg.max_dest_rd_atomic = 4;
            n.b.cfg.max_dest_rd_atomic = 4;
            for k in 0..20u64 {
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
                            0x20_0000 + 0xe_0200 + 8 * k,
                            8,
                        ),
                    )
                    .unwrap();
                }
            }
            assert!(n.run(2_000_000), "{scheme:?} seed {seed} stalled");
            for s in [&mut n.a, &mut n.b] {
                assert!(!s.error, "{scheme:?} seed {seed}: {:?}", s.req.retry_note);
                assert_eq!(s.send_cqes.len(), 20);
                assert!(
                    s.send_cqes.iter().all(|c| c.status == WcStatus::Success),
                    "{scheme:?} seed {seed}"
                );
                // The peer's counter ran to 20, and the 20 fetch-adds returned 0..20 once each.
                assert_eq!(
                    &s.mem.region(0x200)[0xe_0100..0xe_0108],
                    &20u64.to_le_bytes(),
                    "{scheme:?} seed {seed}"
                );
                let mut olds: Vec<u64> = (0..20)
                    .map(|k| {
                        u64::from_le_bytes(
                            s.mem.region(0x200)[0xe_0200 + 8 * k..][..8]
                                .try_into()
                                .unwrap(),
                        )
                    })
                    .collect();
                olds.sort_unstable();
                assert_eq!(
                    olds,
                    (0..20).collect::<Vec<u64>>(),
                    "{scheme:?} seed {seed}"
                );
            }
        }
    }
}
