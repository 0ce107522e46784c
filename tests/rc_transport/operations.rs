// SPDX-License-Identifier: GPL-2.0
//! ATOMIC WRITE, FLUSH and the local operations (BIND_MW, LOCAL_INV): their placement, rights
//! and ordering, and the empty READ response that acknowledges a FLUSH or ATOMIC WRITE.

use super::*;
use rxe_sr::uabi::cqe::WcOpcode;

#[test]
fn atomic_write_places_eight_bytes_and_checks_alignment_and_rights() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let value = 0x1122_3344_5566_7788u64.to_le_bytes();
    let op = SendOp::AtomicWrite {
        remote: Remote {
            addr: 0x20_0000 + 64,
            rkey: 0x200,
        },
        value,
    };
    let mut w = wqe(op, SendOpcode::AtomicWrite, 0, 0, 8);
    w.payload = Payload::None;
    n.post(true, w).unwrap();
    assert!(n.run(10_000));
    assert_eq!(n.a.send_cqes[0].status, WcStatus::Success);
    assert_eq!(&n.b.mem.region(0x200)[64..72], &value);
    // Misaligned: invalid request; no remote write right: remote access error.
    for (addr, rkey, want) in [
        (0x20_0000 + 4, 0x200, WcStatus::RemInvReqErr),
        (0x30_0000, 0x300, WcStatus::RemAccessErr),
    ] {
        let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
        let op = SendOp::AtomicWrite {
            remote: Remote { addr, rkey },
            value,
        };
        let mut w = wqe(op, SendOpcode::AtomicWrite, 0, 0, 8);
        w.payload = Payload::None;
        n.post(true, w).unwrap();
        n.run(10_000);
        assert_eq!(n.a.send_cqes[0].status, want);
    }
}

/// FLUSH: runs once every earlier WRITE is placed (also when losses reorder what the SR
/// schemes place), over the range or the whole region the FETH names; needs the region's
/// FLUSH_GLOBAL right (or FLUSH_PERSISTENT, which no region here grants); completes with
/// its own opcode. A malformed FETH is an invalid request.
#[test]
fn flush_waits_for_earlier_writes_and_checks_rights_range_and_feth() {
    let data: Vec<u8> = (0..40_000u32).map(|i| (i * 7 + 3) as u8).collect();
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for (seed, loss) in [(1, 0), (3, 100_000), (4, 200_000)] {
            let link = Link {
                loss_ppm: loss,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            n.a.mem.region(0x100)[..data.len()].copy_from_slice(&data);
            let write = SendOp::RdmaWrite {
                remote: Remote {
                    addr: 0x20_0000 + 4096,
                    rkey: 0x200,
                },
            };
            n.post(
                true,
                wqe(
                    write,
                    SendOpcode::RdmaWrite,
                    0x100,
                    0x10_0000,
                    data.len() as u32,
                ),
            )
            .unwrap();
            let range = SendOp::Flush {
                remote: Remote {
                    addr: 0x20_0000 + 4096,
                    rkey: 0x200,
                },
                placement_type: 1,
                level: 0,
            };
            n.post(true, wqe(range, SendOpcode::Flush, 0, 0, data.len() as u32))
                .unwrap();
            // A whole-region FLUSH: its RETH's range (past the region here) is not looked at.
            let whole = SendOp::Flush {
                remote: Remote {
                    addr: 0x90_0000,
                    rkey: 0x200,
                },
                placement_type: 1,
                level: 1,
            };
            n.post(true, wqe(whole, SendOpcode::Flush, 0, 0, 12_345_678))
                .unwrap();
            assert!(n.run(2_000_000), "{scheme:?} seed {seed}: stalled");
            let ops: Vec<_> = n.a.send_cqes.iter().map(|c| (c.status, c.opcode)).collect();
            let ok = WcStatus::Success;
            assert_eq!(
                ops,
                vec![
                    (ok, WcOpcode::RdmaWrite),
                    (ok, WcOpcode::Flush),
                    (ok, WcOpcode::Flush)
                ],
                "{scheme:?} seed {seed}"
            );
            let f = &n.b.mem.flushes;
            assert_eq!(
                f.len(),
                2,
                "{scheme:?} seed {seed}: a FLUSH ran twice or not at all"
            );
            assert_eq!(
                (f[0].0, f[0].1, f[0].2),
                (0x200, Some((0x20_0000 + 4096, data.len() as u32)), 1)
            );
            assert_eq!((f[1].0, f[1].1, f[1].2), (0x200, None, 1));
            assert!(
                f[0].3[4096..4096 + data.len()] == data[..],
                "{scheme:?} seed {seed}: the FLUSH ran before the WRITE was placed"
            );
            assert_eq!(
                n.lost > 0,
                loss > 0,
                "{scheme:?} seed {seed}: the link lost nothing"
            );
        }
    }
    // Refused: persistence (no region grants it), no FLUSH right, a range past the region,
    // and, as invalid requests, a reserved SEL or a PLT of neither kind.
    let cases = [
        (0x200, 0x20_0000, 2, 0, WcStatus::RemAccessErr),
        (0x100, 0x10_0000, 1, 0, WcStatus::RemAccessErr),
        (
            0x200,
            0x20_0000 + (1 << 20) - 8,
            1,
            0,
            WcStatus::RemAccessErr,
        ),
        (0x200, 0x20_0000, 1, 2, WcStatus::RemInvReqErr),
        (0x200, 0x20_0000, 0, 0, WcStatus::RemInvReqErr),
    ];
    for (rkey, addr, plt, sel, want) in cases {
        let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
        let op = SendOp::Flush {
            remote: Remote { addr, rkey },
            placement_type: plt,
            level: sel,
        };
        n.post(true, wqe(op, SendOpcode::Flush, 0, 0, 64)).unwrap();
        n.run(10_000);
        assert_eq!(
            n.a.send_cqes[0].status, want,
            "key {rkey:#x} addr {addr:#x} plt {plt} sel {sel}"
        );
        assert!(n.b.mem.flushes.is_empty());
    }
}

/// rdma_rxe answers a FLUSH and an ATOMIC WRITE with an RDMA READ RESPONSE ONLY without
/// payload: that acknowledges them as an ACK would. One with a payload, or one for the PSN
/// of an RDMA WRITE, acknowledges nothing.
#[test]
fn an_empty_read_response_acknowledges_a_flush_or_atomic_write() {
    use rxe_sr::proto::wire::ext_headers::Aeth;
    use rxe_sr::proto::wire::{BthRepr, ExtHeaders, Opcode};
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let flush = SendOp::Flush {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
        placement_type: 1,
        level: 0,
    };
    n.post(true, wqe(flush, SendOpcode::Flush, 0, 0, 64))
        .unwrap();
    let mut aw = wqe(
        SendOp::AtomicWrite {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
            value: [7; 8],
        },
        SendOpcode::AtomicWrite,
        0,
        0,
        8,
    );
    aw.payload = Payload::None;
    n.post(true, aw).unwrap();
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
    let mut sent = vec![];
    let _ = n.a.with_env(10, &mut sent, |r, _, c, e| r.run(e, c));
    assert_eq!(sent.len(), 3);
    let psns: Vec<Psn> = sent
        .iter()
        .map(|b| PacketRepr::parse(b).unwrap().bth.psn)
        .collect();
    let response = |psn: Psn, payload: &'static [u8]| PacketRepr {
        bth: BthRepr {
            opcode: Opcode::RC_RDMA_READ_RESPONSE_ONLY,
            dest_qpn: 17,
            psn,
            ..Default::default()
        },
        ext: ExtHeaders {
            aeth: Some(Aeth::ack(0)),
            ..Default::default()
        },
        payload,
    };
    // With a payload: not an acknowledgment.
    let _ = n.a.with_env(20, &mut vec![], |r, _, c, e| {
        r.on_response(e, c, &response(psns[0], &[1, 2, 3, 4]))
    });
    assert!(
        n.a.send_cqes.is_empty(),
        "a READ response with payload completed the FLUSH"
    );
    for (k, want) in [(0, 1), (1, 2)] {
        let _ = n.a.with_env(30, &mut vec![], |r, _, c, e| {
            r.on_response(e, c, &response(psns[k], &[]))
        });
        let ops: Vec<_> = n.a.send_cqes.iter().map(|c| (c.status, c.opcode)).collect();
        assert_eq!(
            ops.len(),
            want,
            "the empty response for PSN {k} acknowledged nothing"
        );
    }
    assert_eq!(n.a.send_cqes[0].opcode, WcOpcode::Flush);
    assert_eq!(n.a.send_cqes[1].opcode, WcOpcode::AtomicWrite);
    // For the WRITE's PSN: nothing (the requester waits for an ACK).
    let _ = n.a.with_env(40, &mut vec![], |r, _, c, e| {
        r.on_response(e, c, &response(psns[2], &[]))
    });
    assert_eq!(
        n.a.send_cqes.len(),
        2,
        "an empty READ response completed an RDMA WRITE"
    );
}

/// BIND_MW and LOCAL_INV between RDMA WRITEs: each runs once, in order, even when losses
/// send the requester back over them, and completes in order with its own opcode.
#[test]
fn local_operations_run_once_in_order_and_complete_in_order() {
    use rxe_sr::uabi::send_wqe::BindMw;
    for (seed, loss) in [(1, 0), (5, 100_000), (6, 200_000)] {
        let mut n = Net::new(
            Service::Rc,
            1024,
            Link {
                loss_ppm: loss,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed,
            },
        );
        let write = |i: u64| {
            let op = SendOp::RdmaWrite {
                remote: Remote {
                    addr: 0x20_0000 + i * 0x1000,
                    rkey: 0x200,
                },
            };
            wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 3000)
        };
        let bind = BindMw {
            addr: 0x10_0000,
            length: 64,
            mr_lkey: 0x100,
            mw_rkey: 0x8000_0011,
            rkey: 0x8000_0022,
            access: 2,
        };
        n.post(true, write(0)).unwrap();
        n.post(true, wqe(SendOp::BindMw(bind), SendOpcode::BindMw, 0, 0, 0))
            .unwrap();
        n.post(true, write(1)).unwrap();
        n.post(
            true,
            wqe(
                SendOp::LocalInv {
                    invalidate_rkey: 0x8000_0022,
                },
                SendOpcode::LocalInv,
                0,
                0,
                0,
            ),
        )
        .unwrap();
        n.post(true, write(2)).unwrap();
        assert!(n.run(2_000_000), "stalled");
        assert_eq!(
            n.a.mem.local_ops,
            vec![
                SendOp::BindMw(bind),
                SendOp::LocalInv {
                    invalidate_rkey: 0x8000_0022
                }
            ]
        );
        let ops: Vec<_> = n.a.send_cqes.iter().map(|c| (c.status, c.opcode)).collect();
        let ok = WcStatus::Success;
        assert_eq!(
            ops,
            vec![
                (ok, WcOpcode::RdmaWrite),
                (ok, WcOpcode::BindMw),
                (ok, WcOpcode::RdmaWrite),
                (ok, WcOpcode::LocalInv),
                (ok, WcOpcode::RdmaWrite)
            ],
            "seed {seed}"
        );
        if loss > 0 {
            assert!(
                n.a.req.counters.retries > 0,
                "seed {seed}: no go-back happened"
            );
        }
    }
    // A failing local operation completes in error and takes the QP to Error.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.post(
        true,
        wqe(
            SendOp::LocalInv {
                invalidate_rkey: 0xdead,
            },
            SendOpcode::LocalInv,
            0,
            0,
            0,
        ),
    )
    .unwrap();
    n.run(10_000);
    assert!(n.a.error);
    assert_eq!(
        (n.a.send_cqes[0].status, n.a.send_cqes[0].opcode),
        (WcStatus::LocQpOpErr, WcOpcode::Send)
    );
}
