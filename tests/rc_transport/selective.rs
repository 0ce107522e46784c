// SPDX-License-Identifier: GPL-2.0
//! Selective retransmission of WRITE streams under the SR schemes: resends against losses,
//! lost resends found by SACKs and probes, SRNIC's and MELO's repairs, slow hosts.

use super::common::{
    finish_small_writes, post_small_writes, psn_of, stream_like_perftest, write_stream, writes_on,
};
use super::*;
use rxe_sr::proto::wire::caps::RequesterState;

#[test]
fn selective_schemes_resend_far_fewer_packets_than_go_back_n() {
    // Same links, same workload, side by side: the ratio is what is checked.
    let mut gbn = 0;
    let mut sr = [0u64; 4];
    let mut fasr_sacks = (0, 0);
    for seed in [3u64, 5, 7] {
        let link = Link {
            loss_ppm: 20_000,
            dup_ppm: 0,
            reorder_ppm: 0,
            seed,
        };
        gbn += write_stream(link, Scheme::Gbn).0;
        for (k, s) in SR_SCHEMES.into_iter().enumerate() {
            let (r, mut n) = write_stream(link, s);
            sr[k] += r;
            // FaSR's responder holds back the SACKs that only move sack-high (more than it
            // sends, with 8-packet messages whose last packet asks for an ACK, though not in
            // every run: it also SACKs duplicate resends, and none while lost-cnt
            // overflowed); IRN's requester needs every SACK.
            let c = n.b.resp.sr().expect("SR state").counters;
            match s {
                Scheme::Fasr => {
                    fasr_sacks = (
                        fasr_sacks.0 + c.sacks_sent,
                        fasr_sacks.1 + c.sacks_coalesced,
                    )
                }
                _ => assert_eq!(c.sacks_coalesced, 0, "{s:?}"),
            }
            assert_eq!(n.a.req.counters.retry_exceeded, 0);
            release_and_check_pools(&mut n);
        }
    }
    assert!(
        fasr_sacks.1 > fasr_sacks.0,
        "FaSR SACKs sent and held: {fasr_sacks:?}"
    );
    for (k, s) in SR_SCHEMES.into_iter().enumerate() {
        eprintln!("resent packets at 2% loss: gbn {gbn}, {s:?} {}", sr[k]);
        // MELO has no FNACK, and its responder drops the resends behind a lost one: a lost
        // resend is found by a probe, which resends every earlier resend not yet
        // acknowledged with it; the others repair lost resends selectively too.
        let factor = if s == Scheme::Melo { 2 } else { 4 };
        assert!(
            sr[k] * factor < gbn,
            "{s:?} resent {} vs go-back-N {gbn}",
            sr[k]
        );
    }
}

#[test]
fn aacks_are_counted_received_when_an_ack_passes_a_reported_hole() {
    // An ACK passing the hole at RCV-NXT that a SACK or hole list reported is an AACK
    // received (the hole was filled): none without loss, and about as many as the
    // responder sent with it (each is counted once, against the report that named it).
    for s in SR_SCHEMES {
        let (_, n) = write_stream(Link::CLEAN, s);
        let got = n.a.req.sr().expect("SR state").counters.aacks_rcvd;
        assert_eq!(got, 0, "{s:?}: AACKs received on a clean link");
        let (mut sent, mut rcvd, mut reports, mut lost) = (0, 0, 0, 0);
        for seed in [3u64, 5, 7] {
            let link = Link {
                loss_ppm: 20_000,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed,
            };
            let (_, n) = write_stream(link, s);
            let c = n.a.req.sr().expect("SR state").counters;
            rcvd += c.aacks_rcvd;
            reports += c.sacks_rcvd + c.holes_rcvd;
            sent += n.b.resp.sr().expect("SR state").counters.aacks_sent;
            lost += n.lost;
        }
        eprintln!(
            "{s:?} at 2% loss: AACKs sent {sent}, received {rcvd}; {reports} reports; {lost} lost"
        );
        assert!(
            rcvd > 0 && reports > 0,
            "{s:?}: {rcvd} AACKs received for {reports} reports"
        );
        assert!(
            rcvd <= sent + lost && 2 * rcvd >= sent,
            "{s:?}: {rcvd} AACKs received, {sent} sent, {lost} lost"
        );
    }
}

/// A QP of `scheme` in the SR format whose requester resent the hole at UNACK, and lost that
/// resend too; returns the net, the hole and the WRITEs posted.
fn hole_with_a_lost_resend(scheme: Scheme, timeout_us: u64) -> (Net, u32, u64) {
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
    n.a.cfg.timeout_us = timeout_us;
    let mut posted = 0;
    // On a clean link the QP settles on the SR format (and measures its round trip).
    post_small_writes(&mut n, &mut posted, 4);
    assert!(n.run(100_000));
    assert!(n
        .a
        .req
        .sr()
        .is_some_and(|s| matches!(s.state(), RequesterState::Sr(_))));
    // Eight one-packet WRITEs; the first is lost, the SACKs of the rest ask for it.
    post_small_writes(&mut n, &mut posted, 8);
    let sent = n.send(true);
    assert_eq!(sent.len(), 8);
    let hole = psn_of(&sent[0]);
    let sacks: Vec<_> = sent[1..].iter().flat_map(|p| n.deliver(true, p)).collect();
    let resent: Vec<_> = sacks.iter().flat_map(|f| n.deliver(false, f)).collect();
    assert!(
        resent.iter().any(|p| psn_of(p) == hole),
        "{scheme:?}: the hole was not resent"
    );
    // That resend is lost too.
    (n, hole, posted)
}

#[test]
fn a_lost_resend_of_the_hole_at_unack_goes_again_on_a_later_sack() {
    for scheme in [Scheme::Fasr, Scheme::Irn] {
        let (mut n, hole, mut posted) = hole_with_a_lost_resend(scheme, 1000);
        // Two new WRITEs go out after it; their SACKs show it lost.
        let timeouts = n.a.req.counters.timeouts;
        post_small_writes(&mut n, &mut posted, 2);
        let fresh = n.send(true);
        assert_eq!(fresh.len(), 2);
        let sacks: Vec<_> = fresh.iter().flat_map(|p| n.deliver(true, p)).collect();
        let again: Vec<_> = sacks.iter().flat_map(|f| n.deliver(false, f)).collect();
        assert!(
            again.iter().any(|p| psn_of(p) == hole),
            "{scheme:?}: the lost resend waits for a timeout"
        );
        assert_eq!(
            n.a.req.sr().expect("SR state").counters.lost_resends,
            1,
            "{scheme:?}"
        );
        // It arrives: everything completes, with no timeout.
        let acks: Vec<_> = again.iter().flat_map(|p| n.deliver(true, p)).collect();
        for f in &acks {
            n.deliver(false, f);
        }
        finish_small_writes(n, posted, timeouts);
    }
}

#[test]
fn a_lost_resend_with_nothing_after_it_goes_again_at_the_probe_deadline() {
    // The retransmission timeout is long (as perftest's 67 ms is to these round trips);
    // nothing is sent after the lost resend, so no SACK can show its loss: the probe
    // deadline (a bound on the measured round trip) resends it, spending no retry.
    for scheme in [Scheme::Fasr, Scheme::Irn] {
        let (n, _, posted) = hole_with_a_lost_resend(scheme, 1_000_000);
        let (timeouts, retries) = (n.a.req.counters.timeouts, n.a.req.counters.retries);
        let deadline = n.a.req.deadline().expect("a timer runs");
        assert!(
            deadline < n.now + 100_000,
            "{scheme:?}: the next deadline is the timeout's"
        );
        let start = n.now;
        let mut n = n;
        assert!(n.run(100_000), "{scheme:?} stalled");
        assert!(
            n.now - start < 100_000,
            "{scheme:?} waited {} us",
            n.now - start
        );
        assert_eq!(
            n.a.req.sr().expect("SR state").counters.lost_resends,
            1,
            "{scheme:?}"
        );
        assert_eq!(n.a.req.counters.retries, retries, "{scheme:?}");
        finish_small_writes(n, posted, timeouts);
    }
}

#[test]
fn a_lost_last_packet_goes_again_at_the_stall_probe_not_the_timeout() {
    // Tail loss: the last WRITE of a burst is lost and nothing follows it, so no SACK
    // shows the hole. UNACK stays unanswered for the probe bound after it last moved: it
    // is sent again then, spending no retry, long before the (1 s) timeout. The three
    // before the lost one went without AckReq (ACK_COALESCE_PKTS), so nothing acknowledged
    // them: the first probe resends UNACK, whose acknowledgment moves UNACK onto the lost
    // WRITE, and the second probe resends that.
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.a.cfg.timeout_us = 1_000_000;
        let mut posted = 0;
        post_small_writes(&mut n, &mut posted, 4);
        assert!(n.run(100_000));
        post_small_writes(&mut n, &mut posted, 4);
        let sent = n.send(true);
        assert_eq!(sent.len(), 4);
        let acks: Vec<_> = sent[..3].iter().flat_map(|p| n.deliver(true, p)).collect();
        for f in &acks {
            n.deliver(false, f);
        }
        let (retries, start) = (n.a.req.counters.retries, n.now);
        assert!(n.run(100_000), "{scheme:?} stalled");
        assert!(
            n.now - start < 100_000,
            "{scheme:?} waited {} us",
            n.now - start
        );
        assert_eq!(
            n.a.req.sr().expect("SR state").counters.stall_probes,
            2,
            "{scheme:?}"
        );
        assert_eq!(n.a.req.counters.retries, retries, "{scheme:?}");
        finish_small_writes(n, posted, 0);
    }
}

#[test]
fn srnic_names_a_lost_retransmission_again_instead_of_timing_out() {
    // A lost retransmission: SRNIC's requester resends only what the responder names, so
    // its software names again the holes a later retransmission overtook (once per ePSN);
    // left to the timeout, each such hole cost one. Side by side with IRN (which finds its
    // own lost retransmissions) over the same links.
    let timeouts = |scheme| -> (u64, u64) {
        (1u64..=8)
            .map(|seed| {
                let link = Link {
                    loss_ppm: 50_000,
                    dup_ppm: 0,
                    reorder_ppm: 0,
                    seed,
                };
                let n = write_stream(link, scheme).1;
                (n.a.req.counters.timeouts, n.lost_resends)
            })
            .fold((0, 0), |(t, l), (a, b)| (t + a, l + b))
    };
    let ((srnic, lost), (irn, irn_lost)) = (timeouts(Scheme::Srnic), timeouts(Scheme::Irn));
    eprintln!("SRNIC {srnic} timeouts for {lost} lost retransmissions, IRN {irn} for {irn_lost}");
    assert!(
        srnic * 2 <= irn * 3 + 4,
        "SRNIC {srnic} timeouts, IRN {irn}"
    );
    assert!(
        lost >= 8 && 4 * srnic <= lost,
        "SRNIC: {srnic} timeouts for {lost} lost retransmissions"
    );
}

#[test]
fn melo_goes_back_over_the_resends_its_responder_dropped_behind_a_lost_one() {
    // MELO's responder drops a resend for the middle of its bitmap (a hole other than
    // RCV.NXT, MELO 3.2.3): once the resend at RCV.NXT is lost, the resends of the later
    // holes go for nothing, and the paper's timeout goes back from the front. A probe that
    // resent UNACK alone left each later hole to a probe of its own once UNACK reached it
    // (318 probes over these seeds, and MELO took a third of go-back-N's time); a probe of
    // a resent UNACK now resends with it every earlier resend not yet acknowledged. Same
    // links, side by side with go-back-N.
    let (mut melo_us, mut gbn_us, mut probes) = (0, 0, 0);
    for seed in [3u64, 5, 8, 13, 21] {
        let (n, took) = stream_like_perftest(Scheme::Melo, false, 50_000, seed);
        let sr = n.a.req.sr().expect("SR state").counters;
        assert_eq!(n.a.req.counters.timeouts, 0, "seed {seed}: timeouts");
        probes += sr.stall_probes + sr.lost_resends;
        melo_us += took;
        gbn_us += stream_like_perftest(Scheme::Gbn, false, 50_000, seed).1;
    }
    eprintln!("WRITEs at 5% loss: MELO {melo_us} us ({probes} probes), go-back-N {gbn_us} us");
    assert!(probes < 50, "MELO: {probes} probes");
    assert!(
        melo_us * 10 < gbn_us,
        "MELO {melo_us} us vs go-back-N {gbn_us} us"
    );
}

#[test]
fn unsignaled_small_writes_complete_under_loss_without_a_timeout_in_sr_schemes() {
    // The QP sweep's workload (make bench): 4 KiB WRITEs, one in a hundred signalled (perftest's
    // completion moderation) and the last, in batches of 32, at 1% and 5% loss both ways
    // with the guests' 67 ms timeout. Every byte arrives, the signalled ones complete, and
    // no SR scheme waits for the retransmission timeout (go-back-N does: printed beside).
    for scheme in [
        Scheme::Gbn,
        Scheme::Fasr,
        Scheme::Srnic,
        Scheme::Irn,
        Scheme::Melo,
    ] {
        for loss_ppm in [10_000, 50_000] {
            let (mut worst, mut probes, mut timeouts) = (0, 0, 0);
            for seed in 0..300u64 {
                let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
                n.a.cfg.sig_all = false;
                n.a.cfg.timeout_us = 67_000;
                let op = SendOp::RdmaWrite {
                    remote: Remote {
                        addr: 0x20_0000,
                        rkey: 0x200,
                    },
                };
                n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
                    .unwrap();
                assert!(n.run(100_000));
                n.link = Link {
                    loss_ppm,
                    dup_ppm: 0,
                    reorder_ppm: 0,
                    seed: seed * 7919 + 3,
                };
                let len = 4096usize;
                n.a.mem.region(0x100)[..len * 32].copy_from_slice(&pattern(36, len * 32));
                let t0 = n.now;
                let mut k = 0u64;
                for _batch in 0..10 {
                    for j in 0..32u64 {
                        let off = j * 4096;
                        let op = SendOp::RdmaWrite {
                            remote: Remote {
                                addr: 0x20_0000 + off,
                                rkey: 0x200,
                            },
                        };
                        let mut w = wqe(
                            op,
                            SendOpcode::RdmaWrite,
                            0x100,
                            0x10_0000 + off,
                            len as u32,
                        );
                        if !(k % 100 == 99 || k == 319) {
                            w.flags = SendFlags::from_bits_truncate(0);
                        }
                        k += 1;
                        n.post(true, w).unwrap();
                    }
                    assert!(
                        n.run(4_000_000),
                        "{scheme:?} {loss_ppm} ppm seed {seed} stalled at {k}: {:?}",
                        n.a.req.retry_note
                    );
                }
                assert!(
                    !n.a.error,
                    "{scheme:?} {loss_ppm} ppm seed {seed}: {:?}",
                    n.a.req.retry_note
                );
                // The first WRITE and the four signalled ones.
                assert_eq!(
                    n.a.send_cqes.len(),
                    5,
                    "{scheme:?} {loss_ppm} ppm seed {seed}"
                );
                assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
                assert!(
                    n.b.mem.region(0x200)[..len * 32] == pattern(36, len * 32)[..],
                    "{scheme:?} seed {seed}: data"
                );
                worst = worst.max(n.now - t0);
                timeouts += n.a.req.counters.timeouts;
                probes += n.a.req.sr().map_or(0, |s| s.counters.stall_probes);
            }
            eprintln!("{scheme:?} at {loss_ppm} ppm: longest {worst} us, {timeouts} timeouts, {probes} stall probes");
            if scheme != Scheme::Gbn {
                assert_eq!(timeouts, 0, "{scheme:?} at {loss_ppm} ppm");
            }
        }
    }
}

/// Resends, resends of a PSN that had arrived, packets lost and timeouts of each SR scheme's
/// WRITE stream on a slow host (the wire stands still 15 ms after every 200 packets) at 5%
/// loss, summed over 11 seeds; `settle` as in [`writes_on`].
fn slow_host_writes(settle: bool) -> [[u64; 4]; 4] {
    let mut c = [[0u64; 4]; 4];
    for (k, scheme) in SR_SCHEMES.into_iter().enumerate() {
        for seed in 1..12u64 {
            let link = Link {
                loss_ppm: 50_000,
                dup_ppm: 0,
                reorder_ppm: 0,
                seed: seed * 7919,
            };
            let mut n = Net::with_schemes(Service::Rc, 1024, link, scheme, scheme);
            n.a.cfg.timeout_us = 67_000;
            n.pauses = Some((200, 15_000));
            let (r, n) = writes_on(n, link, scheme, settle);
            c[k][0] += r;
            c[k][1] += n.resent_arrived;
            c[k][2] += n.lost;
            c[k][3] += n.a.req.counters.timeouts;
        }
    }
    c
}

#[test]
fn sr_writes_on_a_slow_host_under_loss_do_not_resend_what_arrived() {
    // rc_verify at 5% loss with a busy responder: a loss probe firing at its bound that went
    // back over every PSN from UNACK to the last hole resent (hundreds, most of them
    // received) would outpace the responder's drops until both QPs died of retransmission
    // timeouts. A probe goes back over the earlier resends only, and its bound doubles while
    // probes meet silence. On the SR format from the first packet, the resends of PSNs that had arrived
    // (their SACK lost or late) stay a small share of the losses for FaSR and SRNIC, whose
    // SACK state names what arrived; IRN and MELO, the comparators, go back further on a
    // timeout or probe and get a looser bound.
    let c = slow_host_writes(true);
    eprintln!("slow host, 5% loss, SR format, {SR_SCHEMES:?}: [resent, resent after arriving, lost, timeouts] {c:?}");
    for (k, scheme) in SR_SCHEMES.into_iter().enumerate() {
        let [_, again, lost, timeouts] = c[k];
        let most = if matches!(scheme, Scheme::Fasr | Scheme::Srnic) {
            0.3
        } else {
            1.0
        };
        assert!(
            again as f64 <= most * lost as f64,
            "{scheme:?}: {again} resends of what arrived for {lost} lost"
        );
        assert!(timeouts < 11, "{scheme:?}: {timeouts} timeouts in 11 runs");
    }
    // From the first packet (standard format until the switch, where a standard responder
    // drops what follows a loss and go-back-N resends it): each scheme's resends stay
    // within a few per packet lost, and no QP lives on timeouts.
    let c = slow_host_writes(false);
    eprintln!("slow host, 5% loss, from the first packet, {SR_SCHEMES:?}: {c:?}");
    for (k, scheme) in SR_SCHEMES.into_iter().enumerate() {
        let [resent, _, lost, timeouts] = c[k];
        let most = if matches!(scheme, Scheme::Melo) {
            8.0
        } else {
            4.0
        };
        assert!(
            resent as f64 <= most * lost as f64,
            "{scheme:?}: {resent} resent for {lost} lost"
        );
        assert!(timeouts < 11, "{scheme:?}: {timeouts} timeouts in 11 runs");
    }
}
