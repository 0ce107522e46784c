// SPDX-License-Identifier: GPL-2.0
//! The UD requester (IBTA 9.8.3): every SEND work request becomes one SEND_ONLY packet with
//! a DETH (the Q_Key and our QPN) and, for SEND_WITH_IMM, an ImmDt. No acknowledgement, no
//! retransmission: a UD send completes once the packet is handed to the IP layer.

use kernel::alloc::{flags::GFP_KERNEL, KVec};
use kernel::prelude::*;

use crate::proto::psn::Psn;
use crate::proto::wire::ext_headers::{Deth, ImmDt};
use crate::proto::wire::{BthRepr, ExtHeaders, Opcode, PacketRepr};

/// The IBTA default P_Key (full membership).
const DEFAULT_PKEY: u16 = 0xffff;

/// One UD SEND.
pub(crate) struct UdSend<'a> {
    /// Destination QPN.
    pub(crate) dest_qpn: u32,
    /// Q_Key for the DETH.
    pub(crate) qkey: u32,
    /// Our QPN (DETH SrcQP).
    pub(crate) src_qpn: u32,
    /// The packet's PSN.
    pub(crate) psn: Psn,
    /// Solicited event.
    pub(crate) se: bool,
    /// Immediate data (network order), for SEND_WITH_IMM.
    pub(crate) imm: Option<[u8; 4]>,
    /// The message.
    pub(crate) payload: &'a [u8],
}

/// The packet's bytes, BTH .. ICRC (the ICRC left zero for the sender to fill).
pub(crate) fn build(s: &UdSend<'_>) -> Result<KVec<u8>> {
    let opcode = if s.imm.is_some() { Opcode::UD_SEND_ONLY_WITH_IMMEDIATE } else { Opcode::UD_SEND_ONLY };
    let repr = PacketRepr {
        bth: BthRepr {
            opcode,
            se: s.se,
            pad_cnt: BthRepr::pad_for(s.payload.len()),
            pkey: DEFAULT_PKEY,
            dest_qpn: s.dest_qpn,
            psn: s.psn,
            ..Default::default()
        },
        ext: ExtHeaders {
            deth: Some(Deth {
                qkey: s.qkey,
                resv8: 0,
                src_qpn: s.src_qpn,
            }),
            imm_dt: s.imm.map(|d| ImmDt {
                data: u32::from_be_bytes(d),
            }),
            ..Default::default()
        },
        payload: s.payload,
    };
    let mut buf = KVec::from_elem(0u8, repr.buffer_len(), GFP_KERNEL)?;
    // `buffer_len` is exactly what `emit` writes.
    repr.emit(&mut buf).map_err(|_| EINVAL)?;
    Ok(buf)
}
