// SPDX-License-Identifier: GPL-2.0
//! Compile-time proof that the pure `uabi` layout constants match the kernel's uapi headers
//! (rdma_user_rxe.h, ib_user_verbs.h) as bindgen sees them for this build: any drift fails
//! the module build.

use core::mem::{offset_of, size_of};

use crate::kx::bindings as b;
use crate::uabi::layout as l;

macro_rules! same {
    ($a:expr, $b:expr) => {
        const _: () = assert!($a == $b);
    };
}

// struct rxe_queue_buf
same!(
    offset_of!(b::rxe_queue_buf, log2_elem_size),
    l::QUEUE_LOG2_ELEM_SIZE_OFF
);
same!(
    offset_of!(b::rxe_queue_buf, index_mask),
    l::QUEUE_INDEX_MASK_OFF
);
same!(
    offset_of!(b::rxe_queue_buf, producer_index),
    l::QUEUE_PRODUCER_INDEX_OFF
);
same!(
    offset_of!(b::rxe_queue_buf, consumer_index),
    l::QUEUE_CONSUMER_INDEX_OFF
);
same!(offset_of!(b::rxe_queue_buf, data), l::QUEUE_DATA_OFF);
// struct rxe_sge
same!(offset_of!(b::rxe_sge, addr), l::SGE_ADDR_OFF);
same!(offset_of!(b::rxe_sge, length), l::SGE_LENGTH_OFF);
same!(offset_of!(b::rxe_sge, lkey), l::SGE_LKEY_OFF);
same!(size_of::<b::rxe_sge>(), l::SGE_SIZE);
// struct rxe_send_wr
same!(offset_of!(b::rxe_send_wr, wr_id), l::SEND_WR_WR_ID_OFF);
same!(offset_of!(b::rxe_send_wr, opcode), l::SEND_WR_OPCODE_OFF);
same!(
    offset_of!(b::rxe_send_wr, send_flags),
    l::SEND_WR_SEND_FLAGS_OFF
);
same!(offset_of!(b::rxe_send_wr, ex), l::SEND_WR_EX_OFF);
same!(offset_of!(b::rxe_send_wr, wr), l::SEND_WR_UNION_OFF);
same!(size_of::<b::rxe_send_wr>(), l::SEND_WR_SIZE);
// struct rxe_av
same!(offset_of!(b::rxe_av, port_num), l::AV_PORT_NUM_OFF);
same!(offset_of!(b::rxe_av, network_type), l::AV_NETWORK_TYPE_OFF);
same!(offset_of!(b::rxe_av, dmac), l::AV_DMAC_OFF);
same!(offset_of!(b::rxe_av, grh), l::AV_GRH_OFF);
same!(offset_of!(b::rxe_av, sgid_addr), l::AV_SGID_ADDR_OFF);
same!(offset_of!(b::rxe_av, dgid_addr), l::AV_DGID_ADDR_OFF);
same!(size_of::<b::rxe_av>(), l::AV_SIZE);
same!(size_of::<b::rxe_global_route>(), l::GLOBAL_ROUTE_SIZE);
// struct rxe_dma_info
same!(offset_of!(b::rxe_dma_info, length), l::DMA_LENGTH_OFF);
same!(offset_of!(b::rxe_dma_info, resid), l::DMA_RESID_OFF);
same!(offset_of!(b::rxe_dma_info, cur_sge), l::DMA_CUR_SGE_OFF);
same!(offset_of!(b::rxe_dma_info, num_sge), l::DMA_NUM_SGE_OFF);
same!(
    offset_of!(b::rxe_dma_info, sge_offset),
    l::DMA_SGE_OFFSET_OFF
);
same!(size_of::<b::rxe_dma_info>(), l::DMA_INFO_SIZE);
// struct rxe_send_wqe
same!(offset_of!(b::rxe_send_wqe, wr), l::SEND_WQE_WR_OFF);
same!(offset_of!(b::rxe_send_wqe, status), l::SEND_WQE_STATUS_OFF);
same!(offset_of!(b::rxe_send_wqe, state), l::SEND_WQE_STATE_OFF);
same!(offset_of!(b::rxe_send_wqe, iova), l::SEND_WQE_IOVA_OFF);
same!(offset_of!(b::rxe_send_wqe, mask), l::SEND_WQE_MASK_OFF);
same!(
    offset_of!(b::rxe_send_wqe, first_psn),
    l::SEND_WQE_FIRST_PSN_OFF
);
same!(
    offset_of!(b::rxe_send_wqe, last_psn),
    l::SEND_WQE_LAST_PSN_OFF
);
same!(
    offset_of!(b::rxe_send_wqe, ack_length),
    l::SEND_WQE_ACK_LENGTH_OFF
);
same!(offset_of!(b::rxe_send_wqe, ssn), l::SEND_WQE_SSN_OFF);
same!(
    offset_of!(b::rxe_send_wqe, has_rd_atomic),
    l::SEND_WQE_HAS_RD_ATOMIC_OFF
);
same!(offset_of!(b::rxe_send_wqe, dma), l::SEND_WQE_DMA_OFF);
same!(size_of::<b::rxe_send_wqe>(), l::SEND_WQE_SIZE);
// struct rxe_recv_wqe
same!(offset_of!(b::rxe_recv_wqe, wr_id), l::RECV_WQE_WR_ID_OFF);
same!(offset_of!(b::rxe_recv_wqe, dma), l::RECV_WQE_DMA_OFF);
same!(size_of::<b::rxe_recv_wqe>(), l::RECV_WQE_SIZE);
// struct ib_uverbs_wc
same!(offset_of!(b::ib_uverbs_wc, wr_id), l::UVERBS_WC_WR_ID_OFF);
same!(offset_of!(b::ib_uverbs_wc, status), l::UVERBS_WC_STATUS_OFF);
same!(offset_of!(b::ib_uverbs_wc, opcode), l::UVERBS_WC_OPCODE_OFF);
same!(
    offset_of!(b::ib_uverbs_wc, byte_len),
    l::UVERBS_WC_BYTE_LEN_OFF
);
same!(offset_of!(b::ib_uverbs_wc, qp_num), l::UVERBS_WC_QP_NUM_OFF);
same!(
    offset_of!(b::ib_uverbs_wc, wc_flags),
    l::UVERBS_WC_WC_FLAGS_OFF
);
same!(
    offset_of!(b::ib_uverbs_wc, port_num),
    l::UVERBS_WC_PORT_NUM_OFF
);
same!(size_of::<b::ib_uverbs_wc>(), l::UVERBS_WC_SIZE);
// struct mminfo and the create responses
same!(offset_of!(b::mminfo, offset), l::MMINFO_OFFSET_OFF);
same!(offset_of!(b::mminfo, size), l::MMINFO_SIZE_OFF);
same!(size_of::<b::mminfo>(), l::MMINFO_SIZE);
same!(size_of::<b::rxe_create_cq_resp>(), l::CREATE_CQ_RESP_SIZE);
same!(size_of::<b::rxe_create_qp_resp>(), l::CREATE_QP_RESP_SIZE);
same!(size_of::<b::rxe_create_srq_resp>(), l::CREATE_SRQ_RESP_SIZE);
same!(size_of::<b::rxe_create_ah_resp>(), l::CREATE_AH_RESP_SIZE);
