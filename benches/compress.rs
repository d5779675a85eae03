//! Bytes and time per compression level for a typical page, to choose the levels cgitd uses:
//! cheap ones for uncached responses and better ones for the variants the response cache
//! keeps (made once, sent many times).
//!
//! usage: cargo bench --bench compress [-- FILE...]
//!        FILE: pages to measure, e.g. git.git's root tree page saved with curl; without
//!        files, a synthetic tree listing of about 150 KB.
//! Prints one markdown table per file: level, then bytes and median µs per algorithm (gzip
//! level 1 is ISA-L's, as cgitd makes it; 2–12 libdeflate's).

use cgitd::http::compress::{Coding, compress_at};
use std::time::{Duration, Instant};

/// A page shaped like a tree listing: about 1,500 rows of links, modes and sizes.
fn synthetic_tree() -> Vec<u8> {
    let mut page = String::from("<!DOCTYPE html>\n<html><head><title>repo</title></head><body>\n");
    page.push_str("<table summary='tree listing' class='list'>\n");
    for i in 0..1_500 {
        let name = format!("dir{}/file-{i}-{}.c", i % 37, i * 7919 % 1000);
        page.push_str(&format!(
            "<tr><td class='ls-mode'>-rw-r--r--</td><td><a class='ls-blob' \
             href='/repo/tree/{name}'>{name}</a></td><td class='ls-size'>{}</td>\
             <td><a class='button' href='/repo/log/{name}'>log</a><a class='button' \
             href='/repo/blame/{name}'>blame</a></td></tr>\n",
            (i * 104_729) % 90_000
        ));
    }
    page.push_str("</table></body></html>\n");
    page.into_bytes()
}

/// The median time of compressing `body` (runs for about 0.2 s, at least 5 times).
fn measure(coding: Coding, body: &[u8], level: i32) -> (usize, Duration) {
    let mut times = Vec::new();
    let mut size = 0;
    let started = Instant::now();
    while times.len() < 5 || (started.elapsed() < Duration::from_millis(200) && times.len() < 500) {
        let t = Instant::now();
        size = compress_at(coding, body, level).len();
        times.push(t.elapsed());
    }
    times.sort();
    (size, times[times.len() / 2])
}

fn table(name: &str, body: &[u8]) {
    println!("\n{name}: {} bytes\n", body.len());
    println!("| level | gzip bytes | gzip µs | br bytes | br µs | zstd bytes | zstd µs |");
    println!("|---|---|---|---|---|---|---|");
    for level in [1, 2, 3, 4, 5, 6, 7, 9, 11, 12, 19] {
        let mut row = format!("| {level} |");
        for (coding, max) in [(Coding::Gzip, 12), (Coding::Brotli, 11), (Coding::Zstd, 22)] {
            if level > max {
                row.push_str(" | |");
                continue;
            }
            let (bytes, time) = measure(coding, body, level);
            row.push_str(&format!(" {bytes} | {:.0} |", time.as_secs_f64() * 1e6));
        }
        println!("{row}");
    }
}

fn main() {
    let files: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .collect();
    if files.is_empty() {
        table("synthetic tree listing", &synthetic_tree());
    }
    for file in files {
        let body = std::fs::read(&file).unwrap_or_else(|e| panic!("{file}: {e}"));
        table(&file, &body);
    }
}
