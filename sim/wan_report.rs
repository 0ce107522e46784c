// SPDX-License-Identifier: GPL-2.0
//! `bench-report --wan CSV OUTDIR`: the long-haul sweep's tables and plots. Reads
//! `driver,rtt_ms,loss,rep,gbps,fct_p50_ms,fct_p99_ms[,fct_first_ms]` (one row per run; an
//! empty figure is a failed part of a run) and prints, per round trip time, the median
//! goodput of every driver at every loss, its same-run ratios to rdma_rxe, to rxe_sr's
//! go-back-N and, with FEC, to the same driver without it, its ratio to the driver's own
//! lossless goodput at RTT 0 (what the window leaves of the link), the medians of the
//! runs' 1 MiB message completion times (p50 and p99 after the first message) with the
//! p99's ratio to the driver's own lossless p99 at that RTT, and of the first message's
//! (the new QP's) when the CSV has it. One PNG per RTT: goodput against the (Bernoulli)
//! loss rate, 1.0 the driver's lossless goodput at RTT 0.

use std::collections::BTreeMap;

use crate::{median, note, plot, read_csv};

/// The figures of one run.
#[derive(Clone, Copy)]
struct Run {
    gbps: Option<f64>,
    p50: Option<f64>,
    p99: Option<f64>,
    first: Option<f64>,
}

/// Which figure of a run.
#[derive(Clone, Copy)]
enum Fig {
    Gbps,
    P50,
    P99,
    First,
}

impl Run {
    fn get(&self, f: Fig) -> Option<f64> {
        match f {
            Fig::Gbps => self.gbps,
            Fig::P50 => self.p50,
            Fig::P99 => self.p99,
            Fig::First => self.first,
        }
    }
}

/// The sweep: its axes in order of appearance and the runs of each (rtt, loss, driver).
struct Sweep {
    drivers: Vec<String>,
    rtts: Vec<String>,
    losses: Vec<String>,
    cells: BTreeMap<(String, String, String), Vec<Run>>,
}

impl Sweep {
    fn parse(text: &str) -> Sweep {
        let mut s = Sweep {
            drivers: Vec::new(),
            rtts: Vec::new(),
            losses: Vec::new(),
            cells: BTreeMap::new(),
        };
        let num = |x: &str| {
            x.trim()
                .parse::<f64>()
                .ok()
                .filter(|v| v.is_finite() && *v > 0.0)
        };
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split(',').collect();
            if f.len() < 7 {
                continue;
            }
            note(&mut s.drivers, f[0]);
            note(&mut s.rtts, f[1]);
            if f[1] != "0" {
                note(&mut s.losses, f[2]);
            }
            let run = Run {
                gbps: num(f[4]),
                p50: num(f[5]),
                p99: num(f[6]),
                first: f.get(7).and_then(|x| num(x)),
            };
            let key = (f[1].to_string(), f[2].to_string(), f[0].to_string());
            s.cells.entry(key).or_default().push(run);
        }
        s
    }

    /// The width of the driver column: the longest driver name.
    fn width(&self) -> usize {
        self.drivers
            .iter()
            .map(|d| d.len())
            .max()
            .unwrap_or(0)
            .max(13)
    }

    fn runs(&self, rtt: &str, loss: &str, d: &str) -> Option<&Vec<Run>> {
        self.cells
            .get(&(rtt.to_string(), loss.to_string(), d.to_string()))
    }

    /// The median of figure `f` over the runs of a cell that have it.
    fn med(&self, rtt: &str, loss: &str, d: &str, f: Fig) -> Option<f64> {
        let v: Vec<f64> = self
            .runs(rtt, loss, d)?
            .iter()
            .filter_map(|r| r.get(f))
            .collect();
        median(&v)
    }

    /// Runs of a cell that lack figure `f` (failed).
    fn fails(&self, rtt: &str, loss: &str, d: &str, f: Fig) -> usize {
        self.runs(rtt, loss, d)
            .map_or(0, |r| r.iter().filter(|x| x.get(f).is_none()).count())
    }
}

/// The perftest tool that measured the goodput (scripts/bench-wan passes BENCH_WAN_BW).
fn bw_tool() -> String {
    std::env::var("BENCH_WAN_BW").unwrap_or_else(|_| "ib_write_bw".into())
}

/// `v` in a column, or `fail` / `-` when the cell failed / was not measured; `!` marks a
/// cell some of whose runs failed.
fn cell(v: Option<f64>, prec: usize, fails: usize, ran: bool) -> String {
    let m = if fails > 0 { '!' } else { ' ' };
    match v {
        Some(x) => format!("{x:9.prec$}{m}"),
        None => format!("{:>9}{m}", if ran { "fail" } else { "-" }),
    }
}

fn ratio(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:9.2} ", a / b),
        _ => format!("{:>9} ", "-"),
    }
}

/// `--wan`: prints the tables and writes the plots.
pub(crate) fn wan_report(csv: &str, outdir: &str) {
    let s = Sweep::parse(&read_csv(csv));
    let header = |what: &str| {
        println!("--- {what} ---");
        print!("{:<w$}", "driver", w = s.width());
        for l in &s.losses {
            print!(
                " {:>9} ",
                if l.starts_with("ge") {
                    format!("GE {}%", l.trim_start_matches("ge"))
                } else {
                    format!("{l}%")
                }
            );
        }
        println!();
    };
    if s.cells.keys().any(|k| k.0 == "0") {
        println!("\n=== RTT 0, lossless: the reference ===");
        for d in &s.drivers {
            let f = |fig| s.med("0", "0", d, fig);
            print!(
                "{d:<w$} goodput {} Gb/s, 1 MiB WRITE p50 {} ms p99 {} ms",
                cell(f(Fig::Gbps), 4, s.fails("0", "0", d, Fig::Gbps), true),
                cell(f(Fig::P50), 1, s.fails("0", "0", d, Fig::P50), true),
                cell(f(Fig::P99), 1, s.fails("0", "0", d, Fig::P99), true),
                w = s.width()
            );
            match f(Fig::First) {
                Some(v) => println!(" first {} ms", cell(Some(v), 1, 0, true)),
                None => println!(),
            }
        }
    }
    for rtt in s.rtts.iter().filter(|r| *r != "0") {
        println!(
            "\n=== RTT {rtt} ms: {} 64 KiB, one QP; 1 MiB WRITEs one at a time ===",
            bw_tool()
        );
        let table = |what: &str, fig: Fig, prec: usize| {
            header(what);
            for d in &s.drivers {
                print!("{d:<w$}", w = s.width());
                for l in &s.losses {
                    let ran = s.runs(rtt, l, d).is_some();
                    print!(
                        " {}",
                        cell(s.med(rtt, l, d, fig), prec, s.fails(rtt, l, d, fig), ran)
                    );
                }
                println!();
            }
        };
        table("goodput, Gb/s (median of the runs)", Fig::Gbps, 4);
        for reference in ["rdma_rxe", "gbn"] {
            if !s.drivers.iter().any(|d| d == reference) {
                continue;
            }
            header(&format!(
                "goodput: ratio to {reference} at the same loss (same run)"
            ));
            for d in s
                .drivers
                .iter()
                .filter(|d| *d != reference && *d != "rdma_rxe")
            {
                print!("{d:<w$}", w = s.width());
                for l in &s.losses {
                    let g = |x: &str| s.med(rtt, l, x, Fig::Gbps);
                    print!(" {}", ratio(g(d), g(reference)));
                }
                println!();
            }
        }
        fec_gain(&s, rtt, &header);
        header("goodput: ratio to the driver's own lossless goodput at RTT 0");
        for d in &s.drivers {
            print!("{d:<w$}", w = s.width());
            for l in &s.losses {
                print!(
                    " {}",
                    ratio(s.med(rtt, l, d, Fig::Gbps), s.med("0", "0", d, Fig::Gbps))
                );
            }
            println!();
        }
        table(
            "1 MiB WRITE completion time p50, ms (median of the runs)",
            Fig::P50,
            1,
        );
        table(
            "1 MiB WRITE completion time p99, ms (median of the runs)",
            Fig::P99,
            1,
        );
        header("p99: ratio to the driver's own lossless p99 at this RTT");
        for d in &s.drivers {
            print!("{d:<w$}", w = s.width());
            for l in &s.losses {
                print!(
                    " {}",
                    ratio(s.med(rtt, l, d, Fig::P99), s.med(rtt, "0", d, Fig::P99))
                );
            }
            println!();
        }
        if s.cells.values().flatten().any(|r| r.first.is_some()) {
            table(
                "1 MiB WRITE completion time of the first message on its new QP, ms (median of the runs)",
                Fig::First,
                1,
            );
        }
        plot_rtt(&s, rtt, outdir);
    }
    let failed: Vec<String> = s
        .cells
        .iter()
        .filter_map(|((r, l, d), runs)| {
            let g = runs.iter().filter(|x| x.gbps.is_none()).count();
            let f = runs.iter().filter(|x| x.p99.is_none()).count();
            (g + f > 0).then(|| {
                format!(
                    "  {d} RTT {r} ms loss {l}: goodput {g}/{n} failed, FCT {f}/{n} failed",
                    n = runs.len()
                )
            })
        })
        .collect();
    if !failed.is_empty() {
        println!("\nFAILED RUNS (cells marked ! have their median over the runs that succeeded):");
        println!("{}", failed.join("\n"));
    }
}

/// The driver `d` names without its FEC parameters (`+fec_unit=N`, `+fec_depth=D`), or
/// `None` when it names none.
fn without_fec(d: &str) -> Option<String> {
    let parts: Vec<&str> = d.split('+').collect();
    let kept: Vec<&str> = parts
        .iter()
        .copied()
        .filter(|p| !p.starts_with("fec_unit=") && !p.starts_with("fec_depth="))
        .collect();
    (kept.len() < parts.len()).then(|| kept.join("+"))
}

/// FEC's gain at `rtt`: each driver with FEC against the same driver without it, same run.
fn fec_gain(s: &Sweep, rtt: &str, header: &dyn Fn(&str)) {
    let pairs: Vec<(&String, String)> = s
        .drivers
        .iter()
        .filter_map(|d| Some((d, without_fec(d)?)))
        .filter(|(_, base)| s.drivers.contains(base))
        .collect();
    if pairs.is_empty() {
        return;
    }
    header("goodput: ratio to the same driver without FEC (same run)");
    for (d, base) in pairs {
        print!("{d:<w$}", w = s.width());
        for l in &s.losses {
            print!(
                " {}",
                ratio(s.med(rtt, l, d, Fig::Gbps), s.med(rtt, l, &base, Fig::Gbps))
            );
        }
        println!();
    }
}

/// The PNG of one RTT: goodput over the Bernoulli loss rates, 1.0 each driver's lossless
/// goodput at RTT 0.
fn plot_rtt(s: &Sweep, rtt: &str, outdir: &str) {
    let series: Vec<(String, Vec<(f64, f64)>)> = s
        .drivers
        .iter()
        .map(|d| {
            let base = s.med("0", "0", d, Fig::Gbps).filter(|b| *b > 0.0);
            let pts = s
                .losses
                .iter()
                .filter_map(|l| {
                    let x = l.parse::<f64>().ok()? / 100.0;
                    let y = s.med(rtt, l, d, Fig::Gbps)? / base?;
                    (x > 0.0).then_some((x, y))
                })
                .collect();
            (d.clone(), pts)
        })
        .collect();
    if series.iter().all(|x| x.1.is_empty()) {
        return;
    }
    let path = format!("{outdir}/wan_rtt{rtt}ms.png");
    let title = format!(
        "{} 64 KiB at RTT {rtt} ms - goodput, 1.0 is the driver at RTT 0",
        bw_tool()
    );
    match plot::write_png(&path, &title, &series) {
        Ok(()) => println!("plot: {path}"),
        Err(e) => eprintln!("bench-report: {path}: {e}"),
    }
}
