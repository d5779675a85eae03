//! cgitrc features that touch the filesystem: scan-path with its options, project-list,
//! in-repo cgitrc, enable-git-config, description files, nested includes.

mod common;

use cgitd::config::{Config, Severity};
use common::*;

fn bare(dir: &std::path::Path, rel: &str) -> std::path::PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(&path).unwrap();
    git(&path, &["init", "-q", "--bare"]);
    path
}

#[test]
fn scan_path_honours_its_options() {
    let dir = TempDir::new("scan");
    let root = dir.path().join("repos");
    bare(&root, "team/one.git");
    let two = bare(&root, "team/sub/two.git");
    let hidden = bare(&root, ".hidden/three.git");
    let skipped = bare(&root, "skipped.git");
    std::fs::write(skipped.join("noweb"), "").unwrap();
    std::fs::write(two.join("description"), "Second repository\n").unwrap();
    std::fs::write(
        two.join("cgitrc"),
        "desc=From in-repo cgitrc\ndefbranch=dev\nurl=nope\n",
    )
    .unwrap();
    std::fs::write(
        hidden.join("config"),
        "[core]\n\tbare = true\n[gitweb]\n\towner = Grace\n\tcategory = Hidden cat\n[cgit]\n\thide = 1\n",
    )
    .unwrap();
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "remove-suffix=1\nsection-from-path=1\nscan-hidden-path=1\nenable-git-config=1\nscan-path={}\n",
            root.display()
        ),
    )
    .unwrap();
    let cfg = Config::load(&rc).unwrap();
    let urls: Vec<&str> = cfg.repos.iter().map(|r| r.url.as_str()).collect();
    assert!(
        urls.contains(&"team/one") && urls.contains(&"team/sub/two"),
        "{urls:?}"
    );
    assert!(urls.contains(&".hidden/three"));
    assert!(
        !urls.iter().any(|u| u.contains("skipped")),
        "noweb repositories are skipped"
    );
    let two = cfg.repo("team/sub/two").unwrap();
    assert_eq!(two.opts.section, "team");
    assert_eq!(two.name, "sub/two");
    assert_eq!(two.desc, "From in-repo cgitrc");
    assert_eq!(two.defbranch.as_deref(), Some("dev"));
    assert!(
        cfg.diagnostics
            .iter()
            .any(|d| d.message.contains("'url' is not allowed"))
    );
    let three = cfg.repo(".hidden/three").unwrap();
    assert_eq!(three.owner, "Grace");
    // section-from-path applies after the git config: the path wins over gitweb.category
    assert_eq!(three.opts.section, ".hidden");
    assert!(three.hide);
    let one = cfg.repo("team/one").unwrap();
    assert!(
        !one.owner.is_empty(),
        "owner comes from the directory's owner"
    );
}

#[test]
fn project_list_and_strict_export_limit_the_scan() {
    let dir = TempDir::new("plist");
    let root = dir.path().join("repos");
    bare(&root, "a.git");
    let b = bare(&root, "b.git");
    bare(&root, "c.git");
    std::fs::write(b.join("git-daemon-export-ok"), "").unwrap();
    std::fs::write(dir.path().join("projects"), "a.git\nb.git\n").unwrap();
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "project-list={}/projects\nscan-path={root}\nproject-list=\nstrict-export=git-daemon-export-ok\nsection=second\nscan-path={root}\n",
            dir.path().display(),
            root = root.display()
        ),
    )
    .unwrap();
    let cfg = Config::load(&rc).unwrap();
    let urls: Vec<(&str, &str)> = cfg
        .repos
        .iter()
        .map(|r| (r.url.as_str(), r.opts.section.as_str()))
        .collect();
    assert_eq!(
        urls,
        vec![("a.git", ""), ("b.git", ""), ("b.git", "second")]
    );
}

#[test]
fn includes_nest_expand_macros_and_stop_at_depth() {
    let dir = TempDir::new("include");
    let d = dir.path();
    std::fs::write(d.join("loop.rc"), "include=loop.rc\n").unwrap();
    std::fs::write(d.join("inner.rc"), "root-title=Included\n").unwrap();
    std::fs::write(
        d.join("cgitrc"),
        "include=${CGITD_TEST_INCLUDE_DIR}/inner.rc\ninclude=loop.rc\ninclude=missing.rc\n",
    )
    .unwrap();
    // SAFETY: no other test reads or writes this variable.
    unsafe { std::env::set_var("CGITD_TEST_INCLUDE_DIR", d) };
    let cfg = Config::load(&d.join("cgitrc")).unwrap();
    assert_eq!(
        cfg.globals.root_title, "Included",
        "include= expands $VAR macros"
    );
    assert!(
        cfg.diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error && d.message.contains("nested too deeply"))
    );
    assert!(
        cfg.diagnostics
            .iter()
            .any(|d| d.message.contains("missing.rc"))
    );
}

#[test]
fn page_files_are_read_when_the_configuration_loads() {
    let dir = TempDir::new("pagefiles");
    let d = dir.path();
    std::fs::write(d.join("header.html"), "<p>site header</p>").unwrap();
    std::fs::write(
        d.join("cgitrc"),
        "header=header.html\nfooter=missing.html\n",
    )
    .unwrap();
    let cfg = Config::load(&d.join("cgitrc")).unwrap();
    assert_eq!(cfg.globals.header.as_deref(), Some("<p>site header</p>"));
    assert_eq!(cfg.globals.footer, None);
    assert!(
        cfg.diagnostics
            .iter()
            .any(|d| d.message.contains("missing.html"))
    );
}
