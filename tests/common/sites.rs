//! Fixtures shared by several test binaries.

use super::*;

/// A site: a bare repository with branches and tags, a work tree, urls with `+` and spaces,
/// sections, a scan-path, an ignored and a hidden repository.
pub struct Sections {
    pub root: PathBuf,
    pub rc: PathBuf,
}

/// Builds [`Sections`] in a [`shared_dir`]; call it from a `LazyLock`.
pub fn sections() -> Sections {
    let root = shared_dir("sections");
    let work = root.join("work");
    init_repo(&work);
    write(&work, "README.md", "# Hello\n");
    commit_all(&work, "Initial commit", "2024-01-01T10:00:00+00:00");
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    write(&work, "src/lib.rs", "pub fn x() {}\n");
    commit_all(&work, "Add <lib> & things", "2024-02-01T10:00:00+00:00");
    git(&work, &["tag", "light"]);
    git(&work, &["checkout", "-q", "-b", "feature"]);
    write(&work, "feature.txt", "f\n");
    commit_all(&work, "Feature work", "2024-03-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    git(&work, &["tag", "-a", "v2.0", "-m", "Version 2.0"]);
    git(&root, &["clone", "-q", "--bare", "work", "bare.git"]);
    git(&root.join("bare.git"), &["pack-refs", "--all"]);
    let scan = root.join("scan");
    init_repo(&scan.join("alpha"));
    commit_all(&scan.join("alpha"), "alpha", "2024-01-05T10:00:00+00:00");
    git(&scan, &["clone", "-q", "--bare", "alpha", "beta.git"]);
    std::fs::write(scan.join("beta.git/description"), "The beta repository\n").unwrap();
    let rc = root.join("cgitrc");
    let text = format!(
        "virtual-root=/\nsnapshots=tar.gz zip\nenable-index-links=1\n\
         section=Main\n\
         repo.url=bare\nrepo.path={root}/bare.git\nrepo.desc=A bare repository\nrepo.owner=Alice\n\n\
         repo.url=foo+bar\nrepo.path={root}/work/.git\nrepo.desc=plus sign\n\n\
         repo.url=with space\nrepo.path={root}/bare.git\n\n\
         section=Hidden things\n\
         repo.url=secret\nrepo.path={root}/bare.git\nrepo.hide=1\n\n\
         repo.url=gone\nrepo.path={root}/bare.git\nrepo.ignore=1\n\n\
         section=Scanned\nremove-suffix=1\nscan-path={root}/scan\n",
        root = root.display()
    );
    std::fs::write(&rc, text).unwrap();
    Sections { root, rc }
}

/// The hrefs inside `div.content`, the part of a page that lists repositories and refs. cgit
/// leaves spaces unescaped in some repository links; browsers send them as `%20`, as we write them.
pub fn content_links(html: &str) -> String {
    let start = html.find("<div class='content'>").expect("content div");
    let end = html.rfind("<!-- class=content -->").expect("content end");
    hrefs(&html[start..end])
        .into_iter()
        .map(|h| h.replace(' ', "%20"))
        .collect::<Vec<_>>()
        .join("\n")
}
