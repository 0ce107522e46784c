// SPDX-License-Identifier: GPL-2.0
//! Receive WQEs: RNR NAKs and their retries, receivers that post slowly, SENDs placed into
//! receives taken ahead, the receive window, and shared receive queues.

use super::common::{exchange, exchange_from, post_write};
use super::*;
use rxe_sr::proto::rc::responder::SRQ_RECV_WINDOW;
use rxe_sr::proto::wire::ext_headers::AethKind;

#[test]
fn rnr_nak_then_retry_when_a_receive_is_posted() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
    )
    .unwrap();
    // No receive WQE: B answers RNR NAK; A waits and retries (rnr_retry 7 = forever).
    let mut out = vec![];
    let o = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    assert_eq!(o, Ok(()));
    let p = PacketRepr::parse(&out[0]).unwrap();
    let mut back = vec![];
    let o =
        n.b.with_env(1, &mut back, |_, r, c, e| r.on_request(e, c, &p));
    assert_eq!(o, Ok(()));
    assert_eq!(n.b.resp.counters.rnr_naks_sent, 1);
    n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 4096));
    // Deliver the RNR NAK, then let the timers and the link finish the job.
    let nak = PacketRepr::parse(&back[0]).unwrap();
    let mut out = vec![];
    let o =
        n.a.with_env(2, &mut out, |r, _, c, e| r.on_response(e, c, &nak));
    assert_eq!(o, Ok(()));
    assert!(out.is_empty(), "nothing is sent during the RNR delay");
    assert!(n.run(10_000));
    assert_eq!(n.a.req.counters.rnr_naks, 1);
    assert_eq!(n.b.recv_cqes.len(), 1);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::Success);
}

#[test]
fn rnr_retry_exceeded_is_reported() {
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.a.cfg.rnr_retry = 2;
    n.restart_a_requester(8, None);
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
    )
    .unwrap();
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
    )
    .unwrap();
    n.run(10_000);
    assert!(n.a.error);
    assert_eq!(n.a.send_cqes[0].status, WcStatus::RnrRetryExcErr);
    assert_eq!(n.a.req.counters.rnr_naks, 3);
}

#[test]
fn send_placed_by_msn_into_receive_wqes_taken_ahead() {
    // Reordering only: later SEND packets (of later messages) arrive before earlier ones and
    // are placed into their own receive WQEs; completions still come in posting order.
    for scheme in SR_SCHEMES {
        let link = Link {
            loss_ppm: 0,
            dup_ppm: 0,
            reorder_ppm: 200_000,
            seed: 5,
        };
        let mut n = Net::with_schemes(Service::Rc, 256, link, scheme, scheme);
        let len = 700usize;
        for i in 0..40u64 {
            let off = i as usize * 1024;
            n.a.mem.region(0x100)[off..off + len].copy_from_slice(&pattern(i as u8 ^ 0x5a, len));
            n.post(
                true,
                wqe(
                    SendOp::Send,
                    SendOpcode::Send,
                    0x100,
                    0x10_0000 + off as u64,
                    len as u32,
                ),
            )
            .unwrap();
            n.b.rq
                .push_back(recv_wqe(i, 0x100, 0x10_0000 + off as u64, 1024));
        }
        assert!(n.run(1_000_000), "{scheme:?} stalled");
        let ids: Vec<u64> = n.b.recv_cqes.iter().map(|c| c.wr_id).collect();
        assert_eq!(
            ids,
            (0..40).collect::<Vec<_>>(),
            "{scheme:?}: completions in order"
        );
        for i in 0..40usize {
            let off = i * 1024;
            assert!(
                n.b.mem.region(0x100)[off..off + len] == pattern(i as u8 ^ 0x5a, len)[..],
                "{scheme:?} SEND {i}"
            );
            assert_eq!(n.b.recv_cqes[i].byte_len as usize, len);
        }
        let rs = n.b.resp.sr().unwrap();
        assert!(
            rs.active() && rs.counters.ooo_placed > 0,
            "{scheme:?}: {:?}",
            rs.counters
        );
    }
}

#[test]
fn sr_sends_stay_inside_the_receive_window() {
    // 300 one-packet SENDs posted at once (a send queue deeper than the responder's window
    // of receive WQEs) under loss: the requester sends no message past the window (the
    // responder would drop it unrecorded, and SRNIC's requester, which resends only what
    // the responder names, would wait for its timeout), and every message arrives.
    for scheme in SR_SCHEMES {
        let link = Link {
            loss_ppm: 10_000,
            dup_ppm: 0,
            reorder_ppm: 0,
            seed: 21,
        };
        let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
        n.restart_a_requester(512, setup(scheme));
        let len = 200usize;
        for i in 0..300u64 {
            let off = i as usize * 256;
            n.a.mem.region(0x100)[off..off + len].copy_from_slice(&pattern(i as u8, len));
            n.post(
                true,
                wqe(
                    SendOp::Send,
                    SendOpcode::Send,
                    0x100,
                    0x10_0000 + off as u64,
                    len as u32,
                ),
            )
            .unwrap();
            n.b.rq
                .push_back(recv_wqe(i, 0x100, 0x10_0000 + off as u64, 256));
        }
        assert!(n.run(4_000_000), "{scheme:?} stalled");
        assert_eq!(n.b.recv_cqes.len(), 300, "{scheme:?}");
        for i in 0..300usize {
            let off = i * 256;
            assert!(
                n.b.mem.region(0x100)[off..off + len] == pattern(i as u8, len)[..],
                "{scheme:?}: SEND {i}"
            );
        }
        let rs = n.b.resp.sr().unwrap();
        assert!(rs.active(), "{scheme:?}");
        assert_eq!(rs.counters.window_full, 0, "{scheme:?}: {:?}", rs.counters);
    }
}

#[test]
fn a_receiver_that_posts_slowly_under_loss_does_not_exhaust_the_retries() {
    // ib_send_bw -r 2 at 1% loss: a stream of SENDs whose receiver has few receives posted
    // and posts the next one only now and then, so the requester meets RNR NAKs again and
    // again while packets are lost. RNR waits are IBTA's rnr_retry (7: for ever), not
    // retries: the QP must keep going.
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for seed in 1..=4u64 {
            let link = Link {
                loss_ppm: 10_000,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            // perftest's RNR timer (12: 0.64 ms), past the harness's 1 ms ACK timeout.
            n.b.cfg.min_rnr_timer = 12;
            let count = 16u64;
            for i in 0..count {
                n.post(
                    true,
                    wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 4096),
                )
                .unwrap();
                let w = Box::new(recv_wqe(i, 0x100, 0x10_0000 + i * 8192, 4096));
                if i < 2 {
                    n.b.rq.push_back(*w);
                } else {
                    // Several RNR NAKs for each receive posted.
                    n.b_events.push_back((1500 * i, SideEvent::PostRecv(w)));
                }
            }
            assert!(n.run(2_000_000), "{scheme:?} seed {seed}: stalled");
            let bad: Vec<_> =
                n.a.send_cqes
                    .iter()
                    .filter(|c| c.status != WcStatus::Success)
                    .collect();
            assert!(
                bad.is_empty(),
                "{scheme:?} seed {seed}: {:?}; {:?}",
                bad.first(),
                n.a.req.counters
            );
            assert_eq!(n.b.recv_cqes.len() as u64, count, "{scheme:?} seed {seed}");
        }
    }
}

/// An SR pair whose B takes its receives from an SRQ (a window of one), switched to the SR
/// format by one SEND.
fn srq_net(scheme: Scheme) -> Net {
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
    let epsn = n.b.resp.epsn();
    let sr = resp_sr(setup(scheme).unwrap(), epsn);
    n.b.resp = Responder::new(
        epsn,
        vec![None; MAX_RD_RES],
        Some(sr),
        vec![None; SRQ_RECV_WINDOW],
    );
    n.b.rq.push_back(recv_wqe(0, 0x100, 0x10_0000, 4096));
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
    )
    .unwrap();
    assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
    n
}

#[test]
fn on_a_shared_receive_queue_the_sr_responder_holds_one_receive_wqe() {
    for scheme in SR_SCHEMES {
        let mut n = srq_net(scheme);
        for i in 1..=3u64 {
            let src = 0x10_0000 + i * 0x1_0000;
            n.a.mem.region(0x100)[(src - 0x10_0000) as usize..][..2000]
                .copy_from_slice(&pattern(i as u8, 2000));
            n.post(true, wqe(SendOp::Send, SendOpcode::Send, 0x100, src, 2000))
                .unwrap();
            n.b.rq
                .push_back(recv_wqe(i, 0x100, 0x10_0000 + i * 0x1_0000, 4096));
        }
        let sent = n.send(true);
        assert_eq!(sent.len(), 6, "{scheme:?}");
        // The later messages arrive first: no receive WQE is taken for them.
        for p in &sent[2..] {
            n.deliver(true, p);
        }
        assert_eq!(
            n.b.rq.len(),
            3,
            "{scheme:?}: nothing taken ahead of the message due"
        );
        assert_eq!(n.b.resp.sr().unwrap().counters.window_full, 4, "{scheme:?}");
        exchange(&mut n, sent);
        assert!(n.run(100_000), "{scheme:?}");
        let ids: Vec<_> =
            n.b.recv_cqes
                .iter()
                .map(|c| (c.wr_id, c.status, c.byte_len))
                .collect();
        assert_eq!(
            ids[1..],
            [
                (1, WcStatus::Success, 2000),
                (2, WcStatus::Success, 2000),
                (3, WcStatus::Success, 2000)
            ],
            "{scheme:?}"
        );
        for i in 1..=3usize {
            assert_eq!(
                n.b.mem.region(0x100)[i * 0x1_0000..][..2000],
                pattern(i as u8, 2000)[..],
                "{scheme:?}"
            );
        }
    }
}

#[test]
fn a_send_dropped_past_rcv_nxt_for_want_of_a_receive_draws_its_rnr_nak_at_rcv_nxt() {
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.b.rq.push_back(recv_wqe(0, 0x100, 0x10_0000, 4096));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
        )
        .unwrap();
        assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
        // A WRITE, then a SEND that finds no receive WQE; the SEND arrives first.
        post_write(&mut n, 1024, 3);
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
        )
        .unwrap();
        let sent = n.send(true);
        assert_eq!(sent.len(), 2, "{scheme:?}");
        let send_psn = PacketRepr::parse(&sent[1]).unwrap().bth.psn;
        assert!(
            n.deliver(true, &sent[1]).is_empty(),
            "{scheme:?}: no NAK past RCV-NXT"
        );
        // The WRITE fills the gap: RCV-NXT reaches the SEND, whose RNR NAK goes now.
        let back = n.deliver(true, &sent[0]);
        let rnr = back
            .iter()
            .map(|b| PacketRepr::parse(b).unwrap())
            .find(|p| {
                p.ext
                    .aeth
                    .is_some_and(|a| matches!(a.kind(), AethKind::RnrNak { .. }))
            });
        assert_eq!(
            rnr.map(|p| p.bth.psn),
            Some(send_psn),
            "{scheme:?}: the RNR NAK at RCV-NXT"
        );
        n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 4096));
        exchange(&mut n, back);
        assert!(n.run(100_000), "{scheme:?}");
        assert_eq!(n.b.recv_cqes.len(), 2, "{scheme:?}");
        assert!(
            n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
            "{scheme:?}"
        );
    }
}

/// ib_send_bw -r 2: `count` SENDs of `len` bytes to a receiver with two receives posted,
/// each posted again `delay_us` after its completion, the receiver advertising SR window
/// `window_log2` (`None`: its own); returns the virtual time taken.
fn rnr_stream(
    scheme: Scheme,
    loss_ppm: u32,
    seed: u64,
    (count, len): (u64, u32),
    delay_us: u64,
    window_log2: Option<u8>,
) -> (u64, Net) {
    let link = Link {
        loss_ppm,
        dup_ppm: 0,
        reorder_ppm: 0,
        seed,
    };
    let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
    n.b_window_log2 = window_log2;
    n.b.cfg.min_rnr_timer = 12;
    let wqes: Vec<RecvWqe> = (0..2u64)
        .map(|i| recv_wqe(i, 0x100, 0x10_0000 + i * u64::from(len), len))
        .collect();
    for w in &wqes {
        n.b.rq.push_back(*w);
    }
    n.b_reposts = Some(Reposts {
        delay_us,
        seen: 0,
        due: VecDeque::new(),
        wqes,
    });
    let mut posted = 0;
    let mut rounds = 0;
    while n.a.send_cqes.len() < count as usize {
        while posted < count
            && n.post(
                true,
                wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, len),
            )
            .is_ok()
        {
            posted += 1;
        }
        rounds += 1;
        assert!(rounds < 10_000, "{scheme:?}: no progress");
        n.run(5_000_000);
    }
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{scheme:?}"
    );
    (n.now, n)
}

/// SR pair; B has one receive WQE and A posts two 4-packet SENDs: the second finds none.
/// Returns the net after B took every packet of the first burst, and B's answers.
fn second_send_without_a_receive(scheme: Scheme) -> (Net, Vec<Vec<u8>>) {
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
    n.b.cfg.min_rnr_timer = 12;
    post_write(&mut n, 1024, 1);
    assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
    n.b.rq.push_back(recv_wqe(0, 0x100, 0x10_0000, 4096));
    for _ in 0..2 {
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 4096),
        )
        .unwrap();
    }
    let sent = n.send(true);
    assert_eq!(sent.len(), 8, "{scheme:?}");
    let back: Vec<Vec<u8>> = sent.iter().flat_map(|p| n.deliver(true, p)).collect();
    assert_eq!(
        n.b.resp.counters.rnr_naks_sent, 1,
        "{scheme:?}: the RNR NAK at RCV-NXT"
    );
    (n, back)
}

#[test]
fn the_packets_resent_after_an_rnr_nak_draw_no_second_one() {
    // After the RNR NAK at the second SEND's first packet, the rest of it was dropped; the
    // requester goes back and sends all four again. Once the first is placed, RCV-NXT is
    // at one of those dropped: no RNR NAK for it, as its resend follows (one drew a
    // second RNR NAK and a second wait for each receive the requester met missing).
    for scheme in SR_SCHEMES {
        let (mut n, back) = second_send_without_a_receive(scheme);
        n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000 + 8192, 4096));
        exchange_from(&mut n, false, back);
        assert!(n.run(100_000), "{scheme:?}");
        assert_eq!(n.b.recv_cqes.len(), 2, "{scheme:?}");
        assert_eq!(
            n.b.resp.counters.rnr_naks_sent, 1,
            "{scheme:?}: a second RNR NAK"
        );
        assert!(
            n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
            "{scheme:?}"
        );
    }
}

#[test]
fn a_lost_rnr_nak_costs_a_few_probes_not_one_per_packet() {
    // Two 16-packet SENDs to a responder with one receive WQE: the RNR NAK at the second
    // SEND's first packet is lost with the first SEND's acknowledgment, and the rest of
    // the second SEND was dropped for want of a receive WQE; the requester, with all sent,
    // hears nothing. Its probes have the first SEND acknowledged and the second SEND's
    // first packet placed; the responder holds nothing after that one, so UNACK, one PSN
    // past the last probe, goes unanswered again, and the next probe goes back and sends
    // the rest, rather than one packet per probe. (The timeout is long, so that the
    // probes, not the timeout, find the loss.)
    let len = 16 * 1024;
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.a.cfg.timeout_us = 1_000_000;
        post_write(&mut n, 1024, 1);
        assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
        n.b.rq.push_back(recv_wqe(0, 0x100, 0x10_0000, len));
        for _ in 0..2 {
            n.post(
                true,
                wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, len),
            )
            .unwrap();
        }
        let sent = n.send(true);
        assert_eq!(sent.len(), 32, "{scheme:?}");
        let back: Vec<Vec<u8>> = sent.iter().flat_map(|p| n.deliver(true, p)).collect();
        assert_eq!(n.b.resp.counters.rnr_naks_sent, 1, "{scheme:?}");
        n.b.rq
            .push_back(recv_wqe(1, 0x100, 0x10_0000 + u64::from(len), len));
        let answers: Vec<Vec<u8>> = back
            .into_iter()
            .filter(|b| {
                !PacketRepr::parse(b)
                    .unwrap()
                    .ext
                    .aeth
                    .is_some_and(|a| matches!(a.kind(), AethKind::RnrNak { .. }))
            })
            .collect();
        exchange_from(&mut n, false, answers);
        assert!(n.run(10_000_000), "{scheme:?}");
        assert_eq!(n.b.recv_cqes.len(), 2, "{scheme:?}");
        // The WRITE that set up the SR format, and the two SENDs.
        assert_eq!(n.a.send_cqes.len(), 3, "{scheme:?}");
        assert!(
            n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
            "{scheme:?}"
        );
        assert_eq!(n.a.req.counters.timeouts, 0, "{scheme:?}");
        let probes = n.a.req.sr().unwrap().counters.stall_probes;
        assert!(probes <= 3, "{scheme:?}: {probes} stall probes");
    }
}

#[test]
fn a_receiver_that_posts_again_after_each_completion_gets_every_send_under_loss() {
    // ib_send_bw -r 2 at 1% loss, the receiver posting each receive again a while after
    // its completion: every SEND completes successfully and arrives once, in order.
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for seed in 1..=3 {
            let (_, n) = rnr_stream(scheme, 10_000, seed, (40, 16384), 300, None);
            let ids: Vec<u64> = n.b.recv_cqes.iter().map(|c| c.wr_id).collect();
            let want: Vec<u64> = (0..40).map(|i| i % 2).collect();
            assert_eq!(ids, want, "{scheme:?} seed {seed}");
            assert!(n
                .b
                .recv_cqes
                .iter()
                .all(|c| c.status == WcStatus::Success && c.byte_len == 16384));
        }
    }
}

#[test]
fn a_receiver_short_of_receives_under_loss_leaves_little_to_the_stall_probe() {
    // ib_send_bw -r 2 at 1% loss, 100 SENDs of 64 KiB: what the responder drops for want
    // of a receive WQE is reported by RNR NAKs at RCV-NXT, so the requester goes back
    // rather than finding each dropped packet by a stall probe of its own. Where the RNR
    // NAK was lost, or its go-back dropped again, the second probe answered by UNACK
    // moving one PSN goes back, instead of probing the rest one PSN at a time (which took
    // hundreds of probes). Toward a peer of this build (its window, with no device budget
    // in front of it) and one advertising 512 PSNs.
    for (scheme, window) in SR_SCHEMES
        .into_iter()
        .flat_map(|s| [(s, None), (s, Some(9))])
    {
        for seed in 1..=12 {
            let (_, n) = rnr_stream(scheme, 10_000, seed, (100, 65536), 300, window);
            let probes = n.a.req.sr().unwrap().counters.stall_probes;
            let at = format!("{scheme:?} window {window:?} seed {seed}");
            assert!(probes <= 6, "{at}: {probes} stall probes");
            assert_eq!(n.b.recv_cqes.len(), 100, "{at}");
        }
    }
}

#[test]
fn a_receive_taken_from_an_srq_and_unused_goes_back_to_it() {
    for scheme in SR_SCHEMES {
        let mut n = srq_net(scheme);
        // A 4 KiB SEND to a 1 KiB receive: its last packet comes first, takes the WQE
        // and is refused past RCV-NXT, placing nothing.
        n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 1024));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 4096),
        )
        .unwrap();
        let sent = n.send(true);
        assert_eq!(sent.len(), 4, "{scheme:?}");
        n.deliver(true, &sent[3]);
        assert!(
            n.b.rq.is_empty() && !n.b.error,
            "{scheme:?}: taken, nothing failed yet"
        );
        // The QP fails (or goes): the WQE goes back, with nothing flushed.
        let (mut flushed, mut back) = (vec![], vec![]);
        n.b.resp.drop_held(
            |id| flushed.push(id),
            |w| {
                back.push(w.wr_id);
                true
            },
        );
        assert_eq!((flushed, back), (vec![], vec![1]), "{scheme:?}");
    }
}

#[test]
fn a_receive_in_use_is_flushed_not_given_back() {
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.b.rq.push_back(recv_wqe(0, 0x100, 0x10_0000, 4096));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 100),
        )
        .unwrap();
        assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
        n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 4096));
        n.post(
            true,
            wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 4096),
        )
        .unwrap();
        let sent = n.send(true);
        n.deliver(true, &sent[2]);
        let (mut flushed, mut back) = (vec![], vec![]);
        n.b.resp.drop_held(
            |id| flushed.push(id),
            |w| {
                back.push(w.wr_id);
                true
            },
        );
        assert_eq!(
            (flushed, back),
            (vec![1], vec![]),
            "{scheme:?}: bytes of it were placed"
        );
    }
}
