// SPDX-License-Identifier: GPL-2.0
//! Property tests of the wire parser: it never panics, on random bytes or on mutations of
//! valid packets, and whatever it accepts re-emits to the same bytes (pad bytes and the
//! ICRC aside, which emit writes as zeros); generated valid packets round-trip exactly,
//! ICRC included.

use proptest::prelude::*;
use rxe_sr::proto::psn::Psn;
use rxe_sr::proto::wire::ext_headers::{
    Aeth, AtomicAckEth, AtomicEth, Deth, Feth, Ieth, ImmDt, Reth, AETH_NAK_PSN_SEQ_ERROR,
};
use rxe_sr::proto::wire::ip::RoceDatagram;
use rxe_sr::proto::wire::sr_ext::{
    MsnEth, SrAckEth, SrAckKind, SR_WINDOW_LOG2_MAX, SR_WINDOW_LOG2_MIN,
};
use rxe_sr::proto::wire::{
    icrc, BthRepr, Error, ExtHeaders, Headers, Opcode, Packet, PacketRepr, ResponderCaps, SrCap,
    BTH_LEN, BTH_TVER_SR, ICRC_LEN,
};

fn supported() -> Vec<Opcode> {
    (0..=255u8).map(Opcode).filter(|o| o.info().is_some()).collect()
}

const IP4: [u8; 20] = [
    0x45, 0x00, 0x00, 0x00, 0x00, 0x01, 0x40, 0x00, 0x40, 0x11, 0x00, 0x00, 10, 0, 0, 1, 10, 0,
    0, 2,
];
const UDP: [u8; 8] = [0xc0, 0x00, 0x12, 0xb7, 0x00, 0x00, 0x00, 0x00];

/// Whatever parses must re-emit to the same bytes except pad and ICRC (emitted as zeros).
fn assert_reemits(ib: &[u8], r: &PacketRepr<'_>) {
    let mut out = vec![0xeeu8; r.buffer_len()];
    let n = r.emit(&mut out).expect("a parsed packet emits");
    assert_eq!(n, ib.len());
    let body_end = r.header_len() + r.payload.len();
    assert_eq!(&out[..body_end], &ib[..body_end]);
    assert!(out[body_end..].iter().all(|&b| b == 0));
    assert_eq!(PacketRepr::parse(&out).as_ref(), Ok(r));
}

/// An owned packet description: BTH, headers, payload.
#[derive(Clone, Debug)]
struct Gen {
    bth: BthRepr,
    ext: ExtHeaders,
    payload: Vec<u8>,
}

impl Gen {
    fn repr(&self) -> PacketRepr<'_> {
        PacketRepr { bth: self.bth, ext: self.ext, payload: &self.payload }
    }

    fn bytes(&self) -> Vec<u8> {
        let r = self.repr();
        let mut out = vec![0u8; r.buffer_len()];
        r.emit_with_icrc(&IP4, &UDP, &mut out).expect("generated packets are valid");
        out
    }
}

prop_compose! {
    fn arb_bth()(
        se in any::<bool>(), migreq in any::<bool>(), pkey in any::<u16>(),
        fecn in any::<bool>(), becn in any::<bool>(), resv6a in 0u8..64,
        dest_qpn in 0u32..1 << 24, ack_req in any::<bool>(), resv7 in 0u8..128,
        psn in 0u32..1 << 24,
    ) -> BthRepr {
        BthRepr {
            opcode: Opcode(0), se, migreq, pad_cnt: 0, tver: 0, pkey, fecn, becn, resv6a,
            dest_qpn, ack_req, resv7, psn: Psn::new(psn),
        }
    }
}

prop_compose! {
    /// One of every header, with random fields; the opcode picks which ones stay.
    fn arb_all_headers()(
        msn in (0u32..1 << 24, 0u32..1 << 24),
        sr_ack in (0u8..6, 0u8..8, any::<bool>(), 0u32..1 << 24, 0u32..1 << 24,
            SR_WINDOW_LOG2_MIN..=SR_WINDOW_LOG2_MAX),
        deth in (any::<u32>(), any::<u8>(), 0u32..1 << 24),
        feth in any::<u32>(),
        reth in (any::<u64>(), any::<u32>(), any::<u32>()),
        atomic in (any::<u64>(), any::<u32>(), any::<u64>(), any::<u64>()),
        aeth in (any::<u8>(), 0u32..1 << 24),
        small in (any::<u64>(), any::<u32>(), any::<u32>()),
    ) -> ExtHeaders {
        ExtHeaders {
            msn_eth: Some(MsnEth { msn: msn.0, offset: msn.1 }),
            sr_ack_eth: Some(SrAckEth {
                kind: SrAckKind::from_wire(sr_ack.0).unwrap(),
                lost_cnt: sr_ack.1,
                lost_cnt_overflow: sr_ack.2,
                sack_high: Psn::new(sr_ack.3),
                trigger_psn: Psn::new(sr_ack.4),
                window_log2: sr_ack.5,
            }),
            deth: Some(Deth { qkey: deth.0, resv8: deth.1, src_qpn: deth.2 }),
            feth: Some(Feth { bits: feth }),
            reth: Some(Reth { va: reth.0, rkey: reth.1, dma_len: reth.2 }),
            atomic_eth: Some(AtomicEth { va: atomic.0, rkey: atomic.1, swap_add: atomic.2, compare: atomic.3 }),
            aeth: Some(Aeth { syndrome: aeth.0, msn: aeth.1 }),
            atomic_ack_eth: Some(AtomicAckEth { orig_rem_data: small.0 }),
            imm_dt: Some(ImmDt { data: small.1 }),
            ieth: Some(Ieth { rkey: small.2 }),
        }
    }
}

fn keep<T>(set: Headers, h: Headers, v: Option<T>) -> Option<T> {
    if set.contains(h) {
        v
    } else {
        None
    }
}

prop_compose! {
    fn arb_packet()(
        op_idx in any::<prop::sample::Index>(),
        want_sr in any::<bool>(),
        mut bth in arb_bth(),
        all in arb_all_headers(),
        payload in prop::collection::vec(any::<u8>(), 0..80),
    ) -> Gen {
        let ops = supported();
        let opcode = ops[op_idx.index(ops.len())];
        let info = opcode.info().unwrap();
        let sr = want_sr && opcode.headers(true).is_ok();
        let set = opcode.headers(sr).unwrap();
        let mut ext = ExtHeaders {
            msn_eth: keep(set, Headers::MSN_ETH, all.msn_eth),
            sr_ack_eth: keep(set, Headers::SR_ACK_ETH, all.sr_ack_eth),
            deth: keep(set, Headers::DETH, all.deth),
            feth: keep(set, Headers::FETH, all.feth),
            reth: keep(set, Headers::RETH, all.reth),
            atomic_eth: keep(set, Headers::ATOMIC_ETH, all.atomic_eth),
            aeth: keep(set, Headers::AETH, all.aeth),
            atomic_ack_eth: keep(set, Headers::ATOMIC_ACK_ETH, all.atomic_ack_eth),
            imm_dt: keep(set, Headers::IMM_DT, all.imm_dt),
            ieth: keep(set, Headers::IETH, all.ieth),
        };
        // SR-ACK-ETH kind and AETH syndrome must agree.
        if let (Some(s), Some(a)) = (ext.sr_ack_eth, ext.aeth.as_mut()) {
            let low = a.syndrome & 0x1f;
            a.syndrome = match s.kind {
                SrAckKind::Sack | SrAckKind::Fnack | SrAckKind::Hole | SrAckKind::Gap => AETH_NAK_PSN_SEQ_ERROR,
                SrAckKind::ReadAck => low,
                SrAckKind::Ack => [0x00, 0x20, 0x60][usize::from(a.syndrome % 3)] | low,
            };
        }
        let payload = match (info.payload, opcode.fixed_payload_len()) {
            (false, _) => Vec::new(),
            (true, Some(n)) => payload.iter().copied().cycle().take(n).chain(std::iter::repeat(0)).take(n).collect(),
            (true, None) => payload,
        };
        bth.opcode = opcode;
        bth.tver = if sr { BTH_TVER_SR } else { 0 };
        bth.pad_cnt = BthRepr::pad_for(payload.len());
        Gen { bth, ext, payload }
    }
}

/// Random bytes whose first two bytes are a supported opcode and TVer 0/1, to get past the
/// first checks more often than uniform bytes do.
fn arb_plausible_bytes() -> impl Strategy<Value = Vec<u8>> {
    (any::<prop::sample::Index>(), any::<bool>(), prop::collection::vec(any::<u8>(), 0..120))
        .prop_map(|(i, sr, mut v)| {
            let ops = supported();
            if v.len() >= 2 {
                v[0] = ops[i.index(ops.len())].0;
                v[1] = (v[1] & 0xf0) | u8::from(sr);
            }
            v
        })
}

#[derive(Clone, Debug)]
enum Mutation {
    Flip { at: prop::sample::Index, xor: u8 },
    Truncate { at: prop::sample::Index },
    Extend { extra: Vec<u8> },
    Overwrite { at: prop::sample::Index, bytes: Vec<u8> },
}

fn arb_mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(at, xor)| Mutation::Flip { at, xor }),
        any::<prop::sample::Index>().prop_map(|at| Mutation::Truncate { at }),
        prop::collection::vec(any::<u8>(), 1..12).prop_map(|extra| Mutation::Extend { extra }),
        (any::<prop::sample::Index>(), prop::collection::vec(any::<u8>(), 1..8))
            .prop_map(|(at, bytes)| Mutation::Overwrite { at, bytes }),
    ]
}

fn apply(m: &Mutation, b: &mut Vec<u8>) {
    if b.is_empty() {
        if let Mutation::Extend { extra } = m {
            b.extend_from_slice(extra);
        }
        return;
    }
    match m {
        Mutation::Flip { at, xor } => {
            let i = at.index(b.len());
            b[i] ^= xor;
        }
        Mutation::Truncate { at } => {
            let n = at.index(b.len());
            b.truncate(n);
        }
        Mutation::Extend { extra } => b.extend_from_slice(extra),
        Mutation::Overwrite { at, bytes } => {
            let i = at.index(b.len());
            for (k, x) in bytes.iter().enumerate() {
                if let Some(d) = b.get_mut(i + k) {
                    *d = *x;
                }
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2048))]

    #[test]
    fn random_bytes_never_panic(b in prop::collection::vec(any::<u8>(), 0..160)) {
        if let Ok(r) = PacketRepr::parse(&b) {
            assert_reemits(&b, &r);
        }
        let _ = Packet::new_checked(&b[..]);
        let _ = PacketRepr::parse_checked(&IP4, &UDP, &b);
        let _ = RoceDatagram::parse(&b);
        let split = b.len() / 3;
        let _ = icrc::compute(&b[..split], &UDP, &b[split..]);
    }

    #[test]
    fn plausible_bytes_never_panic(b in arb_plausible_bytes()) {
        match PacketRepr::parse(&b) {
            Ok(r) => assert_reemits(&b, &r),
            Err(e) => prop_assert!(e != Error::BufferTooSmall && e != Error::BadField),
        }
    }

    #[test]
    fn generated_packets_round_trip(g in arb_packet()) {
        let bytes = g.bytes();
        let r = PacketRepr::parse_checked(&IP4, &UDP, &bytes).unwrap();
        prop_assert_eq!(r, g.repr());
        let v = Packet::new_checked(&bytes[..]).unwrap();
        prop_assert_eq!(v.payload(), &g.payload[..]);
        prop_assert_eq!(v.ext_bytes().len(), r.header_len() - BTH_LEN);
        prop_assert_eq!(bytes.len() % 4, 0);
        prop_assert_eq!(r.is_sr(), g.bth.tver == BTH_TVER_SR);
    }

    #[test]
    fn mutated_packets_never_panic(g in arb_packet(), muts in prop::collection::vec(arb_mutation(), 1..4)) {
        let mut b = g.bytes();
        for m in &muts {
            apply(m, &mut b);
        }
        // Structure only.
        if let Ok(r) = PacketRepr::parse(&b) {
            assert_reemits(&b, &r);
        }
        // With the ICRC fixed up, so that parsing gets past it.
        if b.len() >= BTH_LEN + ICRC_LEN {
            let _ = icrc::fill(&IP4, &UDP, &mut b);
            if let Ok(r) = PacketRepr::parse_checked(&IP4, &UDP, &b) {
                assert_reemits(&b, &r);
            }
        }
    }

    /// CRC-32 catches every single-byte error, so one flipped byte outside the masked BTH
    /// byte 4 is always rejected, by the parser or by the ICRC.
    #[test]
    fn single_byte_flip_is_rejected(g in arb_packet(), at in any::<prop::sample::Index>(), xor in 1u8..=255) {
        let mut b = g.bytes();
        let i = at.index(b.len());
        b[i] ^= xor;
        let res = PacketRepr::parse_checked(&IP4, &UDP, &b);
        if i == 4 {
            // F, B, Resv6a: masked by the ICRC, carried in the representation.
            let r = res.unwrap();
            prop_assert_eq!(r.bth.dest_qpn, g.bth.dest_qpn);
        } else {
            prop_assert!(res.is_err());
        }
    }

    #[test]
    fn capability_values(v in 0u8..128, local in prop::option::of(0u8..4)) {
        if let Some(c) = SrCap::from_resv7(v) {
            prop_assert_eq!(c.to_resv7(), v);
        }
        let scheme = local.map(|s| SrCap::new(match s {
            0 => rxe_sr::proto::wire::SrScheme::Fasr,
            1 => rxe_sr::proto::wire::SrScheme::Srnic,
            2 => rxe_sr::proto::wire::SrScheme::Irn,
            _ => rxe_sr::proto::wire::SrScheme::Melo,
        }));
        let resp = ResponderCaps::new(scheme);
        let a = resp.answer(0, v);
        match scheme {
            // recovery=gbn never marks anything.
            None => prop_assert_eq!((a.tver, a.resv7), (0, 0)),
            // An echo is only ever our own capability, and only to that same capability.
            Some(c) => prop_assert!(a.resv7 == 0 || (a.resv7 == c.to_resv7() && v == c.to_resv7())),
        }
    }
}
