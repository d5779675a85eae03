//! The zip format: deflated files, stored symlinks, Unix modes as git-archive sets them, and
//! data descriptors after each member, so the archive is written front to back without seeking.

use super::members::{Archive, Entry, MemberKind, walk};
use rawzip::path::EntryPath;
use rawzip::time::UtcDateTime;
use rawzip::{CompressionMethod, ZipArchiveWriter};
use std::io::{self, Write};

pub fn write(repo: &gix::Repository, archive: &Archive, out: &mut dyn Write) -> io::Result<()> {
    let mut zip = ZipArchiveWriter::new(out);
    let mtime = UtcDateTime::from_unix(archive.mtime);
    walk(repo, archive, &mut |entry| add(&mut zip, mtime, entry))?;
    zip.finish().map_err(io::Error::other)?.flush()
}

fn add(
    zip: &mut ZipArchiveWriter<&mut dyn Write>,
    mtime: UtcDateTime,
    entry: Entry<'_>,
) -> io::Result<()> {
    let name = entry_path(entry.path);
    let (mode, method) = match entry.kind {
        MemberKind::Directory => {
            zip.new_dir(name)
                .last_modified(mtime)
                .unix_permissions(0o40775)
                .create()
                .map_err(io::Error::other)?;
            return Ok(());
        }
        MemberKind::File => (0o100664, CompressionMethod::DEFLATE),
        MemberKind::Executable => (0o100775, CompressionMethod::DEFLATE),
        MemberKind::Symlink => (0o120777, CompressionMethod::STORE),
    };
    let (mut member, config) = zip
        .new_file(name)
        .compression_method(method)
        .last_modified(mtime)
        .unix_permissions(mode)
        .start()
        .map_err(io::Error::other)?;
    let descriptor = if method == CompressionMethod::DEFLATE {
        let deflate =
            flate2::write::DeflateEncoder::new(&mut member, flate2::Compression::default());
        let mut data = config.wrap(deflate);
        data.write_all(entry.data)?;
        let (deflate, descriptor) = data.finish().map_err(io::Error::other)?;
        deflate.finish()?;
        descriptor
    } else {
        let mut data = config.wrap(&mut member);
        data.write_all(entry.data)?;
        data.finish().map_err(io::Error::other)?.1
    };
    member.finish(descriptor).map_err(io::Error::other)?;
    Ok(())
}

/// The member name as it is. rawzip's UTF-8 paths are normalized (`\` and `:` rewritten), so
/// names with those, and names that are not UTF-8, are written as raw bytes instead.
fn entry_path(path: &[u8]) -> EntryPath<'_> {
    match std::str::from_utf8(path) {
        Ok(text) if !text.contains(['\\', ':']) => EntryPath::conformant(text),
        _ => EntryPath::verbatim(path),
    }
}
