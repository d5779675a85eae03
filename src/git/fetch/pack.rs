//! Writing the selected objects as a pack: entries copied from the repository's packs as they
//! are stored, deltas kept where their base is sent before them or is known to be on the
//! client; for a thin pack (which the client completes) new deltas on the client's version of
//! the same path; others written whole.

use super::ClientBases;
use crate::git::diff::delta;
use crate::git::packs::Place;
use crate::git::{GitError, Repo};
use gix::ObjectId;
use gix_pack::data::entry::Header;
use gix_pack::data::output;
use std::io::Write;

/// Objects per chunk handed from the entries to the writer.
const CHUNK: usize = 2_000;

/// The libdeflate level for objects written whole (deltas whose base is not sent, loose
/// objects), which a `--depth 1` clone is mostly made of.
const RECOMPRESSION_LEVEL: i32 = 3;

/// Bytes of a pack read ahead at once while its entries are copied in stored order.
const READ_AHEAD: u64 = 4 << 20;

/// Deltas made for a thin pack are kept when at most this share of their object's size.
const DELTA_SHARE: usize = 2;

/// Writes a version-2 pack of `objects` (no duplicates) to `out`; returns the bytes written.
/// Deltas may name objects of `client` as their bases (empty `client`: a pack complete in
/// itself).
pub fn write_pack(
    repo: &Repo,
    objects: Vec<ObjectId>,
    client: &ClientBases,
    out: &mut dyn Write,
) -> Result<u64, GitError> {
    let count = u32::try_from(objects.len())
        .map_err(|_| GitError::BadRequest("too many objects for one pack".into()))?;
    let mut placed: Vec<(ObjectId, Option<Place>)> = objects
        .into_iter()
        .map(|id| (id, repo.place(&id)))
        .collect();
    // Loose objects first, then each pack's in stored order: a delta's base, stored before
    // it, is written before it.
    placed.sort_by_key(|(_, place)| place.as_ref().map(Place::key));
    let mut entries = Entries {
        repo,
        client,
        placed: &placed,
        read_to: (0, 0),
        compressor: libdeflater::Compressor::new(
            libdeflater::CompressionLvl::new(RECOMPRESSION_LEVEL).expect("a libdeflate level"),
        ),
    };
    let chunks = placed.chunks(CHUNK).map(|chunk| {
        let made: Result<Vec<output::Entry>, GitError> = chunk
            .iter()
            .map(|(id, place)| entries.entry(*id, place.as_ref()))
            .collect();
        made.map_err(gix::Error::from_error)
    });
    let mut counted = Counter { out, written: 0 };
    let mut writer = output::bytes::FromEntriesIter::new(
        chunks,
        &mut counted,
        count,
        gix_pack::data::Version::V2,
        repo.object_hash(),
    );
    for step in writer.by_ref() {
        step.map_err(|e| GitError::internal_in("writing a pack", e))?;
    }
    drop(writer);
    Ok(counted.written)
}

/// Makes the entries of placed objects in the order they are written.
struct Entries<'a> {
    repo: &'a Repo<'a>,
    client: &'a ClientBases,
    /// Every object of the pack in the order written, with where it is stored: a delta's
    /// base stored in the same pack is written before it, found here by its place.
    placed: &'a [(ObjectId, Option<Place>)],
    /// Where the pack being copied from has been read ahead to (its serial and offset).
    read_to: (u32, u64),
    compressor: libdeflater::Compressor,
}

impl Entries<'_> {
    /// The next entry of the pack: object `id`, stored at `place` if it is packed.
    fn entry(&mut self, id: ObjectId, place: Option<&Place>) -> Result<output::Entry, GitError> {
        if let Some(place) = place {
            if place.key() >= self.read_to {
                self.read_to = (place.key().0, place.read_ahead(READ_AHEAD));
            }
            if let Some(copied) = self.copied(id, place)? {
                return Ok(copied);
            }
        }
        self.whole(id)
    }

    /// The entry stored at `place` as it is, when it is a whole object or a delta on one
    /// written before it or held by the client.
    fn copied(&self, id: ObjectId, place: &Place) -> Result<Option<output::Entry>, GitError> {
        use output::entry::Kind;
        let stored = place.stored()?;
        let kind = match stored.header {
            Header::OfsDelta { base_distance } => {
                let (pack, offset) = place.key();
                let Some(base) = offset.checked_sub(base_distance) else {
                    return Err(GitError::internal_msg("delta base before the pack's start"));
                };
                if let Some(object_index) = self.written_at((pack, base)) {
                    Kind::DeltaRef { object_index }
                } else {
                    match place
                        .id_at(base)
                        .filter(|b| self.client.objects.contains(b))
                    {
                        Some(base_id) => Kind::DeltaOid { id: base_id },
                        None => return Ok(None),
                    }
                }
            }
            Header::RefDelta { base_id } if self.client.objects.contains(&base_id) => {
                Kind::DeltaOid { id: base_id }
            }
            Header::RefDelta { .. } => return Ok(None),
            header => Kind::Base(header.as_kind().expect("not a delta")),
        };
        Ok(Some(output::Entry {
            id,
            kind,
            decompressed_size: stored.inflated_size as usize,
            compressed_data: stored.compressed.to_vec(),
        }))
    }

    /// Where in the pack the object stored at `key` is written, if it is sent.
    fn written_at(&self, key: (u32, u64)) -> Option<usize> {
        self.placed
            .binary_search_by_key(&Some(key), |(_, place)| place.as_ref().map(Place::key))
            .ok()
    }

    /// Object `id` read and written as a new delta on the client's version of its path, or
    /// else whole.
    fn whole(&mut self, id: ObjectId) -> Result<output::Entry, GitError> {
        let (kind, data) = self.read(id)?;
        if let Some(&base_id) = self.client.by_path.get(&id) {
            let (base_kind, base) = self.read(base_id)?;
            if base_kind == kind
                && let Some(delta) = delta::delta(&base, &data, data.len() / DELTA_SHARE)
            {
                return self.compressed(id, output::entry::Kind::DeltaOid { id: base_id }, &delta);
            }
        }
        self.compressed(id, output::entry::Kind::Base(kind), &data)
    }

    fn read(&self, id: ObjectId) -> Result<crate::git::packs::Object, GitError> {
        self.repo
            .read_object(&id)?
            .ok_or_else(|| GitError::internal_msg(format!("object {id} is missing")))
    }

    /// An entry of `kind` for object `id` whose data is `data`, compressed.
    fn compressed(
        &mut self,
        id: ObjectId,
        kind: output::entry::Kind,
        data: &[u8],
    ) -> Result<output::Entry, GitError> {
        let mut compressed = vec![0; self.compressor.zlib_compress_bound(data.len())];
        let len = self
            .compressor
            .zlib_compress(data, &mut compressed)
            .map_err(|e| GitError::internal_msg(format!("compressing {id}: {e}")))?;
        compressed.truncate(len);
        Ok(output::Entry {
            id,
            kind,
            decompressed_size: data.len(),
            compressed_data: compressed,
        })
    }
}

/// A writer that counts what passes through it.
struct Counter<'a> {
    out: &'a mut dyn Write,
    written: u64,
}

impl Write for Counter<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
