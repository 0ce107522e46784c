// SPDX-License-Identifier: GPL-2.0
//! Compile-time proof that the pure `uabi` layout constants match the kernel's uapi headers
//! (rdma_user_rxe.h, ib_user_verbs.h) as bindgen sees them for this build: any drift fails
//! the module build.

use core::mem::{offset_of, size_of};

use crate::kx::bindings;
use crate::uabi::layout;

macro_rules! same {
    ($a:expr, $b:expr) => {
        const _: () = assert!($a == $b);
    };
}

// struct rxe_queue_buf
same!(
    offset_of!(bindings::rxe_queue_buf, log2_elem_size),
    layout::QUEUE_LOG2_ELEM_SIZE_OFF
);
same!(
    offset_of!(bindings::rxe_queue_buf, index_mask),
    layout::QUEUE_INDEX_MASK_OFF
);
same!(
    offset_of!(bindings::rxe_queue_buf, producer_index),
    layout::QUEUE_PRODUCER_INDEX_OFF
);
same!(
    offset_of!(bindings::rxe_queue_buf, consumer_index),
    layout::QUEUE_CONSUMER_INDEX_OFF
);
same!(
    offset_of!(bindings::rxe_queue_buf, data),
    layout::QUEUE_DATA_OFF
);
// struct rxe_sge
same!(offset_of!(bindings::rxe_sge, addr), layout::SGE_ADDR_OFF);
same!(
    offset_of!(bindings::rxe_sge, length),
    layout::SGE_LENGTH_OFF
);
same!(offset_of!(bindings::rxe_sge, lkey), layout::SGE_LKEY_OFF);
same!(size_of::<bindings::rxe_sge>(), layout::SGE_SIZE);
// struct rxe_send_wr
same!(
    offset_of!(bindings::rxe_send_wr, wr_id),
    layout::SEND_WR_WR_ID_OFF
);
same!(
    offset_of!(bindings::rxe_send_wr, opcode),
    layout::SEND_WR_OPCODE_OFF
);
same!(
    offset_of!(bindings::rxe_send_wr, send_flags),
    layout::SEND_WR_SEND_FLAGS_OFF
);
same!(
    offset_of!(bindings::rxe_send_wr, ex),
    layout::SEND_WR_EX_OFF
);
same!(
    offset_of!(bindings::rxe_send_wr, wr),
    layout::SEND_WR_UNION_OFF
);
same!(size_of::<bindings::rxe_send_wr>(), layout::SEND_WR_SIZE);
// struct rxe_av
same!(
    offset_of!(bindings::rxe_av, port_num),
    layout::AV_PORT_NUM_OFF
);
same!(
    offset_of!(bindings::rxe_av, network_type),
    layout::AV_NETWORK_TYPE_OFF
);
same!(offset_of!(bindings::rxe_av, dmac), layout::AV_DMAC_OFF);
same!(offset_of!(bindings::rxe_av, grh), layout::AV_GRH_OFF);
same!(
    offset_of!(bindings::rxe_av, sgid_addr),
    layout::AV_SGID_ADDR_OFF
);
same!(
    offset_of!(bindings::rxe_av, dgid_addr),
    layout::AV_DGID_ADDR_OFF
);
same!(size_of::<bindings::rxe_av>(), layout::AV_SIZE);
same!(
    size_of::<bindings::rxe_global_route>(),
    layout::GLOBAL_ROUTE_SIZE
);
// struct rxe_dma_info
same!(
    offset_of!(bindings::rxe_dma_info, length),
    layout::DMA_LENGTH_OFF
);
same!(
    offset_of!(bindings::rxe_dma_info, resid),
    layout::DMA_RESID_OFF
);
same!(
    offset_of!(bindings::rxe_dma_info, cur_sge),
    layout::DMA_CUR_SGE_OFF
);
same!(
    offset_of!(bindings::rxe_dma_info, num_sge),
    layout::DMA_NUM_SGE_OFF
);
same!(
    offset_of!(bindings::rxe_dma_info, sge_offset),
    layout::DMA_SGE_OFFSET_OFF
);
same!(size_of::<bindings::rxe_dma_info>(), layout::DMA_INFO_SIZE);
// struct rxe_send_wqe
same!(
    offset_of!(bindings::rxe_send_wqe, wr),
    layout::SEND_WQE_WR_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, status),
    layout::SEND_WQE_STATUS_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, state),
    layout::SEND_WQE_STATE_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, iova),
    layout::SEND_WQE_IOVA_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, mask),
    layout::SEND_WQE_MASK_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, first_psn),
    layout::SEND_WQE_FIRST_PSN_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, last_psn),
    layout::SEND_WQE_LAST_PSN_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, ack_length),
    layout::SEND_WQE_ACK_LENGTH_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, ssn),
    layout::SEND_WQE_SSN_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, has_rd_atomic),
    layout::SEND_WQE_HAS_RD_ATOMIC_OFF
);
same!(
    offset_of!(bindings::rxe_send_wqe, dma),
    layout::SEND_WQE_DMA_OFF
);
same!(size_of::<bindings::rxe_send_wqe>(), layout::SEND_WQE_SIZE);
// struct rxe_recv_wqe
same!(
    offset_of!(bindings::rxe_recv_wqe, wr_id),
    layout::RECV_WQE_WR_ID_OFF
);
same!(
    offset_of!(bindings::rxe_recv_wqe, dma),
    layout::RECV_WQE_DMA_OFF
);
same!(size_of::<bindings::rxe_recv_wqe>(), layout::RECV_WQE_SIZE);
// struct ib_uverbs_wc
same!(
    offset_of!(bindings::ib_uverbs_wc, wr_id),
    layout::UVERBS_WC_WR_ID_OFF
);
same!(
    offset_of!(bindings::ib_uverbs_wc, status),
    layout::UVERBS_WC_STATUS_OFF
);
same!(
    offset_of!(bindings::ib_uverbs_wc, opcode),
    layout::UVERBS_WC_OPCODE_OFF
);
same!(
    offset_of!(bindings::ib_uverbs_wc, byte_len),
    layout::UVERBS_WC_BYTE_LEN_OFF
);
same!(
    offset_of!(bindings::ib_uverbs_wc, qp_num),
    layout::UVERBS_WC_QP_NUM_OFF
);
same!(
    offset_of!(bindings::ib_uverbs_wc, wc_flags),
    layout::UVERBS_WC_WC_FLAGS_OFF
);
same!(
    offset_of!(bindings::ib_uverbs_wc, port_num),
    layout::UVERBS_WC_PORT_NUM_OFF
);
same!(size_of::<bindings::ib_uverbs_wc>(), layout::UVERBS_WC_SIZE);
// struct mminfo and the create responses
same!(
    offset_of!(bindings::mminfo, offset),
    layout::MMINFO_OFFSET_OFF
);
same!(offset_of!(bindings::mminfo, size), layout::MMINFO_SIZE_OFF);
same!(size_of::<bindings::mminfo>(), layout::MMINFO_SIZE);
same!(
    size_of::<bindings::rxe_create_cq_resp>(),
    layout::CREATE_CQ_RESP_SIZE
);
same!(
    size_of::<bindings::rxe_create_qp_resp>(),
    layout::CREATE_QP_RESP_SIZE
);
same!(
    size_of::<bindings::rxe_create_srq_resp>(),
    layout::CREATE_SRQ_RESP_SIZE
);
same!(
    size_of::<bindings::rxe_create_ah_resp>(),
    layout::CREATE_AH_RESP_SIZE
);
