//! Archives of a commit's tree as git-archive writes them: every entry in tree order below one
//! prefix directory, submodules as empty directories, symlinks and executable bits kept,
//! every entry dated at the commit time; tar (optionally compressed) or zip.

mod tar;
mod zip;

use gix::ObjectId;
use gix::bstr::BString;
use gix::object::tree::EntryKind;
use std::io::{self, Write};

/// The archive formats, by the file suffix that selects them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Tar,
    TarGz,
    TarBz2,
    TarLz,
    TarXz,
    TarZst,
    Zip,
}

impl Format {
    pub fn from_suffix(suffix: &str) -> Option<Format> {
        Some(match suffix {
            "tar" => Format::Tar,
            "tar.gz" => Format::TarGz,
            "tar.bz2" => Format::TarBz2,
            "tar.lz" => Format::TarLz,
            "tar.xz" => Format::TarXz,
            "tar.zst" => Format::TarZst,
            "zip" => Format::Zip,
            _ => return None,
        })
    }
}

/// What to archive: a commit's tree, the commit time and the directory every entry is below.
pub struct Archive {
    pub commit: ObjectId,
    pub tree: ObjectId,
    /// Seconds since the epoch, for every entry.
    pub mtime: i64,
    /// One directory name, without `/`; the caller makes sure it is a safe name.
    pub prefix: String,
}

/// One archive member.
pub struct Entry<'a> {
    /// Full member name, below the prefix; directories end with `/`.
    pub path: &'a [u8],
    pub kind: MemberKind,
    /// The tree, blob or submodule commit the member comes from (git names pax headers by it).
    pub id: ObjectId,
    /// File content or symlink target.
    pub data: &'a [u8],
}

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum MemberKind {
    Directory,
    File,
    Executable,
    Symlink,
}

/// Writes the archive in `format` to `out`.
pub fn write(
    repo: &gix::Repository,
    archive: &Archive,
    format: Format,
    out: &mut dyn Write,
) -> io::Result<()> {
    match format {
        Format::Tar => tar::write(repo, archive, out),
        Format::TarGz => {
            // Like `gzip -n`: no name, no time stamp in the gzip header.
            let mut gz = flate2::GzBuilder::new().write(out, flate2::Compression::default());
            tar::write(repo, archive, &mut gz)?;
            gz.finish().map(drop)
        }
        Format::TarBz2 => {
            let mut bz = bzip2::write::BzEncoder::new(out, bzip2::Compression::best());
            tar::write(repo, archive, &mut bz)?;
            bz.finish().map(drop)
        }
        Format::TarLz => {
            let options = lzma_rust2::LzipOptions::with_preset(6);
            let mut lz = lzma_rust2::LzipWriter::new(out, options);
            tar::write(repo, archive, &mut lz)?;
            lz.finish().map(drop).map_err(io::Error::other)
        }
        Format::TarXz => {
            let options = lzma_rust2::XzOptions::with_preset(6);
            let mut xz = lzma_rust2::XzWriter::new(out, options).map_err(io::Error::other)?;
            tar::write(repo, archive, &mut xz)?;
            xz.finish().map(drop).map_err(io::Error::other)
        }
        Format::TarZst => {
            let mut zst = zstd::Encoder::new(out, 0)?;
            tar::write(repo, archive, &mut zst)?;
            zst.finish().map(drop)
        }
        Format::Zip => zip::write(repo, archive, out),
    }
}

/// A tree entry, owned so that the walk can hold several trees at once.
struct TreeEntry {
    name: BString,
    kind: EntryKind,
    id: ObjectId,
}

/// Calls `visit` for the prefix directory and then every entry of the tree, depth first in tree
/// order (a directory before its contents), as git-archive does. Entry names that could leave
/// their directory (`..`, `/`, empty) are never emitted; such trees only come from corrupt or
/// hostile repositories.
pub fn walk(
    repo: &gix::Repository,
    archive: &Archive,
    visit: &mut dyn FnMut(Entry<'_>) -> io::Result<()>,
) -> io::Result<()> {
    let mut path: Vec<u8> = format!("{}/", archive.prefix).into_bytes();
    visit(Entry {
        path: &path,
        kind: MemberKind::Directory,
        id: archive.tree,
        data: &[],
    })?;
    let mut stack = vec![(read_tree(repo, archive.tree)?, 0, path.len())];
    while let Some((entries, next, base)) = stack.last_mut() {
        let Some(entry) = entries.get(*next) else {
            stack.pop();
            continue;
        };
        *next += 1;
        path.truncate(*base);
        path.extend_from_slice(&entry.name);
        let (kind, id) = (entry.kind, entry.id);
        match kind {
            EntryKind::Tree | EntryKind::Commit => {
                path.push(b'/');
                visit(Entry {
                    path: &path,
                    kind: MemberKind::Directory,
                    id,
                    data: &[],
                })?;
                if kind == EntryKind::Tree {
                    stack.push((read_tree(repo, id)?, 0, path.len()));
                }
            }
            EntryKind::Blob | EntryKind::BlobExecutable | EntryKind::Link => {
                let blob = repo.find_blob(id).map_err(io::Error::other)?;
                let kind = match kind {
                    EntryKind::Link => MemberKind::Symlink,
                    EntryKind::BlobExecutable => MemberKind::Executable,
                    _ => MemberKind::File,
                };
                visit(Entry {
                    path: &path,
                    kind,
                    id,
                    data: &blob.data,
                })?;
            }
        }
    }
    Ok(())
}

fn read_tree(repo: &gix::Repository, id: ObjectId) -> io::Result<Vec<TreeEntry>> {
    let tree = repo.find_tree(id).map_err(io::Error::other)?;
    let decoded = tree.decode().map_err(io::Error::other)?;
    Ok(decoded
        .entries
        .iter()
        .filter(|e| is_safe_name(e.filename))
        .map(|e| TreeEntry {
            name: e.filename.to_owned(),
            kind: e.mode.kind(),
            id: e.oid.to_owned(),
        })
        .collect())
}

fn is_safe_name(name: &[u8]) -> bool {
    !name.is_empty() && name != b"." && name != b".." && !name.contains(&b'/') && !name.contains(&0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_tree_names_are_refused() {
        for bad in [&b""[..], b".", b"..", b"a/b", b"/", b"a\0"] {
            assert!(!is_safe_name(bad), "{bad:?}");
        }
        assert!(is_safe_name(b"..."));
        assert!(is_safe_name(b".gitignore"));
    }
}
