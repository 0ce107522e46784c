// SPDX-License-Identifier: GPL-2.0
//! Executing IBTA 1.5's FLUSH (rdma_rxe's process_flush): one packet with a FETH and a RETH
//! and no payload (oA19-2; the parser refuses one with a payload). The FETH's SEL says what it covers: the RETH's range, or the
//! whole memory region the R_Key names (the RETH's address and length are then not looked
//! at, as in rdma_rxe). Its PLT says the placement: global visibility, which needs
//! IB_ACCESS_FLUSH_GLOBAL on the region, or persistence, which needs
//! IB_ACCESS_FLUSH_PERSISTENT. A FLUSH runs at ePSN, once every earlier request is placed
//! (in the SR format it is one of the ordered operations), and is acknowledged as an RDMA
//! WRITE is.

use core::ops::DerefMut;

use super::Exec;
use super::RdRes;
use super::Responder;
use super::{RecvSlot, RespSr};
use crate::proto::rc::RcEnv;
use crate::proto::wire::ext_headers::Feth;
use crate::proto::wire::PacketRepr;
use crate::proto::words::WindowWords;

impl<
        R: DerefMut<Target = [Option<RdRes>]>,
        W: DerefMut<Target = [Option<RecvSlot>]>,
        B: WindowWords,
        E: DerefMut<Target = RespSr<B>>,
    > Responder<R, W, E>
{
    /// A FLUSH at ePSN.
    pub(super) fn exec_flush(&mut self, env: &mut dyn RcEnv, p: &PacketRepr<'_>) -> Exec {
        // The parser gave the FLUSH opcode its FETH and RETH, and refused any payload.
        let (Some(feth), Some(reth)) = (p.ext.feth, p.ext.reth) else {
            return Exec::invalid_request();
        };
        let range = match feth.sel() {
            Feth::SEL_RANGE => Some((reth.va, reth.dma_len)),
            Feth::SEL_MR => None,
            _ => return Exec::invalid_request(),
        };
        // A placement type of neither kind, or with a reserved bit, asks for nothing known.
        let plt = feth.plt();
        let known = Feth::PLT_GLOBAL | Feth::PLT_PERSISTENT;
        if plt == 0 || plt & !known != 0 {
            return Exec::invalid_request();
        }
        match env.remote_flush(reth.rkey, range, plt) {
            Ok(()) => {
                self.bump_msn();
                Exec::Done(1)
            }
            Err(e) => Exec::remote_refused(e),
        }
    }
}
