//! What the bench prints: each variant's times and ratios to its base, the spans exported
//! and single statements' times.

use hintaudit_telemetry::OtelPipeline;

use crate::stats::{median, quartiles};
use crate::{AUDITED, Rounds, STATEMENTS, Variant};

/// Prints each variant's times and ratios to its base, then the added time per statement.
pub fn print_variants(variants: &[Variant], r: &Rounds, workload: &str) {
    let per_round = |times: &[Vec<f64>], i: usize| -> Vec<f64> {
        times[variants[i].base]
            .iter()
            .zip(&times[i])
            .map(|(b, v)| b / v)
            .collect()
    };
    println!("{workload}");
    println!(
        "ratio = throughput vs the bare server on the same transport (bare time / variant time), median of per-round ratios, and the middle half of them (25th to 75th percentile); target >= 0.97"
    );
    println!(
        "{:<42} {:>12} {:>7} {:>13} {:>12} {:>9}",
        "variant", "wall us/call", "ratio", "middle half", "CPU us/call", "CPU ratio"
    );
    for (i, v) in variants.iter().enumerate() {
        let (q1, q3) = quartiles(per_round(&r.wall, i));
        println!(
            "{:<42} {:>12.1} {:>7.3} {:>13} {:>12.1} {:>9.3}",
            v.label,
            median(r.wall[i].clone()) * 1e6,
            median(per_round(&r.wall, i)),
            format!("{q1:.3}-{q3:.3}"),
            median(r.cpu[i].clone()) * 1e6,
            median(per_round(&r.cpu, i))
        );
    }
    let statements_per_call =
        STATEMENTS.iter().map(|(_, n)| *n as f64).sum::<f64>() / STATEMENTS.len() as f64;
    let added = (median(r.wall[AUDITED].clone()) - median(r.wall[0].clone())) / statements_per_call;
    println!(
        "added time per statement (whole audited call): {:.2} us",
        added * 1e6
    );
}

/// Prints the spans exported and the single statements' times.
pub fn print_spans_and_statements(r: &Rounds, pipelines: [&OtelPipeline; 2]) {
    for p in pipelines {
        let stats = p.export_stats();
        println!(
            "spans exported {}, dropped {}",
            stats.exported, stats.dropped
        );
    }
    let (b, a) = (
        median(r.statements.0.clone()),
        median(r.statements.1.clone()),
    );
    let ratio = median(
        r.statements
            .0
            .iter()
            .zip(&r.statements.1)
            .map(|(b, a)| b / a)
            .collect(),
    );
    println!(
        "single SELECT statements: plain pool {:.1} us, audited pool in a call scope {:.1} us; ratio {ratio:.3}, added {:.2} us/statement",
        b * 1e6,
        a * 1e6,
        (a - b) * 1e6
    );
}
