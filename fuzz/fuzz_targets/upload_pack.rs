//! git-upload-pack requests (protocol v0/v1 and v2, any want policy) against a small real
//! repository built once with git: an answer or a protocol error, and for a fetch the
//! selection of its objects, never a panic.
#![no_main]

use cgitd::git::Repo;
use cgitd::git::fetch::select;
use cgitd::repos::RefSnapshot;
use cgitd::smart::{self, Reply, Version, WantPolicy};
use libfuzzer_sys::fuzz_target;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::LazyLock;

fn git(dir: &Path, args: &[&str]) {
    let status = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_AUTHOR_DATE", "2024-01-02T03:04:05Z")
        .env("GIT_COMMITTER_DATE", "2024-01-02T03:04:05Z")
        .env("GIT_AUTHOR_NAME", "Fuzz")
        .env("GIT_AUTHOR_EMAIL", "fuzz@example.com")
        .env("GIT_COMMITTER_NAME", "Fuzz")
        .env("GIT_COMMITTER_EMAIL", "fuzz@example.com")
        .status()
        .expect("git runs");
    assert!(status.success(), "git {args:?}");
}

/// Three commits, a branch, an annotated tag, packed.
static REPO: LazyLock<PathBuf> = LazyLock::new(|| {
    let dir = std::env::temp_dir().join(format!("cgitd-fuzz-upload-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    for n in 0..3 {
        std::fs::write(dir.join(format!("f{n}")), format!("{n}\n")).unwrap();
        git(&dir, &["add", "-A"]);
        git(&dir, &["commit", "-q", "-m", &format!("commit {n}")]);
    }
    git(&dir, &["branch", "topic", "HEAD~1"]);
    git(&dir, &["tag", "-a", "v1", "-m", "v1", "HEAD~2"]);
    git(&dir, &["repack", "-adq"]);
    dir.join(".git")
});

fuzz_target!(|data: &[u8]| {
    let [version, policy, body @ ..] = data else {
        return;
    };
    let version = match version % 3 {
        0 => Version::V0,
        1 => Version::V1,
        _ => Version::V2,
    };
    let policy = match policy % 3 {
        0 => WantPolicy::Advertised,
        1 => WantPolicy::Reachable,
        _ => WantPolicy::Any,
    };
    let gix_repo = gix::open(&*REPO).unwrap();
    let refs = RefSnapshot::build(&gix_repo).unwrap();
    let repo = Repo::new(&gix_repo, None);
    smart::advertise(&refs, version);
    if let Ok(Reply::Pack(pack)) = smart::answer(&repo, None, &refs, version, policy, body) {
        let _ = select(&repo, None, &pack.wanted);
    }
});
