// SPDX-License-Identifier: GPL-2.0
//! Requests that fail (remote access, length, local protection, retries exhausted, malformed
//! receives) and how the failed request and everything behind it complete.

use super::*;
use rxe_sr::proto::rc::requester::RetryCause;
use rxe_sr::proto::rc::responder::InProgress;

#[test]
fn remote_access_error_for_a_bad_rkey_or_missing_rights() {
    for (rkey, addr) in [
        (0x999, 0x20_0000),
        (0x300, 0x30_0000),
        (0x200, 0x20_0000 + (1 << 20) - 4),
    ] {
        let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
        let op = SendOp::RdmaWrite {
            remote: Remote { addr, rkey },
        };
        n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 100))
            .unwrap();
        n.run(10_000);
        assert!(n.a.error && n.b.error);
        assert_eq!(n.a.send_cqes[0].status, WcStatus::RemAccessErr);
    }
    // A READ from memory without remote read.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let op = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x30_0000,
            rkey: 0x300,
        },
    };
    n.post(true, wqe(op, SendOpcode::RdmaRead, 0x100, 0x10_0000, 100))
        .unwrap();
    n.run(10_000);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::RemAccessErr);
}

#[test]
fn send_longer_than_the_receive_buffer_fails_both_sides() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 3000),
    )
    .unwrap();
    n.b.rq.push_back(recv_wqe(5, 0x100, 0x10_0000, 2000));
    n.run(10_000);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::RemInvReqErr);
    assert_eq!(n.b.recv_cqes[0].status, WcStatus::LocLenErr);
    assert!(n.a.error && n.b.error);
    // The responder says why, for the kernel log: the second packet (SEND_MIDDLE, PSN 118)
    // overflowed the 2000-byte receive WQE of the SEND in progress.
    let f = n.b.resp.fatal.expect("a fatal note");
    assert_eq!(
        (f.opcode, f.payload_len, f.in_progress, f.out_of_sequence),
        (0x01, 1024, InProgress::Send, false)
    );
    assert_eq!((f.nak, f.status), (1, WcStatus::LocLenErr));
    assert_eq!(f.psn, Psn::new(118));
    assert!(n.a.resp.fatal.is_none());
}

#[test]
fn retry_exceeded_when_the_peer_is_gone() {
    let mut n = Net::new(
        Service::Rc,
        1024,
        Link {
            loss_ppm: 1_000_000,
            dup_ppm: 0,
            reorder_ppm: 0,
            seed: 3,
        },
    );
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
    )
    .unwrap();
    n.run(10_000);
    assert!(n.a.error);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::RetryExcErr);
    assert_eq!(
        n.a.req.counters.timeouts, 8,
        "the first try and retry_cnt = 7 retries"
    );
    // The note the kernel logs says where and why.
    let note = n.a.req.retry_note.expect("a note for the log");
    assert_eq!(
        (note.psn, note.opcode, note.cause),
        (Psn::new(117), SendOpcode::Send, RetryCause::Timeout)
    );
    assert_eq!((note.timeouts, note.engine), (8, "standard"));
}

#[test]
fn local_protection_error_for_a_bad_lkey() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x777, 0x10_0000, 100),
    )
    .unwrap();
    n.run(10_000);
    assert!(n.a.error);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::LocProtErr);
}

/// When a request fails fatally (here a remote access error on the first of
/// four), every request the requester holds completes, in order: the failed one with its
/// error, the rest with WR_FLUSH_ERR (a kernel consumer has no ring to flush them from).
/// Each is retired from the send queue once.
#[test]
fn a_fatal_nak_completes_every_request_behind_it_as_flushed() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let bad = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x30_0000,
            rkey: 0x300,
        },
    };
    n.post(true, wqe(bad, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 100))
        .unwrap();
    for i in 0..3u64 {
        let ok = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
        };
        n.post(
            true,
            wqe(ok, SendOpcode::RdmaWrite, 0x100, 0x10_0000 + i, 100),
        )
        .unwrap();
    }
    n.run(10_000);
    assert!(n.a.error);
    let st: Vec<_> = n.a.send_cqes.iter().map(|c| c.status).collect();
    assert_eq!(
        st,
        vec![
            WcStatus::RemAccessErr,
            WcStatus::WrFlushErr,
            WcStatus::WrFlushErr,
            WcStatus::WrFlushErr
        ]
    );
    let ids: Vec<_> = n.a.send_cqes.iter().map(|c| c.wr_id).collect();
    let want: Vec<_> = [0x10_0000u64, 0x10_0000, 0x10_0001, 0x10_0002]
        .iter()
        .map(|a| a ^ 100)
        .collect();
    assert_eq!(ids, want);
    assert_eq!(n.a.retired, 4);
    assert!(n.a.req.is_empty());
}

/// A QP moved to Error with requests in flight: `flush` completes each, in order,
/// with WR_FLUSH_ERR and the request's own wr_id, and leaves nothing behind.
#[test]
fn flush_completes_every_held_request_in_order() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    for i in 0..5u64 {
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
        };
        n.post(
            true,
            wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000 + i, 3000),
        )
        .unwrap();
    }
    let mut out = vec![];
    let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    assert!(!out.is_empty());
    let cfg = n.a.cfg;
    let mut got = vec![];
    n.a.req.flush(&cfg, |c| got.push(*c));
    assert_eq!(got.len(), 5);
    for (i, c) in got.iter().enumerate() {
        assert_eq!(
            (c.wr_id, c.status, c.qp_num),
            ((0x10_0000 + i as u64) ^ 3000, WcStatus::WrFlushErr, 17)
        );
    }
    assert!(n.a.req.is_empty());
    let mut again = vec![];
    n.a.req.flush(&cfg, |c| again.push(*c));
    assert!(again.is_empty());
}

#[test]
fn a_malformed_receive_wqe_fails_the_send_at_once_under_every_scheme() {
    // A receive WQE the kernel finds malformed when a SEND needs it (a hostile writer
    // garbled it in the ring after posting): the receive completes in error and the
    // requester's SEND with a NAK, promptly, in every scheme, and nothing is left to run.
    // (Found by verbs_hostile_rings' SRQ round under fasr: the failed requester kept its
    // stall probe armed, which fired for ever.)
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        // A first SEND with a good receive, so that the SR schemes have agreed on the format.
        n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 4096));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 512),
        )
        .unwrap();
        assert!(n.run(10_000), "{scheme:?}: the first SEND");
        assert_eq!(n.a.send_cqes.len(), 1, "{scheme:?}");
        n.b.rq
            .push_back(recv_wqe(2 | BAD_RECV, 0x100, 0x10_0000, 4096));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 512),
        )
        .unwrap();
        let t0 = n.now;
        let ok = n.run(10_000);
        assert!(
            ok,
            "{scheme:?}: stalled (a timer left armed fired for ever)"
        );
        let a: Vec<_> = n.a.send_cqes.iter().map(|c| c.status).collect();
        let b: Vec<_> =
            n.b.recv_cqes
                .iter()
                .map(|c| (c.wr_id & !BAD_RECV, c.status))
                .collect();
        assert_eq!(
            a,
            [WcStatus::Success, WcStatus::RemOpErr],
            "{scheme:?}: the requester's completions"
        );
        assert_eq!(
            b,
            [(1, WcStatus::Success), (2, WcStatus::LocLenErr)],
            "{scheme:?}: the responder's"
        );
        assert!(
            n.now - t0 < 1000,
            "{scheme:?}: took {} us (resent instead of NAKed?)",
            n.now - t0
        );
        assert_eq!(n.a.req.counters.timeouts, 0, "{scheme:?}");
    }
    // A WQE that parses but whose SGE's key is no MR's: the scatter fails. A responder that
    // acknowledged the packet before placing it would complete the SEND successfully at the
    // requester with its data never placed (the NAK that followed taken for a stale one).
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        for i in 0..5 {
            n.b.rq.push_back(recv_wqe(i, 0x100, 0x10_0000, 4096));
            n.post(
                true,
                wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 512),
            )
            .unwrap();
            assert!(n.run(10_000), "{scheme:?}: SEND {i}");
        }
        n.b.rq.push_back(recv_wqe(5, 0x999, 0x10_0000, 4096));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 512),
        )
        .unwrap();
        let t0 = n.now;
        assert!(n.run(10_000), "{scheme:?}: stalled after a bad SGE");
        let a: Vec<_> = n.a.send_cqes.iter().map(|c| c.status).collect();
        assert_eq!(a.len(), 6, "{scheme:?}: {a:?}");
        assert_eq!(a[5], WcStatus::RemOpErr, "{scheme:?}");
        assert!(n.now - t0 < 1000, "{scheme:?}: took {} us", n.now - t0);
        // The receive completes with the scatter's status (not left to the flush as
        // WR_FLUSH_ERR), after the five before it.
        let b: Vec<_> = n.b.recv_cqes.iter().map(|c| (c.wr_id, c.status)).collect();
        let mut want: Vec<_> = (0..5).map(|i| (i, WcStatus::Success)).collect();
        want.push((5, WcStatus::LocProtErr));
        assert_eq!(b, want, "{scheme:?}: the responder's completions");
    }
}

/// Receive completions in RQ order when a later message's receive WQE fails while an
/// earlier one is incomplete (SR: its middle packet lost, the later message placed out of
/// order): the earlier WQE is flushed first, then the failed one completes with its error,
/// then the flush of the rest. `bad` is the later WQE's: BAD_RECV (the kernel found it
/// malformed in the ring) or a bad lkey (its scatter fails).
#[test]
fn a_failed_receive_behind_a_hole_completes_in_rq_order() {
    for scheme in SR_SCHEMES {
        for (bad_wr, bad_lkey, status) in [
            (1 | BAD_RECV, 0x100, WcStatus::LocLenErr),
            (1, 0x999, WcStatus::LocProtErr),
        ] {
            let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
            // A first SEND, so that both ends use the SR format.
            n.b.rq.push_back(recv_wqe(100, 0x100, 0x10_0000, 4096));
            n.post(
                true,
                wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 512),
            )
            .unwrap();
            assert!(n.run(10_000), "{scheme:?}: the first SEND");
            n.b.rq.push_back(recv_wqe(0, 0x100, 0x10_0000, 4096));
            n.b.rq
                .push_back(recv_wqe(bad_wr, bad_lkey, 0x10_0000, 4096));
            n.b.rq.push_back(recv_wqe(2, 0x100, 0x10_0000, 4096));
            n.post(
                true,
                wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 3000),
            )
            .unwrap();
            n.post(
                true,
                wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 512),
            )
            .unwrap();
            let sent = n.send(true);
            assert_eq!(sent.len(), 4, "{scheme:?}: three packets and one");
            // The first message's middle packet is lost.
            for p in [&sent[0], &sent[2], &sent[3]] {
                n.deliver(true, p);
            }
            if status == WcStatus::LocProtErr {
                // The scatter failed past RCV-NXT: the packet is dropped (a NAK there would
                // acknowledge the lost one), and refused once RCV-NXT reaches its resend.
                assert!(!n.b.error, "{scheme:?}: no error past RCV-NXT");
                assert_eq!(n.b.resp.sr().unwrap().counters.early_refused, 1);
                n.deliver(true, &sent[1]);
                assert!(!n.b.error, "{scheme:?}: the hole filled");
                n.deliver(true, &sent[3]);
            }
            assert!(n.b.error, "{scheme:?}: the failed receive fails the QP");
            let mut got: Vec<_> = n.b.recv_cqes[1..]
                .iter()
                .map(|c| (c.wr_id & !BAD_RECV, c.status))
                .collect();
            n.b.resp.drop_held(
                |id| got.push((id & !BAD_RECV, WcStatus::WrFlushErr)),
                |_| false,
            );
            got.extend(n.b.rq.iter().map(|w| (w.wr_id, WcStatus::WrFlushErr)));
            // The first message completes when its hole is filled before the failure.
            let first = if status == WcStatus::LocProtErr {
                WcStatus::Success
            } else {
                WcStatus::WrFlushErr
            };
            assert_eq!(
                got,
                [(0, first), (1, status), (2, WcStatus::WrFlushErr)],
                "{scheme:?}: receive completions out of the RQ's order"
            );
        }
    }
}
