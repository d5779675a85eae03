//! The tree's shape: modules depend only on the layers below them, and no source file grows
//! past what one can read in a sitting.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Top-level modules by layer: a module may use only modules of lower layers.
const LAYERS: &[(&str, u8)] = &[
    ("byte_lru", 0),
    ("confined_files", 0),
    ("config", 0),
    ("git", 1),
    ("request", 1),
    ("filter", 1),
    ("cache", 2),
    ("repos", 2),
    ("smart", 3),
    ("pages", 3),
    ("http", 4),
];

/// The most lines a hand-written source file has.
const MAX_LINES: usize = 700;

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The top-level module a file of `src/` belongs to (`None` for lib.rs and main.rs).
fn top_module(file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src()).unwrap();
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// The top-level modules `text` names as `crate::NAME`.
fn used_modules(text: &str) -> BTreeSet<String> {
    text.match_indices("crate::")
        .map(|(at, _)| {
            text[at + 7..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect()
        })
        .collect()
}

fn layer(module: &str) -> u8 {
    LAYERS
        .iter()
        .find(|(name, _)| *name == module)
        .unwrap_or_else(|| panic!("module {module} has no layer in tests/architecture.rs"))
        .1
}

#[test]
fn modules_use_only_the_layers_below_them() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    let mut wrong = Vec::new();
    for file in &files {
        let Some(module) = top_module(file) else {
            continue;
        };
        let text = std::fs::read_to_string(file).unwrap();
        for used in used_modules(&text) {
            if used != module && layer(&used) >= layer(&module) {
                wrong.push(format!("{} uses crate::{used}", file.display()));
            }
        }
    }
    assert!(
        wrong.is_empty(),
        "against the layering:\n{}",
        wrong.join("\n")
    );
}

#[test]
fn no_source_file_is_over_the_limit() {
    let mut files = Vec::new();
    rust_files(&src(), &mut files);
    rust_files(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("tests"),
        &mut files,
    );
    let long: Vec<String> = files
        .iter()
        .map(|f| (f, std::fs::read_to_string(f).unwrap().lines().count()))
        .filter(|(_, lines)| *lines > MAX_LINES)
        .map(|(f, lines)| format!("{}: {lines} lines", f.display()))
        .collect();
    assert!(
        long.is_empty(),
        "over {MAX_LINES} lines:\n{}",
        long.join("\n")
    );
}
