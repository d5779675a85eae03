//! The cost of highlighting a file in-process (uncached: what the first view of a blob pays),
//! for a 2,000-line C file and a 500-line Rust file.
//!
//! usage: cargo bench --bench highlight [-- FILTER]
//!        CGITD_BENCH_C=FILE measures that file instead (e.g. 2,000 lines of git.git's diff.c:
//!        `git show HEAD:diff.c | head -2000 > /tmp/diff2000.c`); without it, the C file is
//!        synthetic: functions with comments, strings, loops and preprocessor lines.

use cgitd::pages::parts::highlight::{Highlighted, highlight, syntax_for};
use criterion::{Criterion, criterion_group, criterion_main};
use std::time::{Duration, Instant};

/// About 2,000 lines of ordinary C.
fn synthetic_c() -> String {
    let mut text = String::from("#include <stdio.h>\n#include \"strbuf.h\"\n\n");
    for i in 0..160 {
        text.push_str(&format!(
            "/*\n * Counts the entries of list {i} that match \"prefix\".\n */\n\
             static int count_{i}(const struct list *l, const char *prefix)\n{{\n\
             \tint n = 0;\n\tfor (size_t j = 0; j < l->nr; j++) {{\n\
             \t\tif (!strncmp(l->items[j], prefix, {i}))\n\t\t\tn += 0x{i:x};\n\t}}\n\
             \treturn n; // done\n}}\n\n"
        ));
    }
    text
}

fn bench(c: &mut Criterion) {
    let text = match std::env::var("CGITD_BENCH_C") {
        Ok(path) => std::fs::read_to_string(path).expect("CGITD_BENCH_C is readable"),
        Err(_) => synthetic_c(),
    };
    let rust: String = include_str!("../src/pages/tree.rs").to_string();
    for (name, file, text) in [("c", "x.c", &text), ("rust", "x.rs", &rust)] {
        let syntax = syntax_for(file, "").expect("a syntax");
        let lines = text.lines().count();
        // Whole, not cut by the server's time budget.
        let far = || Instant::now() + Duration::from_secs(3600);
        assert!(matches!(
            highlight(syntax, text, far()),
            Highlighted::Whole(_)
        ));
        c.bench_function(&format!("highlight {name} ({lines} lines)"), |b| {
            b.iter(|| highlight(syntax, text, far()))
        });
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(10).measurement_time(Duration::from_secs(5));
    targets = bench
}
criterion_main!(benches);
