// SPDX-License-Identifier: GPL-2.0
//! WRITE streams over a long fat path (`harness/rc_wan.rs`), in simulated time: a repair
//! must not idle the path.

use super::common::{post_sixteenth, post_write};
use super::*;
use rxe_sr::proto::fec::FecParams;
use rxe_sr::proto::rc::SR_DEFAULT_WINDOW_LOG2;

/// 100 Mbit/s each way, as the guests' WAN profile.
const NS_PER_BYTE: u64 = 80;
/// perftest's local ACK timeout (`-t 14`), microseconds.
const PERFTEST_TIMEOUT_US: u64 = 67_108;
/// Simulated seconds per stream.
const SECS: u64 = 4;

/// A net whose A sends to B under `scheme` (with FEC `fec`) as the module's QP would:
/// perftest's timeout, the device's in-flight budget at its default.
fn long_path_net(scheme: Scheme, fec: Option<FecParams>) -> Net {
    wide_path_net(scheme, fec, SR_DEFAULT_WINDOW_LOG2, 64)
}

/// As [`long_path_net`], with an SR window of 2^`window_log2` at both ends and a send ring
/// of `slots` entries.
fn wide_path_net(scheme: Scheme, fec: Option<FecParams>, window_log2: u8, slots: usize) -> Net {
    let mut n = Net::with_fec(Service::Rc, 1024, Link::CLEAN, (scheme, fec), (scheme, fec));
    n.a.cfg.timeout_us = PERFTEST_TIMEOUT_US;
    let rto = RtoConfig {
        rto_low: PERFTEST_TIMEOUT_US,
        rto_high: PERFTEST_TIMEOUT_US,
        n_low: 3,
    };
    let sr = setup(scheme).map(|s| SrSetup {
        rto,
        window_log2,
        ..s
    });
    n.restart_a_requester(slots, sr);
    if let Some(s) = sr {
        n.restart_b_responder(s);
    }
    n.a.inflight = Some(Inflight::new(256));
    n.with_module_pools()
}

/// Posts 64 KiB WRITEs from A to B until `depth` are outstanding, as perftest keeps its
/// queue full; returns whether it posted any.
fn keep_posted(n: &mut Net, posted: &mut u64, depth: u64) -> bool {
    let mut any = false;
    while *posted < n.a.send_cqes.len() as u64 + depth {
        post_sixteenth(n, *posted % 16).unwrap();
        *posted += 1;
        any = true;
    }
    any
}

/// Streams WRITEs from A to B, `depth` of them outstanding, over a path of round trip
/// `rtt_us` that loses `loss` for [`SECS`]; returns the bytes of the WRITEs completed, each
/// with success.
fn stream(scheme: Scheme, fec: Option<FecParams>, rtt_us: u64, loss: WanLoss, depth: u64) -> u64 {
    let n = long_path_net(scheme, fec);
    stream_on(n, scheme, (NS_PER_BYTE, rtt_us, SECS), loss, depth, fec)
}

/// As [`stream`], on the net `n` (A running `scheme`) and a path of `ns_per_byte` and
/// `rtt_us` for `secs`.
fn stream_on(
    mut n: Net,
    scheme: Scheme,
    (ns_per_byte, rtt_us, secs): (u64, u64, u64),
    loss: WanLoss,
    depth: u64,
    fec: Option<FecParams>,
) -> u64 {
    let first = n.a.req.una().get();
    let mut wan = Wan::new(ns_per_byte, rtt_us, loss, first);
    let data = pattern(5, 1 << 20);
    n.a.mem.region(0x100).copy_from_slice(&data);
    let mut posted = 0;
    let what = format!("{scheme:?}, FEC {fec:?}, {loss:?}");
    assert!(
        n.run_wan(&mut wan, secs * 1_000_000, |n| keep_posted(
            n,
            &mut posted,
            depth
        )),
        "{what}: the stream stopped"
    );
    assert!(
        n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success),
        "{what}"
    );
    // Every WRITE rewrites its sixteenth of B's region with the same bytes.
    let done = n.a.send_cqes.len() as u64;
    assert!(done >= 16, "{what}: {done} WRITEs");
    assert!(
        n.b.mem.region(0x200)[..] == data[..],
        "{what}: the WRITEs' bytes"
    );
    if let WanLoss::EveryNth { every, .. } = loss {
        let lost = wan.lost;
        assert!(
            (lost + 1) * u64::from(every) >= done * 64,
            "{what}: {lost} lost"
        );
    }
    done << 16
}

#[test]
fn a_repair_does_not_idle_a_long_path() {
    // At 100 Mbit/s a round trip of 20 ms holds about 240 PSNs of 1 KiB, one of 40 ms about
    // 470, and a loss every 1000 or 2000 PSNs comes every four round trips. FaSR resends a
    // hole a round trip after it was sent and goes on sending past it meanwhile: what B
    // reported received holds none of the device's budget, so the stream keeps nine tenths
    // of its lossless goodput. Bernoulli loss at the same rate (either way, ACKs too) as
    // well. (With a loss every two round trips at 40 ms, the 16 WRITEs kept posted, 1024
    // PSNs, are the limit.)
    for (rtt_us, every) in [(20_000, 1000), (40_000, 2000)] {
        for fec in [None, FecParams::new(32, 4)] {
            let clean = stream(Scheme::Fasr, fec, rtt_us, WanLoss::None, 16);
            let ppm = 1_000_000 / every;
            for loss in [WanLoss::EveryNth { every, at: 500 }, WanLoss::Ppm(ppm)] {
                let lossy = stream(Scheme::Fasr, fec, rtt_us, loss, 16);
                assert!(
                    lossy * 10 >= clean * 9,
                    "RTT {rtt_us} us, FEC {fec:?}, {loss:?}: {lossy} bytes, {clean} lossless"
                );
            }
        }
    }
}

#[test]
fn the_path_estimate_outlives_messages_sent_one_at_a_time() {
    // 1 MiB WRITEs one at a time, as bench-wan's completion times: each takes its
    // serialization (about 87 ms at 100 Mbit/s) and a round trip of 40 ms. Each starts on an
    // idle QP, whose first samples measure the application; taken as the path's, they
    // shrank the estimate and the pipe with every message, and the completions grew.
    let mut n = long_path_net(Scheme::Fasr, None);
    let mut wan = Wan::new(NS_PER_BYTE, 40_000, WanLoss::None, 0);
    let (mut posted, mut started) = (0u64, 0);
    let mut times_ms = vec![];
    let one_at_a_time = |n: &mut Net| {
        if posted != n.a.send_cqes.len() as u64 {
            return false;
        }
        if posted > 0 {
            times_ms.push((n.now - started) / 1000);
        }
        post_write(n, 1 << 20, 7);
        posted += 1;
        started = n.now;
        true
    };
    assert!(n.run_wan(&mut wan, 3_000_000, one_at_a_time));
    assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
    assert!(times_ms.len() >= 10, "{times_ms:?}");
    // The first waits for the estimate; every later one is within a tenth of the ideal.
    assert!(times_ms[1..].iter().all(|&t| t <= 140), "{times_ms:?}");
}

#[test]
fn the_sr_window_covers_a_long_path_and_its_repairs() {
    // At 80 ms a round trip holds about 950 PSNs. perftest keeps 64 WRITEs of 64 KiB posted
    // (4096 PSNs): while a hole waits a round trip for its repair, A goes on sending a
    // second round trip's worth past it, so the SR window from UNACK must hold about two
    // products, and B's FaSR pool the chain across them (the module's default pool).
    for fec in [None, FecParams::new(32, 4)] {
        let clean = stream(Scheme::Fasr, fec, 80_000, WanLoss::None, 64);
        for loss in [
            WanLoss::EveryNth {
                every: 1000,
                at: 500,
            },
            WanLoss::Ppm(1000),
        ] {
            let lossy = stream(Scheme::Fasr, fec, 80_000, loss, 64);
            assert!(
                lossy * 100 >= clean * 85,
                "FEC {fec:?}, {loss:?}: {lossy} bytes, {clean} lossless"
            );
        }
    }
}

#[test]
fn a_wider_sr_window_fills_a_longer_fatter_path() {
    // 1 Gbit/s at 80 ms holds about 9500 PSNs of 1 KiB. With the default window of 4096 a
    // QP sends at most 4096 PSNs a round trip, about four tenths of the link; with
    // sr_window_psns = 16384 at both ends the path estimate stretches the FaSR pipe and the
    // device's budget past 4096 until the link sets the rate. 512 WRITEs of 64 KiB posted.
    let path = (8, 80_000, 3);
    let goodput = |log2| {
        let n = wide_path_net(Scheme::Fasr, None, log2, 600);
        stream_on(n, Scheme::Fasr, path, WanLoss::None, 512, None)
    };
    let (narrow, wide) = (goodput(SR_DEFAULT_WINDOW_LOG2), goodput(14));
    // The link carries 125 MB/s; the first second is the estimate's climb.
    let link = 125_000_000 * path.2;
    eprintln!("1 Gbit/s, 80 ms: window 4096 {narrow} B, 16384 {wide} B, link {link} B");
    assert!(narrow * 10 <= link * 5, "{narrow} bytes with 4096");
    assert!(
        wide * 10 >= narrow * 16,
        "{wide} bytes with 16384, {narrow} with 4096"
    );
}

#[test]
fn a_message_longer_than_the_probe_bound_is_not_probed() {
    // 64 KiB WRITEs one at a time, each taking about 5.6 ms on a 100 Mbit/s link with a
    // round trip of 200 us: only a message's last packet asks for the acknowledgment, so
    // UNACK, its first, is answered a serialization after it went. The fourth message's
    // last packet (the SR format is in use by then) is lost: a probe of UNACK has the rest
    // acknowledged, a second one resends the tail. That measures a resend's round trip,
    // and the bound falls to its floor, below a message's serialization. Every other
    // message arrives whole: none may be probed.
    for scheme in [Scheme::Fasr, Scheme::Srnic] {
        let mut n = long_path_net(scheme, None);
        let first = n.a.req.una().get();
        let tail = WanLoss::EveryNth {
            every: 1 << 30,
            at: 4 * 64 - 1,
        };
        let mut wan = Wan::new(NS_PER_BYTE, 200, tail, first);
        let mut posted = 0u64;
        let one_at_a_time = |n: &mut Net| {
            if posted != n.a.send_cqes.len() as u64 || posted >= 100 {
                return false;
            }
            post_write(n, 1 << 16, 7);
            posted += 1;
            true
        };
        assert!(!n.run_wan(&mut wan, 5_000_000, one_at_a_time), "{scheme:?}");
        assert_eq!(n.a.send_cqes.len(), 100, "{scheme:?}");
        assert!(n.a.send_cqes.iter().all(|c| c.status == WcStatus::Success));
        assert_eq!(wan.lost, 1, "{scheme:?}");
        let sr = &n.a.req.sr().expect("SR state").counters;
        assert!(
            (1..=2).contains(&sr.stall_probes) && sr.lost_resends == 0,
            "{scheme:?}: {} probes, {} lost resends; the tail loss alone is probed",
            sr.stall_probes,
            sr.lost_resends
        );
    }
}
