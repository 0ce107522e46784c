// SPDX-License-Identifier: GPL-2.0
//! Byte offsets and sizes of the rdma_rxe user-ABI structs, for x86_64.
//!
//! Source of truth: `include/uapi/rdma/rdma_user_rxe.h` and `include/uapi/rdma/ib_user_verbs.h`
//! (Linux 6.12). Offsets are from the start of the named struct unless the name says otherwise
//! (`SEND_WQE_*` and `RECV_WQE_*` offsets are from the start of the WQE, i.e. of a queue slot).
//! The kernel build statically asserts these against bindgen's layouts of the same structs.
//! All multi-byte fields are little-endian (host order) except the `__be32` immediate data.

// ---------------------------------------------------------------------------------------------
// struct rxe_queue_buf: the header at the start of every mmapped queue.

/// `rxe_queue_buf.log2_elem_size` (`__u32`): log2 of the slot size in bytes.
pub const QUEUE_LOG2_ELEM_SIZE_OFF: usize = 0;
/// `rxe_queue_buf.index_mask` (`__u32`): number of slots - 1 (slots are a power of two).
pub const QUEUE_INDEX_MASK_OFF: usize = 4;
/// `rxe_queue_buf.producer_index` (`__u32`), alone in its 128-byte block.
pub const QUEUE_PRODUCER_INDEX_OFF: usize = 128;
/// `rxe_queue_buf.consumer_index` (`__u32`), alone in its 128-byte block.
pub const QUEUE_CONSUMER_INDEX_OFF: usize = 256;
/// `rxe_queue_buf.data[]`: offset of slot 0.
pub const QUEUE_DATA_OFF: usize = 384;
/// `sizeof(struct rxe_queue_buf)`: the header size (equal to the offset of `data[]`).
pub const QUEUE_HEADER_SIZE: usize = 384;

// ---------------------------------------------------------------------------------------------
// struct rxe_sge (same layout as struct ib_sge / struct ibv_sge).

/// `rxe_sge.addr` (`__aligned_u64`).
pub const SGE_ADDR_OFF: usize = 0;
/// `rxe_sge.length` (`__u32`).
pub const SGE_LENGTH_OFF: usize = 8;
/// `rxe_sge.lkey` (`__u32`).
pub const SGE_LKEY_OFF: usize = 12;
/// `sizeof(struct rxe_sge)` (= `sizeof(struct ib_sge)`, used by rdma_rxe's slot sizing).
pub const SGE_SIZE: usize = 16;

// ---------------------------------------------------------------------------------------------
// struct rxe_send_wr (offsets from the start of the struct).

/// `rxe_send_wr.wr_id` (`__aligned_u64`).
pub const SEND_WR_WR_ID_OFF: usize = 0;
/// `rxe_send_wr.reserved` (`__u32`; was `num_sge` in old providers, unused now).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const SEND_WR_RESERVED_OFF: usize = 8;
/// `rxe_send_wr.opcode` (`__u32`, `enum ib_uverbs_wr_opcode`).
pub const SEND_WR_OPCODE_OFF: usize = 12;
/// `rxe_send_wr.send_flags` (`__u32`, `IB_SEND_*`).
pub const SEND_WR_SEND_FLAGS_OFF: usize = 16;
/// `rxe_send_wr.ex` union: `imm_data` (`__be32`) or `invalidate_rkey` (`__u32`).
pub const SEND_WR_EX_OFF: usize = 20;
/// `rxe_send_wr.wr`: the per-opcode union.
pub const SEND_WR_UNION_OFF: usize = 24;
/// `rxe_send_wr.wr.flush.remote_addr` (`__aligned_u64`).
pub const SEND_WR_FLUSH_REMOTE_ADDR_OFF: usize = 24;
/// `rxe_send_wr.wr.flush.length` (`__u32`; rdma-core passes the length in `dma.length`).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const SEND_WR_FLUSH_LENGTH_OFF: usize = 32;
/// `rxe_send_wr.wr.flush.rkey` (`__u32`).
pub const SEND_WR_FLUSH_RKEY_OFF: usize = 36;
/// `rxe_send_wr.wr.flush.type` (`__u8`, placement type).
pub const SEND_WR_FLUSH_TYPE_OFF: usize = 40;
/// `rxe_send_wr.wr.flush.level` (`__u8`, selectivity level).
pub const SEND_WR_FLUSH_LEVEL_OFF: usize = 41;
/// `rxe_send_wr.wr.rdma.remote_addr` (`__aligned_u64`).
pub const SEND_WR_RDMA_REMOTE_ADDR_OFF: usize = 24;
/// `rxe_send_wr.wr.rdma.rkey` (`__u32`).
pub const SEND_WR_RDMA_RKEY_OFF: usize = 32;
/// `rxe_send_wr.wr.atomic.remote_addr` (`__aligned_u64`).
pub const SEND_WR_ATOMIC_REMOTE_ADDR_OFF: usize = 24;
/// `rxe_send_wr.wr.atomic.compare_add` (`__aligned_u64`).
pub const SEND_WR_ATOMIC_COMPARE_ADD_OFF: usize = 32;
/// `rxe_send_wr.wr.atomic.swap` (`__aligned_u64`).
pub const SEND_WR_ATOMIC_SWAP_OFF: usize = 40;
/// `rxe_send_wr.wr.atomic.rkey` (`__u32`).
pub const SEND_WR_ATOMIC_RKEY_OFF: usize = 48;
/// `rxe_send_wr.wr.ud.remote_qpn` (`__u32`).
pub const SEND_WR_UD_REMOTE_QPN_OFF: usize = 24;
/// `rxe_send_wr.wr.ud.remote_qkey` (`__u32`).
pub const SEND_WR_UD_REMOTE_QKEY_OFF: usize = 28;
/// `rxe_send_wr.wr.ud.pkey_index` (`__u16`).
pub const SEND_WR_UD_PKEY_INDEX_OFF: usize = 32;
/// `rxe_send_wr.wr.ud.ah_num` (`__u32`; 0 means "AV embedded in `wr.ud.av`", old providers).
pub const SEND_WR_UD_AH_NUM_OFF: usize = 36;
/// `rxe_send_wr.wr.ud.av` (`struct rxe_av`).
pub const SEND_WR_UD_AV_OFF: usize = 56;
/// `rxe_send_wr.wr.mw.addr` (`__aligned_u64`).
pub const SEND_WR_MW_ADDR_OFF: usize = 24;
/// `rxe_send_wr.wr.mw.length` (`__aligned_u64`).
pub const SEND_WR_MW_LENGTH_OFF: usize = 32;
/// `rxe_send_wr.wr.mw.mr_lkey` (`__u32`).
pub const SEND_WR_MW_MR_LKEY_OFF: usize = 40;
/// `rxe_send_wr.wr.mw.mw_rkey` (`__u32`).
pub const SEND_WR_MW_MW_RKEY_OFF: usize = 44;
/// `rxe_send_wr.wr.mw.rkey` (`__u32`, the new rkey).
pub const SEND_WR_MW_RKEY_OFF: usize = 48;
/// `rxe_send_wr.wr.mw.access` (`__u32`, `IB_UVERBS_ACCESS_*`).
pub const SEND_WR_MW_ACCESS_OFF: usize = 52;
/// `sizeof(struct rxe_send_wr)`.
pub const SEND_WR_SIZE: usize = 144;

// ---------------------------------------------------------------------------------------------
// struct rxe_av (and struct rxe_global_route inside it).

/// `rxe_av.port_num` (`__u8`).
pub const AV_PORT_NUM_OFF: usize = 0;
/// `rxe_av.network_type` (`__u8`, `RXE_NETWORK_TYPE_*`).
pub const AV_NETWORK_TYPE_OFF: usize = 1;
/// `rxe_av.dmac` (`__u8[6]`).
pub const AV_DMAC_OFF: usize = 2;
/// `rxe_av.grh` (`struct rxe_global_route`).
pub const AV_GRH_OFF: usize = 8;
/// `rxe_av.grh.dgid` (`union rxe_gid`, 16 bytes).
pub const AV_GRH_DGID_OFF: usize = 8;
/// `rxe_av.grh.flow_label` (`__u32`).
pub const AV_GRH_FLOW_LABEL_OFF: usize = 24;
/// `rxe_av.grh.sgid_index` (`__u8`).
pub const AV_GRH_SGID_INDEX_OFF: usize = 28;
/// `rxe_av.grh.hop_limit` (`__u8`).
pub const AV_GRH_HOP_LIMIT_OFF: usize = 29;
/// `rxe_av.grh.traffic_class` (`__u8`).
pub const AV_GRH_TRAFFIC_CLASS_OFF: usize = 30;
/// `rxe_av.sgid_addr` (union of `sockaddr_in` / `sockaddr_in6`, 28 bytes).
pub const AV_SGID_ADDR_OFF: usize = 32;
/// `rxe_av.dgid_addr` (union of `sockaddr_in` / `sockaddr_in6`, 28 bytes).
pub const AV_DGID_ADDR_OFF: usize = 60;
/// Size of the `sgid_addr` / `dgid_addr` union (`sizeof(struct sockaddr_in6)`).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const AV_SOCKADDR_SIZE: usize = 28;
/// `sockaddr_in.sin_addr` offset inside the sockaddr union.
pub const SOCKADDR_IN_ADDR_OFF: usize = 4;
/// `sockaddr_in6.sin6_addr` offset inside the sockaddr union.
pub const SOCKADDR_IN6_ADDR_OFF: usize = 8;
/// `sizeof(struct rxe_global_route)`.
pub const GLOBAL_ROUTE_SIZE: usize = 24;
/// `sizeof(struct rxe_av)`.
pub const AV_SIZE: usize = 88;

// ---------------------------------------------------------------------------------------------
// struct rxe_dma_info (offsets from the start of the struct).

/// `rxe_dma_info.length` (`__u32`): total message length (inline: the inline byte count).
pub const DMA_LENGTH_OFF: usize = 0;
/// `rxe_dma_info.resid` (`__u32`): kernel scratch in rdma_rxe.
pub const DMA_RESID_OFF: usize = 4;
/// `rxe_dma_info.cur_sge` (`__u32`): kernel scratch in rdma_rxe.
pub const DMA_CUR_SGE_OFF: usize = 8;
/// `rxe_dma_info.num_sge` (`__u32`).
pub const DMA_NUM_SGE_OFF: usize = 12;
/// `rxe_dma_info.sge_offset` (`__u32`): kernel scratch in rdma_rxe.
pub const DMA_SGE_OFFSET_OFF: usize = 16;
/// `rxe_dma_info.reserved` (`__u32`).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const DMA_RESERVED_OFF: usize = 20;
/// `rxe_dma_info.{inline_data, atomic_wr, sge}[]`: the flexible array union.
pub const DMA_DATA_OFF: usize = 24;
/// `sizeof(struct rxe_dma_info)` (without the flexible array).
pub const DMA_INFO_SIZE: usize = 24;

// ---------------------------------------------------------------------------------------------
// struct rxe_send_wqe: one send-queue slot (offsets from the start of the slot).

/// `rxe_send_wqe.wr` (`struct rxe_send_wr`).
pub const SEND_WQE_WR_OFF: usize = 0;
/// `rxe_send_wqe.wr.wr_id`.
pub const SEND_WQE_WR_ID_OFF: usize = SEND_WQE_WR_OFF + SEND_WR_WR_ID_OFF;
/// `rxe_send_wqe.wr.opcode`.
pub const SEND_WQE_WR_OPCODE_OFF: usize = SEND_WQE_WR_OFF + SEND_WR_OPCODE_OFF;
/// `rxe_send_wqe.wr.send_flags`.
pub const SEND_WQE_WR_SEND_FLAGS_OFF: usize = SEND_WQE_WR_OFF + SEND_WR_SEND_FLAGS_OFF;
/// `rxe_send_wqe.wr.ex` (imm_data / invalidate_rkey).
pub const SEND_WQE_WR_EX_OFF: usize = SEND_WQE_WR_OFF + SEND_WR_EX_OFF;
/// `rxe_send_wqe.status` (`__u32`, kernel scratch).
pub const SEND_WQE_STATUS_OFF: usize = 144;
/// `rxe_send_wqe.state` (`__u32`, kernel scratch; rdma-core writes 0).
pub const SEND_WQE_STATE_OFF: usize = 148;
/// `rxe_send_wqe.iova` (`__aligned_u64`; rdma-core writes the remote address; not trusted).
pub const SEND_WQE_IOVA_OFF: usize = 152;
/// `rxe_send_wqe.mask` (`__u32`, kernel scratch).
pub const SEND_WQE_MASK_OFF: usize = 160;
/// `rxe_send_wqe.first_psn` (`__u32`, kernel scratch).
pub const SEND_WQE_FIRST_PSN_OFF: usize = 164;
/// `rxe_send_wqe.last_psn` (`__u32`, kernel scratch).
pub const SEND_WQE_LAST_PSN_OFF: usize = 168;
/// `rxe_send_wqe.ack_length` (`__u32`, kernel scratch).
pub const SEND_WQE_ACK_LENGTH_OFF: usize = 172;
/// `rxe_send_wqe.ssn` (`__u32`; rdma-core may write it; not trusted).
pub const SEND_WQE_SSN_OFF: usize = 176;
/// `rxe_send_wqe.has_rd_atomic` (`__u32`, kernel scratch).
pub const SEND_WQE_HAS_RD_ATOMIC_OFF: usize = 180;
/// `rxe_send_wqe.dma` (`struct rxe_dma_info`).
pub const SEND_WQE_DMA_OFF: usize = 184;
/// `rxe_send_wqe.dma.length`.
pub const SEND_WQE_DMA_LENGTH_OFF: usize = SEND_WQE_DMA_OFF + DMA_LENGTH_OFF;
/// `rxe_send_wqe.dma.num_sge`.
pub const SEND_WQE_DMA_NUM_SGE_OFF: usize = SEND_WQE_DMA_OFF + DMA_NUM_SGE_OFF;
/// `rxe_send_wqe.dma.{inline_data, atomic_wr, sge}[]`.
pub const SEND_WQE_DMA_DATA_OFF: usize = SEND_WQE_DMA_OFF + DMA_DATA_OFF;
/// `sizeof(struct rxe_send_wqe)` (without the flexible array).
pub const SEND_WQE_SIZE: usize = 208;

// ---------------------------------------------------------------------------------------------
// struct rxe_recv_wqe: one receive-queue / SRQ slot.

/// `rxe_recv_wqe.wr_id` (`__aligned_u64`).
pub const RECV_WQE_WR_ID_OFF: usize = 0;
/// `rxe_recv_wqe.reserved` (`__u32`; was `num_sge` in old providers).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const RECV_WQE_RESERVED_OFF: usize = 8;
/// `rxe_recv_wqe.padding` (`__u32`).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const RECV_WQE_PADDING_OFF: usize = 12;
/// `rxe_recv_wqe.dma` (`struct rxe_dma_info`).
pub const RECV_WQE_DMA_OFF: usize = 16;
/// `rxe_recv_wqe.dma.length`.
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const RECV_WQE_DMA_LENGTH_OFF: usize = RECV_WQE_DMA_OFF + DMA_LENGTH_OFF;
/// `rxe_recv_wqe.dma.num_sge`.
pub const RECV_WQE_DMA_NUM_SGE_OFF: usize = RECV_WQE_DMA_OFF + DMA_NUM_SGE_OFF;
/// `rxe_recv_wqe.dma.sge[]`.
pub const RECV_WQE_DMA_SGE_OFF: usize = RECV_WQE_DMA_OFF + DMA_DATA_OFF;
/// `sizeof(struct rxe_recv_wqe)` (without the flexible array).
pub const RECV_WQE_SIZE: usize = 40;

// ---------------------------------------------------------------------------------------------
// struct ib_uverbs_wc: what a user CQ slot holds (rdma-core memcpy()s it into struct ibv_wc).

/// `ib_uverbs_wc.wr_id` (`__aligned_u64`).
pub const UVERBS_WC_WR_ID_OFF: usize = 0;
/// `ib_uverbs_wc.status` (`__u32`, `enum ib_wc_status`).
pub const UVERBS_WC_STATUS_OFF: usize = 8;
/// `ib_uverbs_wc.opcode` (`__u32`, `enum ib_wc_opcode`).
pub const UVERBS_WC_OPCODE_OFF: usize = 12;
/// `ib_uverbs_wc.vendor_err` (`__u32`).
pub const UVERBS_WC_VENDOR_ERR_OFF: usize = 16;
/// `ib_uverbs_wc.byte_len` (`__u32`).
pub const UVERBS_WC_BYTE_LEN_OFF: usize = 20;
/// `ib_uverbs_wc.ex` union: `imm_data` (`__be32`) or `invalidate_rkey` (`__u32`).
pub const UVERBS_WC_EX_OFF: usize = 24;
/// `ib_uverbs_wc.qp_num` (`__u32`).
pub const UVERBS_WC_QP_NUM_OFF: usize = 28;
/// `ib_uverbs_wc.src_qp` (`__u32`).
pub const UVERBS_WC_SRC_QP_OFF: usize = 32;
/// `ib_uverbs_wc.wc_flags` (`__u32`, `IB_WC_*` flags).
pub const UVERBS_WC_WC_FLAGS_OFF: usize = 36;
/// `ib_uverbs_wc.pkey_index` (`__u16`).
pub const UVERBS_WC_PKEY_INDEX_OFF: usize = 40;
/// `ib_uverbs_wc.slid` (`__u16`).
pub const UVERBS_WC_SLID_OFF: usize = 42;
/// `ib_uverbs_wc.sl` (`__u8`).
pub const UVERBS_WC_SL_OFF: usize = 44;
/// `ib_uverbs_wc.dlid_path_bits` (`__u8`).
pub const UVERBS_WC_DLID_PATH_BITS_OFF: usize = 45;
/// `ib_uverbs_wc.port_num` (`__u8`).
pub const UVERBS_WC_PORT_NUM_OFF: usize = 46;
/// `ib_uverbs_wc.reserved` (`__u8`).
pub const UVERBS_WC_RESERVED_OFF: usize = 47;
/// `sizeof(struct ib_uverbs_wc)`.
pub const UVERBS_WC_SIZE: usize = 48;

/// `sizeof(struct rxe_cqe)` in rdma_rxe on x86_64: the union of `struct ib_wc` (72 bytes) and
/// `struct ib_uverbs_wc` (48). rdma_rxe sizes CQ slots from it (rounded up to 128 bytes).
pub const RXE_CQE_SIZE: usize = 72;

// ---------------------------------------------------------------------------------------------
// Driver udata structs (create responses and the modify-SRQ command).

/// `mminfo.offset` (`__aligned_u64`): the mmap offset to pass to mmap(2).
pub const MMINFO_OFFSET_OFF: usize = 0;
/// `mminfo.size` (`__u32`): the mapping size in bytes.
pub const MMINFO_SIZE_OFF: usize = 8;
/// `mminfo.pad` (`__u32`).
#[cfg_attr(
    MODULE,
    expect(dead_code, reason = "host-side API; the module does not use it yet")
)]
pub const MMINFO_PAD_OFF: usize = 12;
/// `sizeof(struct mminfo)`.
pub const MMINFO_SIZE: usize = 16;
/// `rxe_create_cq_resp.mi` (and `rxe_resize_cq_resp.mi`).
pub const CREATE_CQ_RESP_MI_OFF: usize = 0;
/// `sizeof(struct rxe_create_cq_resp)` (= `sizeof(struct rxe_resize_cq_resp)`).
pub const CREATE_CQ_RESP_SIZE: usize = 16;
/// `rxe_create_qp_resp.rq_mi`.
pub const CREATE_QP_RESP_RQ_MI_OFF: usize = 0;
/// `rxe_create_qp_resp.sq_mi`.
pub const CREATE_QP_RESP_SQ_MI_OFF: usize = 16;
/// `sizeof(struct rxe_create_qp_resp)`.
pub const CREATE_QP_RESP_SIZE: usize = 32;
/// `rxe_create_srq_resp.mi`.
pub const CREATE_SRQ_RESP_MI_OFF: usize = 0;
/// `rxe_create_srq_resp.srq_num` (`__u32`).
pub const CREATE_SRQ_RESP_SRQ_NUM_OFF: usize = 16;
/// `sizeof(struct rxe_create_srq_resp)`.
pub const CREATE_SRQ_RESP_SIZE: usize = 24;
/// `rxe_create_ah_resp.ah_num` (`__u32`).
pub const CREATE_AH_RESP_AH_NUM_OFF: usize = 0;
/// `sizeof(struct rxe_create_ah_resp)`.
pub const CREATE_AH_RESP_SIZE: usize = 8;
/// `rxe_modify_srq_cmd.mmap_info_addr` (`__aligned_u64`): user pointer to a `struct mminfo`.
pub const MODIFY_SRQ_CMD_MMAP_INFO_ADDR_OFF: usize = 0;
/// `sizeof(struct rxe_modify_srq_cmd)`.
pub const MODIFY_SRQ_CMD_SIZE: usize = 8;
