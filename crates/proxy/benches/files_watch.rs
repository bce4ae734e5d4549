//! `hintaudit proxy --watch`'s cost per 10,000 files (docs/performance.md, *hintaudit proxy
//! --watch*): a tree of 10,000 files of 1 KB in 100 directories, then
//!
//! 1. start-up: every file read and fingerprinted, every directory watched (time, and the
//!    growth of resident memory);
//! 2. a call that appended a line to 100 files: how long its answer waits, from the end
//!    marker to the settled share (events read, 100 files read and judged);
//! 3. 1,000 appends with no call in flight (each event reads its file again), then an empty
//!    call: how long that call waits for the watcher to have read every event before it.
//!
//! `cargo bench -p hintaudit-proxy --bench files_watch` (Linux: inotify). Prints; asserts
//! only what it counted.

use std::fs;
use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use hintaudit_proxy::FileWatch;

fn tree(p: &Path) {
    let line = "a line of text of about eighty bytes, as a note or a source file would have\n";
    for d in 0..100 {
        fs::create_dir(p.join(format!("d{d:03}"))).unwrap();
        for f in 0..100 {
            fs::write(p.join(format!("d{d:03}/f{f:03}.txt")), line.repeat(12)).unwrap();
        }
    }
}

fn append(p: &Path, d: usize, f: usize) {
    let path = p.join(format!("d{d:03}/f{f:03}.txt"));
    let mut file = fs::File::options().append(true).open(path).unwrap();
    file.write_all(b"one more line\n").unwrap();
}

/// This process's resident memory, in KiB (`VmRSS` of /proc/self/status).
fn rss_kib() -> u64 {
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

fn ms(d: Duration) -> String {
    format!("{:.1} ms", d.as_secs_f64() * 1e3)
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    tree(p);
    let rss_before = rss_kib();
    let start = Instant::now();
    let watch = FileWatch::start(&[p.to_path_buf()], &[], Duration::from_secs(60)).unwrap();
    println!(
        "start-up (10,000 files read and fingerprinted, 101 directories watched): {}",
        ms(start.elapsed())
    );
    println!(
        "paths known: {}; resident memory grew by {} KiB",
        watch.stats().paths,
        rss_kib().saturating_sub(rss_before)
    );

    let ticket = watch.begin("append".into());
    for d in 0..100 {
        append(p, d, 0);
    }
    let end = Instant::now();
    let share = watch.finish(ticket).await;
    println!(
        "a call that appended to 100 files: its answer waited {}",
        ms(end.elapsed())
    );
    assert_eq!(share.changes.len(), 100, "{share:?}");
    assert!(!share.gap);

    let outside = Instant::now();
    for d in 0..100 {
        for f in 1..11 {
            append(p, d, f);
        }
    }
    let written = outside.elapsed();
    let ticket = watch.begin("empty".into());
    let drain = Instant::now();
    let share = watch.finish(ticket).await;
    println!(
        "1,000 appends outside calls: written in {}, the next call waited {} for the watcher \
         (from the first write: {})",
        ms(written),
        ms(drain.elapsed()),
        ms(outside.elapsed())
    );
    assert!(share.changes.is_empty(), "{share:?}");
    println!("stats: {:?}", watch.stats());
    watch.shutdown().await;
}
