// SPDX-License-Identifier: GPL-2.0
//! Completions written as `struct ib_uverbs_wc` bytes (golden layouts against what rdma_rxe's
//! `make_send_cqe` / `do_complete` leave in a user CQ), the status/opcode tables, and the
//! driver-private create responses.

use rxe_sr::uabi::cqe::{parse_uverbs_wc, CqeError};
use rxe_sr::uabi::resp::{
    emit_create_ah_resp, emit_create_cq_resp, emit_create_qp_resp, emit_create_srq_resp,
    emit_mminfo, parse_modify_srq_cmd, MmInfo,
};
use rxe_sr::uabi::{
    emit_uverbs_wc, Completion, QpType, RecvInfo, SendLimits, SendOpcode, SendWqe, WcEx, WcFlags,
    WcOpcode, WcStatus,
};

/// The 48 bytes of a `struct ib_uverbs_wc`, field by field at the header's offsets.
#[allow(clippy::too_many_arguments)]
fn wc_bytes(
    wr_id: u64,
    status: u32,
    opcode: u32,
    byte_len: u32,
    ex: [u8; 4],
    qp_num: u32,
    src_qp: u32,
    wc_flags: u32,
    port_num: u8,
) -> [u8; 48] {
    let mut b = [0u8; 48];
    b[0..8].copy_from_slice(&wr_id.to_le_bytes());
    b[8..12].copy_from_slice(&status.to_le_bytes());
    b[12..16].copy_from_slice(&opcode.to_le_bytes());
    b[20..24].copy_from_slice(&byte_len.to_le_bytes());
    b[24..28].copy_from_slice(&ex);
    b[28..32].copy_from_slice(&qp_num.to_le_bytes());
    b[32..36].copy_from_slice(&src_qp.to_le_bytes());
    b[36..40].copy_from_slice(&wc_flags.to_le_bytes());
    b[46] = port_num;
    b
}

fn emit(c: &Completion) -> [u8; 48] {
    let mut b = [0xeeu8; 48];
    emit_uverbs_wc(c, &mut b).unwrap();
    b
}

#[test]
fn golden_send_completions() {
    // RDMA WRITE WITH IMM: opcode RDMA_WRITE (1), WITH_IMM flagged, no immediate value.
    let c = Completion::send(0xabc, 0x11, SendOpcode::RdmaWriteWithImm, 4096, WcStatus::Success);
    assert_eq!(emit(&c), wc_bytes(0xabc, 0, 1, 4096, [0; 4], 0x11, 0, 2, 0));
    let c = Completion::send(1, 0x11, SendOpcode::SendWithInv, 10, WcStatus::Success);
    assert_eq!(emit(&c), wc_bytes(1, 0, 0, 10, [0; 4], 0x11, 0, 0, 0));
    for (op, wc) in [
        (SendOpcode::RdmaRead, 2),
        (SendOpcode::AtomicCmpAndSwp, 3),
        (SendOpcode::AtomicFetchAndAdd, 4),
        (SendOpcode::BindMw, 5),
        (SendOpcode::LocalInv, 6),
        (SendOpcode::Flush, 8),
        (SendOpcode::AtomicWrite, 9),
    ] {
        let c = Completion::send(2, 3, op, 8, WcStatus::Success);
        assert_eq!(emit(&c), wc_bytes(2, 0, wc, 8, [0; 4], 3, 0, 0, 0), "{op:?}");
    }
    // errors carry only wr_id, status and qp_num
    let c = Completion::send(9, 0x22, SendOpcode::RdmaRead, 100, WcStatus::RetryExcErr);
    assert_eq!(emit(&c), wc_bytes(9, 12, 0, 0, [0; 4], 0x22, 0, 0, 0));
    let c = Completion::send(9, 0x22, SendOpcode::Send, 100, WcStatus::WrFlushErr);
    assert_eq!(emit(&c), wc_bytes(9, 5, 0, 0, [0; 4], 0x22, 0, 0, 0));
}

#[test]
fn send_completion_from_parsed_wqe() {
    let mut slot = vec![0u8; 256];
    slot[0..8].copy_from_slice(&77u64.to_le_bytes());
    slot[12..16].copy_from_slice(&3u32.to_le_bytes()); // SEND_WITH_IMM
    slot[36..40].copy_from_slice(&9u32.to_le_bytes()); // ud.ah_num
    slot[196..200].copy_from_slice(&1u32.to_le_bytes());
    slot[216..220].copy_from_slice(&300u32.to_le_bytes());
    let wqe = SendWqe::parse(&slot, QpType::Ud, SendLimits { max_sge: 1, max_inline: 0 }).unwrap();
    let c = Completion::for_send_wqe(&wqe, 0x99, WcStatus::Success);
    assert_eq!(emit(&c), wc_bytes(77, 0, 0, 300, [0; 4], 0x99, 0, 2, 0));
}

#[test]
fn golden_recv_completions() {
    // UD SEND with immediate 0x01020304 (network order bytes), from QP 0x1234, port 1.
    let info = RecvInfo {
        byte_len: 64,
        imm: Some([1, 2, 3, 4]),
        src_qp: Some(0x1234),
        port_num: 1,
        ..RecvInfo::default()
    };
    let c = Completion::recv(5, 0x44, WcStatus::Success, info);
    assert_eq!(c.opcode, WcOpcode::Recv);
    assert_eq!(emit(&c), wc_bytes(5, 0, 128, 64, [1, 2, 3, 4], 0x44, 0x1234, 3, 1));
    // RDMA WRITE with immediate
    let info = RecvInfo { byte_len: 8192, rdma_with_imm: true, imm: Some([9, 9, 9, 9]), port_num: 1, ..RecvInfo::default() };
    let c = Completion::recv(6, 0x44, WcStatus::Success, info);
    assert_eq!(emit(&c), wc_bytes(6, 0, 129, 8192, [9, 9, 9, 9], 0x44, 0, 3, 1));
    // SEND with invalidate: rkey in host order, WITH_INVALIDATE flagged
    let info = RecvInfo { byte_len: 1, invalidated_rkey: Some(0x0a0b_0c0d), port_num: 1, ..RecvInfo::default() };
    let c = Completion::recv(7, 0x44, WcStatus::Success, info);
    assert_eq!(emit(&c), wc_bytes(7, 0, 128, 1, [0x0d, 0x0c, 0x0b, 0x0a], 0x44, 0, 5, 1));
    // plain receive: GRH always flagged
    let c = Completion::recv(8, 0x44, WcStatus::Success, RecvInfo { byte_len: 3, port_num: 1, ..RecvInfo::default() });
    assert_eq!(emit(&c), wc_bytes(8, 0, 128, 3, [0; 4], 0x44, 0, 1, 1));
    // error: only wr_id, status and qp_num
    let c = Completion::recv(8, 0x44, WcStatus::LocLenErr, RecvInfo { byte_len: 3, port_num: 1, ..RecvInfo::default() });
    assert_eq!(emit(&c), wc_bytes(8, 1, 0, 0, [0; 4], 0x44, 0, 0, 0));
}

#[test]
fn every_field_lands_at_its_offset() {
    let c = Completion {
        wr_id: 0x0102_0304_0506_0708,
        status: WcStatus::GeneralErr,
        opcode: WcOpcode::MaskedFetchAdd,
        vendor_err: 0x1111_2222,
        byte_len: 0x3333_4444,
        ex: WcEx::InvalidateRkey(0x5555_6666),
        qp_num: 0x0077_7777,
        src_qp: 0x0088_8888,
        wc_flags: WcFlags(WcFlags::WITH_INVALIDATE | WcFlags::GRH),
        pkey_index: 0x9999,
        slid: 0xaaaa,
        sl: 0xb,
        dlid_path_bits: 0xc,
        port_num: 0xd,
        network: None,
    };
    let b = emit(&c);
    assert_eq!(&b[0..8], &0x0102_0304_0506_0708u64.to_le_bytes());
    assert_eq!(&b[8..12], &21u32.to_le_bytes());
    assert_eq!(&b[12..16], &12u32.to_le_bytes());
    assert_eq!(&b[16..20], &0x1111_2222u32.to_le_bytes());
    assert_eq!(&b[20..24], &0x3333_4444u32.to_le_bytes());
    assert_eq!(&b[24..28], &0x5555_6666u32.to_le_bytes());
    assert_eq!(&b[28..32], &0x0077_7777u32.to_le_bytes());
    assert_eq!(&b[32..36], &0x0088_8888u32.to_le_bytes());
    assert_eq!(&b[36..40], &5u32.to_le_bytes());
    assert_eq!(&b[40..42], &0x9999u16.to_le_bytes());
    assert_eq!(&b[42..44], &0xaaaau16.to_le_bytes());
    assert_eq!((b[44], b[45], b[46], b[47]), (0xb, 0xc, 0xd, 0));
    assert_eq!(parse_uverbs_wc(&b), Ok(c));
}

#[test]
fn emit_bounds() {
    let c = Completion::zeroed(1, 2, WcStatus::Success);
    let mut short = [0x11u8; 47];
    assert_eq!(emit_uverbs_wc(&c, &mut short), Err(CqeError::BufferTooSmall));
    assert!(short.iter().all(|&x| x == 0x11), "nothing written");
    // a 128-byte CQ slot: the first 48 bytes written, the rest untouched
    let mut slot = [0x22u8; 128];
    emit_uverbs_wc(&c, &mut slot).unwrap();
    assert_eq!(&slot[..48], &wc_bytes(1, 0, 0, 0, [0; 4], 2, 0, 0, 0));
    assert!(slot[48..].iter().all(|&x| x == 0x22));
    assert_eq!(parse_uverbs_wc(&slot[..47]), Err(CqeError::BufferTooSmall));
    let mut bad = wc_bytes(1, 22, 0, 0, [0; 4], 0, 0, 0, 0);
    assert_eq!(parse_uverbs_wc(&bad), Err(CqeError::UnknownStatus));
    bad[8] = 0;
    bad[12] = 13;
    assert_eq!(parse_uverbs_wc(&bad), Err(CqeError::UnknownOpcode));
}

#[test]
fn status_and_opcode_values() {
    for v in 0..22 {
        assert_eq!(WcStatus::from_uapi(v).unwrap().to_uapi(), v);
    }
    assert_eq!(WcStatus::from_uapi(22), None);
    assert_eq!(WcStatus::from_uapi(u32::MAX), None);
    assert_eq!(WcStatus::WrFlushErr.to_uapi(), 5);
    assert_eq!(WcStatus::RnrRetryExcErr.to_uapi(), 13);
    for v in (0..13).chain([128, 129]) {
        assert_eq!(WcOpcode::from_uapi(v).unwrap().to_uapi(), v);
    }
    for v in [13, 127, 130, u32::MAX] {
        assert_eq!(WcOpcode::from_uapi(v), None);
    }
    assert_eq!(WcOpcode::Recv.to_uapi() & 128, 128);
    assert_eq!(WcOpcode::Flush.to_uapi(), 8);
    assert_eq!(WcOpcode::AtomicWrite.to_uapi(), 9);
}

#[test]
fn create_responses() {
    let rq = MmInfo { offset: 0x1000, size: 384 + 128 * 64 };
    let sq = MmInfo { offset: 0x2000_0000_0000, size: 384 + 256 * 256 };
    let mut b = [0xffu8; 40];
    emit_create_qp_resp(rq, sq, &mut b).unwrap();
    assert_eq!(&b[0..8], &0x1000u64.to_le_bytes());
    assert_eq!(&b[8..12], &(384u32 + 128 * 64).to_le_bytes());
    assert_eq!(&b[12..16], &[0; 4], "pad zeroed");
    assert_eq!(&b[16..24], &0x2000_0000_0000u64.to_le_bytes());
    assert_eq!(&b[24..28], &(384u32 + 256 * 256).to_le_bytes());
    assert_eq!(&b[28..32], &[0; 4]);
    assert_eq!(&b[32..], &[0xff; 8], "nothing past the struct");
    assert_eq!(MmInfo::parse(&b[16..]), Some(sq));
    assert_eq!(emit_create_qp_resp(rq, sq, &mut [0u8; 31]), None);

    let mut b = [0xffu8; 24];
    emit_create_srq_resp(rq, 0x20001, &mut b).unwrap();
    assert_eq!(MmInfo::parse(&b), Some(rq));
    assert_eq!(&b[16..20], &0x20001u32.to_le_bytes());
    assert_eq!(&b[20..24], &[0; 4]);

    let mut b = [0xffu8; 16];
    emit_create_cq_resp(rq, &mut b).unwrap();
    assert_eq!(MmInfo::parse(&b), Some(rq));
    let mut m = [0xffu8; 16];
    emit_mminfo(rq, &mut m).unwrap();
    assert_eq!(m, b);

    let mut b = [0xffu8; 8];
    emit_create_ah_resp(7, &mut b).unwrap();
    assert_eq!(b, [7, 0, 0, 0, 0, 0, 0, 0]);
    assert_eq!(emit_create_ah_resp(7, &mut [0u8; 7]), None);

    assert_eq!(parse_modify_srq_cmd(&0x7fff_1234_5678u64.to_le_bytes()), Some(0x7fff_1234_5678));
    assert_eq!(parse_modify_srq_cmd(&[0; 7]), None);
}
