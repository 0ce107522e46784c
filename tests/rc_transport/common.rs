// SPDX-License-Identifier: GPL-2.0
//! The helpers the topic files share: the mixed workload and its checks, WRITE and READ
//! streams, one-packet WRITEs, hand-made READ requests, and packets carried back and forth.

use super::*;
use rxe_sr::proto::wire::caps::RequesterState;
use rxe_sr::uabi::cqe::WcOpcode;

/// A mixed workload: SENDs (one and many packets, two SGEs), WRITEs, WRITE with
/// immediate, READs and both atomics, from A to B; returns the net after the run.
pub(crate) fn mixed(service: Service, link: Link) -> Net {
    mixed_with(service, link, Scheme::Gbn, Scheme::Gbn)
}

/// [`mixed`] with A's device running `sa` and B's `sb`.
pub(crate) fn mixed_with(service: Service, link: Link, sa: Scheme, sb: Scheme) -> Net {
    let mut n = Net::with_schemes(service, 1024, link, sa, sb);
    post_mixed(&mut n, service);
    assert!(
        n.run(2_000_000),
        "stalled: a {:?} b {:?}",
        n.a.req.counters,
        n.b.resp.counters
    );
    n
}

/// Posts [`mixed`]'s workload on `n` (A to B), to be run.
pub(crate) fn post_mixed(n: &mut Net, service: Service) {
    let rc = service == Service::Rc;
    let msgs: [usize; 6] = [1, 1024, 1025, 5000, 0, 65536];
    for (i, &len) in msgs.iter().enumerate() {
        let src = 0x10_0000 + (i as u64) * 0x2_0000;
        n.a.mem.region(0x100)[(src - 0x10_0000) as usize..][..len]
            .copy_from_slice(&pattern(i as u8, len));
        // SEND in two SGEs when long enough.
        let mut w = wqe(SendOp::Send, SendOpcode::Send, 0x100, src, len as u32);
        if len > 10 {
            w.payload = Payload::Sges(sges(&[
                (0x100, src, 10),
                (0x100, src + 10, len as u32 - 10),
            ]));
        }
        n.post(true, w).unwrap();
        n.b.rq.push_back(recv_wqe(
            i as u64,
            0x100,
            0x10_0000 + (i as u64) * 0x2_0000,
            70000,
        ));
        // WRITE to B's 0x200 region at the same offset.
        let dst = 0x20_0000 + (i as u64) * 0x2_0000;
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: dst,
                rkey: 0x200,
            },
        };
        n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, src, len as u32))
            .unwrap();
    }
    // WRITE with immediate.
    let imm = [1, 2, 3, 4];
    let op = SendOp::RdmaWriteWithImm {
        remote: Remote {
            addr: 0x20_0000 + 0xf_0000,
            rkey: 0x200,
        },
        imm,
    };
    n.post(
        true,
        wqe(op, SendOpcode::RdmaWriteWithImm, 0x100, 0x10_0000, 3000),
    )
    .unwrap();
    n.b.rq
        .push_back(recv_wqe(99, 0x100, 0x10_0000 + 0xf_0000, 16));
    if rc {
        // READ B's region back into A's 0x200 region.
        n.b.mem.region(0x100)[0x8_0000..0x8_0000 + 9000].copy_from_slice(&pattern(77, 9000));
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: 0x10_0000 + 0x8_0000,
                rkey: 0x100,
            },
        };
        n.post(
            true,
            wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000 + 0x8_0000, 9000),
        )
        .unwrap();
        // Atomics on B's 0x200 region at 0xe_0000: starts 0.
        let remote = Remote {
            addr: 0x20_0000 + 0xe_0000,
            rkey: 0x200,
        };
        let op = SendOp::AtomicFetchAndAdd { remote, add: 5 };
        n.post(
            true,
            wqe(
                op,
                SendOpcode::AtomicFetchAndAdd,
                0x200,
                0x20_0000 + 0xe_0000,
                8,
            ),
        )
        .unwrap();
        let op = SendOp::AtomicCmpAndSwp {
            remote,
            compare: 5,
            swap: 42,
        };
        n.post(
            true,
            wqe(
                op,
                SendOpcode::AtomicCmpAndSwp,
                0x200,
                0x20_0000 + 0xe_0008,
                8,
            ),
        )
        .unwrap();
    }
}

/// Checks the data and completions [`mixed`]'s workload left on `n` (`rc`: with its READ and
/// atomics).
pub(crate) fn check_mixed_data(n: &mut Net, rc: bool) {
    let msgs: [usize; 6] = [1, 1024, 1025, 5000, 0, 65536];
    let mut recv_by_id: Vec<_> = n.b.recv_cqes.clone();
    recv_by_id.sort_by_key(|c| c.wr_id);
    for (i, &len) in msgs.iter().enumerate() {
        let off = i * 0x2_0000;
        let want = pattern(i as u8, len);
        assert!(
            n.b.mem.region(0x100)[off..off + len] == want[..],
            "SEND {i} data"
        );
        assert!(
            n.b.mem.region(0x200)[off..off + len] == want[..],
            "WRITE {i} data"
        );
        let c = recv_by_id
            .iter()
            .find(|c| c.wr_id == i as u64)
            .expect("recv completion");
        assert_eq!(c.status, WcStatus::Success);
        assert_eq!(c.byte_len as usize, len);
    }
    let c = recv_by_id
        .iter()
        .find(|c| c.wr_id == 99)
        .expect("write-imm completion");
    assert_eq!(
        (c.status, c.opcode, c.byte_len),
        (WcStatus::Success, WcOpcode::RecvRdmaWithImm, 3000)
    );
    let src = n.a.mem.region(0x100)[..3000].to_vec();
    assert!(
        n.b.mem.region(0x200)[0xf_0000..0xf_0000 + 3000] == src[..],
        "WRITE with immediate data"
    );
    if rc {
        assert!(
            n.a.mem.region(0x200)[0x8_0000..0x8_0000 + 9000] == pattern(77, 9000)[..],
            "READ data: {:?}",
            n.a.send_cqes
        );
        // fetch-add returned 0, compare-swap then saw 5 and stored 42.
        assert_eq!(
            &n.a.mem.region(0x200)[0xe_0000..0xe_0008],
            &0u64.to_le_bytes()
        );
        assert_eq!(
            &n.a.mem.region(0x200)[0xe_0008..0xe_0010],
            &5u64.to_le_bytes()
        );
        assert_eq!(
            &n.b.mem.region(0x200)[0xe_0000..0xe_0008],
            &42u64.to_le_bytes()
        );
    }
    // Every send WR completed, successfully and in order.
    let posted = if rc { 16 } else { 13 };
    assert_eq!(n.a.send_cqes.len(), posted);
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{:?}",
        n.a.send_cqes
    );
    assert_eq!(n.a.retired, posted);
}

/// A READ request packet as a peer (honest or forged) would send it.
pub(crate) fn read_request(psn: Psn, rkey: u32, va: u64, len: u32) -> Vec<u8> {
    use rxe_sr::proto::wire::ext_headers::Reth;
    use rxe_sr::proto::wire::{BthRepr, ExtHeaders, Opcode};
    let p = PacketRepr {
        bth: BthRepr {
            opcode: Opcode::RC_RDMA_READ_REQUEST,
            dest_qpn: 18,
            psn,
            ack_req: true,
            ..Default::default()
        },
        ext: ExtHeaders {
            reth: Some(Reth {
                va,
                rkey,
                dma_len: len,
            }),
            ..Default::default()
        },
        payload: &[],
    };
    let mut bytes = vec![0u8; p.buffer_len()];
    p.emit(&mut bytes).unwrap();
    bytes
}

/// Feeds one request to B's responder (sending every READ response, batch by batch);
/// returns what B sent back.
pub(crate) fn to_b(n: &mut Net, pkt: &[u8]) -> (Result<(), Fatal>, Vec<PacketRepr<'static>>) {
    let p = PacketRepr::parse(pkt).unwrap();
    let mut back = vec![];
    let o = n.b.with_env(1, &mut back, |_, r, c, e| {
        let mut o = r.on_request(e, c, &p);
        while o.is_ok() && r.read_pending() {
            o = r.pump(e, c, READ_BUDGET);
        }
        o
    });
    let back: Vec<PacketRepr<'static>> = back
        .into_iter()
        .map(|b| PacketRepr::parse(Box::leak(b.into_boxed_slice())).unwrap())
        .collect();
    (o, back)
}

/// A long WRITE stream (200 x 8 KiB at PMTU 1024) from A to B over `link`; returns the
/// packets A resent and checks every byte.
pub(crate) fn write_stream(link: Link, scheme: Scheme) -> (u64, Net) {
    stream_of_writes(link, scheme, false)
}

/// [`write_stream`], or with `settle` on a QP that settles on the SR format first: its
/// first WRITE crosses a clean link, the rest `link` (standard-format packets lost before
/// the switch cost a go-back of the standard window, whatever the scheme).
pub(crate) fn stream_of_writes(link: Link, scheme: Scheme, settle: bool) -> (u64, Net) {
    let n = Net::with_schemes(
        Service::Rc,
        1024,
        if settle { Link::CLEAN } else { link },
        scheme,
        scheme,
    );
    writes_on(n, link, scheme, settle)
}

/// [`stream_of_writes`] on `n` as it is set up.
pub(crate) fn writes_on(mut n: Net, link: Link, scheme: Scheme, settle: bool) -> (u64, Net) {
    let len = 8192usize;
    for i in 0..200u64 {
        let off = (i as usize % 100) * len;
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
        if settle && i == 0 {
            assert!(n.run(100_000));
            assert!(n
                .a
                .req
                .sr()
                .is_some_and(|s| matches!(s.state(), RequesterState::Sr(_))));
            n.link = link;
        }
        if i % 50 == 49 || i == 199 {
            assert!(n.run(4_000_000), "{scheme:?} stalled");
        }
    }
    assert!(n.b.mem.region(0x200)[..100 * len] == n.a.mem.region(0x100)[..100 * len]);
    assert_eq!(n.a.send_cqes.len(), 200);
    assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
    (n.a.req.counters.resent_pkts, n)
}

/// The PSN of a request packet.
pub(crate) fn psn_of(bytes: &[u8]) -> u32 {
    PacketRepr::parse(bytes)
        .expect("valid packet")
        .bth
        .psn
        .get()
}

/// Posts `count` one-packet (1 KiB) RDMA WRITEs from A, the `k`th of all at offset `k` KiB;
/// `posted` counts them.
pub(crate) fn post_small_writes(n: &mut Net, posted: &mut u64, count: u64) {
    let len = 1024usize;
    for _ in 0..count {
        let off = *posted as usize * len;
        n.a.mem.region(0x100)[off..off + len].copy_from_slice(&pattern(*posted as u8, len));
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
        *posted += 1;
    }
}

/// Runs `n` to the end and checks every WRITE's data and completion, with no timeout since
/// `timeouts`.
pub(crate) fn finish_small_writes(mut n: Net, posted: u64, timeouts: u64) {
    assert!(n.run(100_000), "stalled");
    assert_eq!(n.a.req.counters.timeouts, timeouts);
    finish_small_writes_checked(&mut n, posted);
}

/// Runs `n` to the end and checks the `posted` WRITEs' data, completions and the pools.
pub(crate) fn finish_small_writes_checked(n: &mut Net, posted: u64) {
    assert!(n.run(100_000), "stalled");
    let total = posted as usize * 1024;
    assert!(n.b.mem.region(0x200)[..total] == n.a.mem.region(0x100)[..total]);
    assert_eq!(n.a.send_cqes.len(), posted as usize);
    assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
    release_and_check_pools(n);
}

/// Posts on A a READ of `len` bytes at offset `off` of B's region 0x100 into the same
/// offset of A's region 0x200.
pub(crate) fn post_read(n: &mut Net, off: u64, len: usize) {
    let op = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x10_0000 + off,
            rkey: 0x100,
        },
    };
    n.post(
        true,
        wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000 + off, len as u32),
    )
    .unwrap();
}

/// `n` READs of `len` bytes from B's memory into A's, posted together; runs them and checks
/// every byte and completion.
pub(crate) fn read_stream(scheme: Scheme, link: Link, count: u64, len: usize) -> Net {
    let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
    n.b.mem.region(0x100)[..len].copy_from_slice(&pattern(33, len));
    for i in 0..count {
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: 0x10_0000,
                rkey: 0x100,
            },
        };
        let dst = 0x20_0000 + (i % 8) * 0x1_0000;
        n.post(true, wqe(op, SendOpcode::RdmaRead, 0x200, dst, len as u32))
            .unwrap();
    }
    assert!(n.run(4_000_000), "{scheme:?} stalled");
    assert!(
        n.a.send_cqes.len() == count as usize
            && n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{scheme:?}"
    );
    for i in 0..count.min(8) as usize {
        assert!(
            n.a.mem.region(0x200)[i * 0x1_0000..][..len] == pattern(33, len)[..],
            "{scheme:?}: READ {i} data"
        );
    }
    n
}

/// 24 READs of 64 KiB from B into A (`read`; up to 16 in flight, as ib_read_bw keeps them)
/// or WRITEs from A to B at `loss_ppm` on a QP settled on its format, with the guests'
/// timeout (perftest's timeout 14: 67 ms): every byte checked. Returns the QP (its
/// counters) and the time the transfers took.
pub(crate) fn stream_like_perftest(
    scheme: Scheme,
    read: bool,
    loss_ppm: u32,
    seed: u64,
) -> (Net, u64) {
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
    n.a.cfg.max_rd_atomic = 16;
    n.a.cfg.timeout_us = 67_000;
    let op = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
        .unwrap();
    assert!(n.run(100_000));
    n.link = Link {
        loss_ppm,
        dup_ppm: 0,
        reorder_ppm: 0,
        seed,
    };
    let len = 65536usize;
    let data = pattern(34, len * 4);
    let source = if read { &mut n.b } else { &mut n.a };
    source.mem.region(0x100)[..len * 4].copy_from_slice(&data);
    let t0 = n.now;
    for i in 0..24u64 {
        let off = (i % 4) * 0x1_0000;
        let w = if read {
            let op = SendOp::RdmaRead {
                remote: Remote {
                    addr: 0x10_0000 + off,
                    rkey: 0x100,
                },
            };
            wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000 + off, len as u32)
        } else {
            let op = SendOp::RdmaWrite {
                remote: Remote {
                    addr: 0x20_0000 + off,
                    rkey: 0x200,
                },
            };
            wqe(
                op,
                SendOpcode::RdmaWrite,
                0x100,
                0x10_0000 + off,
                len as u32,
            )
        };
        n.post(true, w).unwrap();
    }
    assert!(n.run(4_000_000), "{scheme:?} seed {seed} stalled");
    assert_eq!(n.a.send_cqes.len(), 25, "{scheme:?} seed {seed}");
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{scheme:?} seed {seed}"
    );
    let sink = if read { &mut n.a } else { &mut n.b };
    assert!(
        sink.mem.region(0x200)[..len * 4] == data[..],
        "{scheme:?} seed {seed}: data"
    );
    let took = n.now - t0;
    (n, took)
}

/// Carries `sent` (packets from A) and everything they draw, back and forth, over a clean
/// link until nothing more is sent.
pub(crate) fn exchange(n: &mut Net, sent: Vec<Vec<u8>>) {
    exchange_from(n, true, sent);
}

/// As [`exchange`], for packets `sent` by A (`from_a`) or by B.
pub(crate) fn exchange_from(n: &mut Net, from_a: bool, sent: Vec<Vec<u8>>) {
    let mut wire: VecDeque<(bool, Vec<u8>)> = sent.into_iter().map(|p| (from_a, p)).collect();
    while let Some((from_a, p)) = wire.pop_front() {
        wire.extend(n.deliver(from_a, &p).into_iter().map(|q| (!from_a, q)));
    }
}

/// A WRITE of `len` bytes from A's 0x100 to B's 0x200 region, posted; returns its data.
pub(crate) fn post_write(n: &mut Net, len: usize, seed: u8) -> Vec<u8> {
    let data = pattern(seed, len);
    n.a.mem.region(0x100)[..len].copy_from_slice(&data);
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
    data
}

/// Posts a WRITE of the `i`th 64 KiB of A's 0x100 region to the same place in B's 0x200
/// region (`i` below 16).
pub(crate) fn post_sixteenth(n: &mut Net, i: u64) -> Result<(), PostError> {
    let op = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000 + (i << 16),
            rkey: 0x200,
        },
    };
    let at = 0x10_0000 + (i << 16);
    n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, at, 1 << 16))
}
