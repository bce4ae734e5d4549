//! Measures and statistics: the process's CPU time, the rounds' shuffled order, medians and
//! quartiles, and settings from the environment.

/// CPU time spent so far by every thread of this process, in ns (Linux `schedstat`; 0
/// elsewhere).
pub fn process_cpu_ns() -> u128 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .filter_map(Result::ok)
        .filter_map(|t| std::fs::read_to_string(t.path().join("schedstat")).ok())
        .filter_map(|s| s.split_whitespace().next()?.parse::<u128>().ok())
        .sum()
}

/// Fisher-Yates with xorshift64: a fixed, reproducible sequence of orders.
pub fn shuffle(order: &mut [usize], seed: &mut u64) {
    for i in (1..order.len()).rev() {
        *seed ^= *seed << 13;
        *seed ^= *seed >> 7;
        *seed ^= *seed << 17;
        order.swap(i, (*seed % (i as u64 + 1)) as usize);
    }
}

pub fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The 25th and 75th percentiles (nearest rank): the spread of a variant's per-round ratios.
pub fn quartiles(mut v: Vec<f64>) -> (f64, f64) {
    v.sort_by(f64::total_cmp);
    (v[v.len() / 4], v[(3 * v.len()) / 4])
}

pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}
