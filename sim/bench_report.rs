// SPDX-License-Identifier: GPL-2.0
//! `bench-report [--qps | --wan] CSV OUTDIR`: the `make run` table. Reads the guests' measurements
//! (`driver,op,loss,gbps`, one row per run, several runs per cell) and prints, per op, the
//! median goodput of every driver at every loss rate, then the same-run ratios: each
//! driver against its own lossless goodput, against rdma_rxe and against rxe_sr's go-back-N
//! at the same loss. Writes one PNG per op (goodput relative to the driver's own lossless
//! goodput, against the loss rate, a line per driver) into OUTDIR and prints the paths.
//! With `--qps` (the QP sweep of `make bench` and `make run`) it reads
//! `driver,op,qps,loss,gbps,mbytes,secs_c,busy_c,kernel_c,secs_s,busy_s,kernel_s,size,mode`
//! (the last two may be missing: 4 KiB, polled) and prints, per tool, message size, mode
//! and loss rate, the median goodput at every QP count (and the message rate up to 1 KiB),
//! its ratios to the driver's own goodput at the first count and to rdma_rxe's at the same
//! count, and the CPU time both guests spent per delivered MB (median of the runs; all busy
//! time and the kernel's share), with its ratio to rdma_rxe's; one PNG per section and loss
//! rate (goodput against the QP count, a line per driver). With `--wan`, the long-haul sweep (wan_report.rs).

#[path = "plot.rs"]
mod plot;
#[path = "wan_report.rs"]
mod wan_report;

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

/// The guests' CSV, or the exit with a message.
fn read_csv(path: &str) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| {
        eprintln!("bench-report: {path}: {e}");
        std::process::exit(1);
    })
}

/// Adds `x` to `list` unless it is there (the rows' order of appearance).
fn note(list: &mut Vec<String>, x: &str) {
    if !list.iter().any(|y| y == x) {
        list.push(x.to_string());
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().collect();
    let qps = args.get(1).is_some_and(|a| a == "--qps");
    let wan = args.get(1).is_some_and(|a| a == "--wan");
    if qps || wan {
        args.remove(1);
    }
    if args.len() != 3 {
        eprintln!("usage: bench-report [--qps | --wan] CSV OUTDIR");
        std::process::exit(2);
    }
    if wan {
        wan_report::wan_report(&args[1], &args[2]);
        return;
    }
    if qps {
        qps_report(&args[1], &args[2]);
        return;
    }
    let (unit, base_name) = ("%", "the driver's own lossless goodput");
    let text = read_csv(&args[1]);
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
            note(list, x);
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
    // Runs of a cell that failed: a cell with any is marked `!`, its median taken over the
    // runs that succeeded (the list at the end says how many of how many failed).
    let fails = |o: &str, d: &str, l: &str| {
        failed
            .get(&(o.to_string(), d.to_string(), l.to_string()))
            .copied()
            .unwrap_or(0)
    };
    let mark = |n: usize| if n > 0 { '!' } else { ' ' };
    let cell = |o: &str, d: &str, l: &str| match med(o, d, l) {
        Some(x) => format!("{x:9.4}{}", mark(fails(o, d, l))),
        None => format!("{:>9}{}", "fail", mark(fails(o, d, l))),
    };
    // The ratio of cell `a` to cell `b` (operation, driver, loss), marked when either had
    // failed runs.
    let ratio = |a: (&str, &str, &str), b: (&str, &str, &str)| {
        let m = mark(fails(a.0, a.1, a.2) + fails(b.0, b.1, b.2));
        match (med(a.0, a.1, a.2), med(b.0, b.1, b.2)) {
            (Some(x), Some(y)) if y > 0.0 => format!("{:9.2}{m}", x / y),
            _ => format!("{:>9}{m}", "-"),
        }
    };
    let lossless = losses.first().cloned().unwrap_or_default();
    // The rows an op has runs for (the latency rows hold a reference that no goodput
    // table has, e.g. the link's ping).
    let has = |o: &str, d: &str| {
        let (o, d) = (o.to_string(), d.to_string());
        cells.keys().chain(failed.keys()).any(|k| k.0 == o && k.1 == d)
    };
    for o in &ops {
        if o.contains("lat") {
            continue;
        }
        let drivers: Vec<String> = drivers.iter().filter(|d| has(o, d)).cloned().collect();
        println!("\n--- {o}: goodput, Gb/s (median of the runs) ---");
        print!("{:<13}", "driver");
        for l in &losses {
            print!(" {:>9} ", format!("{l}{unit}"));
        }
        println!();
        for d in &drivers {
            print!("{d:<13}");
            for l in &losses {
                print!(" {}", cell(o, d, l));
            }
            println!();
        }
        println!("--- {o}: ratio to {base_name} ---");
        for d in &drivers {
            print!("{d:<13}");
            for l in &losses {
                print!(" {}", ratio((o, d, l), (o, d, &lossless)));
            }
            println!();
        }
        // Same-run ratios to the stock driver, and to rxe_sr's own go-back-N (what a
        // selective scheme gains or costs on the same module).
        for reference in ["rdma_rxe", "rxe_sr-gbn"] {
            if !drivers.iter().any(|d| d == reference) {
                continue;
            }
            println!("--- {o}: ratio to {reference} at the same loss ---");
            for d in drivers.iter().filter(|d| *d != reference && *d != "rdma_rxe") {
                print!("{d:<13}");
                for l in &losses {
                    print!(" {}", ratio((o, d, l), (o, reference, l)));
                }
                println!();
            }
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
        for d in &drivers {
            if med(o, d, &lossless).is_some() {
                println!(
                    "{d:<13} {}  ratio to rxe_sr-gbn {}  to rdma_rxe {}",
                    cell(o, d, &lossless),
                    ratio((o, d, &lossless), (o, "rxe_sr-gbn", &lossless)),
                    ratio((o, d, &lossless), (o, "rdma_rxe", &lossless))
                );
            }
        }
    }
    if !failed.is_empty() {
        println!("\nFAILED RUNS (cells marked ! have their median over the runs that succeeded):");
        for ((o, d, l), n) in &failed {
            let ran = n + cells.get(&(o.clone(), d.clone(), l.clone())).map_or(0, Vec::len);
            println!("  {d} {o} {l}%: {n}/{ran} failed");
        }
    }
}

/// One run of the QP sweep.
struct SweepRun {
    gbps: Option<f64>,
    /// CPU milliseconds of both guests per delivered MB: all busy time, the kernel's.
    cpu_ms_per_mb: Option<(f64, f64)>,
}

/// Parses a sweep row's CPU columns: `mbytes,secs_c,busy_c,kernel_c,secs_s,busy_s,kernel_s`
/// (ticks of USER_HZ = 100). `None` when a guest saw no traffic.
fn cpu_of(f: &[&str]) -> Option<(f64, f64)> {
    let v: Vec<f64> = f.iter().map(|x| x.trim().parse::<f64>().ok()).collect::<Option<_>>()?;
    let [mb, secs_c, busy_c, kern_c, secs_s, busy_s, kern_s] = v[..] else {
        return None;
    };
    if mb <= 0.0 || secs_c <= 0.0 || secs_s <= 0.0 {
        return None;
    }
    Some(((busy_c + busy_s) * 10.0 / mb, (kern_c + kern_s) * 10.0 / mb))
}

/// The QP sweep's runs by ((tool, message size, mode), loss, driver, QPs).
type SweepCells = BTreeMap<((String, String, String), String, String, String), Vec<SweepRun>>;

/// A message size as the tables name it (`64 B`, `4 KiB`).
fn size_label(bytes: &str) -> String {
    match bytes.parse::<u64>() {
        Ok(b) if b >= 1024 && b % 1024 == 0 => format!("{} KiB", b / 1024),
        Ok(b) => format!("{b} B"),
        Err(_) => bytes.to_string(),
    }
}

/// `--qps`: the QP sweep's tables and plots, a section per tool, message size and
/// completion mode (rows without the last two columns: 4 KiB, polled).
fn qps_report(csv: &str, outdir: &str) {
    let text = read_csv(csv);
    let mut drivers: Vec<String> = Vec::new();
    let mut qps: Vec<String> = Vec::new();
    let mut losses: Vec<String> = Vec::new();
    let mut sections: Vec<(String, String, String)> = Vec::new();
    let mut cells = SweepCells::new();
    for line in text.lines().skip(1) {
        let f: Vec<&str> = line.split(',').collect();
        if f.len() < 12 {
            continue;
        }
        let (d, q, l) = (f[0].to_string(), f[2].to_string(), f[3].to_string());
        let sec = (
            f[1].to_string(),
            f.get(12).unwrap_or(&"4096").to_string(),
            f.get(13).unwrap_or(&"poll").to_string(),
        );
        for (list, x) in [(&mut drivers, &d), (&mut qps, &q), (&mut losses, &l)] {
            note(list, x);
        }
        if !sections.contains(&sec) {
            sections.push(sec.clone());
        }
        cells.entry((sec, l, d, q)).or_default().push(SweepRun {
            gbps: f[4].trim().parse::<f64>().ok(),
            cpu_ms_per_mb: cpu_of(&f[5..12]),
        });
    }
    for sec in &sections {
        qps_section(sec, &cells, (&drivers, &qps, &losses), outdir);
    }
    qps_failed(&cells);
}

/// One section of the QP sweep (`sec`: tool, message size, completion mode): per loss rate,
/// the goodput, its ratios and the CPU per delivered MB, and a PNG.
fn qps_section(
    sec: &(String, String, String),
    cells: &SweepCells,
    (drivers, qps, losses): (&[String], &[String], &[String]),
    outdir: &str,
) {
    let (tool, size, mode) = sec;
    let runs = |l: &str, d: &str, q: &str| {
        cells.get(&(sec.clone(), l.to_string(), d.to_string(), q.to_string()))
    };
    let gbps = |l: &str, d: &str, q: &str| {
        runs(l, d, q).and_then(|r| median(&r.iter().filter_map(|x| x.gbps).collect::<Vec<_>>()))
    };
    let cpu = |l: &str, d: &str, q: &str, kernel: bool| {
        runs(l, d, q).and_then(|r| {
            let v: Vec<f64> = r
                .iter()
                .filter(|x| x.gbps.is_some())
                .filter_map(|x| x.cpu_ms_per_mb.map(|c| if kernel { c.1 } else { c.0 }))
                .collect();
            median(&v)
        })
    };
    // A cell with runs but no figure failed; one without runs was not measured. A cell some
    // of whose runs failed is marked `!` (the list at the end says how many of how many).
    let fails = |l: &str, d: &str, q: &str| runs(l, d, q).map_or(0, |r| r.iter().filter(|x| x.gbps.is_none()).count());
    let fmt = |v: Option<f64>, prec: usize, (l, d, q): (&str, &str, &str)| {
        let m = if fails(l, d, q) > 0 { '!' } else { ' ' };
        match v {
            Some(x) => format!("{x:9.prec$}{m}"),
            None => format!("{:>9}{m}", if runs(l, d, q).is_some() { "fail" } else { "-" }),
        }
    };
    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:9.2} ", a / b),
        _ => format!("{:>9} ", "-"),
    };
    let header = |what: &str| {
        println!("--- {what} ---");
        print!("{:<13}", "driver");
        for q in qps {
            print!(" {:>9} ", format!("{q} QPs"));
        }
        println!();
    };
    let has_ref = drivers.iter().any(|d| d == "rdma_rxe");
    for l in losses {
        let label = size_label(size);
        println!("\n=== {tool}, {label}, {mode} mode, {l}% loss ===");
        header("goodput, Gb/s (median of the runs)");
        for d in drivers {
            print!("{d:<13}");
            for q in qps {
                print!(" {}", fmt(gbps(l, d, q), 4, (l, d, q)));
            }
            println!();
        }
        let bytes = size.parse::<f64>().unwrap_or(0.0);
        if bytes > 0.0 && bytes <= 1024.0 {
            header("messages per second, thousands (the median goodput over the size)");
            for d in drivers {
                print!("{d:<13}");
                for q in qps {
                    let rate = gbps(l, d, q).map(|g| g * 1e9 / 8.0 / bytes / 1e3);
                    print!(" {}", fmt(rate, 1, (l, d, q)));
                }
                println!();
            }
        }
        header("goodput: ratio to the driver's own at the first QP count");
        for d in drivers {
            print!("{d:<13}");
            for q in qps {
                print!(" {}", ratio(gbps(l, d, q), gbps(l, d, &qps[0])));
            }
            println!();
        }
        if has_ref {
            header("goodput: ratio to rdma_rxe at the same QP count");
            for d in drivers.iter().filter(|d| *d != "rdma_rxe") {
                print!("{d:<13}");
                for q in qps {
                    print!(" {}", ratio(gbps(l, d, q), gbps(l, "rdma_rxe", q)));
                }
                println!();
            }
        }
        for (kernel, what) in [(false, "busy"), (true, "kernel")] {
            header(&format!(
                "CPU ms per delivered MB (s per GB), both guests, {what} time (median of the runs)"
            ));
            for d in drivers {
                print!("{d:<13}");
                for q in qps {
                    print!(" {}", fmt(cpu(l, d, q, kernel), 2, (l, d, q)));
                }
                println!();
            }
            if has_ref {
                header(&format!("CPU per delivered MB ({what}): ratio to rdma_rxe's"));
                for d in drivers.iter().filter(|d| *d != "rdma_rxe") {
                    print!("{d:<13}");
                    for q in qps {
                        print!(
                            " {}",
                            ratio(cpu(l, d, q, kernel), cpu(l, "rdma_rxe", q, kernel))
                        );
                    }
                    println!();
                }
            }
        }
        // The plot: goodput over the QP count, scaled to the plot's highest median.
        let top = drivers
            .iter()
            .flat_map(|d| qps.iter().filter_map(|q| gbps(l, d, q)))
            .fold(0.0, f64::max);
        if top <= 0.0 {
            continue;
        }
        let series: Vec<(String, Vec<(f64, f64)>)> = drivers
            .iter()
            .map(|d| {
                let pts = qps
                    .iter()
                    .filter_map(|q| Some((q.parse::<f64>().ok()?, gbps(l, d, q)? / top)))
                    .collect();
                (d.clone(), pts)
            })
            .collect();
        let path = format!("{outdir}/qp_sweep_{tool}_{size}_{mode}_loss{l}.png");
        let title = format!("{tool} {label} at {l}% loss - goodput, 1.0 is {top:.3} Gb per s");
        let axis = plot::XAxis {
            label: "RC QPs",
            percent: false,
        };
        match plot::write_png_axis(&path, &title, &axis, &series) {
            Ok(()) => println!("plot: {path}"),
            Err(e) => eprintln!("bench-report: {path}: {e}"),
        }
    }
}

/// The runs of the QP sweep that failed, listed.
fn qps_failed(cells: &SweepCells) {
    let failed: Vec<String> = cells
        .iter()
        .filter_map(|(((tool, size, _), l, d, q), r)| {
            let n = r.iter().filter(|x| x.gbps.is_none()).count();
            let size = size_label(size);
            (n > 0).then(|| format!("  {d} {tool} {size} {q} QPs {l}%: {n}/{} failed", r.len()))
        })
        .collect();
    if !failed.is_empty() {
        println!("\nFAILED RUNS (cells marked ! have their median over the runs that succeeded):");
        println!("{}", failed.join("\n"));
    }
}
