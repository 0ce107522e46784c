// SPDX-License-Identifier: GPL-2.0
//! Packet-level simulator over rxe_sr's recovery engines.
//!
//! `sim --csv` prints one row per (scheme, qps, loss); without `--csv` a readable table and
//! a PNG plot of goodput vs loss per scheme (`--png PATH`, default `sim-goodput.png`).
//! `sim --fig7` runs FaSR Fig. 7's QP sweep (1 to 5000 QPs, lossless and 1% loss) on each
//! scheme's NIC and prints it beside the paper's values (PNGs: `sim-fig7-lossless.png`,
//! `sim-fig7-loss1pct.png`).

mod engine;
mod plot;

use engine::qpc::{measure, Replacement};
use engine::{fig7, goodput_ratio, run, Config, NicMemory, Report, Scheme};

struct Args {
    csv: bool,
    fig7: bool,
    png: Option<String>,
    schemes: Vec<Scheme>,
    qps: Vec<usize>,
    losses: Vec<f64>,
    ticks: u64,
    seed: u64,
    bdp: Option<u64>,
    srnic_delay: Option<u64>,
    srnic_pause: bool,
    burst: Option<f64>,
    ack_loss: f64,
    retx_loss: f64,
    reorder: f64,
    /// `None`: each scheme's NIC as is; `Some(None)`: every context on chip.
    qpc: Option<Option<Replacement>>,
    qpc_penalty: Option<u64>,
}

fn usage() -> ! {
    eprintln!(
        "usage: sim [--csv] [--png PATH] [--schemes gbn,irn,fasr,srnic,melo] [--qps 1,1000]\n\
         \x20          [--loss 0.001,0.01,0.05] [--ticks N] [--seed N] [--bdp PKTS] [--srnic-delay TICKS]\n\
         \x20          [--no-srnic-pause] [--burst MEAN_LEN (Gilbert-Elliott)] [--ack-loss P]\n\
         \x20          [--retx-loss P] [--reorder P] [--qpc random|lru|off] [--qpc-penalty TICKS]\n\
         \x20      sim --fig7 [--schemes ...] [--seed N] [--qpc ...] [--qpc-penalty TICKS] [--png PATH]"
    );
    std::process::exit(2)
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',')
        .map(|x| x.trim().parse().unwrap_or_else(|_| usage()))
        .collect()
}

fn parse_args() -> Args {
    let mut a = Args {
        csv: false,
        fig7: false,
        png: None,
        schemes: Scheme::ALL.to_vec(),
        qps: vec![1, 1000],
        losses: vec![0.001, 0.01, 0.05],
        ticks: 200_000,
        seed: 1,
        bdp: None,
        srnic_delay: None,
        srnic_pause: true,
        burst: None,
        ack_loss: 0.0,
        retx_loss: 0.0,
        reorder: 0.0,
        qpc: None,
        qpc_penalty: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--csv" => a.csv = true,
            "--fig7" => a.fig7 = true,
            "--png" => a.png = Some(val()),
            "--schemes" => {
                a.schemes = val()
                    .split(',')
                    .map(|s| Scheme::parse(s.trim()).unwrap_or_else(|| usage()))
                    .collect()
            }
            "--qps" => a.qps = list(&val()),
            "--loss" => a.losses = list(&val()),
            "--ticks" => a.ticks = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => a.seed = val().parse().unwrap_or_else(|_| usage()),
            "--bdp" => a.bdp = Some(val().parse().unwrap_or_else(|_| usage())),
            "--srnic-delay" => a.srnic_delay = Some(val().parse().unwrap_or_else(|_| usage())),
            "--no-srnic-pause" => a.srnic_pause = false,
            "--burst" => a.burst = Some(val().parse().unwrap_or_else(|_| usage())),
            "--ack-loss" => a.ack_loss = val().parse().unwrap_or_else(|_| usage()),
            "--retx-loss" => a.retx_loss = val().parse().unwrap_or_else(|_| usage()),
            "--reorder" => a.reorder = val().parse().unwrap_or_else(|_| usage()),
            "--qpc" => {
                a.qpc = Some(match val().as_str() {
                    "random" => Some(Replacement::Random),
                    "lru" => Some(Replacement::Lru),
                    "off" => None,
                    _ => usage(),
                })
            }
            "--qpc-penalty" => a.qpc_penalty = Some(val().parse().unwrap_or_else(|_| usage())),
            _ => usage(),
        }
    }
    a
}

/// Applies the QPC and SRNIC options to `cfg`.
fn nic_options(args: &Args, cfg: &mut Config) {
    match args.qpc {
        Some(None) => cfg.nic = None,
        Some(Some(r)) => {
            cfg.nic = Some(NicMemory {
                replacement: r,
                ..NicMemory::for_scheme(cfg.scheme)
            })
        }
        None => {}
    }
    if let (Some(p), Some(nic)) = (args.qpc_penalty, cfg.nic.as_mut()) {
        nic.miss_penalty = p;
    }
    if let Some(d) = args.srnic_delay {
        cfg.srnic_delay = d;
    }
    cfg.srnic_rx_pause = args.srnic_pause;
}

/// One plotted line: its name and points.
type Series = (String, Vec<(f64, f64)>);

/// One table row.
struct Row {
    scheme: Scheme,
    qps: usize,
    loss: f64,
    goodput: f64,
    ratio: f64,
    rep: Report,
}

fn main() {
    let args = parse_args();
    if args.fig7 {
        return run_fig7(&args);
    }
    let mut rows = Vec::new();
    for &scheme in &args.schemes {
        for &qps in &args.qps {
            for &loss in &args.losses {
                let mut cfg = Config::new(scheme, qps, loss);
                cfg.workload = engine::Workload::Timed(args.ticks);
                cfg.seed = args.seed;
                if let Some(b) = args.bdp {
                    cfg.bdp = b.max(2);
                    cfg.rto.rto_low = 3 * cfg.bdp;
                    cfg.rto.rto_high = 10 * cfg.bdp;
                }
                nic_options(&args, &mut cfg);
                if let Some(b) = args.burst {
                    cfg.loss = engine::LossModel::bursty(loss, b);
                }
                cfg.ack_loss = args.ack_loss;
                cfg.retx_loss = args.retx_loss;
                cfg.reorder = args.reorder;
                cfg.reorder_delay = cfg.bdp / 4;
                let (ratio, rep) = goodput_ratio(&cfg);
                rows.push(Row {
                    scheme,
                    qps,
                    loss,
                    goodput: rep.goodput(),
                    ratio,
                    rep,
                });
            }
        }
    }
    if args.csv {
        println!(
            "scheme,qps,loss,goodput,goodput_ratio,retx_per_loss,fast_path_share,sr_bytes_per_qp,\
             qpc_miss_rate,pool_peak_units,pool_peak_blocks,gbn_fallbacks"
        );
        for r in &rows {
            println!(
                "{},{},{},{:.3},{:.3},{:.3},{},{:.2},{:.3},{},{},{}",
                r.scheme.name(),
                r.qps,
                r.loss,
                r.goodput,
                r.ratio,
                r.rep.retx_per_loss(),
                r.rep
                    .fast_path_share()
                    .map_or("NA".to_string(), |f| format!("{f:.3}")),
                r.rep.sr_bytes_per_qp,
                r.rep.qpc.miss_rate(),
                r.rep.pool_peak_units(),
                r.rep.pool_peak_blocks(),
                r.rep.counters.gbn_fallbacks
            );
        }
        return;
    }
    println!(
        "{:<6} {:>5} {:>6} {:>7} {:>6} {:>8} {:>6} {:>9} {:>6} {:>6} {:>7} {:>9}",
        "scheme",
        "qps",
        "loss",
        "goodput",
        "ratio",
        "retx/ls",
        "fast",
        "SR B/QP",
        "miss",
        "units",
        "blocks",
        "fallbacks"
    );
    for r in &rows {
        println!(
            "{:<6} {:>5} {:>6} {:>7.3} {:>6.3} {:>8.3} {:>6} {:>9.2} {:>6.3} {:>6} {:>7} {:>9}",
            r.scheme.name(),
            r.qps,
            r.loss,
            r.goodput,
            r.ratio,
            r.rep.retx_per_loss(),
            r.rep
                .fast_path_share()
                .map_or("-".to_string(), |f| format!("{f:.2}")),
            r.rep.sr_bytes_per_qp,
            r.rep.qpc.miss_rate(),
            r.rep.pool_peak_units(),
            r.rep.pool_peak_blocks(),
            r.rep.counters.gbn_fallbacks
        );
    }
    println!("goodput: share of the line rate; ratio: over the same run without loss; miss: QPC misses per lookup");
    // Plot goodput vs loss per scheme at the smallest QP count, where the schemes differ
    // most (FaSR Fig. 7(a)); one line per scheme.
    let qps = args.qps.iter().copied().min().unwrap_or(1);
    let series: Vec<(String, Vec<(f64, f64)>)> = args
        .schemes
        .iter()
        .map(|&s| {
            let pts = rows
                .iter()
                .filter(|r| r.scheme == s && r.qps == qps)
                .map(|r| (r.loss, r.ratio))
                .collect();
            (s.name().to_string(), pts)
        })
        .collect();
    let png = args.png.clone().unwrap_or_else(|| "sim-goodput.png".into());
    match plot::write_png(&png, &format!("goodput ratio vs loss, {qps} QPs"), &series) {
        Ok(()) => println!("plot: {png}"),
        Err(e) => eprintln!("plot: {e}"),
    }
}

/// FaSR Fig. 7(b)/(c): the QP sweep beside the paper's statements.
fn run_fig7(args: &Args) {
    let schemes: Vec<Scheme> = fig7::SCHEMES
        .into_iter()
        .filter(|s| args.schemes.contains(s))
        .collect();
    let mut series: [Vec<Series>; 2] = [Vec::new(), Vec::new()];
    println!("FaSR Fig. 7: goodput (share of the line rate) vs concurrent QPs; 1 KiB MTU, 8 KB messages,");
    println!(
        "6 us RTT, 16-packet scheduler turns, QPC miss = {} ticks stall",
        fig7::config(Scheme::Fasr, 1, 0.0)
            .nic
            .map_or(0, |n| n.miss_penalty)
    );
    print!("{:<6} {:<4} {:>5}", "scheme", "nic", "loss");
    for q in fig7::QPS {
        print!(" {q:>6}");
    }
    println!("  paper (FaSR text; 1 QP = Fig. 7(a), 5K = Fig. 7(c))");
    for &s in &schemes {
        let mem = measure(s);
        for loss in fig7::LOSSES {
            let mut pts = Vec::new();
            let mut misses = Vec::new();
            for q in fig7::QPS {
                let mut cfg = fig7::config(s, q, loss);
                cfg.seed = args.seed;
                nic_options(args, &mut cfg);
                let rep = run(&cfg);
                pts.push((q as f64, rep.goodput()));
                misses.push(rep.qpc.miss_rate());
            }
            let nic = fig7::config(s, 1, 0.0).nic.map_or("-", |n| n.name);
            print!("{:<6} {:<4} {:>4}%", s.name(), nic, loss * 100.0);
            for &(_, g) in &pts {
                print!(" {g:>6.3}");
            }
            match (fig7::paper(s), loss > 0.0) {
                (Some(p), false) => println!("  {}", p.lossless),
                (Some(p), true) => println!("  1 QP {}, 5K {}", p.one_qp_1pct, p.qps5k_1pct),
                (None, _) => println!("  (not in the paper)"),
            }
            if loss == 0.0 {
                print!("{:<6} {:<4} {:>5}", "", "", "miss");
                for m in &misses {
                    print!(" {m:>6.3}");
                }
                let nic = fig7::config(s, 1, 0.0).nic;
                let ctx = nic.map_or(0, |n| n.context_bytes(&mem));
                let cap = nic.map_or(0, |n| n.capacity(&mem));
                println!(
                    "  QPC {ctx} B/QP (SR {} B measured), {cap} fit on chip",
                    mem.per_qp_bytes
                );
            }
            series[usize::from(loss > 0.0)].push((s.name().to_string(), pts));
        }
    }
    println!(
        "SR memory (Fig. 8(b)): FaSR's is the smallest past {} QPs measured, {} in the paper",
        fig7::measured_fig8b_crossover().map_or("never".to_string(), |q| q.to_string()),
        fig7::PAPER_FIG8B_CROSSOVER
    );
    let png = args.png.clone().unwrap_or_else(|| "sim-fig7.png".into());
    let stem = png.strip_suffix(".png").unwrap_or(&png);
    let axis = plot::XAxis {
        label: "concurrent qps",
        percent: false,
    };
    for (k, what) in ["lossless", "1% loss"].iter().enumerate() {
        let path = format!("{stem}-{}.png", ["lossless", "loss1pct"][k]);
        match plot::write_png_axis(
            &path,
            &format!("fasr fig. 7: goodput vs qps, {what}"),
            &axis,
            &series[k],
        ) {
            Ok(()) => println!("plot: {path}"),
            Err(e) => eprintln!("plot: {e}"),
        }
    }
}
