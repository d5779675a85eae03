//! The objects a fetch selects and the pack written from them, checked by git itself: the
//! pack indexed by `git index-pack` into an empty repository, whose refs then pass
//! `git fsck --strict` and list the objects git would have sent.

mod common;

use cgitd::git::Repo;
use cgitd::git::commit::Commits;
use cgitd::git::fetch::{Deepen, Filter, Selection, Wanted, select, write_pack};
use cgitd::git::packs::Packs;
use common::*;
use gix::ObjectId;
use std::path::Path;

/// A history of three commits on main and one on a topic branch, with a tag, a binary file
/// and a rename, packed as git packs it.
fn build(root: &Path) -> std::path::PathBuf {
    let work = root.join("work");
    init_repo(&work);
    write(&work, "README", "hello\n");
    write(&work, "src/main.rs", "fn main() {}\n");
    commit_all(&work, "first", "2024-01-01T10:00:00+00:00");
    git(&work, &["tag", "-a", "v1.0", "-m", "Version 1.0"]);
    write(&work, "data.bin", [0u8, 1, 2, 255, 0, 7].repeat(500));
    write(&work, "README", "hello\nagain\n");
    commit_all(&work, "second", "2024-02-01T10:00:00+00:00");
    git(&work, &["mv", "src/main.rs", "src/app.rs"]);
    commit_all(&work, "third", "2024-03-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "-b", "topic", "HEAD~1"]);
    write(&work, "topic.txt", "t\n");
    commit_all(&work, "topic", "2024-04-01T10:00:00+00:00");
    git(&work, &["checkout", "-q", "main"]);
    git(root, &["clone", "-q", "--bare", "work", "packed.git"]);
    let packed = root.join("packed.git");
    git(&packed, &["repack", "-a", "-d", "-q"]);
    packed
}

fn id(repo: &Path, rev: &str) -> ObjectId {
    ObjectId::from_hex(git(repo, &["rev-parse", rev]).trim().as_bytes()).unwrap()
}

fn wanted(wants: Vec<ObjectId>) -> Wanted {
    Wanted::clone_of(wants)
}

/// What `f` makes of the repository at `path` read through the shared pack reader, as the
/// server reads it (entries copied from its packs).
fn with_repo<R>(path: &Path, f: impl FnOnce(&Repo) -> R) -> R {
    let gix_repo = gix::open(path).unwrap();
    let (packs, commits) = (Packs::new(1 << 20), Commits::default());
    let set = packs.set(&gix_repo.git_dir().join("objects"), gix::hash::Kind::Sha1);
    f(&Repo::new(&gix_repo, Some((&packs, &set, &commits))))
}

/// The selection for `wanted` and its pack (thin when `wanted.thin`).
fn pack_of(source: &Path, wanted: &Wanted) -> (Selection, Vec<u8>) {
    with_repo(source, |repo| {
        let mut selection = select(repo, None, wanted).unwrap();
        let client = match wanted.thin {
            true => std::mem::take(&mut selection.client),
            false => Default::default(),
        };
        let mut pack = Vec::new();
        let written = write_pack(repo, selection.objects.clone(), &client, &mut pack).unwrap();
        assert_eq!(written, pack.len() as u64);
        (selection, pack)
    })
}

/// `pack` indexed by `git index-pack` (with `args`) into the repository at `dest`: whether
/// git took it.
fn index_pack(dest: &Path, args: &[&str], pack: &[u8]) -> bool {
    let mut all = vec!["index-pack", "--stdin", "--strict"];
    all.extend_from_slice(args);
    let mut child = git_command(dest, &all)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write;
    child.stdin.take().unwrap().write_all(pack).unwrap();
    child.wait_with_output().unwrap().status.success()
}

/// The selection's pack, indexed into a new bare repository with `refs` set; returns the
/// number of objects sent.
fn receive(source: &Path, wanted: &Wanted, dest: &Path, refs: &[(&str, ObjectId)]) -> usize {
    let (selection, pack) = pack_of(source, wanted);
    git(
        dest.parent().unwrap(),
        &["init", "-q", "--bare", dest.to_str().unwrap()],
    );
    assert!(index_pack(dest, &[], &pack), "index-pack refused the pack");
    for (name, target) in refs {
        git(dest, &["update-ref", name, &target.to_string()]);
    }
    selection.objects.len()
}

fn sorted_objects(repo: &Path, args: &[&str]) -> Vec<String> {
    let mut all = vec!["rev-list", "--objects"];
    all.extend_from_slice(args);
    let mut lines: Vec<String> = git(repo, &all)
        .lines()
        .map(|l| l.split(' ').next().unwrap().to_string())
        .collect();
    lines.sort();
    lines
}

#[test]
fn a_full_clone_pack_holds_every_object_and_passes_fsck() {
    let dir = TempDir::new("fetch-full");
    let packed = build(dir.path());
    let (main, topic, tag) = (
        id(&packed, "main"),
        id(&packed, "topic"),
        id(&packed, "refs/tags/v1.0"),
    );
    let dest = dir.path().join("copy.git");
    let sent = receive(
        &packed,
        &wanted(vec![main, topic, tag]),
        &dest,
        &[
            ("refs/heads/main", main),
            ("refs/heads/topic", topic),
            ("refs/tags/v1.0", tag),
        ],
    );
    git(&dest, &["fsck", "--full", "--strict", "--no-dangling"]);
    let expected = sorted_objects(&packed, &["--all"]);
    assert_eq!(sorted_objects(&dest, &["--all"]), expected);
    assert_eq!(sent, expected.len(), "no object is sent twice");
}

/// The pack written for `wanted`, or the error writing it.
fn try_pack(source: &Path, wanted: &Wanted) -> Result<Vec<u8>, cgitd::git::GitError> {
    with_repo(source, |repo| {
        let selection = select(repo, None, wanted)?;
        let mut pack = Vec::new();
        write_pack(repo, selection.objects, &Default::default(), &mut pack)?;
        Ok(pack)
    })
}

#[test]
fn entries_are_ordered_by_git_s_reverse_index_or_sorted_alike() {
    let dir = TempDir::new("fetch-reverse-index");
    let packed = build(dir.path());
    let want = wanted(vec![id(&packed, "main"), id(&packed, "topic")]);
    let pack_dir = packed.join("objects/pack");
    let rev = std::fs::read_dir(&pack_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "rev"))
        .expect("git 2.41 and later write a reverse index beside the pack");
    let with_rev = try_pack(&packed, &want).unwrap();
    let dest = dir.path().join("dest.git");
    git(dir.path(), &["init", "-q", "--bare", "dest.git"]);
    assert!(index_pack(&dest, &[], &with_rev), "git takes the pack");

    let original = std::fs::read(&rev).unwrap();
    std::fs::remove_file(&rev).unwrap();
    assert_eq!(
        try_pack(&packed, &want).unwrap(),
        with_rev,
        "sorted without it: the same pack"
    );

    // A reverse index whose table is reversed (header and checksum intact) is believed: the
    // entries' ends it gives are wrong, so the pack is not the same, if it is written at all.
    let count = (original.len() - 12 - 40) / 4;
    let mut reversed = original[..12].to_vec();
    for position in original[12..12 + 4 * count].chunks_exact(4).rev() {
        reversed.extend_from_slice(position);
    }
    reversed.extend_from_slice(&original[12 + 4 * count..]);
    std::fs::write(&rev, reversed).unwrap();
    assert_ne!(
        try_pack(&packed, &want).ok(),
        Some(with_rev),
        "the reverse index is read"
    );
}

#[test]
fn a_fetch_sends_only_what_the_client_lacks() {
    let dir = TempDir::new("fetch-incremental");
    let packed = build(dir.path());
    let (main, old) = (id(&packed, "main"), id(&packed, "main~2"));
    let mut request = wanted(vec![main]);
    request.common = vec![old];
    let gix_repo = gix::open(&packed).unwrap();
    let repo = Repo::new(&gix_repo, None);
    let selection = select(&repo, None, &request).unwrap();
    let mut got: Vec<String> = selection.objects.iter().map(|i| i.to_string()).collect();
    got.sort();
    assert_eq!(got, sorted_objects(&packed, &["main", "--not", "main~2"]));
    assert_eq!(selection.commits, 2);
}

#[test]
fn depth_one_sends_the_tip_as_a_shallow_commit() {
    let dir = TempDir::new("fetch-depth");
    let packed = build(dir.path());
    let main = id(&packed, "main");
    let mut request = wanted(vec![main]);
    request.deepen = Deepen::Depth(1);
    let gix_repo = gix::open(&packed).unwrap();
    let repo = Repo::new(&gix_repo, None);
    let selection = select(&repo, None, &request).unwrap();
    assert_eq!(selection.shallow, vec![main]);
    assert_eq!(selection.commits, 1);
    let mut got: Vec<String> = selection.objects.iter().map(|i| i.to_string()).collect();
    got.sort();
    assert_eq!(got, sorted_objects(&packed, &["--no-walk", "main"]));
}

#[test]
fn blob_none_leaves_out_every_blob_but_wanted_ones() {
    let dir = TempDir::new("fetch-filter");
    let packed = build(dir.path());
    let main = id(&packed, "main");
    let readme = id(&packed, "main:README");
    let mut request = wanted(vec![main, readme]);
    request.filter = Filter::NoBlobs;
    let gix_repo = gix::open(&packed).unwrap();
    let repo = Repo::new(&gix_repo, None);
    let selection = select(&repo, None, &request).unwrap();
    let blobs: Vec<&ObjectId> = selection
        .objects
        .iter()
        .filter(|o| git(&packed, &["cat-file", "-t", &o.to_string()]).trim() == "blob")
        .collect();
    assert_eq!(blobs, vec![&readme]);
    let trees = sorted_objects(&packed, &["--filter=blob:none", "main"]);
    assert_eq!(selection.objects.len(), trees.len() + 1);
}

#[test]
fn the_commit_index_gives_the_same_selection_as_the_objects() {
    use cgitd::git::commit_index::CommitIndex;
    let dir = TempDir::new("fetch-indexed");
    let packed = build(dir.path());
    let gix_repo = gix::open(&packed).unwrap();
    let repo = Repo::new(&gix_repo, None);
    let (main, topic, tag) = (
        id(&packed, "main"),
        id(&packed, "topic"),
        id(&packed, "refs/tags/v1.0"),
    );
    // All commits indexed; and only those below main, so that the walk mixes both kinds.
    let full = CommitIndex::load(&gix_repo, &[main, topic]).unwrap();
    let partial = CommitIndex::load(&gix_repo, &[id(&packed, "main~1")]).unwrap();
    assert!(partial.len() < full.len());
    let mut requests = Vec::new();
    for deepen in [
        Deepen::Full,
        Deepen::Since(1_706_000_000),
        Deepen::Not(vec![id(&packed, "main~2")]),
    ] {
        let mut request = wanted(vec![main, topic, tag]);
        request.common = vec![id(&packed, "main~2")];
        request.deepen = deepen;
        requests.push(request);
    }
    for request in &requests {
        let plain = select(&repo, None, request).unwrap();
        for index in [&full, &partial] {
            let indexed = select(&repo, Some(index), request).unwrap();
            assert_eq!(indexed.objects, plain.objects, "{:?}", request.deepen);
            assert_eq!(indexed.shallow, plain.shallow, "{:?}", request.deepen);
            assert_eq!(indexed.commits, plain.commits);
        }
        assert!(plain.commits > 0, "{:?} sends commits", request.deepen);
    }
}

/// A file that loses lines in each of `steps` commits after the first, packed without delta
/// chains: git stores each smaller version as a delta on the first, the biggest.
fn shrinking(root: &Path, steps: usize) -> std::path::PathBuf {
    let work = root.join("work");
    init_repo(&work);
    let all = noise(7, 400);
    for step in 0..=steps {
        let kept: String = all
            .lines()
            .skip(40 * step)
            .map(|l| format!("{l}\n"))
            .collect();
        write(&work, "big.txt", kept);
        commit_all(&work, &format!("step {step}"), "2024-01-01T10:00:00+00:00");
    }
    git(root, &["clone", "-q", "--bare", "work", "packed.git"]);
    let packed = root.join("packed.git");
    git(&packed, &["repack", "-a", "-d", "-f", "--depth=1", "-q"]);
    git(&packed, &["tag", "behind", "main~1"]);
    packed
}

/// The thin pack of main for a client at main~1 against the same pack made whole: both sizes,
/// and the thin one completed by git into such a client, checked by `fsck`.
fn thin_fetch(dir: &Path, packed: &Path) -> (usize, usize) {
    let (main, old) = (id(packed, "main"), id(packed, "main~1"));
    let mut request = wanted(vec![main]);
    request.common = vec![old];
    let (_, whole) = pack_of(packed, &request);
    request.thin = true;
    let (selection, thin) = pack_of(packed, &request);
    assert_eq!(selection.objects.len(), 3, "a commit, a tree, a blob");
    let dest = dir.join("client.git");
    git(dir, &["init", "-q", "--bare", "client.git"]);
    let source = packed.to_str().unwrap();
    git(
        &dest,
        &["fetch", "-q", source, "refs/tags/behind:refs/tags/behind"],
    );
    assert!(
        !index_pack(&dest, &[], &thin),
        "the pack is thin: git needs the client's objects to index it"
    );
    assert!(index_pack(&dest, &["--fix-thin"], &thin));
    git(&dest, &["update-ref", "refs/heads/main", &main.to_string()]);
    git(&dest, &["fsck", "--full", "--strict", "--no-dangling"]);
    assert_eq!(
        sorted_objects(&dest, &["main"]),
        sorted_objects(packed, &["main"])
    );
    (thin.len(), whole.len())
}

#[test]
fn a_thin_fetch_copies_a_stored_delta_on_what_the_client_has() {
    let dir = TempDir::new("fetch-thin-copied");
    let packed = shrinking(dir.path(), 1);
    let (thin, whole) = thin_fetch(dir.path(), &packed);
    assert!(thin * 2 < whole, "{thin} bytes thin, {whole} whole");
}

#[test]
fn a_thin_fetch_makes_a_delta_on_the_clients_version_of_the_path() {
    let dir = TempDir::new("fetch-thin-made");
    // The new version is stored on the first, which the client has but not at its edge.
    let packed = shrinking(dir.path(), 2);
    let (thin, whole) = thin_fetch(dir.path(), &packed);
    assert!(thin * 2 < whole, "{thin} bytes thin, {whole} whole");
}
