// SPDX-License-Identifier: GPL-2.0
//! What holds the requester back and when it asks for an acknowledgment: the window (in the
//! SR format the one its peer advertises) and the READ limit, AckReq coalescing, and the
//! device's in-flight budget.

use super::common::{
    exchange, exchange_from, finish_small_writes, finish_small_writes_checked, post_sixteenth,
    post_small_writes, post_write, psn_of,
};
use super::*;
use rxe_sr::proto::rc::dev_inflight::ADMIT_CHUNK_PSNS;
use rxe_sr::proto::rc::{MAX_UNACKED_PSNS, SR_ASSUMED_WINDOW_PSNS, SR_DEFAULT_WINDOW_PSNS};
use rxe_sr::proto::wire::caps::RequesterState;
use rxe_sr::proto::wire::ext_headers::Aeth;
use rxe_sr::proto::wire::sr_ext::{SrAckEth, SrAckKind};
use rxe_sr::proto::wire::{BthRepr, ExtHeaders, Opcode};

#[test]
fn the_window_and_read_limit_hold_back_the_requester() {
    let mut n = Net::new(Service::Rc, 256, Link::CLEAN);
    // 64 KiB at PMTU 256 = 256 packets: only 128 may be outstanding.
    n.b.rq.push_back(recv_wqe(1, 0x100, 0x10_0000, 1 << 17));
    n.post(
        true,
        wqe(SendOp::Send, SendOpcode::Send, 0x100, 0x10_0000, 65536),
    )
    .unwrap();
    let mut out = vec![];
    let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    assert_eq!(out.len(), 128);
    // Five READs with max_rd_atomic 4: four requests go out.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    for _ in 0..5 {
        let op = SendOp::RdmaRead {
            remote: Remote {
                addr: 0x10_0000,
                rkey: 0x100,
            },
        };
        n.post(true, wqe(op, SendOpcode::RdmaRead, 0x200, 0x20_0000, 16))
            .unwrap();
    }
    let mut out = vec![];
    let _ = n.a.with_env(0, &mut out, |r, _, c, e| r.run(e, c));
    assert_eq!(out.len(), 4);
    assert!(n.run(10_000));
    assert_eq!(n.a.send_cqes.len(), 5);
}

/// The PSNs of `sent` whose BTH asks for an acknowledgment.
fn ack_reqs(sent: &[Vec<u8>]) -> Vec<u32> {
    sent.iter()
        .map(|b| PacketRepr::parse(b).expect("valid packet"))
        .filter(|p| p.bth.ack_req)
        .map(|p| p.bth.psn.get())
        .collect()
}

#[test]
fn a_stream_of_small_writes_asks_for_an_acknowledgment_every_sixteen_packets() {
    // 64 one-packet WRITEs queued at once: the last packet of a message goes without
    // AckReq while the next follows it, so one in ACK_COALESCE_PKTS asks, and the last of
    // the stream always does (nothing after it would). rdma_rxe asks on every message.
    for scheme in [Scheme::Gbn, Scheme::Fasr] {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        let mut posted = 0;
        // On a clean link the QP settles (FaSR: on the SR format).
        post_small_writes(&mut n, &mut posted, 4);
        assert!(n.run(100_000));
        post_small_writes(&mut n, &mut posted, 64);
        let sent = n.send(true);
        assert_eq!(sent.len(), 64, "{scheme:?}");
        let first = psn_of(&sent[0]);
        let asks: Vec<u32> = ack_reqs(&sent)
            .iter()
            .map(|p| p.wrapping_sub(first))
            .collect();
        assert_eq!(asks, [15, 31, 47, 63], "{scheme:?}");
        // The responder acknowledges only those: four acknowledgments for 64 WRITEs.
        let acks: Vec<_> = sent.iter().flat_map(|p| n.deliver(true, p)).collect();
        assert_eq!(acks.len(), 4, "{scheme:?}");
        for f in &acks {
            n.deliver(false, f);
        }
        finish_small_writes(n, posted, 0);
    }
}

#[test]
fn a_message_asks_for_its_acknowledgment_when_a_read_or_the_queue_end_follows() {
    // A WRITE followed by a READ: the READ waits for nothing, but its request is no WRITE
    // or SEND the coalescing counts on, so the WRITE asks itself.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let mut posted = 0;
    post_small_writes(&mut n, &mut posted, 1);
    let op = SendOp::RdmaRead {
        remote: Remote {
            addr: 0x20_0000 + 0x8_0000,
            rkey: 0x200,
        },
    };
    n.post(
        true,
        wqe(op, SendOpcode::RdmaRead, 0x100, 0x10_0000 + 0x8_0000, 1024),
    )
    .unwrap();
    post_small_writes(&mut n, &mut posted, 2);
    let sent = n.send(true);
    assert_eq!(sent.len(), 4);
    let first = psn_of(&sent[0]);
    // The WRITE, the READ request and the last WRITE ask; the WRITE before it does not.
    let asks: Vec<u32> = ack_reqs(&sent)
        .iter()
        .map(|p| p.wrapping_sub(first))
        .collect();
    assert_eq!(asks, [0, 1, 3]);
    assert!(n.run(100_000), "stalled");
    assert_eq!(n.a.send_cqes.len(), 4);
    assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
}

#[test]
fn the_requester_runs_again_while_acknowledgments_are_due() {
    // A doorbell need not wake the QP's work while packets await their acknowledgment (its
    // arrival runs the requester) with a timer armed; once all are acknowledged it must.
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    let mut posted = 0;
    assert!(!n.a.req.runs_again(), "nothing sent yet");
    post_small_writes(&mut n, &mut posted, 3);
    assert!(!n.a.req.runs_again(), "posted, not sent");
    let sent = n.send(true);
    assert_eq!(sent.len(), 3);
    assert!(
        n.a.req.runs_again(),
        "three WRITEs await their acknowledgment"
    );
    // More posted meanwhile go out with the acknowledgment's run.
    post_small_writes(&mut n, &mut posted, 2);
    let acks: Vec<_> = sent.iter().flat_map(|p| n.deliver(true, p)).collect();
    assert_eq!(acks.len(), 1);
    let more = n.deliver(false, &acks[0]);
    assert_eq!(
        more.len(),
        2,
        "the acknowledgment's run sent what was posted meanwhile"
    );
    assert!(n.a.req.runs_again());
    let acks: Vec<_> = more.iter().flat_map(|p| n.deliver(true, p)).collect();
    for f in &acks {
        n.deliver(false, f);
    }
    assert!(
        !n.a.req.runs_again(),
        "everything acknowledged: a doorbell must wake the work"
    );
    finish_small_writes(n, posted, 0);
}

#[test]
fn the_in_flight_budget_stops_a_stream_and_asks_for_the_tail_it_sent() {
    // A's device admits messages while fewer than 10 PSNs are in flight across its QPs.
    // Of 64 one-packet WRITEs queued at once, 10 go; the 10th asks for its acknowledgment
    // (the 11th may not follow it), and that acknowledgment gives the room back and runs
    // the rest. With the tail left unasked, only a probe or the timeout would recover it.
    for scheme in [Scheme::Gbn, Scheme::Fasr] {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.a.inflight = Some(Inflight::new(10));
        let mut posted = 0;
        post_small_writes(&mut n, &mut posted, 4);
        assert!(n.run(100_000));
        assert_eq!(
            n.a.inflight.as_ref().unwrap().psns(),
            0,
            "{scheme:?}: all acknowledged"
        );
        post_small_writes(&mut n, &mut posted, 64);
        let sent = n.send(true);
        assert_eq!(sent.len(), 10, "{scheme:?}");
        let first = psn_of(&sent[0]);
        let asks: Vec<u32> = ack_reqs(&sent)
            .iter()
            .map(|p| p.wrapping_sub(first))
            .collect();
        assert_eq!(asks, [9], "{scheme:?}");
        assert_eq!(
            (n.a.held, n.a.inflight.as_ref().unwrap().psns()),
            (10, 10),
            "{scheme:?}"
        );
        assert!(n.a.req.counters.admit_waits >= 1, "{scheme:?}");
        // The acknowledgment of the tail runs the next ten, and so on.
        let acks: Vec<_> = sent.iter().flat_map(|p| n.deliver(true, p)).collect();
        assert_eq!(acks.len(), 1, "{scheme:?}");
        let next = n.deliver(false, &acks[0]);
        assert_eq!(next.len(), 10, "{scheme:?}");
        let first = psn_of(&next[0]);
        let asks: Vec<u32> = ack_reqs(&next)
            .iter()
            .map(|p| p.wrapping_sub(first))
            .collect();
        assert_eq!(asks, [9], "{scheme:?}");
        exchange(&mut n, next);
        finish_small_writes_checked(&mut n, posted);
        assert_eq!(
            (n.a.req.counters.timeouts, n.a.req.counters.retries),
            (0, 0),
            "{scheme:?}"
        );
        assert_eq!(
            n.a.req.sr().map_or(0, |s| s.counters.stall_probes),
            0,
            "{scheme:?}"
        );
        assert_eq!(
            n.a.inflight.as_ref().unwrap().psns(),
            0,
            "{scheme:?}: the room came back"
        );
        assert_eq!(n.a.held, 0, "{scheme:?}");
    }
}

#[test]
fn the_in_flight_budget_admits_whole_messages_and_holds_their_unsent_psns() {
    // A 4-packet WRITE is admitted whole: it holds 4 PSNs before its first packet goes,
    // and a budget of 2 still lets one such message start (fewer than 2 in flight).
    let mut n = Net::new(Service::Rc, 1024, Link::CLEAN);
    n.a.inflight = Some(Inflight::new(2));
    let len = 4096u32;
    for k in 0..3u64 {
        let off = k * u64::from(len);
        n.a.mem.region(0x100)[off as usize..(off + u64::from(len)) as usize]
            .copy_from_slice(&pattern(k as u8 + 1, len as usize));
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000 + off,
                rkey: 0x200,
            },
        };
        n.post(
            true,
            wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000 + off, len),
        )
        .unwrap();
    }
    let sent = n.send(true);
    assert_eq!(sent.len(), 4, "one message of four packets");
    assert_eq!(n.a.req.admitted_psns(), 4);
    assert_eq!(n.a.inflight.as_ref().unwrap().psns(), 4);
    // Before its first packet is acknowledged the message holds all four.
    let ack = n.deliver(true, &sent[0]);
    assert!(ack.is_empty());
    assert_eq!(n.a.inflight.as_ref().unwrap().psns(), 4);
    let acks: Vec<_> = sent[1..].iter().flat_map(|p| n.deliver(true, p)).collect();
    assert_eq!(acks.len(), 1);
    // The acknowledgment gives the four back and admits the next message.
    let more = n.deliver(false, &acks[0]);
    assert_eq!(more.len(), 4);
    assert_eq!(n.a.inflight.as_ref().unwrap().psns(), 4);
    exchange(&mut n, more);
    assert!(n.run(100_000), "stalled");
    assert_eq!(n.a.req.counters.timeouts, 0);
    assert_eq!(n.a.send_cqes.len(), 3);
    let total = 3 * len as usize;
    assert!(n.b.mem.region(0x200)[..total] == n.a.mem.region(0x100)[..total]);
    assert_eq!(n.a.inflight.as_ref().unwrap().psns(), 0);
}

#[test]
fn the_in_flight_budget_admits_a_long_message_a_chunk_at_a_time() {
    // A 200-packet WRITE under a budget of 10: it takes ADMIT_CHUNK_PSNS at a time, not
    // all 200 (which held the device's whole budget from its other QPs until the message
    // was acknowledged: a garbled 2 GiB length showed 2097152 PSNs in flight). The
    // chunk's last packet asks for its acknowledgment, as the next chunk waits for room.
    for scheme in [Scheme::Gbn, Scheme::Fasr] {
        let mut n = Net::with_schemes(Service::Rc, 1024, Link::CLEAN, scheme, scheme);
        n.a.inflight = Some(Inflight::new(10));
        let len = 200 * 1024u32;
        n.a.mem.region(0x100)[..len as usize].copy_from_slice(&pattern(7, len as usize));
        let op = SendOp::RdmaWrite {
            remote: Remote {
                addr: 0x20_0000,
                rkey: 0x200,
            },
        };
        n.post(true, wqe(op, SendOpcode::RdmaWrite, 0x100, 0x10_0000, len))
            .unwrap();
        let sent = n.send(true);
        let chunk = ADMIT_CHUNK_PSNS as usize;
        assert_eq!(sent.len(), chunk, "{scheme:?}: one chunk goes");
        assert_eq!(
            n.a.inflight.as_ref().unwrap().psns(),
            ADMIT_CHUNK_PSNS,
            "{scheme:?}"
        );
        assert_eq!(n.a.req.admitted_psns(), ADMIT_CHUNK_PSNS, "{scheme:?}");
        let first = psn_of(&sent[0]);
        let asks: Vec<u32> = ack_reqs(&sent)
            .iter()
            .map(|p| p.wrapping_sub(first))
            .collect();
        assert_eq!(
            asks.last(),
            Some(&(ADMIT_CHUNK_PSNS - 1)),
            "{scheme:?}: the chunk's tail asks"
        );
        exchange(&mut n, sent);
        assert!(n.run(100_000), "{scheme:?}: stalled");
        assert_eq!(
            (n.a.req.counters.timeouts, n.a.req.counters.retries),
            (0, 0),
            "{scheme:?}"
        );
        assert_eq!(n.a.send_cqes.len(), 1, "{scheme:?}");
        assert!(n.b.mem.region(0x200)[..len as usize] == n.a.mem.region(0x100)[..len as usize]);
        assert_eq!(n.a.inflight.as_ref().unwrap().psns(), 0, "{scheme:?}");
    }
}

/// An SR pair (PMTU 256) whose requester A sends no FaSR pipe (so that only the window
/// bounds it), and whose B advertises `advertised` (log2 of PSNs; `None`: its own window).
fn sr_window_net(scheme: Scheme, advertised: Option<u8>) -> Net {
    let mut n = Net::with_schemes(Service::Rc, 256, Link::CLEAN, scheme, scheme);
    n.b_window_log2 = advertised;
    n.restart_a_requester(64, setup(scheme).map(|s| SrSetup { pipe_psns: 0, ..s }));
    n
}

/// Rounds of [`post_long_writes`] that outlast the SR window four times over.
const LONG_ROUNDS: u64 = 4;

/// Posts `rounds` times 16 WRITEs of 64 KiB from A to B (4096 PSNs at PMTU 256 each
/// round), each round over the same 1 MiB; returns its bytes.
fn post_long_writes(n: &mut Net, rounds: u64) -> Vec<u8> {
    let data = pattern(3, 1 << 20);
    n.a.mem.region(0x100).copy_from_slice(&data);
    for i in 0..16 * rounds {
        post_sixteenth(n, i % 16).unwrap();
    }
    data
}

/// Runs `sent` (from A) and everything it draws over a lossless FIFO wire; returns the
/// most PSNs past UNACK A had outstanding as it sent each packet.
fn most_outstanding(n: &mut Net, sent: Vec<Vec<u8>>) -> u32 {
    let mut most = 0;
    let mut wire = VecDeque::new();
    let mut put = |n: &Net, wire: &mut VecDeque<(bool, Vec<u8>)>, from_a, pkts: Vec<Vec<u8>>| {
        for p in pkts {
            if from_a {
                let ahead = Psn::new(psn_of(&p)).diff(n.a.req.una()) + 1;
                most = most.max(u32::try_from(ahead).unwrap());
            }
            wire.push_back((from_a, p));
        }
    };
    put(n, &mut wire, true, sent);
    while let Some((from_a, p)) = wire.pop_front() {
        let out = n.deliver(from_a, &p);
        put(n, &mut wire, !from_a, out);
    }
    most
}

/// A WRITE stream of four SR windows after the switch to the SR format, B advertising
/// `advertised`:
/// the most PSNs A had outstanding past UNACK, and A's window at the end.
fn long_stream(scheme: Scheme, advertised: Option<u8>) -> (u32, u32) {
    let mut n = sr_window_net(scheme, advertised);
    stream_rounds(&mut n, LONG_ROUNDS, &format!("{scheme:?}"))
}

/// `rounds` of [`post_long_writes`] from A to B after the switch to the SR format, over a
/// lossless FIFO wire: the most PSNs A had outstanding past UNACK, and A's window at the
/// end.
fn stream_rounds(n: &mut Net, rounds: u64, what: &str) -> (u32, u32) {
    post_write(n, 256, 1);
    assert!(n.run(10_000), "{what}: the switch to the SR format");
    let data = post_long_writes(n, rounds);
    let sent = n.send(true);
    let most = most_outstanding(n, sent);
    finish_long_writes(n, &data, 1 + 16 * rounds as usize, what);
    assert_eq!(n.a.req.counters.resent_pkts, 0, "{what}: a lossless run");
    (most, n.a.req.window())
}

/// An SR pair (PMTU 256, no FaSR pipe, 320 send slots) whose A keeps an SR window of
/// 2^`a_log2` and B one of 2^`b_log2`.
fn wide_window_net(scheme: Scheme, (a_log2, b_log2): (u8, u8)) -> Net {
    let with = |log2| {
        setup(scheme).map(|s| SrSetup {
            window_log2: log2,
            pipe_psns: 0,
            ..s
        })
    };
    let mut n = Net::with_schemes(Service::Rc, 256, Link::CLEAN, scheme, scheme);
    n.restart_a_requester(320, with(a_log2));
    n.restart_b_responder(with(b_log2).unwrap());
    n
}

#[test]
fn a_lost_unack_leaves_the_rest_of_a_wider_window_placed() {
    // IRN's and SRNIC's bitmaps are as long as the window, and FaSR compresses the run
    // behind the hole: every packet of a 2^14 window past a lost UNACK is placed out of
    // order, and the one resend completes the stream. (MELO's bits pool, 1 Kb, is its
    // bound: it falls back to go-back-N on so long a run.)
    for scheme in [Scheme::Fasr, Scheme::Srnic, Scheme::Irn] {
        let mut n = wide_window_net(scheme, (14, 14));
        stream_rounds(&mut n, 1, &format!("{scheme:?}: the switch"));
        assert_eq!(n.a.req.window(), 1 << 14, "{scheme:?}");
        let data = post_long_writes(&mut n, 4);
        let sent = n.send(true);
        assert_eq!(sent.len(), 1 << 14, "{scheme:?}: a whole window goes");
        let placed = n.b.resp.sr().unwrap().counters.ooo_placed;
        let mut answers = vec![];
        for p in &sent[1..] {
            answers.extend(n.deliver(true, p));
        }
        let c = n.b.resp.sr().unwrap().counters;
        assert_eq!(
            (c.ooo_placed - placed, c.out_of_window),
            ((1 << 14) - 1, 0),
            "{scheme:?}: all but UNACK placed"
        );
        exchange_from(&mut n, false, answers);
        exchange(&mut n, sent[..1].to_vec());
        finish_long_writes(&mut n, &data, 1 + 16 + 64, &format!("{scheme:?}"));
        assert_eq!(
            n.a.req.counters.resent_pkts, 1,
            "{scheme:?}: UNACK alone went again"
        );
    }
}

#[test]
fn each_end_keeps_its_configured_sr_window_and_the_smaller_one_is_used() {
    // sr_window_psns at A (its requester) and at B (its responder, which advertises it).
    for scheme in SR_SCHEMES {
        for (a_log2, b_log2, want) in [
            (14, 14, 16384),
            (14, 12, 4096),
            (12, 14, 4096),
            (9, 14, 512),
        ] {
            let mut n = wide_window_net(scheme, (a_log2, b_log2));
            let what = format!("{scheme:?}: A 2^{a_log2}, B 2^{b_log2}");
            // Four of the larger windows' worth: 16 rounds of 4096 PSNs.
            let (most, window) = stream_rounds(&mut n, 16, &what);
            assert_eq!((most, window), (want, want), "{what}");
        }
    }
}

#[test]
fn the_requester_keeps_the_window_its_peer_advertises_at_most_its_own() {
    for scheme in SR_SCHEMES {
        // B of this build advertises 4096 PSNs; one of another build 512 or 1024 (an
        // older rxe_sr), or 2^22 (A keeps its own 4096 then).
        for (advertised, want) in [
            (None, 4096),
            (Some(9), 512),
            (Some(10), 1024),
            (Some(12), 4096),
            (Some(22), 4096),
        ] {
            let (most, window) = long_stream(scheme, advertised);
            assert_eq!(SR_DEFAULT_WINDOW_PSNS, 4096);
            assert_eq!(
                (most, window),
                (want, want),
                "{scheme:?}: B advertising {advertised:?}"
            );
        }
    }
}

#[test]
fn the_window_is_512_until_the_peers_first_sr_acknowledgment() {
    for scheme in SR_SCHEMES {
        let mut n = sr_window_net(scheme, None);
        post_write(&mut n, 256, 1);
        assert!(n.run(10_000), "{scheme:?}: the switch to the SR format");
        // The switch came with the echo in a standard ACK: no SR acknowledgment yet.
        assert!(matches!(
            n.a.req.sr().unwrap().state(),
            RequesterState::Sr(_)
        ));
        assert_eq!(n.a.req.window(), SR_ASSUMED_WINDOW_PSNS, "{scheme:?}");
        post_long_writes(&mut n, LONG_ROUNDS);
        let sent = n.send(true);
        assert_eq!(sent.len(), 512, "{scheme:?}");
        // Their acknowledgments advertise B's window: A fills it.
        let most = most_outstanding(&mut n, sent);
        assert_eq!((most, n.a.req.window()), (4096, 4096), "{scheme:?}");
        assert!(n.run(1_000_000), "{scheme:?}");
        assert_eq!(
            n.a.send_cqes.len(),
            1 + 16 * LONG_ROUNDS as usize,
            "{scheme:?}"
        );
    }
}

/// An SR ACKNOWLEDGE from B to A at `psn` (kind `kind`, SackHigh = TriggerPSN =
/// `sack_high`, window 2^`window_log2`), as bytes.
fn sr_ack(psn: Psn, kind: SrAckKind, sack_high: Psn, window_log2: u8) -> Vec<u8> {
    let aeth = match kind {
        SrAckKind::Ack => Aeth::ack(1),
        _ => Aeth::nak(0, 1),
    };
    let p = PacketRepr {
        bth: BthRepr {
            opcode: Opcode::RC_ACKNOWLEDGE,
            dest_qpn: 17,
            psn,
            tver: 1,
            ..Default::default()
        },
        ext: ExtHeaders {
            sr_ack_eth: Some(SrAckEth {
                kind,
                lost_cnt: 0,
                lost_cnt_overflow: false,
                sack_high,
                trigger_psn: sack_high,
                window_log2: 9,
            }),
            aeth: Some(aeth),
            ..Default::default()
        },
        payload: &[],
    };
    let mut b = vec![0u8; p.buffer_len()];
    p.emit(&mut b).unwrap();
    b[16] = window_log2; // emit refuses a window out of range: a forger need not
    b
}

#[test]
fn only_an_sr_acknowledgment_the_requester_takes_sets_its_window() {
    for scheme in SR_SCHEMES {
        let mut n = sr_window_net(scheme, None);
        post_write(&mut n, 256, 1);
        assert!(n.run(10_000), "{scheme:?}");
        post_long_writes(&mut n, 1);
        let sent = n.send(true);
        let (una, high) = (n.a.req.una(), Psn::new(psn_of(sent.last().unwrap())));
        let dups = n.a.req.counters.dup_responses;
        // Not in flight: a PSN acknowledged already, or one never sent.
        n.deliver(false, &sr_ack(una.sub(1), SrAckKind::Ack, una.sub(1), 10));
        n.deliver(false, &sr_ack(high.add(1), SrAckKind::Ack, high.add(1), 10));
        // In flight, but reporting a PSN never sent: not ours.
        n.deliver(false, &sr_ack(una, SrAckKind::Sack, high.add(5), 10));
        assert_eq!(n.a.req.counters.dup_responses, dups + 3, "{scheme:?}");
        // Malformed: a window out of range (the version-2 reserved 0 among them).
        let refused = n.forged_refused;
        for w in [0, 8, 23, 255] {
            n.deliver(false, &sr_ack(una, SrAckKind::Ack, una, w));
        }
        assert_eq!(n.forged_refused, refused + 4, "{scheme:?}");
        assert_eq!(n.a.req.window(), 512, "{scheme:?}: nothing taken");
        // Taken: a SACK of a PSN in flight, and an ACK; each sets the window.
        n.deliver(false, &sr_ack(una, SrAckKind::Sack, una.add(2), 10));
        assert_eq!(n.a.req.window(), 1024, "{scheme:?}");
        // (An ACK of UNACK moves it: each one after is at the new UNACK.)
        let una = n.a.req.una();
        n.deliver(false, &sr_ack(una, SrAckKind::Ack, una, 9));
        assert_eq!(
            n.a.req.window(),
            512,
            "{scheme:?}: a later one names another"
        );
        let una = n.a.req.una();
        n.deliver(false, &sr_ack(una, SrAckKind::Ack, una, 22));
        assert_eq!(n.a.req.window(), 4096, "{scheme:?}: at most A's own");
    }
    // A requester that stays standard (its peer runs go-back-N) takes no window.
    let mut n = Net::with_schemes(Service::Rc, 256, Link::CLEAN, Scheme::Fasr, Scheme::Gbn);
    post_write(&mut n, 256 * 8, 1);
    let sent = n.send(true);
    let una = n.a.req.una();
    assert!(!sent.is_empty());
    n.deliver(false, &sr_ack(una, SrAckKind::Ack, una, 10));
    assert_eq!(n.a.req.sr().unwrap().window(), SR_ASSUMED_WINDOW_PSNS);
    assert_eq!(n.a.req.window(), MAX_UNACKED_PSNS);
}

/// A go-back-N requester (A) whose window is `window`, as `gbn_window_psns` sets it, and
/// its go-back-N peer, over `link`.
fn gbn_window_net(window: u32, link: Link) -> Net {
    let mut n = Net::new(Service::Rc, 256, link);
    n.a.cfg.gbn_window = window;
    n.restart_a_requester(64, None);
    n
}

/// Runs `n` to the end; checks that A's `cqes` work requests (the 16 long WRITEs last)
/// succeeded and placed `data`.
fn finish_long_writes(n: &mut Net, data: &[u8], cqes: usize, what: &str) {
    assert!(n.run(5_000_000), "{what}");
    assert_eq!(n.a.send_cqes.len(), cqes, "{what}");
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{what}"
    );
    assert!(
        n.b.mem.region(0x200)[..] == data[..],
        "{what}: the WRITEs' bytes"
    );
}

#[test]
fn a_go_back_n_requester_keeps_its_configured_window() {
    // Below rdma_rxe's window or above the SR window, the setting is clamped.
    for (window, want) in [
        (128, 128),
        (512, 512),
        (1024, 1024),
        (16, 128),
        (4096, 1024),
    ] {
        let mut n = gbn_window_net(window, Link::CLEAN);
        let data = post_long_writes(&mut n, 1);
        let sent = n.send(true);
        assert_eq!(sent.len(), want as usize, "window {window}");
        assert_eq!(n.a.req.window(), want, "window {window}");
        let most = most_outstanding(&mut n, sent);
        assert_eq!(most, want, "window {window}");
        let what = format!("window {window}");
        finish_long_writes(&mut n, &data, 16, &what);
        assert_eq!((n.a.sr_packets, n.b.sr_packets), (0, 0), "{what}");
        assert_eq!(
            n.a.req.counters.resent_pkts, 0,
            "window {window}: a lossless run"
        );
    }
    // Over a link that loses, duplicates and reorders, going back over the longer window
    // still places every byte.
    for (window, seed) in [(512, 3), (1024, 5), (1024, 11)] {
        let link = Link {
            loss_ppm: 20_000,
            dup_ppm: 10_000,
            reorder_ppm: 10_000,
            seed,
        };
        let mut n = gbn_window_net(window, link);
        let data = post_long_writes(&mut n, 1);
        let what = format!("window {window}, seed {seed}");
        finish_long_writes(&mut n, &data, 16, &what);
        assert_eq!((n.a.sr_packets, n.b.sr_packets), (0, 0), "{what}");
        assert!(
            n.a.req.counters.resent_pkts > 0,
            "window {window}: nothing was lost"
        );
    }
}
