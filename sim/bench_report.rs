// SPDX-License-Identifier: GPL-2.0
//! `bench-report [--qps] CSV OUTDIR`: the `make run` table. Reads the guests' measurements
//! (`driver,op,loss,gbps`, one row per run, several runs per cell) and prints, per op, the
//! median goodput of every driver at every loss rate, then the same-run ratios: each
//! driver against its own lossless goodput, against rdma_rxe and against rxe_sr's go-back-N
//! at the same loss. Writes one PNG per op (goodput relative to the driver's own lossless
//! goodput, against the loss rate, a line per driver) into OUTDIR and prints the paths.
//! With `--qps` (`make bench`'s QP sweep) the third column is a QP count, the ratios are
//! to the driver's own goodput at the first count, and no plot is drawn.

#[path = "plot.rs"]
mod plot;

use std::collections::BTreeMap;

/// Median of the runs of a cell (`None`: no run succeeded).
fn median(v: &[f64]) -> Option<f64> {
    let mut v: Vec<f64> = v.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let n = v.len();
    Some(if n % 2 == 1 { v[n / 2] } else { (v[n / 2 - 1] + v[n / 2]) / 2.0 })
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let qps = args.get(1).is_some_and(|a| a == "--qps");
    if qps {
        args.remove(1);
    }
    if args.len() != 3 {
        eprintln!("usage: bench-report [--qps] CSV OUTDIR");
        std::process::exit(2);
    }
    let (unit, base_name) = if qps {
        (" QPs", "its own goodput at the first QP count")
    } else {
        ("%", "the driver's own lossless goodput")
    };
    let text = std::fs::read_to_string(&args[1]).unwrap_or_else(|e| {
        eprintln!("bench-report: {}: {e}", args[1]);
        std::process::exit(1);
    });
    // op -> driver (in order of appearance) -> loss -> runs
    let mut drivers: Vec<String> = Vec::new();
    let mut ops: Vec<String> = Vec::new();
    let mut losses: Vec<String> = Vec::new();
    let mut cells: BTreeMap<(String, String, String), Vec<f64>> = BTreeMap::new();
    let mut failed: BTreeMap<(String, String, String), usize> = BTreeMap::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 4 {
            continue;
        }
        let (d, o, l) = (f[0].to_string(), f[1].to_string(), f[2].to_string());
        for (list, x) in [(&mut drivers, &d), (&mut ops, &o), (&mut losses, &l)] {
            if !list.contains(x) {
                list.push(x.clone());
            }
        }
        let key = (o, d, l);
        match f[3].trim().parse::<f64>() {
            Ok(v) => cells.entry(key).or_default().push(v),
            Err(_) => *failed.entry(key).or_default() += 1,
        }
    }
    let med = |o: &str, d: &str, l: &str| {
        cells
            .get(&(o.to_string(), d.to_string(), l.to_string()))
            .and_then(|v| median(v))
    };
    let cell = |v: Option<f64>| match v {
        Some(x) => format!("{x:9.4}"),
        None => format!("{:>9}", "fail"),
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:9.2}", a / b),
        _ => format!("{:>9}", "-"),
    };
    let lossless = losses.first().cloned().unwrap_or_default();
    for o in &ops {
        if o.contains("lat") {
            continue;
        }
        println!("\n--- {o}: goodput, Gb/s (median of the runs) ---");
        print!("{:<13}", "driver");
        for l in &losses {
            print!(" {:>9}", format!("{l}{unit}"));
        }
        println!();
        for d in &drivers {
            print!("{d:<13}");
            for l in &losses {
                print!(" {}", cell(med(o, d, l)));
            }
            println!();
        }
        println!("--- {o}: ratio to {base_name} ---");
        for d in &drivers {
            print!("{d:<13}");
            for l in &losses {
                print!(" {}", ratio(med(o, d, l), med(o, d, &lossless)));
            }
            println!();
        }
        // Same-run ratios to the stock driver, and to rxe_sr's own go-back-N (what a
        // selective scheme gains or costs on the same module).
        for reference in ["rdma_rxe", "rxe_sr-gbn"] {
            if !drivers.iter().any(|d| d == reference) {
                continue;
            }
            let same = if qps { "QP count" } else { "loss" };
            println!("--- {o}: ratio to {reference} at the same {same} ---");
            for d in drivers.iter().filter(|d| *d != reference && *d != "rdma_rxe") {
                print!("{d:<13}");
                for l in &losses {
                    print!(" {}", ratio(med(o, d, l), med(o, reference, l)));
                }
                println!();
            }
        }
        if qps {
            continue;
        }
        let series: Vec<(String, Vec<(f64, f64)>)> = drivers
            .iter()
            .map(|d| {
                let base = med(o, d, &lossless);
                let pts = losses
                    .iter()
                    .filter_map(|l| {
                        let x = l.parse::<f64>().ok()? / 100.0;
                        let y = med(o, d, l)? / base.filter(|b| *b > 0.0)?;
                        (x > 0.0).then_some((x, y))
                    })
                    .collect();
                (d.clone(), pts)
            })
            .collect();
        let path = format!("{}/{}.png", args[2], o.replace(['(', ')'], ""));
        match plot::write_png(&path, &format!("{o}: goodput / own lossless goodput"), &series) {
            Ok(()) => println!("plot: {path}"),
            Err(e) => eprintln!("bench-report: {path}: {e}"),
        }
    }
    let lat: Vec<&String> = ops.iter().filter(|o| o.contains("lat")).collect();
    for o in lat {
        println!("\n--- {o} (lossless, median) ---");
        let g = med(o, "rxe_sr-gbn", &lossless);
        for d in &drivers {
            let v = med(o, d, &lossless);
            if v.is_some() {
                println!("{d:<13} {}  ratio to rxe_sr-gbn {}", cell(v), ratio(v, g));
            }
        }
    }
    if !failed.is_empty() {
        println!("\nfailed runs:");
        for ((o, d, l), n) in &failed {
            if qps {
                println!("  {d} {o} {l} QPs: {n}");
            } else {
                println!("  {d} {o} {l}%: {n}");
            }
        }
    }
}
