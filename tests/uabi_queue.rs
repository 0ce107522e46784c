// SPDX-License-Identifier: GPL-2.0
//! The shared rings: layout constants against the uapi headers, index arithmetic, validation
//! of user-written indices, slot sizing as rdma_rxe does it, and fill/drain properties.

use proptest::prelude::*;
use proptest::test_runner::RngSeed;
use rxe_sr::uabi::layout::*;
use rxe_sr::uabi::queue::{
    cq_geometry, rq_geometry, sq_geometry, srq_geometry, FromClientQueue, QueueError,
    QueueGeometry, Ring, ToClientQueue, DEFAULT_CACHE_LINE_SIZE,
};

const CL: u32 = DEFAULT_CACHE_LINE_SIZE;

/// Sizes and offsets printed by gcc from the 6.12 uapi headers (offsetof/sizeof, x86_64).
#[test]
fn layout_matches_gcc_offsetof() {
    assert_eq!(QUEUE_HEADER_SIZE, 384);
    assert_eq!(
        (QUEUE_LOG2_ELEM_SIZE_OFF, QUEUE_INDEX_MASK_OFF, QUEUE_PRODUCER_INDEX_OFF),
        (0, 4, 128)
    );
    assert_eq!((QUEUE_CONSUMER_INDEX_OFF, QUEUE_DATA_OFF), (256, 384));
    assert_eq!(SEND_WR_SIZE, 144);
    assert_eq!(AV_SIZE, 88);
    assert_eq!(GLOBAL_ROUTE_SIZE, 24);
    assert_eq!(SEND_WQE_SIZE, 208);
    assert_eq!(SEND_WQE_DMA_OFF, 184);
    assert_eq!(SEND_WQE_DMA_DATA_OFF, 208);
    assert_eq!(SEND_WQE_DMA_NUM_SGE_OFF, 196);
    assert_eq!(SEND_WQE_WR_OPCODE_OFF, 12);
    assert_eq!(SEND_WR_UD_AV_OFF, 56);
    assert_eq!(SEND_WR_UD_AH_NUM_OFF, 36);
    assert_eq!(SEND_WR_MW_ACCESS_OFF, 52);
    assert_eq!(SEND_WR_ATOMIC_RKEY_OFF, 48);
    assert_eq!((SEND_WR_FLUSH_TYPE_OFF, SEND_WR_FLUSH_LEVEL_OFF), (40, 41));
    assert_eq!(SEND_WR_UD_AV_OFF + AV_SIZE, SEND_WR_SIZE);
    assert_eq!(DMA_INFO_SIZE, 24);
    assert_eq!(SEND_WQE_DMA_OFF + DMA_INFO_SIZE, SEND_WQE_SIZE);
    assert_eq!(RECV_WQE_SIZE, 40);
    assert_eq!(RECV_WQE_DMA_SGE_OFF, 40);
    assert_eq!(RECV_WQE_DMA_NUM_SGE_OFF, 28);
    assert_eq!(SGE_SIZE, 16);
    assert_eq!(UVERBS_WC_SIZE, 48);
    assert_eq!(UVERBS_WC_EX_OFF, 24);
    assert_eq!(UVERBS_WC_PKEY_INDEX_OFF, 40);
    assert_eq!(UVERBS_WC_PORT_NUM_OFF, 46);
    assert_eq!(RXE_CQE_SIZE, 72);
    assert_eq!(AV_SGID_ADDR_OFF + AV_SOCKADDR_SIZE, AV_DGID_ADDR_OFF);
    assert_eq!(AV_DGID_ADDR_OFF + AV_SOCKADDR_SIZE, AV_SIZE);
    assert_eq!(
        (CREATE_QP_RESP_SIZE, CREATE_SRQ_RESP_SIZE, CREATE_CQ_RESP_SIZE, CREATE_AH_RESP_SIZE),
        (32, 24, 16, 8)
    );
}

#[test]
fn ring_basics() {
    let r = Ring::new(3, 7).unwrap();
    assert_eq!(r.num_slots(), 8);
    assert_eq!(r.capacity(), 7);
    assert_eq!(r.index_mask(), 7);
    assert_eq!(r.elem_size(), 128);
    assert_eq!(r.buf_size(), 384 + 8 * 128);
    assert_eq!(r.next(7), 0);
    assert_eq!(r.count(2, 6), 4);
    assert!(r.is_empty(5, 5));
    assert!(r.is_full(4, 5));
    assert!(r.is_full(7, 0));
    assert!(!r.is_full(6, 0));
    assert_eq!(r.free(6, 0), 1);
    assert_eq!(r.slot_offset(0), Some(384));
    assert_eq!(r.slot_offset(3), Some(384 + 3 * 128));
    assert_eq!(r.slot_offset(11), Some(384 + 3 * 128), "masked");
    assert_eq!(r.slot_range(7), Some(384 + 7 * 128..384 + 8 * 128));
    assert_eq!(r.check_index(7), Ok(7));
    assert_eq!(r.check_index(8), Err(QueueError::IndexOutOfRange));
    assert_eq!(r.check_index(u32::MAX), Err(QueueError::IndexOutOfRange));
}

#[test]
fn ring_header_round_trip() {
    let r = Ring::new(4, 8).unwrap();
    let mut buf = vec![0u8; r.buf_size() as usize];
    r.write_header(&mut buf).unwrap();
    assert_eq!(&buf[0..4], &8u32.to_le_bytes());
    assert_eq!(&buf[4..8], &15u32.to_le_bytes());
    assert!(buf[8..384].iter().all(|&b| b == 0));
    assert_eq!(Ring::from_header_fields(8, 15), Some(r));
    assert_eq!(Ring::from_header_fields(8, 14), None, "not 2^n - 1");
    assert_eq!(Ring::from_header_fields(8, u32::MAX), None);
    assert_eq!(r.write_header(&mut [0u8; 383]), None);
}

#[test]
fn ring_refuses_buffers_over_u32() {
    assert!(Ring::new(32, 0).is_none());
    assert!(Ring::new(0, 32).is_none());
    assert!(Ring::new(31, 1).is_none());
    assert!(Ring::new(24, 8).is_none(), "2^32 bytes of slots");
    assert!(Ring::new(23, 8).is_some());
    let big = Ring::new(31, 0).unwrap();
    assert_eq!(big.num_slots(), 1 << 31);
    assert_eq!(big.slot_offset(u32::MAX), Some(384 + (1usize << 31) - 1));
}

#[test]
fn geometry_as_rxe_queue_init() {
    // num_slots = roundup_pow_of_two(num_elem + 1); slot >= cache line, power of two.
    let g = QueueGeometry::new(0, 40, CL).unwrap();
    assert_eq!((g.ring.num_slots(), g.num_elem, g.ring.elem_size()), (1, 0, 64));
    let g = QueueGeometry::new(1, 65, CL).unwrap();
    assert_eq!((g.ring.num_slots(), g.num_elem, g.ring.elem_size()), (2, 1, 128));
    let g = QueueGeometry::new(16, 208, CL).unwrap();
    assert_eq!((g.ring.num_slots(), g.num_elem, g.ring.elem_size()), (32, 31, 256));
    let g = QueueGeometry::new(15, 256, CL).unwrap();
    assert_eq!((g.ring.num_slots(), g.num_elem, g.ring.elem_size()), (16, 15, 256));
    assert_eq!(g.elem_size, 256);
    let g = QueueGeometry::new(3, 40, 128).unwrap();
    assert_eq!(g.ring.elem_size(), 128, "a bigger cache line pads more");
    assert!(QueueGeometry::new(u32::MAX, 64, CL).is_none());
    assert!(QueueGeometry::new(1 << 30, 64, CL).is_none(), "buffer over 4 GiB");
}

#[test]
fn sq_geometry_as_rxe_init_sq() {
    // ib_write_bw-like: 128 WRs, 1 SGE, 0 inline -> slot 208 + 16 -> 256, 256 slots.
    let sq = sq_geometry(128, 1, 0, CL).unwrap();
    assert_eq!((sq.max_wr, sq.max_sge, sq.max_inline), (255, 1, 16));
    assert_eq!(sq.queue.ring.elem_size(), 256);
    assert_eq!(sq.queue.elem_size, 224);
    // inline dominates: max(2 * 16, 220) = 220 -> max_sge = 13, slot 428 -> 512.
    let sq = sq_geometry(10, 2, 220, CL).unwrap();
    assert_eq!((sq.max_wr, sq.max_sge, sq.max_inline), (15, 13, 220));
    assert_eq!(sq.queue.ring.elem_size(), 512);
    // the device maxima: 32 SGEs = 512 inline bytes, slot 720 -> 1024.
    let sq = sq_geometry(1, 32, 512, CL).unwrap();
    assert_eq!((sq.max_sge, sq.max_inline, sq.queue.ring.elem_size()), (32, 512, 1024));
    assert!(sq_geometry(1, 33, 0, CL).is_none());
    assert!(sq_geometry(1, 0, 513, CL).is_none());
    let sq = sq_geometry(0, 0, 0, CL).unwrap();
    assert_eq!((sq.max_wr, sq.max_sge, sq.max_inline), (0, 0, 0));
}

#[test]
fn rq_srq_cq_geometry() {
    let rq = rq_geometry(100, 4, CL).unwrap();
    assert_eq!((rq.max_wr, rq.max_sge), (127, 4));
    assert_eq!(rq.queue.ring.elem_size(), 128); // 40 + 64 = 104 -> 128
    assert!(rq_geometry(1, 33, CL).is_none());
    let rq = rq_geometry(1, 0, CL).unwrap();
    assert_eq!(rq.queue.ring.elem_size(), 64);

    assert!(srq_geometry(0, 1, CL).is_none());
    assert!(srq_geometry(1, 28, CL).is_none());
    let srq = srq_geometry(1, 0, CL).unwrap();
    assert_eq!((srq.max_wr, srq.max_sge), (1, 1), "raised to the minimum SGE count");
    let srq = srq_geometry(1000, 27, CL).unwrap();
    assert_eq!((srq.max_wr, srq.max_sge, srq.queue.ring.elem_size()), (1023, 27, 512));

    assert!(cq_geometry(0, CL).is_none());
    let cq = cq_geometry(1, CL).unwrap();
    assert_eq!((cq.num_elem, cq.ring.elem_size()), (1, 128));
    let cq = cq_geometry(4096, CL).unwrap();
    assert_eq!((cq.num_elem, cq.ring.num_slots()), (8191, 8192));
}

#[test]
fn from_client_flow() {
    let ring = Ring::new(2, 6).unwrap(); // 4 slots, 3 usable
    let mut q = FromClientQueue::new(ring);
    assert!(q.is_empty());
    assert_eq!(q.head(), None);
    assert_eq!(q.advance_consumer(), None);
    assert_eq!(q.observe_producer(2), Ok(2));
    assert_eq!(q.head(), Some(0));
    assert_eq!(q.head_offset(), Some(384));
    assert_eq!(q.nth(1), Some(1));
    assert_eq!(q.nth(2), None);
    assert!(q.contains(0) && q.contains(1) && !q.contains(2) && !q.contains(3));
    assert!(!q.contains(4), "unmasked index");
    assert_eq!(q.advance_consumer(), Some(1));
    assert_eq!(q.consumer_index(), 1);
    assert_eq!(q.check_owned_index(1), Ok(()));
    assert_eq!(q.check_owned_index(0), Err(QueueError::OwnedIndexChanged));
    // fill to capacity: prod 0 with cons 1 = 3 queued
    assert_eq!(q.observe_producer(0), Ok(3));
    assert_eq!(q.nth(2), Some(3));
    // producing a 4th entry would wrap onto the consumer: refused, state kept
    assert_eq!(q.observe_producer(1), Err(QueueError::ProducerOverrun));
    assert_eq!(q.producer_index(), 0);
    // moving backwards: refused
    assert_eq!(q.observe_producer(3), Err(QueueError::ProducerOverrun));
    assert_eq!(q.observe_producer(7), Err(QueueError::IndexOutOfRange));
    assert_eq!(q.count(), 3);
    for expect in [2, 3, 0] {
        assert_eq!(q.advance_consumer(), Some(expect));
    }
    assert!(q.is_empty());
    assert_eq!(q.advance_consumer(), None);
}

/// Reset empties a ring: every queued entry is consumed at once and the next one
/// user space produces is the only one the kernel sees.
#[test]
fn discard_all_empties_a_ring_at_reset() {
    let ring = Ring::new(3, 6).unwrap(); // 8 slots
    let mut q = FromClientQueue::new(ring);
    assert_eq!(q.observe_producer(5), Ok(5));
    assert_eq!(q.advance_consumer(), Some(1));
    assert_eq!(q.discard_all(), 5);
    assert!(q.is_empty());
    assert_eq!((q.consumer_index(), q.head()), (5, None));
    assert_eq!(q.observe_producer(6), Ok(1));
    assert_eq!(q.head(), Some(5), "the entry posted after the reset, not one before it");
    // Wrapping: producer behind the consumer numerically.
    assert_eq!(q.observe_producer(2), Ok(5));
    assert_eq!(q.discard_all(), 2);
    assert_eq!(q.count(), 0);
}

#[test]
fn to_client_flow() {
    let ring = Ring::new(2, 7).unwrap(); // 4 slots, 3 usable
    let mut q = ToClientQueue::new(ring);
    assert_eq!(q.tail(), Some(0));
    assert_eq!(q.tail_offset(), Some(384));
    for expect in [1, 2, 3] {
        assert_eq!(q.advance_producer(), Some(expect));
    }
    assert!(q.is_full());
    assert_eq!(q.tail(), None);
    assert_eq!(q.advance_producer(), None, "CQ overrun: nothing written");
    assert_eq!(q.producer_index(), 3);
    assert_eq!(q.check_owned_index(3), Ok(()));
    assert_eq!(q.check_owned_index(2), Err(QueueError::OwnedIndexChanged));
    // the user consumes two
    assert_eq!(q.observe_consumer(2), Ok(1));
    assert!(!q.is_full());
    // consumer moving backwards or past the producer is refused
    assert_eq!(q.observe_consumer(1), Err(QueueError::ConsumerOverrun));
    assert_eq!(q.observe_consumer(0), Err(QueueError::ConsumerOverrun));
    assert_eq!(q.observe_consumer(9), Err(QueueError::IndexOutOfRange));
    assert_eq!(q.consumer_index(), 2);
    assert_eq!(q.observe_consumer(3), Ok(0));
    assert_eq!(q.tail(), Some(3));
    assert_eq!(q.advance_producer(), Some(0));
    assert_eq!(q.tail_offset(), Some(384));
}

#[test]
fn resumed_queues_and_copy_bounds() {
    let ring = Ring::new(3, 8).unwrap();
    let q = FromClientQueue::with_indices(ring, 0, 5).unwrap();
    assert_eq!((q.count(), q.head(), q.nth(4)), (5, Some(0), Some(4)));
    assert!(FromClientQueue::with_indices(ring, 8, 0).is_none());
    assert!(FromClientQueue::with_indices(ring, 0, 8).is_none());
    let c = ToClientQueue::with_indices(ring, 7, 0).unwrap();
    assert!(c.is_full());
    assert!(ToClientQueue::with_indices(ring, 9, 0).is_none());
    // the copy buffers the kernel needs for the used part of any slot
    use rxe_sr::uabi::limits::{MAX_RECV_WQE_BYTES, MAX_SEND_WQE_BYTES};
    assert_eq!(sq_geometry(1, 32, 512, CL).unwrap().queue.elem_size as usize, MAX_SEND_WQE_BYTES);
    assert_eq!(rq_geometry(1, 32, CL).unwrap().queue.elem_size as usize, MAX_RECV_WQE_BYTES);
}

#[derive(Debug, Clone)]
enum Step {
    /// User posts n entries (honest, stops at full).
    Post(u8),
    /// Kernel consumes n entries.
    Consume(u8),
    /// User writes a hostile producer index.
    Hostile(u32),
}

fn step() -> impl Strategy<Value = Step> {
    prop_oneof![
        (0u8..8).prop_map(Step::Post),
        (0u8..8).prop_map(Step::Consume),
        any::<u32>().prop_map(Step::Hostile),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, rng_seed: RngSeed::Fixed(0x0AB1_0001), ..ProptestConfig::default() })]

    /// Any index, masked or not, yields a slot inside the buffer.
    #[test]
    fn slot_offsets_stay_in_buffer(log2_slots in 0u32..12, log2_elem in 0u32..12, idx in any::<u32>()) {
        let r = Ring::new(log2_slots, log2_elem).unwrap();
        let range = r.slot_range(idx).unwrap();
        prop_assert!(range.start >= 384);
        prop_assert!(range.end <= r.buf_size() as usize);
        prop_assert_eq!(range.len(), r.elem_size() as usize);
        prop_assert!(r.count(idx, idx.wrapping_mul(7)) <= r.capacity());
        prop_assert_eq!(r.check_index(idx).is_ok(), idx <= r.index_mask());
    }

    /// Ring::new never panics, and whatever it accepts fits in a u32 mapping.
    #[test]
    fn ring_new_total(a in any::<u32>(), b in any::<u32>()) {
        if let Some(r) = Ring::new(a, b) {
            prop_assert!(u64::from(r.num_slots()) * u64::from(r.elem_size()) + 384 <= u64::from(u32::MAX));
        }
        if let Some(g) = QueueGeometry::new(a, b, CL) {
            prop_assert!(g.num_elem >= a);
            prop_assert!(g.ring.elem_size() >= b.max(CL));
        }
        let _ = sq_geometry(a, b % 40, a % 600, CL);
        let _ = rq_geometry(a, b % 40, CL);
        let _ = srq_geometry(a, b % 40, CL);
        let _ = cq_geometry(a, CL);
    }

    /// Honest and hostile producers against the kernel consumer: the queued count never
    /// exceeds capacity (one slot stays empty), the head is always a queued, in-range slot,
    /// and every honestly posted entry is consumed exactly once, in order.
    #[test]
    fn fill_drain(log2_slots in 0u32..6, steps in proptest::collection::vec(step(), 0..64)) {
        let ring = Ring::new(log2_slots, 6).unwrap();
        let mut q = FromClientQueue::new(ring);
        let mut user_prod = 0u32;          // the user's own producer index
        let mut posted = 0u64;             // sequence numbers of posted entries
        let mut consumed = 0u64;
        for s in steps {
            match s {
                Step::Post(n) => {
                    for _ in 0..n {
                        // rdma-core's queue_full() against the published consumer index
                        if ring.is_full(user_prod, q.consumer_index()) { break; }
                        user_prod = ring.next(user_prod);
                        posted += 1;
                    }
                    let c = q.observe_producer(user_prod).unwrap();
                    prop_assert_eq!(u64::from(c), posted - consumed);
                }
                Step::Consume(n) => {
                    for _ in 0..n {
                        let head = q.head();
                        match q.advance_consumer() {
                            Some(_) => { prop_assert!(head.is_some()); consumed += 1; }
                            None => { prop_assert!(head.is_none()); break; }
                        }
                    }
                }
                Step::Hostile(v) => {
                    let before = q;
                    match q.observe_producer(v) {
                        Ok(_) => {
                            // accepted: a forward move within capacity; resync the model
                            user_prod = v;
                            posted = consumed + u64::from(q.count());
                        }
                        Err(_) => prop_assert_eq!(q, before),
                    }
                }
            }
            prop_assert!(q.count() <= ring.capacity());
            prop_assert!(consumed <= posted);
            if let Some(h) = q.head() {
                prop_assert!(h <= ring.index_mask());
                prop_assert!(q.contains(h));
            }
        }
    }

    /// The CQ side: the kernel never produces into a full queue, whatever the consumer does.
    #[test]
    fn cq_never_overruns(log2_slots in 0u32..6, ops in proptest::collection::vec((any::<bool>(), any::<u32>()), 0..64)) {
        let ring = Ring::new(log2_slots, 7).unwrap();
        let mut q = ToClientQueue::new(ring);
        for (produce, v) in ops {
            if produce {
                let was_full = q.is_full();
                let r = q.advance_producer();
                prop_assert_eq!(r.is_none(), was_full);
            } else {
                let before = q;
                if q.observe_consumer(v).is_err() {
                    prop_assert_eq!(q, before);
                }
            }
            prop_assert!(q.count() <= ring.capacity());
            if let Some(t) = q.tail() {
                prop_assert!(t <= ring.index_mask());
            }
        }
    }
}

#[test]
fn fifo_wraps_refuses_when_full_and_drains_in_order() {
    use rxe_sr::uabi::Fifo;
    let mut f = Fifo::new(vec![0u32; 3]);
    assert!(f.is_empty() && f.pop().is_none() && f.peek().is_none());
    f.push(8).unwrap();
    assert_eq!((f.peek(), f.len(), f.pop()), (Some(8), 1, Some(8)));
    for round in 0..5u32 {
        for i in 0..3 {
            f.push(round * 10 + i).unwrap();
        }
        assert!(f.is_full());
        assert_eq!(f.push(99), Err(99));
        assert_eq!(f.pop(), Some(round * 10));
        f.push(round * 10 + 3).unwrap();
        assert_eq!((f.pop(), f.pop(), f.pop(), f.pop()), (Some(round * 10 + 1), Some(round * 10 + 2), Some(round * 10 + 3), None));
    }
    let mut a = Fifo::new(vec![0u32; 4]);
    for i in 1..=4 {
        a.push(i).unwrap();
    }
    a.pop();
    a.push(5).unwrap();
    let mut small = Fifo::new(vec![0u32; 3]);
    assert_eq!(a.drain_into(&mut small), 3);
    assert_eq!((small.pop(), small.pop(), small.pop()), (Some(2), Some(3), Some(4)));
    assert_eq!((a.len(), a.pop()), (1, Some(5)));
    let mut empty = Fifo::new(Vec::<u32>::new());
    assert_eq!(empty.push(1), Err(1));
}
