//! How pack files are mapped: for random reads, with what is about to be read asked for ahead;
//! and git's reverse index of a pack (`.rev`), when it wrote one.

use super::Fan;
use gix::odb::pack;
use std::path::Path;

/// Opens the pack of `index` and the index, each mapped with readahead off (a page read
/// brings in its page, not the device's readahead window: 8 MiB on some virtual disks, which
/// made the first summary page of a cold 1.2 GB pack read all of it), and the index's
/// fan-out. Reads that go through a pack in order ask for what is ahead
/// ([`super::Place::read_ahead`]).
pub(super) fn map_for_random_reads(
    index: &Path,
    hash: gix::hash::Kind,
) -> Result<(pack::Bundle, Fan), String> {
    let map = |path: &Path| -> Result<memmap2::Mmap, String> {
        let map = map_pack_file(path).map_err(|e| e.to_string())?;
        if let Err(e) = map.advise(memmap2::Advice::Random) {
            tracing::debug!(path = %path.display(), error = %e, "no random-read advice");
        }
        Ok(map)
    };
    let index_map = map(index)?;
    let header = index_map.get(..8 + 256 * 4).map(<[u8]>::to_vec);
    let index_file = pack::index::File::from_data(index_map, index.to_owned(), hash)
        .map_err(|e| e.to_string())?;
    let fan = header
        .and_then(|h| Fan::from_header(&h, index_file.num_objects()))
        .unwrap_or_else(|| Fan::of(&index_file));
    let data = index.with_extension("pack");
    let bundle = pack::Bundle {
        index: index_file,
        pack: pack::data::File::from_data(map(&data)?, data, hash).map_err(|e| e.to_string())?,
    };
    Ok((bundle, fan))
}

/// A file of a pack (`.idx`, `.pack`, `.rev`) mapped read-only.
fn map_pack_file(path: &Path) -> std::io::Result<memmap2::Mmap> {
    let file = std::fs::File::open(path)?;
    // SAFETY: git never writes into a pack's files once they are named; a file replaced under
    // the same name is a new inode and leaves this mapping as it was.
    unsafe { memmap2::Mmap::map(&file) }
}

/// Tells the kernel `bytes` (part of a mapped file) will be read soon.
pub(super) fn advise_will_need(bytes: &[u8]) {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let start = bytes.as_ptr() as usize;
    let aligned = start & !(page - 1);
    // SAFETY: the range lies in one mapping (which starts on a page), and WILLNEED only starts
    // reads: it changes no byte of it.
    let failed = unsafe {
        libc::madvise(
            aligned as *mut libc::c_void,
            bytes.len() + (start - aligned),
            libc::MADV_WILLNEED,
        )
    };
    if failed != 0 {
        tracing::debug!(error = %std::io::Error::last_os_error(), "no read-ahead advice");
    }
}

/// The index positions of `pack`'s objects in the order they are stored, from the reverse
/// index git writes beside a pack (`pack-*.rev`: "RIDX", version 1, the hash's id, a big-endian
/// position per object, the pack's checksum). `None` when there is none, or it is not the
/// reverse index of this pack and index.
pub(super) fn reverse_index(bundle: &pack::Bundle) -> Option<Vec<u32>> {
    let path = bundle.index.path().with_extension("rev");
    let map = map_pack_file(&path).ok()?;
    let count = bundle.index.num_objects() as usize;
    let hash_len = bundle.pack.object_hash().len_in_bytes();
    let hash_id: u32 = match bundle.pack.object_hash() {
        gix::hash::Kind::Sha1 => 1,
        _ => 2,
    };
    let header = [*b"RIDX", 1u32.to_be_bytes(), hash_id.to_be_bytes()].concat();
    let table_end = 12 + 4 * count;
    let checksum = bundle.pack.checksum();
    let valid = map.len() == table_end + 2 * hash_len
        && map[..12] == header[..]
        && map[table_end..table_end + hash_len] == *checksum.as_bytes();
    if !valid {
        tracing::debug!(path = %path.display(), "reverse index not used: not this pack's");
        return None;
    }
    let order: Vec<u32> = map[12..table_end]
        .chunks_exact(4)
        .map(|b| u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
        .collect();
    order.iter().all(|&i| (i as usize) < count).then_some(order)
}
