//! The pack reader: every object of a repository whose packs hold long delta chains (offset
//! and reference deltas, text and binary files, a fork reading its alternate's pack) reads back
//! as `git cat-file` prints it, with a cache of chain bases small enough to be emptied over and
//! over; loose objects are left to gix; a pack written later is found; an id is found in a pack
//! index where gix's bisection finds it. Commits kept decoded for a store are shown only through
//! repositories reading that store's objects.

mod common;

use cgitd::git::pack_index::{Fan, lookup};
use cgitd::git::packs::Packs;
use common::*;
use gix::ObjectId;
use std::io::Write;
use std::path::Path;
use std::process::Stdio;

/// A history of one growing text file, a binary file and nested directories, packed.
fn history(dir: &Path, commits: usize) {
    init_repo(dir);
    for i in 0..commits {
        let mut text = String::new();
        for line in 0..(40 + i * 3) {
            text.push_str(&format!("line {line} of version {}\n", line % (i + 1)));
        }
        write(dir, "src/deep/er/file.txt", text);
        let binary: Vec<u8> = (0..4096u32)
            .map(|b| (b * (i as u32 + 7) % 251) as u8)
            .collect();
        write(dir, "data.bin", binary);
        write(dir, &format!("dir{}/n{i}.txt", i % 4), format!("{i}\n"));
        commit_all(
            dir,
            &format!("c{i}"),
            &format!("2024-01-01T00:{:02}:00+00:00", i % 60),
        );
    }
}

/// Every object id git knows of in the repository (alternates included), with its type.
fn all_objects(dir: &Path) -> Vec<(ObjectId, String)> {
    git(dir, &["cat-file", "--batch-all-objects", "--batch-check"])
        .lines()
        .map(|l| {
            let mut parts = l.split(' ');
            let id = ObjectId::from_hex(parts.next().unwrap().as_bytes()).unwrap();
            (id, parts.next().unwrap().to_owned())
        })
        .collect()
}

/// The object's content as git prints it.
fn cat_file(dir: &Path, id: &ObjectId) -> Vec<u8> {
    git_bytes(dir, &["cat-file", "-p", &id.to_string()])
}

/// The raw contents of many objects at once (`cat-file -p` pretty-prints trees).
fn contents(dir: &Path, ids: &[ObjectId]) -> Vec<Vec<u8>> {
    let mut child = git_command(dir, &["cat-file", "--batch"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let input: String = ids.iter().map(|id| format!("{id}\n")).collect();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::spawn(move || stdin.write_all(input.as_bytes()).unwrap());
    let out = child.wait_with_output().unwrap().stdout;
    let mut rest = &out[..];
    let mut found = Vec::new();
    for _ in ids {
        let header_end = rest.iter().position(|&b| b == b'\n').unwrap();
        let header = std::str::from_utf8(&rest[..header_end]).unwrap();
        let size: usize = header.rsplit(' ').next().unwrap().parse().unwrap();
        let start = header_end + 1;
        found.push(rest[start..start + size].to_vec());
        rest = &rest[start + size + 1..];
    }
    found
}

fn kind_name(kind: gix::object::Kind) -> &'static str {
    match kind {
        gix::object::Kind::Blob => "blob",
        gix::object::Kind::Tree => "tree",
        gix::object::Kind::Commit => "commit",
        gix::object::Kind::Tag => "tag",
    }
}

/// Reads every packed object of `dir` twice through a set of `objects_dir` and compares it, and
/// its size read alone, with git's; returns how many were read from packs.
fn check_all(dir: &Path, objects_dir: &Path, packs: &Packs) -> usize {
    let set = packs.set(objects_dir, gix::hash::Kind::Sha1);
    let objects = all_objects(dir);
    let ids: Vec<ObjectId> = objects.iter().map(|(id, _)| *id).collect();
    let expected = contents(dir, &ids);
    let mut read = 0;
    for round in 0..2 {
        for ((id, kind), want) in objects.iter().zip(&expected) {
            let Some((found, data)) = packs.read(&set, id).unwrap() else {
                continue;
            };
            assert_eq!(kind_name(found), kind, "{id}");
            assert!(*data == *want, "{id} differs from git's (round {round})");
            let size = packs.size(&set, id).unwrap();
            assert_eq!(
                size,
                Some(want.len() as u64),
                "{id}'s size without reading it"
            );
            read += 1;
        }
    }
    read / 2
}

fn deltas_in_packs(objects_dir: &Path) -> usize {
    let mut deltas = 0;
    for entry in std::fs::read_dir(objects_dir.join("pack")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "idx") {
            let listing = git(objects_dir, &["verify-pack", "-v", path.to_str().unwrap()]);
            deltas += listing
                .lines()
                .filter(|l| l.split_whitespace().count() == 7)
                .count();
        }
    }
    deltas
}

#[test]
fn objects_read_from_offset_delta_chains_equal_gits() {
    let tmp = TempDir::new("packs-ofs");
    let dir = tmp.path().join("repo");
    history(&dir, 60);
    git(&dir, &["repack", "-adf", "--depth=50", "--window=50", "-q"]);
    let objects_dir = dir.join(".git/objects");
    assert!(
        deltas_in_packs(&objects_dir) > 100,
        "the pack has delta chains"
    );
    // Room for everything, and little enough that kept bases and waypoints are dropped and
    // read again.
    for limit in [64 << 20, 256 << 10] {
        let read = check_all(&dir, &objects_dir, &Packs::new(limit));
        assert_eq!(read, all_objects(&dir).len(), "every object is packed");
    }
}

#[test]
fn objects_read_from_reference_delta_chains_equal_gits() {
    let tmp = TempDir::new("packs-ref");
    let dir = tmp.path().join("repo");
    history(&dir, 40);
    git(
        &dir,
        &[
            "-c",
            "repack.useDeltaBaseOffset=false",
            "repack",
            "-adf",
            "-q",
        ],
    );
    let objects_dir = dir.join(".git/objects");
    assert!(deltas_in_packs(&objects_dir) > 50);
    let read = check_all(&dir, &objects_dir, &Packs::new(1 << 20));
    assert_eq!(read, all_objects(&dir).len());
}

#[test]
fn loose_objects_are_left_to_gix_and_later_packs_are_found() {
    let tmp = TempDir::new("packs-later");
    let dir = tmp.path().join("repo");
    history(&dir, 10);
    git(&dir, &["repack", "-adf", "-q"]);
    write(&dir, "late.txt", "written after the pack\n");
    let late = commit_all(&dir, "late", "2024-02-01T00:00:00+00:00");
    let late = ObjectId::from_hex(late.trim().as_bytes()).unwrap();
    let objects_dir = dir.join(".git/objects");
    let packs = Packs::new(1 << 20);
    let set = packs.set(&objects_dir, gix::hash::Kind::Sha1);
    assert_eq!(packs.read(&set, &late).unwrap(), None, "loose");
    // A second over the pack directory's time stamp, so that its change shows.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    git(&dir, &["repack", "-ad", "-q"]);
    let (found, data) = packs.read(&set, &late).unwrap().expect("packed now");
    assert_eq!(found, gix::object::Kind::Commit);
    assert_eq!(*data, cat_file(&dir, &late));
}

#[test]
fn a_fork_reads_its_alternates_pack() {
    let tmp = TempDir::new("packs-fork");
    let parent = tmp.path().join("parent");
    history(&parent, 30);
    git(&parent, &["repack", "-adf", "-q"]);
    let fork = tmp.path().join("fork");
    git(
        tmp.path(),
        &["clone", "-q", "--shared", parent.to_str().unwrap(), "fork"],
    );
    write(&fork, "src/deep/er/file.txt", "the fork's own version\n");
    commit_all(&fork, "fork", "2024-03-01T00:00:00+00:00");
    git(&fork, &["repack", "-d", "-l", "-q"]);
    let packs = Packs::new(1 << 20);
    let read = check_all(&fork, &fork.join(".git/objects"), &packs);
    assert_eq!(
        read,
        all_objects(&fork).len(),
        "the fork's and the parent's"
    );
}

#[test]
fn an_unknown_object_is_none() {
    let tmp = TempDir::new("packs-none");
    let dir = tmp.path().join("repo");
    history(&dir, 3);
    git(&dir, &["repack", "-adf", "-q"]);
    let packs = Packs::new(1 << 20);
    let set = packs.set(&dir.join(".git/objects"), gix::hash::Kind::Sha1);
    let missing = ObjectId::from_hex(b"0123456789012345678901234567890123456789").unwrap();
    assert_eq!(packs.read(&set, &missing).unwrap(), None);
}

/// The pack index files under `objects_dir`.
fn indexes(objects_dir: &Path) -> Vec<gix::odb::pack::index::File> {
    std::fs::read_dir(objects_dir.join("pack"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "idx"))
        .map(|p| gix::odb::pack::index::File::at(p, gix::hash::Kind::Sha1).unwrap())
        .collect()
}

#[test]
fn interpolated_index_lookups_agree_with_bisection() {
    let tmp = TempDir::new("packs-lookup");
    let dir = tmp.path().join("repo");
    init_repo(&dir);
    // 20,000 blobs in one pack: about 78 ids a first byte, enough for interpolation to matter.
    let mut stream = Vec::new();
    for n in 0..20_000 {
        let data = format!("blob number {n}\n");
        write!(stream, "blob\ndata {}\n{data}\n", data.len()).unwrap();
    }
    let mut child = git_command(&dir, &["fast-import", "--quiet"])
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&stream).unwrap();
    assert!(child.wait().unwrap().success());
    let index = indexes(&dir.join(".git/objects")).pop().unwrap();
    assert_eq!(index.num_objects(), 20_000);
    let fan = Fan::of(&index);
    let header = std::fs::read(index.path()).unwrap();
    assert_eq!(
        Fan::from_header(&header, index.num_objects()),
        Some(Fan::of(&index))
    );
    assert_eq!(Fan::from_header(&header, index.num_objects() + 1), None);
    for position in 0..index.num_objects() {
        let id = index.oid_at_index(position).to_owned();
        assert_eq!(lookup(&index, &fan, &id), Some(position), "{id}");
        // Ids next to it (first, middle and last bytes changed) are found where gix finds them.
        for (byte, change) in [(0, 1u8), (9, 0x80), (19, 1), (19, 0xff)] {
            let mut near = id;
            near.as_mut_slice()[byte] ^= change;
            assert_eq!(lookup(&index, &fan, &near), index.lookup(near), "{near}");
        }
    }
    for id in [[0u8; 20], [0xff; 20]] {
        let id = ObjectId::from_bytes_or_panic(&id);
        assert_eq!(lookup(&index, &fan, &id), index.lookup(id));
    }
}

#[test]
fn a_commit_kept_from_one_repository_is_not_shown_through_another() {
    let tmp = TempDir::new("packs-commits");
    let (a, b) = (tmp.path().join("a"), tmp.path().join("b"));
    history(&a, 3);
    history(&b, 2);
    let only_a = commit_all(&a, "only in a", "2024-04-01T00:00:00+00:00");
    for dir in [&a, &b] {
        git(dir, &["repack", "-adf", "-q"]);
    }
    let rc = tmp.path().join("cgitrc");
    let text = format!(
        "virtual-root=/\nrepo.url=a\nrepo.path={}\nrepo.url=b\nrepo.path={}\n",
        a.join(".git").display(),
        b.join(".git").display()
    );
    std::fs::write(&rc, text).unwrap();
    // The library: b asked for the commit a's read kept.
    let packs = Packs::new(1 << 20);
    let commits = cgitd::git::commit::Commits::default();
    let id = ObjectId::from_hex(only_a.as_bytes()).unwrap();
    let set_a = packs.set(&a.join(".git/objects"), gix::hash::Kind::Sha1);
    let set_b = packs.set(&b.join(".git/objects"), gix::hash::Kind::Sha1);
    let read = |dir: &Path, set| {
        let repo = gix::open(dir).unwrap();
        let repo = cgitd::git::Repo::new(&repo, Some((&packs, set, &commits)));
        cgitd::git::commit::read_commit(&repo, id).map(|c| c.subject.clone())
    };
    assert_eq!(read(&a, &set_a).unwrap(), "only in a");
    assert!(read(&b, &set_b).is_err(), "a's commit read through b");
    assert_eq!(read(&a, &set_a).unwrap(), "only in a");
    // The pages.
    let server = Server::start(&rc);
    for _ in 0..2 {
        let page = server.get(&format!("/a/commit/?id={only_a}"));
        assert!(page.text_with(200, "a's commit").contains("only in a"));
        let log = server.get(&format!("/a/log/?id={only_a}"));
        assert!(log.text_with(200, "a's log").contains("only in a"));
        let other = server.get(&format!("/b/commit/?id={only_a}"));
        assert_eq!(other.status, 404, "a's commit through b");
        assert!(!other.text().contains("only in a"));
        let other_log = server.get(&format!("/b/log/?id={only_a}"));
        assert_eq!(other_log.status, 404, "a's commit as b's log tip");
    }
}
