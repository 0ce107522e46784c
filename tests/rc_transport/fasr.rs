// SPDX-License-Identifier: GPL-2.0
//! FaSR's own rules: about one resend per loss and one FNACK per lost resend, its pipe (moved
//! by SACKs and READ responses), and held SACK runs.

use super::common::{
    post_sixteenth, post_small_writes, psn_of, stream_like_perftest, stream_of_writes,
};
use super::*;
use rxe_sr::proto::rc::{SR_DEFAULT_WINDOW_PSNS, SR_PIPE_PSNS};
use rxe_sr::proto::wire::caps::RequesterState;

/// What FaSR's WRITE streams over a FIFO link cost, summed over seeds.
#[derive(Default)]
struct StreamCost {
    /// Packets the link lost, both ways.
    lost: u64,
    /// Of them, resends.
    lost_resends: u64,
    /// Standard-format packets the responder dropped out of sequence (before the switch).
    dropped: u64,
    /// Packets resent.
    resent: u64,
    /// FNACKs sent.
    fnacks: u64,
}

/// FaSR's WRITE stream over a link losing `loss_ppm` both ways, for each seed; `settle` as
/// in [`stream_of_writes`].
fn fasr_streams(loss_ppm: u32, seeds: &[u64], settle: bool) -> StreamCost {
    let mut c = StreamCost::default();
    for &seed in seeds {
        let link = Link {
            loss_ppm,
            dup_ppm: 0,
            reorder_ppm: 0,
            seed,
        };
        let (resent, mut n) = stream_of_writes(link, Scheme::Fasr, settle);
        c.fnacks += n.b.resp.sr().expect("SR state").counters.fnacks_sent;
        c.dropped += n.b.resp.counters.seq_err;
        assert_eq!(n.a.req.counters.retry_exceeded, 0);
        release_and_check_pools(&mut n);
        c.lost += n.lost;
        c.lost_resends += n.lost_resends;
        c.resent += resent;
    }
    c
}

const FASR_SEEDS: [u64; 8] = [42, 7, 1234, 7919, 15838, 23757, 31676, 39595];

#[test]
fn fasr_resends_about_what_the_link_lost() {
    // Each packet the link loses (data, or the SACK that reported it) costs about one
    // resend, at 5% too where resends are lost: the responder keeps the resends behind a
    // lost one (the paper's FNACK discards them: 1.39 resends per loss here) and the
    // requester answers an FNACK with UNACK alone. SACKs held back by the responder must
    // not make the requester resend what arrived (it did, when the SACK after them
    // reported a new gap), nor may an FNACK send the requester's RTO action round again.
    for (loss, most) in [(10_000, 1.2), (50_000, 1.2)] {
        let c = fasr_streams(loss, &FASR_SEEDS, true);
        eprintln!(
            "FaSR at {loss} ppm loss: {} packets lost, {} resent",
            c.lost, c.resent
        );
        assert!(
            c.resent as f64 <= most * c.lost as f64,
            "{loss} ppm: {} resent for {} lost",
            c.resent,
            c.lost
        );
    }
    // From the QP's first packet, the standard-format packets before the switch to SR
    // (dropped by the standard responder after a loss) are resent too, but the SR-format
    // ones after them only if lost: a standard NAK is not a go-back over the SR window.
    let c = fasr_streams(10_000, &FASR_SEEDS, false);
    eprintln!(
        "FaSR at 1% loss from the first packet: {} lost, {} dropped out of sequence, {} resent",
        c.lost, c.dropped, c.resent
    );
    assert!(
        c.resent as f64 <= 1.5 * (c.lost + c.dropped) as f64,
        "{} resent for {} lost and {} dropped",
        c.resent,
        c.lost,
        c.dropped
    );
}

#[test]
fn fasr_sends_about_one_fnack_per_lost_resend() {
    // An FNACK says a resend was lost, and the requester answers one per new ACK: more
    // than one FNACK per lost resend, beyond a few in case one is lost, is feedback traffic
    // for nothing; far fewer would leave lost resends to the timeout.
    for settle in [false, true] {
        let c = fasr_streams(50_000, &FASR_SEEDS, settle);
        eprintln!(
            "FaSR at 5% loss (settled {settle}): {} resent, {} of them lost, {} FNACKs",
            c.resent, c.lost_resends, c.fnacks
        );
        assert!(c.lost_resends > 0);
        assert!(
            c.fnacks as f64 <= 1.75 * c.lost_resends as f64,
            "{} FNACKs for {} lost resends",
            c.fnacks,
            c.lost_resends
        );
        // And a lost resend is found by an FNACK, not left to the timeout: at least one
        // FNACK for every two (an FNACK may be lost, or the resend be the stream's last).
        assert!(
            2 * c.fnacks >= c.lost_resends,
            "{} FNACKs for {} lost resends",
            c.fnacks,
            c.lost_resends
        );
    }
}

#[test]
fn fasr_reads_are_bound_by_the_window_and_their_responses_move_the_pipe() {
    // FaSR's pipe holds back request packets that would queue in front of its resends; a
    // READ request is one small packet (its responses queue at the responder), so READs go
    // up to the SR window. Their responses show what got through, as SACKs do: with the
    // first response missing, the ones after it let the WRITEs behind the READs go past
    // the pipe measured from UNACK, while the missing response is asked for again.
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, Scheme::Fasr, Scheme::Fasr);
    n.a.cfg.max_rd_atomic = 16;
    n.restart_a_requester(1024, setup(Scheme::Fasr));
    let op = SendOp::RdmaWrite {
        remote: Remote {
            addr: 0x20_0000,
            rkey: 0x200,
        },
    };
    n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
        .unwrap();
    assert!(n.run(100_000));
    let una = n.a.req.una();
    for i in 0..4u64 {
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: 0x10_0000,
                rkey: 0x100,
            },
        };
        n.post(
            true,
            wqe(
                op,
                SendOpcode::RdmaRead,
                0x200,
                0x20_0000 + i * 0x1_0000,
                65536,
            ),
        )
        .unwrap();
    }
    // 200 one-packet WRITEs behind them.
    for i in 0..200u64 {
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000 + 0x8_0000 + i * 64,
                rkey: 0x200,
            },
        };
        n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, 64))
            .unwrap();
    }
    let first = n.send(true);
    assert_eq!(
        first.len(),
        4,
        "the READs, and no WRITE: the pipe is full at 256 PSNs"
    );
    let responses: Vec<_> = first.iter().flat_map(|p| n.deliver(true, p)).collect();
    assert_eq!(psn_of(&responses[0]), una.get());
    let mut more = vec![];
    for r in &responses[1..] {
        more.extend(n.deliver(false, r));
    }
    let psns: Vec<u32> = more.iter().map(|p| psn_of(p)).collect();
    assert!(
        psns.contains(&una.get()),
        "the missing response was asked for: {psns:?}"
    );
    let writes = psns
        .iter()
        .filter(|&&p| Psn::new(p).diff(una) >= 256)
        .count();
    assert_eq!(writes, 200, "the WRITEs went past the missing response");
    let mut wire: VecDeque<Vec<u8>> = more.into();
    while let Some(p) = wire.pop_front() {
        for r in n.deliver(true, &p) {
            wire.extend(n.deliver(false, &r));
        }
    }
    assert!(n.run(1_000_000));
    assert_eq!(n.a.send_cqes.len(), 205);
    assert_eq!(n.a.req.counters.timeouts, 0);
    // Eight READs of 64 PSNs fill the SR window: all go at once.
    for i in 0..8u64 {
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: 0x10_0000,
                rkey: 0x100,
            },
        };
        n.post(
            true,
            wqe(
                op,
                SendOpcode::RdmaRead,
                0x200,
                0x20_0000 + i * 0x1_0000,
                65536,
            ),
        )
        .unwrap();
    }
    assert_eq!(
        n.send(true).len(),
        8,
        "READs are bound by the window, not the pipe"
    );
}

#[test]
fn fasr_keeps_its_pipe_short_and_sends_on_past_a_hole_at_unack() {
    // FaSR's requester measures what it has in flight from the highest PSN a SACK reported
    // received, not from UNACK: with no feedback it sends the standard window, not the whole
    // SR window (a full SR window in flight is a long queue in front of every repair); SACKs
    // past a missing UNACK let it send on, within the SR window.
    let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, Scheme::Fasr, Scheme::Fasr);
    n.restart_a_requester(1024, setup(Scheme::Fasr));
    let mut posted = 0;
    post_small_writes(&mut n, &mut posted, 4);
    assert!(n.run(100_000));
    assert!(n
        .a
        .req
        .sr()
        .is_some_and(|s| matches!(s.state(), RequesterState::Sr(_))));
    post_small_writes(&mut n, &mut posted, 900);
    let first = n.send(true);
    assert_eq!(
        first.len(),
        SR_PIPE_PSNS as usize,
        "no feedback: the pipe, not the SR window"
    );
    // The first is lost; the rest arrive and are SACKed (one-packet WRITEs ask for an ACK).
    let hole = psn_of(&first[0]);
    let fb: Vec<_> = first[1..].iter().flat_map(|p| n.deliver(true, p)).collect();
    let mut more = vec![];
    for f in &fb {
        more.extend(n.deliver(false, f));
    }
    more.extend(n.send(true));
    let new: Vec<u32> = more
        .iter()
        .map(|p| psn_of(p))
        .filter(|&p| p != hole)
        .collect();
    assert_eq!(
        new.len(),
        SR_PIPE_PSNS as usize,
        "sent on past the hole: {}",
        new.len()
    );
    let high = new
        .iter()
        .map(|&p| Psn::new(p).diff(Psn::new(hole)))
        .max()
        .unwrap();
    assert!(high < SR_DEFAULT_WINDOW_PSNS as i32);
    assert!(
        more.iter().any(|p| psn_of(p) == hole),
        "the hole was resent"
    );
    // All of it arrives, and the rest runs to the end.
    let mut wire: VecDeque<Vec<u8>> = more.into();
    while let Some(p) = wire.pop_front() {
        for r in n.deliver(true, &p) {
            wire.extend(n.deliver(false, &r));
        }
    }
    assert!(n.run(1_000_000));
    assert_eq!(n.a.send_cqes.len(), posted as usize);
    assert_eq!(n.a.req.counters.timeouts, 0);
}

#[test]
fn fasr_without_a_pipe_sends_the_whole_sr_window() {
    // sr_pipe_psns=0: no pipe, the SR window from UNACK alone bounds what is in flight.
    // (PMTU 256: the 24 WRITEs of 64 KiB are 6144 PSNs, more than the window.)
    let mut n = Net::with_schemes(Service::Rc, 256, Link::CLEAN, Scheme::Fasr, Scheme::Fasr);
    n.restart_a_requester(
        1024,
        setup(Scheme::Fasr).map(|s| SrSetup { pipe_psns: 0, ..s }),
    );
    let mut posted = 0;
    // The switch to the SR format, then SR acknowledgments: the peer's window is known.
    for _ in 0..2 {
        post_small_writes(&mut n, &mut posted, 4);
        assert!(n.run(100_000));
    }
    assert_eq!(n.a.req.window(), SR_DEFAULT_WINDOW_PSNS);
    for i in 0..24 {
        post_sixteenth(&mut n, i % 16).unwrap();
        posted += 1;
    }
    assert_eq!(n.send(true).len(), SR_DEFAULT_WINDOW_PSNS as usize);
    assert!(n.run(1_000_000));
    assert_eq!(n.a.send_cqes.len(), posted as usize);
}

#[test]
fn fasr_does_not_resend_a_held_run_whose_sack_was_lost() {
    // 64 KiB WRITEs (64 packets a message, so the responder holds up to 63 SACKs into one):
    // when the SACK of a held run, sent just before a new gap's SACK, was lost, the
    // requester must not take the run for part of the gap and resend it: it was received.
    let (mut resent, mut lost) = (0, 0);
    for seed in [3u64, 5, 8, 13, 21, 34, 55, 89, 144, 233] {
        let (n, _) = stream_like_perftest(Scheme::Fasr, false, 50_000, seed);
        resent += n.a.req.counters.resent_pkts;
        lost += n.lost;
    }
    eprintln!("FaSR, 64 KiB WRITEs at 5% loss: {resent} resent for {lost} lost");
    assert!(resent * 10 <= lost * 11, "{resent} resent for {lost} lost");
}

#[test]
fn fasr_names_a_new_gap_in_one_sack() {
    // A gap after SACKs the responder held goes out as one GAP, which names where the gap
    // starts (the held run ended before it): no SACK of the held run goes ahead of it, and
    // the requester resends the gap alone. 64 KiB WRITEs at 5% loss, as perftest's.
    let (mut sacks, mut acks, mut resent, mut lost) = (0, 0, 0, 0);
    for seed in [3u64, 5, 8, 13, 21, 34, 55, 89, 144, 233] {
        let (n, _) = stream_like_perftest(Scheme::Fasr, false, 50_000, seed);
        let c = n.b.resp.sr().expect("SR responder").counters;
        sacks += c.sacks_sent;
        acks += c.acks_sent;
        resent += n.a.req.counters.resent_pkts;
        lost += n.lost;
    }
    eprintln!(
        "FaSR, 64 KiB WRITEs at 5% loss: {sacks} SACKs and {acks} ACKs for {lost} lost, {resent} resent"
    );
    assert!(sacks * 10 <= lost * 15, "{sacks} SACKs for {lost} lost");
    assert!(resent * 10 <= lost * 11, "{resent} resent for {lost} lost");
}
