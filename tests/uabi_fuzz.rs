// SPDX-License-Identifier: GPL-2.0
//! Property tests over hostile input: random slot bytes, random structured WQEs, random CQ
//! slots and random indices. Parsers never panic, and whatever they accept obeys the limits.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rxe_sr::uabi::cqe::parse_uverbs_wc;
use rxe_sr::uabi::send_wqe::Payload;
use rxe_sr::uabi::{
    emit_uverbs_wc, Completion, FromClientQueue, QpType, RecvLimits, RecvWqe, Ring, SendLimits,
    SendOp, SendWqe, ToClientQueue, WcEx, WcFlags, WcOpcode, WcStatus,
};

fn qp_type() -> impl Strategy<Value = QpType> {
    prop_oneof![Just(QpType::Rc), Just(QpType::Uc), Just(QpType::Ud), Just(QpType::Gsi)]
}

fn limits() -> impl Strategy<Value = SendLimits> {
    (prop_oneof![0u32..40, any::<u32>()], prop_oneof![0u32..600, any::<u32>()])
        .prop_map(|(max_sge, max_inline)| SendLimits { max_sge, max_inline })
}

/// Checks everything an accepted send WQE promises.
fn check_send(w: &SendWqe, slot_len: usize, qp: QpType, lim: SendLimits) -> Result<(), TestCaseError> {
    prop_assert!(w.opcode.allowed_on(qp));
    prop_assert_eq!(w.ud.is_some(), qp.is_datagram());
    prop_assert!(u64::from(w.length) <= 1 << 31);
    prop_assert_eq!(w.flags.bits() & !0x1f, 0);
    match &w.payload {
        Payload::Sges(list) => {
            prop_assert!(list.len() <= 32);
            prop_assert!(list.len() as u64 <= u64::from(lim.max_sge));
            prop_assert!(208 + 16 * list.len() <= slot_len);
            prop_assert_eq!(list.total_length(), u64::from(w.length));
            for s in list.as_slice() {
                prop_assert!(s.addr.checked_add(u64::from(s.length)).is_some());
            }
            prop_assert!(!w.flags.inline());
        }
        Payload::Inline(data) => {
            prop_assert!(w.opcode.supports_inline());
            prop_assert!(data.len() <= 512);
            prop_assert!(data.len() as u64 <= u64::from(lim.max_inline));
            prop_assert!(208 + data.len() <= slot_len);
            prop_assert_eq!(data.len() as u64, u64::from(w.length));
        }
        Payload::None => prop_assert!(!w.flags.inline()),
    }
    match w.op {
        SendOp::AtomicCmpAndSwp { remote, .. } | SendOp::AtomicFetchAndAdd { remote, .. } => {
            prop_assert!(w.length >= 8);
            prop_assert_eq!(remote.addr & 7, 0);
        }
        SendOp::AtomicWrite { remote, .. } => {
            prop_assert_eq!(w.length, 8);
            prop_assert_eq!(remote.addr & 7, 0);
        }
        _ => {}
    }
    if let Some(ud) = w.ud {
        prop_assert!(ud.remote_qpn <= 0x00ff_ffff);
        prop_assert_eq!(ud.av.is_some(), ud.ah_num == 0);
        if let Some(av) = ud.av {
            prop_assert_eq!(av.port_num, 1);
        }
    }
    Ok(())
}

/// A structured slot: a plausible header with random fields, then random bytes.
fn structured_slot() -> impl Strategy<Value = Vec<u8>> {
    (
        0usize..1200,
        0u32..20,
        any::<u32>(),
        prop_oneof![0u32..40, any::<u32>()],
        prop_oneof![0u32..700, any::<u32>()],
        proptest::collection::vec(any::<u8>(), 0..1200),
        any::<u64>(),
        prop_oneof![Just(0u32), any::<u32>()],
        0u8..4,
    )
        .prop_map(|(len, opcode, flags, num_sge, dma_len, fill, raddr, ah_num, nt)| {
            let mut b = fill;
            b.resize(len, 0);
            let mut put = |off: usize, v: &[u8]| {
                if off + v.len() <= b.len() {
                    b[off..off + v.len()].copy_from_slice(v);
                }
            };
            put(12, &opcode.to_le_bytes());
            put(16, &(flags & 0x3f).to_le_bytes());
            put(24, &(raddr & !7).to_le_bytes());
            put(36, &ah_num.to_le_bytes());
            put(56, &[1, nt]);
            put(184, &dma_len.to_le_bytes());
            put(196, &num_sge.to_le_bytes());
            b
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2048, failure_persistence: None, rng_seed: RngSeed::Fixed(0x0AB1_0001), ..ProptestConfig::default() })]

    #[test]
    fn send_parse_random_bytes(b in proptest::collection::vec(any::<u8>(), 0..1100), qp in qp_type(), lim in limits()) {
        if let Ok(w) = SendWqe::parse(&b, qp, lim) {
            check_send(&w, b.len(), qp, lim)?;
        }
    }

    #[test]
    fn send_parse_structured(b in structured_slot(), qp in qp_type(), lim in limits()) {
        match SendWqe::parse(&b, qp, lim) {
            Ok(w) => check_send(&w, b.len(), qp, lim)?,
            Err(e) => {
                prop_assert_ne!(e.vendor_err(), 0);
                prop_assert_ne!(e.wc_status(), WcStatus::Success);
            }
        }
    }

    #[test]
    fn recv_parse_random(
        mut b in proptest::collection::vec(any::<u8>(), 0..700),
        num_sge in prop_oneof![0u32..40, any::<u32>()],
        max_sge in prop_oneof![0u32..40, any::<u32>()],
    ) {
        if b.len() >= 32 {
            b[28..32].copy_from_slice(&num_sge.to_le_bytes());
        }
        if let Ok(w) = RecvWqe::parse(&b, RecvLimits { max_sge }) {
            prop_assert!(w.sges.len() <= 32);
            prop_assert!(w.sges.len() as u64 <= u64::from(max_sge));
            prop_assert!(40 + 16 * w.sges.len() <= b.len());
            prop_assert_eq!(w.sges.total_length(), u64::from(w.length));
            prop_assert!(u64::from(w.length) <= 1 << 31);
        }
    }

    #[test]
    fn cqe_parse_random(b in proptest::collection::vec(any::<u8>(), 0..100)) {
        if let Ok(c) = parse_uverbs_wc(&b) {
            let mut out = [0u8; 48];
            emit_uverbs_wc(&c, &mut out).unwrap();
            // everything but the reserved byte (and ex when no flag says what it is) survives
            prop_assert_eq!(&out[..24], &b[..24]);
            prop_assert_eq!(&out[28..47], &b[28..47]);
        }
    }

    #[test]
    fn cqe_round_trip(
        wr_id in any::<u64>(), st in 0u32..22, op in prop_oneof![0u32..13, 128u32..130],
        vendor_err in any::<u32>(), byte_len in any::<u32>(), ex_kind in 0u8..3, ex in any::<u32>(),
        qp_num in any::<u32>(), src_qp in any::<u32>(), flags in any::<u32>(),
        pkey_index in any::<u16>(), slid in any::<u16>(), sl in any::<u8>(), dlid in any::<u8>(), port in any::<u8>(),
    ) {
        let base = flags & !(WcFlags::WITH_IMM | WcFlags::WITH_INVALIDATE);
        let (ex, flags) = match ex_kind {
            0 => (WcEx::None, base),
            1 => (WcEx::Imm(ex.to_be_bytes()), base | WcFlags::WITH_IMM),
            _ => (WcEx::InvalidateRkey(ex), base | WcFlags::WITH_INVALIDATE),
        };
        let c = Completion {
            wr_id, status: WcStatus::from_uapi(st).unwrap(), opcode: WcOpcode::from_uapi(op).unwrap(),
            vendor_err, byte_len, ex, qp_num, src_qp, wc_flags: WcFlags(flags), pkey_index, slid,
            sl, dlid_path_bits: dlid, port_num: port, network: None,
        };
        let mut slot = vec![0u8; 128];
        emit_uverbs_wc(&c, &mut slot).unwrap();
        prop_assert_eq!(parse_uverbs_wc(&slot), Ok(c));
    }

    /// Hostile producer indices never make the kernel consume a slot outside the buffer or
    /// count more than the capacity.
    #[test]
    fn hostile_indices(log2_slots in 0u32..10, log2_elem in 6u32..12, raws in proptest::collection::vec(any::<u32>(), 1..40)) {
        let ring = Ring::new(log2_slots, log2_elem).unwrap();
        let mut sq = FromClientQueue::new(ring);
        let mut cq = ToClientQueue::new(ring);
        for (i, raw) in raws.into_iter().enumerate() {
            let raw = if i % 2 == 0 { raw & ring.index_mask() } else { raw };
            let _ = sq.observe_producer(raw);
            let _ = cq.observe_consumer(raw);
            prop_assert!(sq.count() <= ring.capacity());
            prop_assert!(cq.count() <= ring.capacity());
            if let Some(off) = sq.head_offset() {
                prop_assert!(off >= 384 && off + ring.elem_size() as usize <= ring.buf_size() as usize);
            }
            if let Some(off) = cq.tail_offset() {
                prop_assert!(off >= 384 && off + ring.elem_size() as usize <= ring.buf_size() as usize);
            }
            if i % 3 == 0 {
                let _ = sq.advance_consumer();
                let _ = cq.advance_producer();
            }
        }
    }
}
