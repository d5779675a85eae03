//! Archives of a commit's tree as git-archive writes them: every entry in tree order below one
//! prefix directory, submodules as empty directories, symlinks and executable bits kept,
//! every entry dated at the commit time; tar (optionally compressed) or zip.

mod members;
mod tar;
mod zip;

pub use members::{Archive, Entry, MemberKind, walk};

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
