//! Compares cgitd's rawdiff and patch pages with git's own output for random commits of a
//! repository: `cargo run --release --example diffcheck -- REPO [N] [SEED] [PATHSPEC...]`
//! (with pathspecs, only commits touching them, e.g. `'*.png'` to check binary patches).

use cgitd::config::Config;
use cgitd::pages::{self, Site};
use std::path::Path;
use std::process::Command;

fn git(repo: &Path, args: &[&str]) -> Vec<u8> {
    try_git(repo, args).unwrap_or_else(|e| panic!("git {args:?}: {e}"))
}

/// git's output, or its error message (e.g. an object missing from a partial mirror).
fn try_git(repo: &Path, args: &[&str]) -> Result<Vec<u8>, String> {
    let out = Command::new("git")
        .arg("--git-dir")
        .arg(repo)
        .args(args)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .output()
        .expect("git runs");
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(String::from_utf8_lossy(&out.stderr).trim().to_string())
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let repo_arg = args.get(1).expect("usage: diffcheck REPO [N] [SEED]");
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(50);
    let mut seed: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(1);
    let found = Command::new("git")
        .args(["-C", repo_arg, "rev-parse", "--absolute-git-dir"])
        .output()
        .expect("git runs");
    let git_dir = Path::new(String::from_utf8_lossy(&found.stdout).trim()).to_path_buf();
    let rc = std::env::temp_dir().join(format!("diffcheck-{}.cgitrc", std::process::id()));
    std::fs::write(
        &rc,
        format!("repo.url=r\nrepo.path={}\n", git_dir.display()),
    )
    .unwrap();
    let config = Config::load(&rc).expect("config");
    let _ = std::fs::remove_file(&rc);
    let site = Site::new(config);
    let mut rev_list = vec!["rev-list", "--all", "--"];
    rev_list.extend(args.iter().skip(4).map(String::as_str));
    let all = String::from_utf8(git(&git_dir, &rev_list)).unwrap();
    let commits: Vec<&str> = all.lines().collect();
    let signature = site.config.globals.patch_signature.clone();
    let (mut raw_ok, mut patch_ok, mut refused, mut checked) = (0, 0, 0, 0);
    let mut binary_ok = 0;
    for _ in 0..n.min(commits.len()) {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let id = commits[(seed >> 33) as usize % commits.len()];
        let parents =
            String::from_utf8(git(&git_dir, &["rev-list", "--parents", "-n1", id])).unwrap();
        let parent = parents.split_whitespace().nth(1);
        let expected_raw = match parent {
            Some(p) => try_git(&git_dir, &["diff", p, id]),
            None => try_git(
                &git_dir,
                &["diff-tree", "-p", "--no-commit-id", "--root", id],
            ),
        };
        let sig_arg = format!("--signature={signature}");
        let range = parent.map(|p| format!("{p}..{id}"));
        let mut patch_args = vec![
            "format-patch",
            "-N",
            "--stdout",
            "--subject-prefix=",
            &sig_arg,
        ];
        match &range {
            Some(r) => patch_args.push(r),
            None => patch_args.extend(["--root", "-1", id]),
        }
        let (expected_raw, expected_patch) = match (expected_raw, try_git(&git_dir, &patch_args)) {
            (Ok(raw), Ok(patch)) => (raw, patch),
            (Err(e), _) | (_, Err(e)) => {
                println!("skipped {id}: git fails: {e}");
                continue;
            }
        };
        let (_, raw) = render(&site, &format!("/r/rawdiff/?id={id}"));
        let (patch_status, patch) = render(&site, &format!("/r/patch/?id={id}"));
        checked += 1;
        if raw == expected_raw {
            raw_ok += 1;
        } else {
            println!("rawdiff differs: {id}");
        }
        if patch == expected_patch {
            patch_ok += 1;
            if patch.windows(16).any(|w| w == b"GIT binary patch") {
                binary_ok += 1;
            }
        } else if patch_status == 400 {
            refused += 1;
            println!("patch refused:   {id} (more commits than a patch page holds)");
        } else {
            println!("patch differs:   {id}");
        }
    }
    println!(
        "{checked} commits: rawdiff {raw_ok} identical, patch {patch_ok} identical \
         ({binary_ok} of them with binary patches), {refused} refused"
    );
}

/// Status and body of a page.
fn render(site: &Site, url: &str) -> (u16, Vec<u8>) {
    let (path, query) = url.split_once('?').unwrap();
    let req = cgitd::request::url::parse(&site.config, path, Some(query)).expect("url");
    let page = pages::render(site, &req);
    (page.status, page.body.bytes().to_vec())
}
