//! The README stays a short operator's guide: at most 250 lines, every cgitrc option the
//! parser reads named in it, and every document it links present.

use std::path::Path;

const MAX_README_LINES: usize = 250;

fn read(rel: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(rel)).unwrap()
}

/// The option names `src/config/parse.rs` matches on (`"name" =>` and `| "name"` arms, before
/// its tests), plus the keys it handles before the match.
fn parsed_options() -> Vec<String> {
    let parse = read("src/config/parse.rs");
    let code = parse.split("#[cfg(test)]").next().unwrap();
    let mut names = Vec::new();
    for line in code.lines() {
        let line = line.trim_start().trim_start_matches("| ");
        let Some(arms) = line.split("=>").next().filter(|_| line.starts_with('"')) else {
            continue;
        };
        for quoted in arms.split('"').skip(1).step_by(2) {
            names.push(quoted.to_string());
        }
    }
    for key in [
        "repo.url",
        "include",
        "scan-path",
        "trusted-proxies",
        "header",
    ] {
        assert!(
            code.contains(&format!("\"{key}\"")),
            "parse.rs handles {key}"
        );
        names.push(key.to_string());
    }
    names.sort();
    names.dedup();
    names
}

#[test]
fn the_readme_is_short() {
    let lines = read("README.md").lines().count();
    assert!(
        lines <= MAX_README_LINES,
        "README.md has {lines} lines; details belong in docs/"
    );
}

#[test]
fn every_option_is_in_the_readme() {
    let readme = read("README.md");
    let options = parsed_options();
    assert!(
        options.len() > 80,
        "found the parser's options: {options:?}"
    );
    let missing: Vec<&String> = options
        .iter()
        .filter(|name| {
            !readme.contains(&format!("`{name}`")) && !readme.contains(&format!("`repo.{name}`"))
        })
        .collect();
    assert!(missing.is_empty(), "options not in the README: {missing:?}");
}

#[test]
fn the_documents_the_readme_links_exist() {
    let readme = read("README.md");
    let links: Vec<&str> = readme
        .split("](")
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .filter(|target| !target.starts_with("http"))
        .collect();
    assert!(links.len() >= 4, "{links:?}");
    for link in links {
        let file = link.split('#').next().unwrap();
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join(file);
        assert!(
            path.is_file(),
            "README links {link}, which is not in the tree"
        );
    }
}
