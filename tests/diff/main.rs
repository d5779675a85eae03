//! commit, diff, rawdiff and patch pages: rawdiff and patch byte-identical to git for every
//! commit of a repository built to hold git's corner cases; HTML structure and links compared
//! with the real cgit; bad input.

#[path = "../common/mod.rs"]
mod common;
mod pages;

use common::*;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::LazyLock;

struct Fixture {
    rc: PathBuf,
    work: PathBuf,
}

impl Fixture {
    fn rev(&self, spec: &str) -> String {
        git(&self.work, &["rev-parse", spec]).trim().to_string()
    }
}

/// Stages everything and commits with a raw (possibly non-UTF-8) message.
fn commit_raw(dir: &Path, message: &[u8], date: &str) -> String {
    git(dir, &["add", "-A"]);
    commit_staged(dir, message, date)
}

fn add_and_commit(dir: &Path, file: &str, message: &str, date: &str) -> String {
    git(dir, &["add", file]);
    commit_staged(dir, message.as_bytes(), date)
}

/// Incompressible bytes (with NULs, so git treats them as binary).
fn pseudo_random(len: usize, seed: u64) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x >> 32) as u8
        })
        .collect()
}

fn write_bytes_name(dir: &Path, name: &[u8], content: &[u8]) {
    std::fs::write(dir.join(std::ffi::OsStr::from_bytes(name)), content).unwrap();
}

fn c_file(extra: &str, tail: &str) -> String {
    let mut s = String::from("#include <stdio.h>\n\nint main(int argc, char **argv)\n{\n");
    for i in 0..12 {
        s.push_str(&format!("\tprintf(\"line {i}\\n\");\n"));
    }
    s.push_str(extra);
    s.push_str("\treturn 0;\n}\n\nstatic void helper(void)\n{\n");
    for i in 0..10 {
        s.push_str(&format!("\tputs(\"helper {i}\");\n"));
    }
    s.push_str(tail);
    s.push_str("}\n");
    s
}

/// The repository of corner cases, built once and only read by the tests (each with its own
/// server).
static FIXTURE: LazyLock<Fixture> = LazyLock::new(build);

fn build() -> Fixture {
    let dir = shared_dir("diff");
    let work = dir.join("work");
    init_repo(&work);
    let readme: String = (0..20).map(|i| format!("readme line {i}\n")).collect();
    write(&work, "README", &readme);
    write(&work, "main.c", c_file("", ""));
    write(&work, "with space.txt", "spaced\n");
    write(&work, "empty", "");
    write(&work, "crlf.txt", "one\r\ntwo\r\nthree\r\n");
    write(&work, "nonl.txt", "no newline");
    write(&work, "script.sh", "#!/bin/sh\necho hi\n");
    commit_all(&work, "Initial commit", "2024-01-01T10:00:00+00:00");

    write(
        &work,
        "main.c",
        c_file("\tprintf(\"added\\n\");\n", "\tputs(\"tail\");\n"),
    );
    write(&work, "nonl.txt", "no newline, changed");
    write(&work, "crlf.txt", "one\r\nTWO\r\nthree\r\n");
    std::fs::remove_file(work.join("README")).unwrap();
    write(&work, "README.md", format!("{readme}one more line\n"));
    std::fs::create_dir_all(work.join("dir")).unwrap();
    std::fs::rename(work.join("with space.txt"), work.join("dir/with space.txt")).unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(
        work.join("script.sh"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    commit_all(
        &work,
        "Rename, edit, chmod\n\nA body paragraph\nwith two lines.\n\nAnd a second one.",
        "2024-01-02T10:00:00+00:00",
    );

    write_bytes_name(&work, b"caf\xe9.txt", b"latin-1 name\n");
    write(&work, "é ü.txt", "utf-8 name\n");
    write(&work, "nonl.txt", "now with newline\n");
    git(&work, &["config", "i18n.commitEncoding", "ISO-8859-1"]);
    commit_raw(
        &work,
        b"Non-UTF-8 message: caf\xe9\n\nBody with \xe9 too.\n",
        "2024-01-03T10:00:00+00:00",
    );
    git(&work, &["config", "--unset", "i18n.commitEncoding"]);

    std::fs::remove_file(work.join("script.sh")).unwrap();
    std::os::unix::fs::symlink("main.c", work.join("script.sh")).unwrap();
    std::fs::remove_file(work.join("empty")).unwrap();
    write(&work, "empty2", "");
    write(&work, "copy.c", c_file("", ""));
    commit_all(
        &work,
        "Ünïcode subject with a very long tail that certainly goes beyond the mail width of seventy-eight columns",
        "2024-01-04T10:00:00+00:00",
    );

    let sub_a = "1111111111111111111111111111111111111111";
    let sub_b = "2222222222222222222222222222222222222222";
    git(
        &work,
        &[
            "update-index",
            "--add",
            "--cacheinfo",
            &format!("160000,{sub_a},sub"),
        ],
    );
    commit_staged(
        &work,
        "Add submodule".as_bytes(),
        "2024-01-05T10:00:00+00:00",
    );
    git(
        &work,
        &[
            "update-index",
            "--cacheinfo",
            &format!("160000,{sub_b},sub"),
        ],
    );
    let out = git_command(
        &work,
        &["commit", "-q", "-m", "Move submodule =?x?= (A.B.)"],
    )
    .env("GIT_AUTHOR_NAME", "Jürgen \"J.\" Ö")
    .output()
    .unwrap();
    assert!(out.status.success());

    // branches, a merge and an octopus merge
    git(&work, &["checkout", "-q", "-b", "side"]);
    write(&work, "side.txt", "side\n");
    add_and_commit(&work, "side.txt", "Side work", "2024-01-06T10:00:00+00:00");
    git(&work, &["checkout", "-q", "-b", "other", "main"]);
    write(&work, "other.txt", "other\n");
    add_and_commit(
        &work,
        "other.txt",
        "Other work",
        "2024-01-06T11:00:00+00:00",
    );
    git(&work, &["checkout", "-q", "-b", "third", "main"]);
    write(&work, "third.txt", "third\n");
    add_and_commit(
        &work,
        "third.txt",
        "Third work",
        "2024-01-06T12:00:00+00:00",
    );
    git(&work, &["checkout", "-q", "main"]);
    write(
        &work,
        "main.c",
        c_file("   \tprintf(\"added\\n\");  \n", "\tputs(\"tail\");\n"),
    );
    add_and_commit(
        &work,
        "main.c",
        "Whitespace only",
        "2024-01-07T10:00:00+00:00",
    );
    git(
        &work,
        &["merge", "-q", "--no-ff", "-m", "Merge side", "side"],
    );
    git(
        &work,
        &["merge", "-q", "--no-ff", "-m", "Octopus", "other", "third"],
    );

    // binary files, on their own branch
    git(&work, &["checkout", "-q", "-b", "binary", "main"]);
    write(&work, "bin.dat", b"\x00\x01\x02binary\n".as_slice());
    add_and_commit(
        &work,
        "bin.dat",
        "Add a binary",
        "2024-01-07T12:00:00+00:00",
    );
    write(
        &work,
        "bin.dat",
        b"\x00\x01\x02binary, changed\n".as_slice(),
    );
    add_and_commit(
        &work,
        "bin.dat",
        "Change a binary",
        "2024-01-07T13:00:00+00:00",
    );
    // Large binaries: a small edit (delta), long repeats (full hash buckets, 64 KiB copies),
    // an unrelated rewrite (literal), then deletions.
    let noise = pseudo_random(150_000, 3);
    write(&work, "big.bin", &noise);
    let repeated: Vec<u8> = b"\0repeat".iter().copied().cycle().take(300_000).collect();
    write(&work, "repeat.bin", &repeated);
    commit_raw(&work, b"Add large binaries", "2024-01-07T13:10:00+00:00");
    let mut edited = noise.clone();
    edited[70_000..70_010].copy_from_slice(b"edited....");
    edited.splice(100..100, pseudo_random(500, 4));
    write(&work, "big.bin", &edited);
    let mut repeated = repeated;
    repeated.extend_from_slice(&noise[..20_000]);
    repeated[150_000] = b'!';
    write(&work, "repeat.bin", &repeated);
    commit_raw(&work, b"Edit large binaries", "2024-01-07T13:20:00+00:00");
    write(&work, "big.bin", pseudo_random(9_000, 5));
    commit_raw(&work, b"Rewrite a binary", "2024-01-07T13:30:00+00:00");
    git(&work, &["mv", "repeat.bin", "renamed.bin"]);
    git(&work, &["update-index", "--chmod=+x", "big.bin"]);
    commit_staged(
        &work,
        b"Rename a binary, make one executable",
        "2024-01-07T13:35:00+00:00",
    );
    git(&work, &["rm", "-qf", "big.bin", "renamed.bin"]);
    commit_raw(&work, b"Remove large binaries", "2024-01-07T13:40:00+00:00");
    git(&work, &["checkout", "-q", "main"]);

    // hunk headers whose function line git cuts inside a UTF-8 character, or at Latin-1
    git(&work, &["checkout", "-q", "-b", "funcname", "main"]);
    let file = |edit: &str| {
        let mut text = "msgid \"".to_string() + &"ж".repeat(40) + "\"\n";
        text.extend((0..8).map(|i| format!("  line {i}\n")));
        text.push_str(edit);
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(b"caf\xe9 latin-1 heading\n");
        bytes.extend((0..8).flat_map(|i| format!("  more {i}\n").into_bytes()));
        bytes.extend_from_slice(edit.as_bytes());
        bytes
    };
    write(&work, "messages.po", file(""));
    commit_raw(&work, b"Add messages", "2024-01-07T15:00:00+00:00");
    write(&work, "messages.po", file("  edited\n"));
    commit_raw(&work, b"Edit messages", "2024-01-07T15:10:00+00:00");
    git(&work, &["checkout", "-q", "main"]);

    // a change over the page's line limit
    git(&work, &["checkout", "-q", "-b", "big", "main"]);
    let big: String = (0..12_000)
        .map(|i| format!("generated line {i}\n"))
        .collect();
    write(&work, "big.txt", big);
    add_and_commit(&work, "big.txt", "A big file", "2024-01-07T14:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    git(
        &work,
        &["notes", "add", "-m", "A note <with> markup", "main~7"],
    );

    // an unrelated history
    git(&work, &["checkout", "-q", "--orphan", "orphan"]);
    git(&work, &["rm", "-rq", "--cached", "."]);
    for entry in std::fs::read_dir(&work).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() != ".git" {
            let _ = std::fs::remove_file(&path).or_else(|_| std::fs::remove_dir_all(&path));
        }
    }
    write(&work, "lonely.txt", "alone\n");
    add_and_commit(
        &work,
        "lonely.txt",
        "Orphan root",
        "2024-01-08T10:00:00+00:00",
    );
    git(&work, &["checkout", "-q", "main"]);

    let rc = dir.join("cgitrc");
    std::fs::write(
        &rc,
        format!(
            "virtual-root=/\nsnapshots=tar.gz zip\n\
             repo.url=r\nrepo.path={p}\n\n\
             repo.url=fork/copy\nrepo.path={p}\n",
            p = work.join(".git").display()
        ),
    )
    .unwrap();
    Fixture { rc, work }
}

/// Commits (id, parents) of every branch.
fn all_commits(f: &Fixture) -> Vec<(String, Vec<String>)> {
    git(&f.work, &["rev-list", "--parents", "--all"])
        .lines()
        .map(|l| {
            let mut ids = l.split_whitespace().map(str::to_string);
            let id = ids.next().unwrap();
            (id, ids.collect())
        })
        .collect()
}

#[test]
fn rawdiff_is_byte_identical_to_git_for_every_commit() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let commits = all_commits(f);
    assert!(commits.len() >= 12);
    for (id, parents) in &commits {
        let expected = match parents.first() {
            Some(p) => git_bytes(&f.work, &["diff", p, id]),
            None => git_bytes(
                &f.work,
                &["diff-tree", "-p", "--no-commit-id", "--root", id],
            ),
        };
        let r = server.get(&format!("/r/rawdiff/?id={id}"));
        assert_eq!(r.status, 200);
        assert_eq!(r.header("content-type"), Some("text/plain; charset=UTF-8"));
        assert_eq!(
            String::from_utf8_lossy(&r.body),
            String::from_utf8_lossy(&expected),
            "rawdiff of {id}"
        );
        assert_eq!(r.body, expected, "rawdiff bytes of {id}");
    }
    // an explicit, unrelated old side
    let (old, new) = (f.rev("orphan"), f.rev("main"));
    let r = server.get(&format!("/r/rawdiff/?id={new}&id2={old}"));
    assert_eq!(r.body, git_bytes(&f.work, &["diff", &old, &new]));
}

/// `git format-patch` as cgitd's patch page is specified: mails on stdout, no subject prefix,
/// cgitd's default signature.
fn format_patch(work: &Path, args: &[&str]) -> Vec<u8> {
    let signature = format!("--signature=cgitd {}", env!("CARGO_PKG_VERSION"));
    let mut all = vec![
        "format-patch",
        "-N",
        "--stdout",
        "--subject-prefix=",
        &signature,
    ];
    all.extend_from_slice(args);
    git_bytes(work, &all)
}

#[test]
fn patch_is_byte_identical_to_git_format_patch_for_every_commit() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let mut binary_forms = std::collections::BTreeSet::new();
    for (id, parents) in all_commits(f) {
        let expected = match parents.first() {
            Some(p) => format_patch(&f.work, &[&format!("{p}..{id}")]),
            None => format_patch(&f.work, &["--root", "-1", &id]),
        };
        let r = server.get(&format!("/r/patch/?id={id}"));
        assert_eq!(r.status, 200);
        let name = match parents.first() {
            Some(p) => format!("inline; filename=\"{p}..{id}.patch\""),
            None => format!("inline; filename=\"{id}.patch\""),
        };
        assert_eq!(r.header("content-disposition"), Some(name.as_str()));
        assert_eq!(
            String::from_utf8_lossy(&r.body),
            String::from_utf8_lossy(&expected),
            "patch of {id}"
        );
        assert_eq!(r.body, expected, "patch bytes of {id}");
        binary_forms.extend(
            [
                "GIT binary patch\ndelta ",
                "GIT binary patch\nliteral ",
                "\nliteral 0\n",
            ]
            .into_iter()
            .filter(|form| r.text().contains(form)),
        );
    }
    assert_eq!(
        binary_forms.len(),
        3,
        "binary patches seen: {binary_forms:?}"
    );
    // a range: oldest first, merges left out
    let (old, new) = (f.rev("main~3"), f.rev("main"));
    let expected = format_patch(&f.work, &[&format!("{old}..{new}")]);
    let r = server.get(&format!("/r/patch/?id={new}&id2={old}"));
    assert_eq!(
        String::from_utf8_lossy(&r.body),
        String::from_utf8_lossy(&expected)
    );
}

#[test]
fn binary_patches_follow_the_repositorys_zlib_level() {
    let dir = TempDir::new("zlib-level");
    let work = dir.path().join("work");
    init_repo(&work);
    write(&work, "data.bin", pseudo_random(40_000, 11));
    commit_all(&work, "Add data", "2024-02-01T10:00:00+00:00");
    write(&work, "data.bin", pseudo_random(30_000, 12));
    let id = commit_all(&work, "Replace data", "2024-02-01T11:00:00+00:00");
    let rc = dir.path().join("cgitrc");
    std::fs::write(
        &rc,
        format!("repo.url=r\nrepo.path={}\n", work.join(".git").display()),
    )
    .unwrap();
    for level in ["9", "-1", "0"] {
        git(&work, &["config", "core.compression", level]);
        let expected = format_patch(&work, &[&format!("{id}~1..{id}")]);
        assert!(expected.windows(16).any(|w| w == b"GIT binary patch"));
        // a fresh server reads the repository's configuration anew
        let server = Server::start(&rc);
        let r = server.get(&format!("/r/patch/?id={id}"));
        assert_eq!(r.body, expected, "core.compression={level}");
    }
}

#[test]
fn path_limited_patch_and_rawdiff_match_git() {
    let f = &*FIXTURE;
    let server = Server::start(&f.rc);
    let (old, new) = (f.rev("main~8"), f.rev("main"));
    for path in ["main.c", "dir", "nonl.txt"] {
        let expected = format_patch(&f.work, &[&format!("{old}..{new}"), "--", path]);
        // cgit's patches say which path they are limited to after the diffstat.
        let expected = String::from_utf8(expected).unwrap().replace(
            "\n\ndiff --git ",
            &format!("\n\n(limited to '{path}')\n\ndiff --git "),
        );
        assert!(
            expected.contains("(limited to"),
            "{path} changes in the range"
        );
        let r = server.get(&format!("/r/patch/{path}?id={new}&id2={old}"));
        assert_eq!(r.status, 200);
        assert_eq!(r.text(), expected, "patch limited to {path}");

        let expected = git_bytes(&f.work, &["diff", &old, &new, "--", path]);
        let r = server.get(&format!("/r/rawdiff/{path}?id={new}&id2={old}"));
        assert_eq!(r.body, expected, "rawdiff limited to {path}");
    }
    // a commit that does not touch the path has no patch
    let r = server.get(&format!("/r/patch/nonl.txt?id={}", f.rev("main")));
    assert_eq!(r.status, 200);
    assert!(r.body.is_empty(), "{}", r.text());
}
