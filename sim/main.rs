// SPDX-License-Identifier: GPL-2.0
//! Packet-level simulator over rxe_sr's recovery engines (issue 3).
//!
//! `sim --csv` prints one row per (scheme, qps, loss); without `--csv` a readable table and
//! a PNG plot of goodput vs loss per scheme (`--png PATH`, default `sim-goodput.png`).

mod engine;
mod plot;

use engine::{goodput_ratio, Config, Scheme};

struct Args {
    csv: bool,
    png: String,
    schemes: Vec<Scheme>,
    qps: Vec<usize>,
    losses: Vec<f64>,
    ticks: u64,
    seed: u64,
    bdp: Option<u64>,
    srnic_delay: Option<u64>,
    burst: Option<f64>,
    ack_loss: f64,
    retx_loss: f64,
    reorder: f64,
}

fn usage() -> ! {
    eprintln!(
        "usage: sim [--csv] [--png PATH] [--schemes gbn,irn,fasr,srnic,melo] [--qps 1,1000]\n\
         \x20          [--loss 0.001,0.01,0.05] [--ticks N] [--seed N] [--bdp PKTS] [--srnic-delay TICKS]\n\
         \x20          [--burst MEAN_LEN (Gilbert-Elliott)] [--ack-loss P] [--retx-loss P] [--reorder P]"
    );
    std::process::exit(2)
}

fn list<T: std::str::FromStr>(s: &str) -> Vec<T> {
    s.split(',').map(|x| x.trim().parse().unwrap_or_else(|_| usage())).collect()
}

fn parse_args() -> Args {
    let mut a = Args {
        csv: false,
        png: "sim-goodput.png".into(),
        schemes: Scheme::ALL.to_vec(),
        qps: vec![1, 1000],
        losses: vec![0.001, 0.01, 0.05],
        ticks: 200_000,
        seed: 1,
        bdp: None,
        srnic_delay: None,
        burst: None,
        ack_loss: 0.0,
        retx_loss: 0.0,
        reorder: 0.0,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| usage());
        match arg.as_str() {
            "--csv" => a.csv = true,
            "--png" => a.png = val(),
            "--schemes" => {
                a.schemes = val().split(',').map(|s| Scheme::parse(s.trim()).unwrap_or_else(|| usage())).collect()
            }
            "--qps" => a.qps = list(&val()),
            "--loss" => a.losses = list(&val()),
            "--ticks" => a.ticks = val().parse().unwrap_or_else(|_| usage()),
            "--seed" => a.seed = val().parse().unwrap_or_else(|_| usage()),
            "--bdp" => a.bdp = Some(val().parse().unwrap_or_else(|_| usage())),
            "--srnic-delay" => a.srnic_delay = Some(val().parse().unwrap_or_else(|_| usage())),
            "--burst" => a.burst = Some(val().parse().unwrap_or_else(|_| usage())),
            "--ack-loss" => a.ack_loss = val().parse().unwrap_or_else(|_| usage()),
            "--retx-loss" => a.retx_loss = val().parse().unwrap_or_else(|_| usage()),
            "--reorder" => a.reorder = val().parse().unwrap_or_else(|_| usage()),
            "-h" | "--help" => usage(),
            _ => usage(),
        }
    }
    a
}

/// One table row.
struct Row {
    scheme: Scheme,
    qps: usize,
    loss: f64,
    ratio: f64,
    retx_per_loss: f64,
    fast: Option<f64>,
    sr_bytes: f64,
    peak_units: u64,
    peak_blocks: u64,
    fallbacks: u64,
}

fn main() {
    let args = parse_args();
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
                if let Some(d) = args.srnic_delay {
                    cfg.srnic_delay = d;
                }
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
                    ratio,
                    retx_per_loss: rep.retx_per_loss(),
                    fast: rep.fast_path_share(),
                    sr_bytes: rep.sr_bytes_per_qp,
                    peak_units: rep.pool_peak_units(),
                    peak_blocks: rep.pool_peak_blocks(),
                    fallbacks: rep.counters.gbn_fallbacks,
                });
            }
        }
    }
    if args.csv {
        println!("scheme,qps,loss,goodput_ratio,retx_per_loss,fast_path_share,sr_bytes_per_qp,pool_peak_units,pool_peak_blocks,gbn_fallbacks");
        for r in &rows {
            println!(
                "{},{},{},{:.3},{:.3},{},{:.2},{},{},{}",
                r.scheme.name(),
                r.qps,
                r.loss,
                r.ratio,
                r.retx_per_loss,
                r.fast.map_or("NA".to_string(), |f| format!("{f:.3}")),
                r.sr_bytes,
                r.peak_units,
                r.peak_blocks,
                r.fallbacks
            );
        }
        return;
    }
    println!(
        "{:<6} {:>5} {:>6} {:>8} {:>8} {:>6} {:>9} {:>6} {:>7} {:>9}",
        "scheme", "qps", "loss", "goodput", "retx/ls", "fast", "SR B/QP", "units", "blocks", "fallbacks"
    );
    for r in &rows {
        println!(
            "{:<6} {:>5} {:>6} {:>8.3} {:>8.3} {:>6} {:>9.2} {:>6} {:>7} {:>9}",
            r.scheme.name(),
            r.qps,
            r.loss,
            r.ratio,
            r.retx_per_loss,
            r.fast.map_or("-".to_string(), |f| format!("{f:.2}")),
            r.sr_bytes,
            r.peak_units,
            r.peak_blocks,
            r.fallbacks
        );
    }
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
    match plot::write_png(&args.png, &format!("goodput ratio vs loss, {qps} QPs"), &series) {
        Ok(()) => println!("plot: {}", args.png),
        Err(e) => eprintln!("plot: {e}"),
    }
}
