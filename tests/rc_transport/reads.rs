// SPDX-License-Identifier: GPL-2.0
//! RDMA READ: the responder's batches and limits, READs in the SR window and past it, and
//! READs of every size mixed with WRITEs and atomics under loss.

use super::common::{exchange, post_write, read_request, read_stream, to_b};
use super::*;
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_PSNS;
use rxe_sr::proto::wire::caps::RequesterState;

/// A long READ goes out in batches: the request sends READ_BUDGET responses, each
/// pump the next batch, in PSN order; later requests wait for the stream.
#[test]
fn a_long_read_is_answered_in_batches() {
    let mut n = Net::new(Service::Rc, 256, Link::CLEAN);
    let epsn = n.b.resp.epsn();
    let len = 256 * 256; // 256 responses
    let p = read_request(epsn, 0x100, 0x10_0000, len);
    let p = PacketRepr::parse(&p).unwrap();
    let mut back = vec![];
    let o =
        n.b.with_env(1, &mut back, |_, r, c, e| r.on_request(e, c, &p));
    assert_eq!(o, Ok(()));
    assert_eq!(back.len(), READ_BUDGET as usize, "the first batch only");
    assert!(n.b.resp.read_pending());
    assert_eq!(
        n.b.resp.epsn(),
        epsn.add(256),
        "the READ holds its PSNs at once"
    );
    let mut batches = 1;
    while n.b.resp.read_pending() {
        let before = back.len();
        let o =
            n.b.with_env(2, &mut back, |_, r, c, e| r.pump(e, c, READ_BUDGET));
        assert_eq!(o, Ok(()));
        assert!(back.len() - before <= READ_BUDGET as usize);
        batches += 1;
    }
    assert_eq!((back.len(), batches), (256, 4));
    for (k, b) in back.iter().enumerate() {
        let p = PacketRepr::parse(b).unwrap();
        assert_eq!(p.bth.psn, epsn.add(k as u32));
    }
    // A request that arrives while a stream is pending, not held back for it as the kernel
    // holds it, is dropped: sending the rest of the READ first would be unbounded work in
    // one call. Its resend after the stream is served.
    let p = read_request(epsn.add(256), 0x100, 0x10_0000, len);
    let p = PacketRepr::parse(&p).unwrap();
    let mut back = vec![];
    let _ =
        n.b.with_env(3, &mut back, |_, r, c, e| r.on_request(e, c, &p));
    let p2 = read_request(epsn.add(512), 0x100, 0x10_0000, 256);
    let p2 = PacketRepr::parse(&p2).unwrap();
    let _ =
        n.b.with_env(3, &mut back, |_, r, c, e| r.on_request(e, c, &p2));
    assert_eq!(
        (back.len(), n.b.resp.counters.busy_dropped),
        (READ_BUDGET as usize, 1)
    );
    while n.b.resp.read_pending() {
        let _ =
            n.b.with_env(4, &mut back, |_, r, c, e| r.pump(e, c, READ_BUDGET));
    }
    let _ =
        n.b.with_env(5, &mut back, |_, r, c, e| r.on_request(e, c, &p2));
    let psns: Vec<u32> = back
        .iter()
        .map(|b| PacketRepr::parse(b).unwrap().bth.psn.get())
        .collect();
    let want: Vec<u32> = (0..257).map(|k| epsn.add(256 + k).get()).collect();
    assert_eq!(psns, want, "responses stay in PSN order");
}

/// READ limits: longer than max_msg_sz (2^31), or on a QP without responder
/// resources (max_dest_rd_atomic 0; atomics too), is an invalid request; the MSN does
/// not move for a refused READ.
#[test]
fn reads_past_the_limits_are_invalid_requests() {
    use rxe_sr::proto::wire::ext_headers::AethKind;
    let nak_of = |back: &[PacketRepr<'_>]| match back
        .first()
        .and_then(|p| p.ext.aeth)
        .map(|a| (a.kind(), a.msn))
    {
        Some((AethKind::Nak { code }, msn)) => Some((code, msn)),
        _ => None,
    };
    for len in [0x8000_0001u32, u32::MAX] {
        let mut n = Net::new(Service::Rc, 256, Link::CLEAN);
        let epsn = n.b.resp.epsn();
        let (o, back) = to_b(&mut n, &read_request(epsn, 0x100, 0x10_0000, len));
        assert_eq!(o, Err(Fatal), "len {len:#x}");
        assert_eq!(
            nak_of(&back),
            Some((1, 0)),
            "len {len:#x}: NAK invalid request, MSN unchanged"
        );
    }
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.b.cfg.max_dest_rd_atomic = 0;
    let epsn = n.b.resp.epsn();
    let (o, back) = to_b(&mut n, &read_request(epsn, 0x100, 0x10_0000, 64));
    assert_eq!((o, nak_of(&back)), (Err(Fatal), Some((1, 0))));
    // An atomic with no resources, through the requester.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.b.cfg.max_dest_rd_atomic = 0;
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
    n.run(10_000);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::RemInvReqErr);
    assert_eq!(
        &n.b.mem.region(0x200)[..8],
        &0u64.to_le_bytes(),
        "not executed"
    );
}

#[test]
fn an_sr_read_is_answered_by_its_responses_alone() {
    // Lossless READs of 4 packets: the responder sends their responses and nothing else
    // (no ACK for each PSN the READ took).
    ACK_PACKETS.set(0);
    for scheme in SR_SCHEMES {
        let before = ACK_PACKETS.get();
        let n = read_stream(scheme, Link::CLEAN, 16, 4096);
        assert!(n.b.resp.sr().unwrap().active(), "{scheme:?}");
        assert_eq!(
            ACK_PACKETS.get() - before,
            0,
            "{scheme:?}: acknowledgments besides the READ responses"
        );
    }
}

#[test]
fn sr_reads_use_the_sr_window() {
    // READ responses are placed out of order in the SR format, so READs share the SR window
    // (512 PSNs, where the standard format keeps 128): with 64 KiB READs at a 1 KiB MTU
    // (64 PSNs each), all four the READ limit allows go at once. A READ whose responses
    // would reach past the window waits until it is the oldest request.
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        // A first WRITE settles the SR format.
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
        };
        n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
            .unwrap();
        assert!(n.run(100_000));
        assert!(
            n.a.req
                .sr()
                .is_some_and(|s| matches!(s.state(), RequesterState::Sr(_))),
            "{scheme:?}"
        );
        let read_requests = |out: Vec<Vec<u8>>| {
            out.iter()
                .filter(|b| {
                    PacketRepr::parse(b).is_ok_and(|p| {
                        p.bth
                            .opcode
                            .info()
                            .is_some_and(|i| i.kind == OpKind::RdmaReadRequest)
                    })
                })
                .count()
        };
        for i in 0..4u64 {
            let op = SendOp::RdmaRead {
                remote: Remote {
                    addr: 0x10_0000,
                    rkey: 0x100,
                },
            };
            n.post(
                true,
                wqe(
                    op,
                    SendOpcode::RdmaRead,
                    0x200,
                    0x20_0000 + i * 0x1_0000,
                    65536,
                ),
            )
            .unwrap();
        }
        assert_eq!(
            read_requests(n.send(true)),
            4,
            "{scheme:?}: 64 KiB READ requests sent at once"
        );
        assert!(n.run(1_000_000), "{scheme:?} stalled");
        assert_eq!(n.a.send_cqes.len(), 5, "{scheme:?}");
        // 200 PSNs each: the third would end 600 PSNs past UNACK.
        for _ in 0..3 {
            let op = SendOp::RdmaRead {
                remote: Remote {
                    addr: 0x10_0000,
                    rkey: 0x100,
                },
            };
            n.post(
                true,
                wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000, 200 * 1024),
            )
            .unwrap();
        }
        assert_eq!(
            read_requests(n.send(true)),
            2,
            "{scheme:?}: 200 KiB READ requests sent at once"
        );
        assert!(n.run(1_000_000), "{scheme:?} stalled");
        assert_eq!(n.a.send_cqes.len(), 8, "{scheme:?}");
        // A READ longer than the window (600 PSNs) still goes, once it is the oldest.
        n.b.mem.region(0x100)[..600 * 1024].copy_from_slice(&pattern(5, 600 * 1024));
        for _ in 0..2 {
            let op = SendOp::RdmaRead {
                remote: Remote {
                    addr: 0x10_0000,
                    rkey: 0x100,
                },
            };
            n.post(
                true,
                wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000, 600 * 1024),
            )
            .unwrap();
        }
        assert!(n.run(1_000_000), "{scheme:?}: a long READ stalled");
        assert_eq!(n.a.send_cqes.len(), 10, "{scheme:?}");
        assert!(
            n.a.mem.region(0x200)[..600 * 1024] == pattern(5, 600 * 1024)[..],
            "{scheme:?}: long READ data"
        );
    }
}

#[test]
fn sr_reads_of_every_size_mixed_with_writes_and_atomics_over_many_seeds() {
    // READs of 1 byte to 300 KiB (one packet to more than half the window), between WRITEs
    // and fetch-adds, under loss, duplication and reordering: READ responses are placed out
    // of order, runs asked for again, atomics answered behind missing responses; every
    // byte, every atomic result and every completion is checked (10% loss: at 20% a few
    // seeds in 400 lose one response past the 7 retries IBTA allows).
    let sizes = [1usize, 1000, 1024, 4097, 65536, 300 * 1024];
    const READ_DST: [usize; 6] = [0, 0x1_0000, 0x2_0000, 0x3_0000, 0x4_0000, 0x6_0000];
    for scheme in SR_SCHEMES {
        for seed in 1..40u64 {
            let link = Link {
                loss_ppm: 100_000,
                dup_ppm: 10_000,
                reorder_ppm: 20_000,
                seed: seed * 104_729,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            n.b.mem.region(0x100)[..0x8_0000].copy_from_slice(&pattern(seed as u8, 0x8_0000));
            let mut posted = 0;
            for (i, &len) in sizes.iter().enumerate() {
                let src = 0x10_0000 + (i as u64) * 0x1_0000;
                let op = SendOp::RdmaRead {
                    remote: Remote {
                        addr: src,
                        rkey: 0x100,
                    },
                };
                let dst = 0x20_0000 + READ_DST[i] as u64;
                n.post(true, wqe(op, SendOpcode::RdmaRead, 0x200, dst, len as u32))
                    .unwrap();
                let op = SendOp::RdmaWrite {
                    remote: Remote {
                        addr: 0x20_0000 + (i as u64) * 0x1000,
                        rkey: 0x200,
                    },
                };
                n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 3000))
                    .unwrap();
                let remote = Remote {
                    addr: 0x20_0000 + 0xf_0000,
                    rkey: 0x200,
                };
                let op = SendOp::AtomicFetchAndAdd { remote, add: 1 };
                n.post(
                    true,
                    wqe(
                        op,
                        SendOpcode::AtomicFetchAndAdd,
                        0x100,
                        0x1f_0000 + (i as u64) * 8,
                        8,
                    ),
                )
                .unwrap();
                posted += 3;
            }
            assert!(n.run(8_000_000), "{scheme:?} seed {seed} stalled");
            assert_eq!(n.a.send_cqes.len(), posted, "{scheme:?} seed {seed}");
            assert!(
                n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
                "{scheme:?} seed {seed}: {:?} requester {:?} {:?} responder {:?}",
                n.a.send_cqes
                    .iter()
                    .map(|c| (c.opcode, c.status))
                    .collect::<Vec<_>>(),
                n.a.req.counters,
                n.a.req.sr().map(|s| s.counters),
                n.b.resp.counters
            );
            for (i, &len) in sizes.iter().enumerate() {
                let (src, dst) = (i * 0x1_0000, READ_DST[i]);
                let want = n.b.mem.region(0x100)[src..src + len].to_vec();
                assert!(
                    n.a.mem.region(0x200)[dst..dst + len] == want[..],
                    "{scheme:?} seed {seed}: READ {i} ({len} bytes) data"
                );
                let got = u64::from_le_bytes(
                    n.a.mem.region(0x100)[0xf_0000 + i * 8..][..8]
                        .try_into()
                        .unwrap(),
                );
                assert_eq!(
                    got, i as u64,
                    "{scheme:?} seed {seed}: fetch-add {i} result"
                );
            }
            let total =
                u64::from_le_bytes(n.b.mem.region(0x200)[0xf_0000..][..8].try_into().unwrap());
            assert_eq!(
                total,
                sizes.len() as u64,
                "{scheme:?} seed {seed}: each fetch-add ran once"
            );
            release_and_check_pools(&mut n);
        }
    }
}

#[test]
fn a_read_longer_than_the_sr_window_is_a_few_engine_steps() {
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 256, Link::CLEAN, scheme, scheme);
        post_write(&mut n, 1024, 1);
        assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
        // A READ of four SR windows at a 256-byte MTU, B's region grown to hold it.
        let psns = 4 * SR_DEFAULT_WINDOW_PSNS;
        let len = psns as usize * 256;
        let data = pattern(7, len);
        n.a.mem.region(0x100).resize(len, 0);
        n.b.mem.region(0x200).clone_from(&data);
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
        };
        n.post(
            true,
            wqe(op, SendOpcode::RdmaRead, 0x100, 0x10_0000, len as u32),
        )
        .unwrap();
        let sent = n.send(true);
        assert_eq!(sent.len(), 1, "{scheme:?}");
        let epsn = n.b.resp.epsn();
        let before = SHARED_CALLS.get();
        let back = n.deliver(true, &sent[0]);
        let calls = SHARED_CALLS.get() - before;
        assert_eq!(
            n.b.resp.epsn(),
            epsn.add(psns),
            "{scheme:?}: RCV-NXT past the READ at once"
        );
        // MELO's engine needs the device's pools for every event: a handful, not one per PSN.
        if scheme == Scheme::Melo {
            assert!(
                calls <= 4,
                "{scheme:?}: {calls} engine steps under the pool lock"
            );
        }
        exchange(&mut n, back);
        assert!(n.run(1_000_000), "{scheme:?}");
        assert_eq!(
            n.a.send_cqes.iter().map(|c| c.status).collect::<Vec<_>>(),
            [WcStatus::Success; 2],
            "{scheme:?}"
        );
        assert!(
            n.a.mem.region(0x100) == &data,
            "{scheme:?}: the READ's bytes"
        );
        // The stream goes on past it.
        let more = post_write(&mut n, 4096, 2);
        assert!(n.run(100_000), "{scheme:?}");
        assert_eq!(n.b.mem.region(0x200)[..4096], more[..], "{scheme:?}");
    }
}
