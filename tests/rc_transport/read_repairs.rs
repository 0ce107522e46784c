// SPDX-License-Identifier: GPL-2.0
//! Lost READ responses in the SR format: the missing ones asked for again alone and without
//! waiting for the timeout, repairs served ahead of new responses and never twice.

use super::common::{post_read, psn_of, read_stream, stream_like_perftest};
use super::*;

#[test]
fn sr_reads_recover_a_lost_response_without_waiting_for_the_timeout() {
    // A lost READ response, seen by the responses after it, is asked for again at once in
    // the SR format, as go-back-N goes back at once: no more retransmission timeouts than
    // go-back-N, and far fewer timeouts than lost responses (a timeout is left for a loss
    // nothing follows, such as the last response of the stream). Same links, side by side.
    let timeouts = |scheme| -> (u64, u64) {
        [1u64, 2, 3, 4, 5, 6]
            .into_iter()
            .map(|seed| {
                let link = Link {
                    loss_ppm: 20_000,
                    dup_ppm: 0,
                    reorder_ppm: 0,
                    seed,
                };
                let n = read_stream(scheme, link, 40, 4096);
                (n.a.req.counters.timeouts, n.read_responses_lost)
            })
            .fold((0, 0), |(t, l), (a, b)| (t + a, l + b))
    };
    let (gbn, _) = timeouts(Scheme::Gbn);
    for scheme in SR_SCHEMES {
        let (t, lost) = timeouts(scheme);
        eprintln!(
            "{scheme:?}: {t} timeouts for {lost} READ responses lost (go-back-N: {gbn} timeouts)"
        );
        assert!(t <= gbn + 1, "{scheme:?}: {t} timeouts, go-back-N {gbn}");
        assert!(
            lost >= 8 && 4 * t <= lost,
            "{scheme:?}: {t} timeouts for {lost} READ responses lost"
        );
    }
}

/// 24 READs of 64 KiB from B into A (destinations cycling over 4 buffers), on a QP that
/// settled its format over a clean link first, then over `link`: every byte checked.
/// Returns the READ response packets B sent beyond the 24 x 64 needed, and those the link
/// lost.
fn settled_read_stream(scheme: Scheme, link: Link) -> (u64, u64) {
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
    let op = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
        .unwrap();
    assert!(n.run(100_000));
    n.link = link;
    let len = 65536usize;
    n.b.mem.region(0x100)[..len * 4].copy_from_slice(&pattern(33, len * 4));
    let before = n.read_responses;
    for i in 0..24u64 {
        let src = 0x10_0000 + (i % 4) * 0x1_0000;
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: src,
                rkey: 0x100,
            },
        };
        n.post(
            true,
            wqe(
                op,
                SendOpcode::RdmaRead,
                0x200,
                0x20_0000 + (i % 4) * 0x1_0000,
                len as u32,
            ),
        )
        .unwrap();
    }
    assert!(n.run(4_000_000), "{scheme:?} seed {} stalled", link.seed);
    assert_eq!(n.a.send_cqes.len(), 25, "{scheme:?}");
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{scheme:?}"
    );
    assert!(
        n.a.mem.region(0x200)[..len * 4] == pattern(33, len * 4)[..],
        "{scheme:?} seed {}: READ data",
        link.seed
    );
    (n.read_responses - before - 24 * 64, n.read_responses_lost)
}

#[test]
fn sr_reads_ask_again_only_for_the_missing_responses() {
    // Same READs, same lossy links, side by side. Going back costs a lost response the rest
    // of its READ and the READs after it; in the SR format the responses after a lost one
    // are kept and only the missing run is asked for again, so the responder sends about
    // one extra response per lost one (a lost request for a run, or a tail loss waiting for
    // the timeout, adds a few).
    let seeds = [3u64, 5, 8, 13, 21];
    let cost = |scheme| {
        seeds.iter().fold((0, 0), |(x, l), &seed| {
            let (extra, lost) = settled_read_stream(
                scheme,
                Link {
                    loss_ppm: 20_000,
                    dup_ppm: 0,
                    reorder_ppm: 0,
                    seed,
                },
            );
            (x + extra, l + lost)
        })
    };
    let (gbn_extra, gbn_lost) = cost(Scheme::Gbn);
    assert!(
        gbn_lost > 0 && gbn_extra > 8 * gbn_lost,
        "go-back-N: {gbn_extra} extra responses for {gbn_lost} lost"
    );
    for scheme in SR_SCHEMES {
        let (extra, lost) = cost(scheme);
        assert!(lost > 0, "{scheme:?}: the link lost no response");
        assert!(extra <= lost + lost / 4 + 4, "{scheme:?}: {extra} extra READ responses for {lost} lost (go-back-N: {gbn_extra} for {gbn_lost})");
    }
}

/// A QP pair of `scheme` settled on its format (one WRITE across a clean link).
fn settled(scheme: Scheme) -> Net {
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
    let op = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
        .unwrap();
    assert!(n.run(100_000));
    n
}

/// B's READ responses still to go out, batch by batch, onto `out`.
fn pump_b(n: &mut Net, out: &mut Vec<Vec<u8>>) {
    while n.b.resp.read_pending() {
        let o = n.b.with_env(n.now, out, |_, resp, cfg, env| {
            resp.pump(env, cfg, READ_BUDGET)
        });
        assert_eq!(o, Ok(()));
    }
}

#[test]
fn a_repair_read_is_served_ahead_of_a_new_reads_responses() {
    // SR format: READ R0 (8 responses) and READ R1 (256) go out; R0's 4th response is
    // lost, and the requester asks for it again while R1's responses are still going out
    // (one batch sent). The responder serves the repair at once, R1's stream set aside,
    // and then the rest of R1: the repair waits for no new READ's responses, none is sent
    // twice or dropped, and both READs complete with their data.
    let mut n = settled(Scheme::Fasr);
    n.b.mem.region(0x100)[..0x4_2000].copy_from_slice(&pattern(41, 0x4_2000));
    let (r0_len, r1_len) = (0x2000u32, 0x4_0000u32);
    let op = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x10_0000,
            rkey: 0x100,
        },
    };
    n.post(
        true,
        wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000, r0_len),
    )
    .unwrap();
    let op = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x10_2000,
            rkey: 0x100,
        },
    };
    n.post(
        true,
        wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_2000, r1_len),
    )
    .unwrap();
    let reqs = n.send(true);
    assert_eq!(reqs.len(), 2, "two READ requests");
    // B takes R0 (all 8 responses) and R1 (one batch: READ_BUDGET responses).
    let mut from_b = vec![];
    for r in &reqs {
        let p = PacketRepr::parse(r).unwrap();
        let o = n.b.with_env(n.now, &mut from_b, |_, resp, cfg, env| {
            resp.on_request(env, cfg, &p)
        });
        assert_eq!(o, Ok(()));
    }
    assert!(
        n.b.resp.read_pending(),
        "R1's responses are still going out"
    );
    assert_eq!(from_b.len() as u32, 8 + READ_BUDGET);
    let r0 = psn_of(&reqs[0]);
    let r1 = psn_of(&reqs[1]);
    // The 4th of R0 is lost; the rest reaches A, which asks for it again.
    let mut repairs = vec![];
    for b in from_b.iter().filter(|b| psn_of(b) != r0 + 3) {
        repairs.extend(n.deliver(false, b));
    }
    let repair: Vec<_> = repairs.iter().filter(|r| psn_of(r) == r0 + 3).collect();
    assert_eq!(repair.len(), 1, "one request for the missing response");
    // B serves it before anything more of R1.
    let p = PacketRepr::parse(repair[0]).unwrap();
    assert!(n.b.resp.repair_goes_ahead(&p));
    let mut now_out = vec![];
    let o = n.b.with_env(n.now, &mut now_out, |_, resp, cfg, env| {
        resp.on_request(env, cfg, &p)
    });
    assert_eq!(o, Ok(()));
    let psns: Vec<u32> = now_out.iter().map(|b| psn_of(b)).collect();
    assert_eq!(psns.first(), Some(&(r0 + 3)), "the repair first: {psns:?}");
    assert!(
        psns.iter().all(|&q| q == r0 + 3 || q >= r1 + READ_BUDGET),
        "no R1 response sent twice: {psns:?}"
    );
    // Then the rest of R1, once each.
    let mut rest = now_out;
    pump_b(&mut n, &mut rest);
    let r1_sent = from_b
        .iter()
        .chain(rest.iter())
        .filter(|b| psn_of(b) >= r1)
        .count() as u32;
    assert_eq!(r1_sent, r1_len / 1024, "each of R1's responses once");
    for b in &rest {
        n.deliver(false, b);
    }
    assert!(n.run(100_000));
    assert_eq!(n.a.send_cqes.len(), 3);
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{:?}",
        n.a.send_cqes
    );
    assert!(
        n.a.mem.region(0x200)[..0x4_2000] == pattern(41, 0x4_2000)[..],
        "READ data"
    );
}

#[test]
fn a_repair_of_responses_still_to_go_out_is_not_served_twice() {
    // SR format: READ R1 (256 responses) goes out one batch at a time. A responder slower
    // than the requester's probe bound draws a probe of UNACK, a repair of the rest of R1,
    // before the next batch: every response it asks for is still to be sent by R1's stream,
    // so it is dropped (counted), and each response goes out once. (Served, it preempted
    // the stream and the stream would send the same responses again: on a slow host the
    // next probe comes before they are out, and so on.)
    let mut n = settled(Scheme::Fasr);
    let r1_len = 0x4_0000u32;
    n.b.mem.region(0x100)[..r1_len as usize].copy_from_slice(&pattern(43, r1_len as usize));
    let op = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x10_0000,
            rkey: 0x100,
        },
    };
    n.post(
        true,
        wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000, r1_len),
    )
    .unwrap();
    let reqs = n.send(true);
    assert_eq!(reqs.len(), 1);
    let p = PacketRepr::parse(&reqs[0]).unwrap();
    let mut first_batch = vec![];
    let o = n.b.with_env(n.now, &mut first_batch, |_, resp, cfg, env| {
        resp.on_request(env, cfg, &p)
    });
    assert_eq!(o, Ok(()));
    assert_eq!(first_batch.len() as u32, READ_BUDGET);
    for b in &first_batch {
        assert!(n.deliver(false, b).is_empty());
    }
    // Nothing more for longer than the probe bound: A probes UNACK.
    let t = n.a.req.deadline().expect("a probe or the timeout is armed");
    n.now = t;
    let mut probe = vec![];
    let o =
        n.a.with_env(n.now, &mut probe, |req, _, cfg, env| req.on_timer(env, cfg));
    assert_eq!(o, Ok(()));
    assert_eq!(probe.len(), 1, "one repair");
    let r1 = psn_of(&reqs[0]);
    assert_eq!(psn_of(&probe[0]), r1 + READ_BUDGET, "for the rest of R1");
    let p = PacketRepr::parse(&probe[0]).unwrap();
    assert!(n.b.resp.repair_goes_ahead(&p));
    let mut out = vec![];
    let o = n.b.with_env(n.now, &mut out, |_, resp, cfg, env| {
        resp.on_request(env, cfg, &p)
    });
    assert_eq!(o, Ok(()));
    assert!(
        out.is_empty(),
        "nothing served for it: {} responses",
        out.len()
    );
    assert_eq!(n.b.resp.counters.repairs_redundant, 1);
    pump_b(&mut n, &mut out);
    assert_eq!(
        first_batch.len() + out.len(),
        (r1_len / 1024) as usize,
        "each response once"
    );
    for b in &out {
        n.deliver(false, b);
    }
    assert!(n.run(100_000));
    assert_eq!(n.a.send_cqes.len(), 2);
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{:?}",
        n.a.send_cqes
    );
    assert!(
        n.a.mem.region(0x200)[..r1_len as usize] == pattern(43, r1_len as usize)[..],
        "READ data"
    );
}

#[test]
fn sr_reads_under_loss_recover_without_the_retransmission_timeout() {
    // A lost READ request (with the sequence-error NAK its successors drew), a lost repair
    // of a run past UNACK, a lost last response: nothing after them shows the loss, and
    // each used to wait for the retransmission timeout.
    // UNACK unanswered for the probe bound, and each repair watched for it, are asked for
    // again at once: no timeout, and the READs take less than one.
    for scheme in SR_SCHEMES {
        let mut probes = 0;
        for loss_ppm in [20_000, 50_000] {
            for seed in [3u64, 5, 8, 13, 21] {
                let (n, took) = stream_like_perftest(scheme, true, loss_ppm, seed);
                let sr = n.a.req.sr().expect("SR state").counters;
                assert_eq!(
                    n.a.req.counters.timeouts, 0,
                    "{scheme:?} {loss_ppm} ppm seed {seed}: timeouts"
                );
                assert!(
                    took < 67_000,
                    "{scheme:?} {loss_ppm} ppm seed {seed}: {took} us"
                );
                probes += sr.stall_probes + sr.lost_resends;
            }
        }
        assert!(probes > 0, "{scheme:?}: no loss was found by a probe");
    }
}

#[test]
fn sr_reads_on_a_slow_lossless_host_are_not_asked_for_again_wholesale() {
    // Lossless, 100 READs of 64 KiB in flight (ib_read_bw): a pause of the responder longer
    // than the probe bound must not make the requester ask again for every READ without a
    // response yet (queued at the responder, not lost). Served twice, the queue would grow,
    // the next probes fire sooner than it drained, and the QP die of retransmission
    // timeouts. A probe on a lossless link may cost a duplicate run, never the whole window.
    for scheme in SR_SCHEMES {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.a.cfg.max_rd_atomic = 64;
        n.b.cfg.max_dest_rd_atomic = 64;
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
        let len = 65536usize;
        let data = pattern(35, len * 8);
        n.b.mem.region(0x100)[..len * 8].copy_from_slice(&data);
        n.pauses = Some((700, 12_000));
        let reads = 56u64;
        for i in 0..reads {
            post_read(&mut n, (i % 8) * 0x1_0000, len);
        }
        let before = n.read_responses;
        assert!(n.run(4_000_000), "{scheme:?} stalled");
        assert_eq!(n.a.send_cqes.len() as u64, reads + 1, "{scheme:?}");
        assert!(
            n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
            "{scheme:?}"
        );
        assert!(
            n.a.mem.region(0x200)[..len * 8] == data[..],
            "{scheme:?}: data"
        );
        let sr = n.a.req.sr().expect("SR state").counters;
        let responses = n.read_responses - before;
        let probes = sr.stall_probes + sr.lost_resends;
        eprintln!(
            "{scheme:?}: {responses} responses for {} needed, {probes} probes, {} resent, {} timeouts",
            reads * 64,
            n.a.req.counters.resent_pkts,
            n.a.req.counters.timeouts
        );
        assert_eq!(n.a.req.counters.timeouts, 0, "{scheme:?}: timeouts");
        assert!(
            responses <= reads * 64 + 64 * probes.max(1),
            "{scheme:?}: {responses} responses, {probes} probes"
        );
    }
}
