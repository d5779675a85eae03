//! Finding an object id in a pack index by interpolation instead of bisection.
//!
//! Object ids are hashes, spread evenly over their range, so an id's place among a pack's
//! sorted ids is close to where its value falls between the values at the ends of the range
//! searched: two or three probes find it, where bisection takes one a halving (eleven in
//! git.git's 400,000 objects, most of them cache misses in the index). After a few probes
//! that do not close in (ids chosen to crowd one value) the search bisects instead.

use gix::hash::oid;
use gix::odb::pack::index;
use std::cmp::Ordering;

/// Probes by interpolation before falling back to bisection.
const INTERPOLATIONS: u32 = 4;

/// Where each first byte's ids end in an index: entry `b` counts the ids whose first byte is
/// at most `b` (the fan-out table every index holds, read once).
#[derive(Debug, PartialEq, Eq)]
pub struct Fan([u32; 256]);

/// How a version-2 index begins; a version-1 index begins with its fan-out table.
const V2_MAGIC: [u8; 8] = [0xff, b't', b'O', b'c', 0, 0, 0, 2];

impl Fan {
    /// The fan-out table at the head of the bytes of an index of `objects` objects (one page
    /// read), if they hold a consistent one.
    pub fn from_header(index_bytes: &[u8], objects: u32) -> Option<Fan> {
        let start = if index_bytes.starts_with(&V2_MAGIC) {
            8
        } else {
            0
        };
        let table = index_bytes.get(start..start + 256 * 4)?;
        let mut fan = [0u32; 256];
        for (end, bytes) in fan.iter_mut().zip(table.chunks_exact(4)) {
            *end = u32::from_be_bytes(bytes.try_into().ok()?);
        }
        let ordered = fan.windows(2).all(|w| w[0] <= w[1]);
        (ordered && fan[255] == objects).then_some(Fan(fan))
    }

    /// The fan-out of `index`, found by bisecting its sorted ids for each first byte.
    pub fn of(index: &index::File) -> Fan {
        let mut fan = [0u32; 256];
        let mut start = 0;
        for (byte, end) in fan.iter_mut().enumerate() {
            let (mut lo, mut hi) = (start, index.num_objects());
            while lo < hi {
                let mid = lo + (hi - lo) / 2;
                if usize::from(index.oid_at_index(mid).first_byte()) <= byte {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            *end = lo;
            start = lo;
        }
        Fan(fan)
    }
}

/// The position of `id` among the ids of `index` (whose fan-out is `fan`), if it holds it.
pub fn lookup(index: &index::File, fan: &Fan, id: &oid) -> Option<u32> {
    let first = usize::from(id.first_byte());
    let mut lo = if first == 0 { 0 } else { fan.0[first - 1] };
    let mut hi = fan.0[first];
    let key = leading(id);
    // Every id in lo..hi leads with a value in low..=high (and so does `id`, if present).
    let mut low = (first as u64) << 56;
    let mut high = low | (u64::MAX >> 8);
    let mut probes = 0;
    while lo < hi {
        let guess = if probes < INTERPOLATIONS && low <= key && key <= high {
            let span = u128::from(hi - lo);
            let offset = u128::from(key - low) * span / (u128::from(high - low) + 1);
            lo + offset as u32
        } else {
            lo + (hi - lo) / 2
        };
        probes += 1;
        let probe = index.oid_at_index(guess);
        match probe.cmp(id) {
            Ordering::Equal => return Some(guess),
            Ordering::Less => {
                lo = guess + 1;
                low = leading(probe);
            }
            Ordering::Greater => {
                hi = guess;
                high = leading(probe);
            }
        }
    }
    None
}

/// An id's first eight bytes as a number, in the order ids sort.
fn leading(id: &oid) -> u64 {
    let mut bytes = [0u8; 8];
    bytes.copy_from_slice(&id.as_bytes()[..8]);
    u64::from_be_bytes(bytes)
}
