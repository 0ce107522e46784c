// SPDX-License-Identifier: GPL-2.0
//! Send and receive WQEs: golden slots built byte by byte as rdma-core's rxe provider writes
//! them (literal offsets from the uapi header, not the crate's constants), parsed back; and
//! one rejection test per validation rule.

use rxe_sr::uabi::queue::{rq_geometry, sq_geometry, DEFAULT_CACHE_LINE_SIZE};
use rxe_sr::uabi::send_wqe::{IpAddr, NetworkType, Payload, Remote};
use rxe_sr::uabi::{
    QpType, RecvLimits, RecvWqe, SendFlags, SendLimits, SendOp, SendOpcode, SendWqe, Sge,
    WcStatus, WqeError,
};

const SIGNALED: u32 = 2;
const SOLICITED: u32 = 4;
const INLINE: u32 = 8;
const FENCE: u32 = 1;

/// A send-queue slot as `init_send_wqe` / the `ibv_wr_*` API fill it.
struct SqSlot(Vec<u8>);

impl SqSlot {
    fn new(slot_size: usize) -> Self {
        // Slots are recycled: start from garbage to show kernel-scratch fields don't matter.
        SqSlot(vec![0xa5; slot_size])
    }
    fn u8(&mut self, off: usize, v: u8) -> &mut Self {
        self.0[off] = v;
        self
    }
    fn u16(&mut self, off: usize, v: u16) -> &mut Self {
        self.0[off..off + 2].copy_from_slice(&v.to_le_bytes());
        self
    }
    fn u32(&mut self, off: usize, v: u32) -> &mut Self {
        self.0[off..off + 4].copy_from_slice(&v.to_le_bytes());
        self
    }
    fn u64(&mut self, off: usize, v: u64) -> &mut Self {
        self.0[off..off + 8].copy_from_slice(&v.to_le_bytes());
        self
    }
    fn bytes(&mut self, off: usize, v: &[u8]) -> &mut Self {
        self.0[off..off + v.len()].copy_from_slice(v);
        self
    }
    /// convert_send_wr(): memset(wr, 0, 144), then wr_id, opcode, send_flags, ex.
    fn wr(&mut self, wr_id: u64, opcode: u32, flags: u32, ex: [u8; 4]) -> &mut Self {
        self.0[..144].fill(0);
        self.u64(0, wr_id).u32(12, opcode).u32(16, flags).bytes(20, &ex)
    }
    /// The dma header: length, resid = length, cur_sge = 0, num_sge, sge_offset = 0;
    /// state = 0 and iova as the provider writes them.
    fn dma(&mut self, length: u32, num_sge: u32, iova: u64) -> &mut Self {
        self.u32(148, 0).u64(152, iova);
        self.u32(184, length).u32(188, length).u32(192, 0).u32(196, num_sge).u32(200, 0)
    }
    fn sges(&mut self, sges: &[(u64, u32, u32)]) -> &mut Self {
        let total: u32 = sges.iter().fold(0u32, |a, s| a.wrapping_add(s.1));
        self.dma(total, sges.len() as u32, 0);
        for (i, &(addr, len, lkey)) in sges.iter().enumerate() {
            let o = 208 + 16 * i;
            self.u64(o, addr).u32(o + 8, len).u32(o + 12, lkey);
        }
        self
    }
    fn inline(&mut self, data: &[u8]) -> &mut Self {
        self.dma(data.len() as u32, 1, 0).bytes(208, data)
    }
    fn rdma(&mut self, remote_addr: u64, rkey: u32) -> &mut Self {
        self.u64(24, remote_addr).u32(32, rkey)
    }
}

fn rc_limits() -> SendLimits {
    SendLimits {
        max_sge: 4,
        max_inline: 64,
    }
}

const SLOT: usize = 512;

fn parse(slot: &SqSlot, qp: QpType) -> Result<SendWqe, WqeError> {
    SendWqe::parse(&slot.0, qp, rc_limits())
}

#[test]
fn golden_rc_send_two_sges() {
    let mut s = SqSlot::new(SLOT);
    s.wr(0x1122_3344_5566_7788, 2, SIGNALED | SOLICITED | 0x8000_0000, [0; 4])
        .sges(&[(0x7f00_0000_1000, 100, 0x1234), (0x7f00_0000_2000, 28, 0x1234)]);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(w.wr_id, 0x1122_3344_5566_7788);
    assert_eq!(w.opcode, SendOpcode::Send);
    assert_eq!(w.op, SendOp::Send);
    assert_eq!(w.flags.bits(), SIGNALED | SOLICITED, "unknown bits dropped");
    assert!(w.flags.signaled() && w.flags.solicited() && !w.flags.fence() && !w.flags.inline());
    assert_eq!(w.length, 128);
    assert_eq!(
        w.sges(),
        &[
            Sge { addr: 0x7f00_0000_1000, length: 100, lkey: 0x1234 },
            Sge { addr: 0x7f00_0000_2000, length: 28, lkey: 0x1234 },
        ]
    );
    assert!(w.ud.is_none());
    assert!(w.inline_data().is_empty());
    assert_eq!(w.imm_data(), None);
}

#[test]
fn golden_rc_write_with_imm_and_read() {
    let mut s = SqSlot::new(SLOT);
    // imm_data is __be32: the provider stores htobe32(0xdeadbeef) -> bytes de ad be ef.
    s.wr(7, 1, SIGNALED, 0xdead_beefu32.to_be_bytes())
        .rdma(0x1000_0000, 0xabcd)
        .sges(&[(0x5000, 4096, 9)]);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(
        w.op,
        SendOp::RdmaWriteWithImm {
            remote: Remote { addr: 0x1000_0000, rkey: 0xabcd },
            imm: [0xde, 0xad, 0xbe, 0xef]
        }
    );
    assert_eq!(w.imm_data(), Some([0xde, 0xad, 0xbe, 0xef]));
    assert_eq!(w.remote(), Some(Remote { addr: 0x1000_0000, rkey: 0xabcd }));
    assert_eq!(w.length, 4096);

    let mut s = SqSlot::new(SLOT);
    s.wr(8, 4, 0, [0; 4]).rdma(0x2000, 5).sges(&[(0x6000, 65536, 3)]);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(w.op, SendOp::RdmaRead { remote: Remote { addr: 0x2000, rkey: 5 } });
    assert_eq!(w.length, 65536);
}

#[test]
fn golden_inline_send() {
    let mut s = SqSlot::new(SLOT);
    s.wr(9, 2, INLINE | SIGNALED, [0; 4]).inline(b"hello, rxe_sr");
    let w = parse(&s, QpType::Uc).unwrap();
    assert!(matches!(w.payload, Payload::Inline(_)));
    assert_eq!(w.inline_data(), b"hello, rxe_sr");
    assert_eq!(w.length, 13);
    assert!(w.sges().is_empty());
    // zero-length inline is fine
    let mut s = SqSlot::new(SLOT);
    s.wr(9, 2, INLINE, [0; 4]).inline(b"");
    assert_eq!(parse(&s, QpType::Rc).unwrap().length, 0);
}

#[test]
fn golden_atomics() {
    let mut s = SqSlot::new(SLOT);
    s.wr(10, 5, SIGNALED, [0; 4])
        .u64(24, 0x8000)
        .u64(32, 1)
        .u64(40, 2)
        .u32(48, 0x77)
        .sges(&[(0x9000, 8, 4)]);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(
        w.op,
        SendOp::AtomicCmpAndSwp { remote: Remote { addr: 0x8000, rkey: 0x77 }, compare: 1, swap: 2 }
    );
    s.u32(12, 6);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(
        w.op,
        SendOp::AtomicFetchAndAdd { remote: Remote { addr: 0x8000, rkey: 0x77 }, add: 1 }
    );
    assert_eq!(w.length, 8);

    // ATOMIC_WRITE: wr.rdma + the 8 bytes in dma.atomic_wr, dma.length = 8.
    let mut s = SqSlot::new(SLOT);
    s.wr(11, 15, SIGNALED | INLINE, [0; 4]).rdma(0x4000, 3).dma(8, 0, 0x4000);
    s.bytes(208, &[1, 2, 3, 4, 5, 6, 7, 8]);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(
        w.op,
        SendOp::AtomicWrite { remote: Remote { addr: 0x4000, rkey: 3 }, value: [1, 2, 3, 4, 5, 6, 7, 8] }
    );
    assert_eq!(w.length, 8);
    assert_eq!(w.payload, Payload::None);
    assert!(!w.flags.inline(), "INLINE dropped where there is no local buffer");
}

#[test]
fn golden_flush_local_inv_bind_mw_send_inv() {
    let mut s = SqSlot::new(SLOT);
    s.wr(12, 14, SIGNALED, [0; 4]).u64(24, 0xa000).u32(36, 0x42).u8(40, 1).u8(41, 2).dma(4096, 0, 0);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(
        w.op,
        SendOp::Flush { remote: Remote { addr: 0xa000, rkey: 0x42 }, placement_type: 1, level: 2 }
    );
    assert_eq!(w.length, 4096);

    let mut s = SqSlot::new(SLOT);
    s.wr(13, 7, FENCE, 0x0102_0304u32.to_le_bytes()).dma(0, 0, 0);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(w.op, SendOp::LocalInv { invalidate_rkey: 0x0102_0304 });
    assert_eq!(w.invalidate_rkey(), Some(0x0102_0304));
    assert_eq!(w.length, 0);
    assert!(w.flags.fence());

    let mut s = SqSlot::new(SLOT);
    s.wr(14, 8, 0, [0; 4])
        .u64(24, 0x10_0000)
        .u64(32, 0x2000)
        .u32(40, 0x11)
        .u32(44, 0x22)
        .u32(48, 0x33)
        .u32(52, 0x6)
        .dma(0, 0, 0);
    let w = parse(&s, QpType::Uc).unwrap();
    match w.op {
        SendOp::BindMw(mw) => {
            assert_eq!((mw.addr, mw.length), (0x10_0000, 0x2000));
            assert_eq!((mw.mr_lkey, mw.mw_rkey, mw.rkey, mw.access), (0x11, 0x22, 0x33, 6));
        }
        other => panic!("{other:?}"),
    }

    let mut s = SqSlot::new(SLOT);
    s.wr(15, 9, 0, 0x55u32.to_le_bytes()).sges(&[(0x1, 1, 1)]);
    let w = parse(&s, QpType::Rc).unwrap();
    assert_eq!(w.op, SendOp::SendWithInv { invalidate_rkey: 0x55 });
}

/// UD with a kernel AH number (current rdma-core): ah_num set, the AV area ignored.
#[test]
fn golden_ud_with_ah_num() {
    let mut s = SqSlot::new(SLOT);
    s.wr(16, 3, SIGNALED, 0x0000_002au32.to_be_bytes())
        .u32(24, 0x00ab_cdef)
        .u32(28, 0x1111_1111)
        .u32(36, 5)
        .sges(&[(0x3000, 256, 2)]);
    s.bytes(56, &[0xff; 88]); // stale AV bytes
    let w = parse(&s, QpType::Ud).unwrap();
    let ud = w.ud.unwrap();
    assert_eq!((ud.remote_qpn, ud.remote_qkey, ud.ah_num), (0x00ab_cdef, 0x1111_1111, 5));
    assert!(ud.av.is_none());
    assert_eq!(w.op, SendOp::SendWithImm { imm: [0, 0, 0, 0x2a] });
    // GSI parses the same way and keeps pkey_index
    s.u16(32, 3);
    assert_eq!(parse(&s, QpType::Gsi).unwrap().ud.unwrap().pkey_index, 3);
}

fn write_av_v4(s: &mut SqSlot) {
    s.u32(36, 0); // ah_num = 0: old provider, AV embedded
    let av = 56;
    s.u8(av, 1).u8(av + 1, 1).bytes(av + 2, &[2, 0, 0, 0, 0, 1]);
    s.bytes(av + 8, &[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 2]);
    s.u32(av + 24, 0).u8(av + 28, 0).u8(av + 29, 64).u8(av + 30, 0);
    // sockaddr_in: family AF_INET (2), port 0, sin_addr
    s.bytes(av + 32, &[0; 28]).u16(av + 32, 2).bytes(av + 32 + 4, &[10, 0, 0, 1]);
    s.bytes(av + 60, &[0; 28]).u16(av + 60, 2).bytes(av + 60 + 4, &[10, 0, 0, 2]);
}

#[test]
fn golden_ud_with_embedded_av() {
    let mut s = SqSlot::new(SLOT);
    s.wr(17, 2, 0, [0; 4]).u32(24, 1).u32(28, 0x8001_0000).sges(&[(0x3000, 64, 2)]);
    write_av_v4(&mut s);
    let w = parse(&s, QpType::Ud).unwrap();
    let av = w.ud.unwrap().av.unwrap();
    assert_eq!(av.port_num, 1);
    assert_eq!(av.network_type, NetworkType::Ipv4);
    assert_eq!(av.dmac, [2, 0, 0, 0, 0, 1]);
    assert_eq!(av.hop_limit, 64);
    assert_eq!(av.saddr, IpAddr::V4([10, 0, 0, 1]));
    assert_eq!(av.daddr, IpAddr::V4([10, 0, 0, 2]));
    // IPv6
    s.u8(57, 2).bytes(56 + 32 + 8, &[0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    let av = parse(&s, QpType::Ud).unwrap().ud.unwrap().av.unwrap();
    assert_eq!(av.network_type, NetworkType::Ipv6);
    assert_eq!(av.saddr, IpAddr::V6([0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]));
}

#[test]
fn embedded_av_must_agree_with_its_source_gid() {
    let mut s = SqSlot::new(SLOT);
    s.wr(17, 2, 0, [0; 4]).u32(24, 1).u32(28, 0x8001_0000).sges(&[(0x3000, 64, 2)]);
    write_av_v4(&mut s);
    let av = parse(&s, QpType::Ud).unwrap().ud.unwrap().av.unwrap();
    let v4_sgid = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 10, 0, 0, 1];
    let v6_sgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9];
    assert!(av.agrees_with(&v4_sgid));
    // the GID at sgid_index is IPv6 while the AV says IPv4
    assert!(!av.agrees_with(&v6_sgid));
    // dgid_addr names another host than the dgid
    let mut bad = av;
    bad.daddr = IpAddr::V4([10, 0, 0, 3]);
    assert!(!bad.agrees_with(&v4_sgid));
    // IPv4 type with an IPv6 destination GID
    let mut bad = av;
    bad.dgid = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 2];
    assert!(!bad.agrees_with(&v4_sgid));
    // IPv6: dgid_addr must be the destination GID itself
    let dgid6 = [0xfe, 0x80, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2];
    let mut v6 = av;
    v6.network_type = NetworkType::Ipv6;
    v6.dgid = dgid6;
    v6.daddr = IpAddr::V6(dgid6);
    assert!(v6.agrees_with(&v6_sgid));
    assert!(!v6.agrees_with(&v4_sgid));
    v6.daddr = IpAddr::V4([10, 0, 0, 2]);
    assert!(!v6.agrees_with(&v6_sgid));
}

#[test]
fn kernel_scratch_fields_are_ignored() {
    let mut a = SqSlot::new(SLOT);
    a.wr(1, 0, 0, [0; 4]).rdma(0x100, 1).sges(&[(0x200, 10, 2)]);
    let mut b = SqSlot(a.0.clone());
    // status, state, iova, mask, psns, ack_length, ssn, has_rd_atomic, resid, cur_sge,
    // sge_offset, reserved, wr.reserved
    for off in [144, 148, 160, 164, 168, 172, 176, 180, 188, 192, 200, 204, 8] {
        b.u32(off, 0xdead_beef);
    }
    b.u64(152, u64::MAX);
    // dma.length is recomputed from the SGEs
    b.u32(184, 12345);
    assert_eq!(parse(&a, QpType::Rc), parse(&b, QpType::Rc));
    assert_eq!(parse(&b, QpType::Rc).unwrap().length, 10);
}

#[test]
fn opcode_table() {
    use SendOpcode::*;
    let all = [
        RdmaWrite, RdmaWriteWithImm, Send, SendWithImm, RdmaRead, AtomicCmpAndSwp,
        AtomicFetchAndAdd, LocalInv, BindMw, SendWithInv, Flush, AtomicWrite,
    ];
    for op in all {
        assert_eq!(SendOpcode::from_uapi(op.to_uapi()), Some(op));
        assert!(op.allowed_on(QpType::Rc));
    }
    for v in [10, 11, 12, 13, 16, 0x20, 0x21, 0xf0, u32::MAX] {
        assert_eq!(SendOpcode::from_uapi(v), None, "{v}");
    }
    let uc: Vec<_> = all.iter().filter(|o| o.allowed_on(QpType::Uc)).collect();
    assert_eq!(uc, [&RdmaWrite, &RdmaWriteWithImm, &Send, &SendWithImm, &BindMw, &SendWithInv]);
    for qp in [QpType::Ud, QpType::Gsi] {
        let ud: Vec<_> = all.iter().filter(|o| o.allowed_on(qp)).collect();
        assert_eq!(ud, [&Send, &SendWithImm]);
    }
    assert_eq!(SendFlags::from_bits_truncate(u32::MAX).bits(), 0x1f);
}

// ---- rejections: one per rule ------------------------------------------------------------

fn good_send() -> SqSlot {
    let mut s = SqSlot::new(SLOT);
    s.wr(1, 2, SIGNALED, [0; 4]).sges(&[(0x1000, 10, 1)]);
    s
}

#[test]
fn reject_short_slot() {
    let s = good_send();
    assert_eq!(SendWqe::parse(&s.0[..207], QpType::Rc, rc_limits()), Err(WqeError::SlotTooSmall));
    assert_eq!(SendWqe::parse(&[], QpType::Rc, rc_limits()), Err(WqeError::SlotTooSmall));
}

#[test]
fn reject_unknown_opcodes() {
    for op in [10, 11, 12, 13, 16, 0x20, u32::MAX] {
        let mut s = good_send();
        s.u32(12, op);
        assert_eq!(parse(&s, QpType::Rc), Err(WqeError::UnknownOpcode), "{op}");
    }
}

#[test]
fn reject_opcode_for_qp_type() {
    for (op, qp) in [
        (4, QpType::Uc),  // READ on UC
        (5, QpType::Uc),  // atomics on UC
        (6, QpType::Uc),
        (7, QpType::Uc),  // LOCAL_INV on UC
        (14, QpType::Uc), // FLUSH
        (15, QpType::Uc), // ATOMIC_WRITE
        (0, QpType::Ud),  // WRITE on UD
        (4, QpType::Ud),
        (9, QpType::Ud),  // SEND_WITH_INV on UD
        (8, QpType::Ud),
        (1, QpType::Gsi),
    ] {
        let mut s = good_send();
        s.u32(12, op);
        assert_eq!(parse(&s, qp), Err(WqeError::OpcodeNotAllowed), "{op} on {qp:?}");
    }
}

#[test]
fn reject_too_many_sges() {
    let mut s = good_send();
    s.sges(&[(0, 1, 1); 5]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::TooManySge));
    // even with a generous QP limit, never above RXE_MAX_SGE
    let mut s = SqSlot::new(2048);
    s.wr(1, 2, 0, [0; 4]).sges(&[(0, 1, 1); 33]);
    let lim = SendLimits { max_sge: 1000, max_inline: 0 };
    assert_eq!(SendWqe::parse(&s.0, QpType::Rc, lim), Err(WqeError::TooManySge));
    s.u32(196, u32::MAX);
    assert_eq!(SendWqe::parse(&s.0, QpType::Rc, lim), Err(WqeError::TooManySge));
}

#[test]
fn reject_sges_outside_slot() {
    let mut s = SqSlot::new(256); // room for 3 SGEs after the 208-byte header
    s.wr(1, 2, 0, [0; 4]).sges(&[(0, 1, 1); 3]);
    assert!(parse(&s, QpType::Rc).is_ok());
    s.u32(196, 4);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::SgeOutsideSlot));
}

#[test]
fn reject_sge_address_overflow() {
    let mut s = good_send();
    s.sges(&[(u64::MAX - 5, 10, 1)]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::SgeAddressOverflow));
    s.sges(&[(u64::MAX - 10, 10, 1)]);
    assert!(parse(&s, QpType::Rc).is_ok(), "ends exactly at the top");
}

#[test]
fn reject_message_over_2_31() {
    let mut s = good_send();
    s.sges(&[(0, 1 << 30, 1), (0, 1 << 30, 1)]);
    assert_eq!(parse(&s, QpType::Rc).unwrap().length, 1 << 31, "2^31 itself is allowed");
    s.sges(&[(0, 1 << 30, 1), (0, (1 << 30) + 1, 1)]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::LengthTooLong));
    s.sges(&[(0, u32::MAX, 1), (0, u32::MAX, 1), (0, u32::MAX, 1), (0, u32::MAX, 1)]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::LengthTooLong));
    // FLUSH takes its length from dma.length
    let mut s = SqSlot::new(SLOT);
    s.wr(1, 14, 0, [0; 4]).dma((1 << 31) + 1, 0, 0);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::LengthTooLong));
}

#[test]
fn reject_inline_on_read_and_atomics() {
    for op in [4, 5, 6] {
        let mut s = good_send();
        s.u32(12, op).u32(16, INLINE).sges(&[(0x1000, 8, 1)]);
        assert_eq!(parse(&s, QpType::Rc), Err(WqeError::InlineNotAllowed), "{op}");
    }
}

#[test]
fn reject_inline_too_long() {
    let mut s = SqSlot::new(SLOT);
    s.wr(1, 2, INLINE, [0; 4]).inline(&[7; 64]);
    assert!(parse(&s, QpType::Rc).is_ok());
    s.inline(&[7; 65]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::InlineTooLong));
    // a QP limit above RXE_MAX_INLINE_DATA does not raise the cap
    let mut s = SqSlot::new(2048);
    s.wr(1, 2, INLINE, [0; 4]).inline(&[7; 513]);
    let lim = SendLimits { max_sge: 4, max_inline: 4096 };
    assert_eq!(SendWqe::parse(&s.0, QpType::Rc, lim), Err(WqeError::InlineTooLong));
    s.u32(184, u32::MAX);
    assert_eq!(SendWqe::parse(&s.0, QpType::Rc, lim), Err(WqeError::InlineTooLong));
}

#[test]
fn reject_inline_outside_slot() {
    let mut s = SqSlot::new(240); // 32 bytes of room
    s.wr(1, 2, INLINE, [0; 4]).inline(&[1; 32]);
    assert!(parse(&s, QpType::Rc).is_ok());
    s.u32(184, 33);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::InlineOutsideSlot));
}

#[test]
fn reject_atomic_length_and_alignment() {
    let mut s = SqSlot::new(SLOT);
    s.wr(1, 6, 0, [0; 4]).u64(24, 0x8000).sges(&[(0x9000, 4, 1)]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::AtomicLength));
    s.sges(&[]);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::AtomicLength));
    s.sges(&[(0x9000, 8, 1)]).u64(24, 0x8004);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::MisalignedAtomic));
    let mut s = SqSlot::new(SLOT);
    s.wr(1, 15, 0, [0; 4]).rdma(0x4001, 3).dma(8, 0, 0);
    assert_eq!(parse(&s, QpType::Rc), Err(WqeError::MisalignedAtomic));
}

#[test]
fn reject_bad_ud_destination() {
    let mut s = SqSlot::new(SLOT);
    s.wr(1, 2, 0, [0; 4]).u32(24, 0x0100_0000).u32(36, 5).sges(&[(0, 1, 1)]);
    assert_eq!(parse(&s, QpType::Ud), Err(WqeError::BadRemoteQpn));
    s.u32(24, 0x00ff_ffff);
    assert!(parse(&s, QpType::Ud).is_ok());
    write_av_v4(&mut s);
    assert!(parse(&s, QpType::Ud).is_ok());
    s.u8(56, 2); // port 2
    assert_eq!(parse(&s, QpType::Ud), Err(WqeError::BadAv));
    s.u8(56, 1).u8(57, 3); // unknown network type
    assert_eq!(parse(&s, QpType::Ud), Err(WqeError::BadAv));
    s.u8(57, 0);
    assert_eq!(parse(&s, QpType::Ud), Err(WqeError::BadAv));
}

#[test]
fn error_statuses() {
    assert_eq!(WqeError::TooManySge.wc_status(), WcStatus::LocLenErr);
    assert_eq!(WqeError::InlineTooLong.wc_status(), WcStatus::LocLenErr);
    assert_eq!(WqeError::OpcodeNotAllowed.wc_status(), WcStatus::LocQpOpErr);
    assert_eq!(WqeError::SgeAddressOverflow.wc_status(), WcStatus::LocProtErr);
    let all = [
        WqeError::SlotTooSmall, WqeError::UnknownOpcode, WqeError::OpcodeNotAllowed,
        WqeError::TooManySge, WqeError::SgeOutsideSlot, WqeError::SgeAddressOverflow,
        WqeError::LengthTooLong, WqeError::InlineNotAllowed, WqeError::InlineTooLong,
        WqeError::InlineOutsideSlot, WqeError::AtomicLength, WqeError::MisalignedAtomic,
        WqeError::BadRemoteQpn, WqeError::BadAv,
    ];
    let mut codes: Vec<u32> = all.iter().map(|e| e.vendor_err()).collect();
    codes.sort_unstable();
    codes.dedup();
    assert_eq!(codes.len(), all.len());
    assert!(!codes.contains(&0));
}

/// The slot sized by sq_geometry always holds what its reported caps allow.
#[test]
fn geometry_caps_fit_the_slot() {
    for (sge, inline) in [(1, 0), (4, 64), (2, 220), (32, 512), (0, 0), (0, 512)] {
        let sq = sq_geometry(16, sge, inline, DEFAULT_CACHE_LINE_SIZE).unwrap();
        let slot = sq.queue.ring.elem_size() as usize;
        let lim = SendLimits { max_sge: sq.max_sge, max_inline: sq.max_inline };
        let mut s = SqSlot::new(slot);
        let list = vec![(0x1000u64, 1u32, 1u32); sq.max_sge as usize];
        s.wr(1, 2, 0, [0; 4]).sges(&list);
        assert!(SendWqe::parse(&s.0, QpType::Rc, lim).is_ok());
        let mut s = SqSlot::new(slot);
        s.wr(1, 2, INLINE, [0; 4]).inline(&vec![3u8; sq.max_inline as usize]);
        assert_eq!(SendWqe::parse(&s.0, QpType::Rc, lim).unwrap().length, sq.max_inline);
    }
    let rq = rq_geometry(16, 7, DEFAULT_CACHE_LINE_SIZE).unwrap();
    let mut b = vec![0u8; rq.queue.ring.elem_size() as usize];
    b[28..32].copy_from_slice(&7u32.to_le_bytes());
    assert!(RecvWqe::parse(&b, RecvLimits { max_sge: rq.max_sge }).is_ok());
}

// ---- receive WQEs ------------------------------------------------------------------------

/// A receive slot as `rxe_post_one_recv` fills it.
fn recv_slot(size: usize, wr_id: u64, sges: &[(u64, u32, u32)]) -> Vec<u8> {
    let mut b = vec![0x5a; size];
    b[0..8].copy_from_slice(&wr_id.to_le_bytes());
    let total: u32 = sges.iter().fold(0u32, |a, s| a.wrapping_add(s.1));
    b[16..20].copy_from_slice(&total.to_le_bytes()); // dma.length
    b[20..24].copy_from_slice(&total.to_le_bytes()); // dma.resid
    b[24..28].copy_from_slice(&0u32.to_le_bytes()); // cur_sge
    b[28..32].copy_from_slice(&(sges.len() as u32).to_le_bytes()); // num_sge
    b[32..36].copy_from_slice(&0u32.to_le_bytes()); // sge_offset
    for (i, &(addr, len, lkey)) in sges.iter().enumerate() {
        let o = 40 + 16 * i;
        b[o..o + 8].copy_from_slice(&addr.to_le_bytes());
        b[o + 8..o + 12].copy_from_slice(&len.to_le_bytes());
        b[o + 12..o + 16].copy_from_slice(&lkey.to_le_bytes());
    }
    b
}

const RL: RecvLimits = RecvLimits { max_sge: 4 };

#[test]
fn golden_recv() {
    let b = recv_slot(128, 0xfeed, &[(0x1000, 1024, 7), (0x9000, 3000, 8)]);
    let w = RecvWqe::parse(&b, RL).unwrap();
    assert_eq!(w.wr_id, 0xfeed);
    assert_eq!(w.length, 4024);
    assert_eq!(
        w.sge_slice(),
        &[Sge { addr: 0x1000, length: 1024, lkey: 7 }, Sge { addr: 0x9000, length: 3000, lkey: 8 }]
    );
    let b = recv_slot(64, 1, &[]);
    let w = RecvWqe::parse(&b, RL).unwrap();
    assert_eq!((w.length, w.sges.len()), (0, 0));
}

#[test]
fn recv_rejections() {
    assert_eq!(RecvWqe::parse(&[0; 39], RL), Err(WqeError::SlotTooSmall));
    let b = recv_slot(256, 1, &[(0, 1, 1); 5]);
    assert_eq!(RecvWqe::parse(&b, RL), Err(WqeError::TooManySge));
    let b = recv_slot(1024, 1, &[(0, 1, 1); 33]);
    assert_eq!(RecvWqe::parse(&b, RecvLimits { max_sge: u32::MAX }), Err(WqeError::TooManySge));
    let mut b = recv_slot(72, 1, &[(0, 1, 1); 2]);
    assert!(RecvWqe::parse(&b, RL).is_ok());
    b[28..32].copy_from_slice(&3u32.to_le_bytes());
    assert_eq!(RecvWqe::parse(&b, RL), Err(WqeError::SgeOutsideSlot));
    let b = recv_slot(128, 1, &[(u64::MAX, 1, 1)]);
    assert_eq!(RecvWqe::parse(&b, RL), Err(WqeError::SgeAddressOverflow));
    let b = recv_slot(128, 1, &[(0, u32::MAX, 1)]);
    assert_eq!(RecvWqe::parse(&b, RL), Err(WqeError::LengthTooLong));
    // dma.length is not trusted
    let mut b = recv_slot(128, 1, &[(0, 10, 1)]);
    b[16..20].copy_from_slice(&u32::MAX.to_le_bytes());
    assert_eq!(RecvWqe::parse(&b, RL).unwrap().length, 10);
}

// ---- kernel consumers' work requests (decoded fields, ib_sge arrays) ----

mod kernel_wr {
    use rxe_sr::uabi::send_wqe::{InlineData, Remote, SendFlags, SendOp, UdDest, WrFields};
    use rxe_sr::uabi::sge::{Sge, SgeList};
    use rxe_sr::uabi::{QpType, SendLimits, SendOpcode, SendWqe, WqeError};

    const LIMITS: SendLimits = SendLimits { max_sge: 2, max_inline: 64 };

    fn dest(qpn: u32) -> Option<UdDest> {
        Some(UdDest { remote_qpn: qpn, remote_qkey: 0x8001_0000, pkey_index: 0, ah_num: 0, av: None })
    }

    fn sges(list: &[(u64, u32, u32)], max: u32) -> Result<(SgeList, u32), WqeError> {
        SgeList::collect(list.len() as u32, max, |i| {
            let (addr, length, lkey) = list[i];
            Ok(Sge { addr, length, lkey })
        })
    }

    fn fields(opcode: SendOpcode, op: SendOp, flags: u32, ud: Option<UdDest>, dma_length: u32) -> WrFields {
        WrFields { wr_id: 9, opcode, flags: SendFlags::from_bits_truncate(flags), op, ud, dma_length }
    }

    fn no_inline(_: u32) -> Result<InlineData, WqeError> {
        panic!("inline data asked for")
    }

    #[test]
    fn collect_checks_count_overflow_and_total() {
        let (l, total) = sges(&[(0x1000, 40, 5), (0x2000, 256, 5)], 2).unwrap();
        assert_eq!((l.len(), total), (2, 296));
        assert_eq!(sges(&[(0, 1, 1); 3], 2), Err(WqeError::TooManySge));
        assert_eq!(sges(&[(u64::MAX - 3, 8, 1)], 2), Err(WqeError::SgeAddressOverflow));
        assert_eq!(sges(&[(0, u32::MAX, 1), (0, u32::MAX, 1)], 2), Err(WqeError::LengthTooLong));
        // Capped at RXE_MAX_SGE whatever the queue says.
        assert_eq!(sges(&[(0, 1, 1); 33], 100), Err(WqeError::TooManySge));
    }

    #[test]
    fn datagram_send_and_send_with_imm() {
        let list = || sges(&[(0x1000, 40, 5), (0x2000, 256, 5)], 2);
        let f = fields(SendOpcode::Send, SendOp::Send, SendFlags::SIGNALED, dest(1), 0);
        let w = SendWqe::build(f, QpType::Gsi, LIMITS, no_inline, list).unwrap();
        assert_eq!((w.wr_id, w.length, w.sges().len()), (9, 296, 2));
        let ud = w.ud.unwrap();
        assert_eq!((ud.remote_qpn, ud.remote_qkey, ud.ah_num), (1, 0x8001_0000, 0));
        assert!(w.flags.signaled());
        let f = fields(SendOpcode::SendWithImm, SendOp::SendWithImm { imm: [1, 2, 3, 4] }, 0, dest(2), 0);
        let w = SendWqe::build(f, QpType::Ud, LIMITS, no_inline, || sges(&[], 2)).unwrap();
        assert_eq!((w.imm_data(), w.length), (Some([1, 2, 3, 4]), 0));
    }

    #[test]
    fn build_refuses_what_the_qp_cannot_do() {
        let empty = || sges(&[], 2);
        let write = SendOp::RdmaWrite { remote: Remote { addr: 0, rkey: 1 } };
        for (op, opc) in [(write, SendOpcode::RdmaWrite), (SendOp::LocalInv { invalidate_rkey: 1 }, SendOpcode::LocalInv)] {
            assert_eq!(SendWqe::build(fields(opc, op, 0, dest(2), 0), QpType::Ud, LIMITS, no_inline, empty),
                Err(WqeError::OpcodeNotAllowed));
        }
        // A datagram QP needs a destination, a connected one none.
        assert_eq!(SendWqe::build(fields(SendOpcode::Send, SendOp::Send, 0, None, 0), QpType::Ud, LIMITS, no_inline, empty),
            Err(WqeError::OpcodeNotAllowed));
        assert_eq!(SendWqe::build(fields(SendOpcode::Send, SendOp::Send, 0, dest(2), 0), QpType::Rc, LIMITS, no_inline, empty),
            Err(WqeError::OpcodeNotAllowed));
        assert_eq!(SendWqe::build(fields(SendOpcode::Send, SendOp::Send, 0, dest(1 << 24), 0), QpType::Ud, LIMITS, no_inline, empty),
            Err(WqeError::BadRemoteQpn));
        assert_eq!(SendWqe::build(fields(SendOpcode::Send, SendOp::Send, 0, dest(2), 0), QpType::Ud, LIMITS, no_inline,
            || sges(&[(0, 1, 1); 3], LIMITS.max_sge)), Err(WqeError::TooManySge));
        // REG_MR is a kernel opcode: RC only, no payload; user space cannot post it.
        let reg = SendOp::RegMr { key: 0x1234, access: 1 };
        let w = SendWqe::build(fields(SendOpcode::RegMr, reg, SendFlags::INLINE, None, 0), QpType::Rc, LIMITS, no_inline, empty).unwrap();
        assert_eq!((w.length, w.flags.inline(), w.op), (0, false, reg));
        assert_eq!(SendWqe::build(fields(SendOpcode::RegMr, reg, 0, None, 0), QpType::Uc, LIMITS, no_inline, empty),
            Err(WqeError::OpcodeNotAllowed));
        assert_eq!(SendOpcode::from_uapi(0x20), None);
        assert_eq!(SendOpcode::from_kernel(0x20), Some(SendOpcode::RegMr));
    }

    #[test]
    fn inline_comes_from_the_callback_within_max_inline() {
        let inl = SendFlags::INLINE;
        let data = |n: u32| Ok(InlineData::new(&vec![7u8; n as usize]).unwrap());
        let f = fields(SendOpcode::Send, SendOp::Send, inl, dest(2), 65);
        assert_eq!(SendWqe::build(f, QpType::Ud, LIMITS, data, || panic!("sges")), Err(WqeError::InlineTooLong));
        let f = fields(SendOpcode::Send, SendOp::Send, inl, dest(2), 64);
        let w = SendWqe::build(f, QpType::Ud, LIMITS, data, || panic!("sges")).unwrap();
        assert_eq!((w.length, w.inline_data().len(), w.flags.inline()), (64, 64, true));
        // A callback that supplies fewer bytes than promised is refused.
        let f = fields(SendOpcode::Send, SendOp::Send, inl, dest(2), 10);
        let short = |_: u32| Ok(InlineData::new(&[1, 2]).unwrap());
        assert_eq!(SendWqe::build(f, QpType::Ud, LIMITS, short, || panic!("sges")), Err(WqeError::InlineTooLong));
    }
}

/// The kernel parses each slot into a WQE that held an earlier request (the requester's
/// slot, the UD loop's one WQE): the result must be exactly what a fresh parse gives, with
/// nothing of the earlier SGE list or inline bytes left behind.
#[test]
fn parsing_in_place_over_an_earlier_wqe_equals_a_fresh_parse() {
    let mut four = SqSlot::new(SLOT);
    four.wr(1, 2, 0, [0; 4])
        .sges(&[(0x1000, 8, 1), (0x2000, 8, 1), (0x3000, 8, 1), (0x4000, 8, 1)]);
    let mut long_inline = SqSlot::new(SLOT);
    long_inline.wr(2, 2, INLINE, [0; 4]).inline(&[0x5a; 64]);
    let mut one = SqSlot::new(SLOT);
    one.wr(3, 0, SIGNALED, [0; 4]).rdma(0x8000, 7).sges(&[(0x9000, 16, 2)]);
    let mut short_inline = SqSlot::new(SLOT);
    short_inline.wr(4, 2, INLINE, [0; 4]).inline(b"abc");
    let mut bad = SqSlot::new(SLOT);
    bad.wr(5, 2, 0, [0; 4]).sges(&[(0x1000, 8, 1); 5]);

    let slots = [&four, &long_inline, &one, &short_inline, &four, &one];
    let mut w = SendWqe::EMPTY;
    for (i, s) in slots.iter().enumerate() {
        SendWqe::parse_into(&s.0, QpType::Rc, rc_limits(), &mut w).unwrap();
        assert_eq!(w, parse(s, QpType::Rc).unwrap(), "slot {i} parsed in place");
    }
    // An error leaves no WQE to use, and the next parse is again exact.
    assert_eq!(
        SendWqe::parse_into(&bad.0, QpType::Rc, rc_limits(), &mut w),
        Err(WqeError::TooManySge)
    );
    SendWqe::parse_into(&short_inline.0, QpType::Rc, rc_limits(), &mut w).unwrap();
    assert_eq!(w, parse(&short_inline, QpType::Rc).unwrap());
    assert_eq!(w.inline_data(), b"abc");
}
