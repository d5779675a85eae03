//! Facts about objects by id that never change, in any repository.

use std::sync::Mutex;

/// Facts about objects by id that never change, in any repository: object sizes (tree
/// listings show one per entry; reading a packed object's header can mean inflating the start
/// of its delta), and which trees hold a single directory (listings collapse those).
///
/// Two generations of plain hash maps, not an LRU: a lookup is one probe with the id inline
/// (no node to chase), an insert allocates nothing until the current generation grows, and
/// when it is full it becomes the old one, whose facts still asked for move over.
#[derive(Debug, Default)]
pub struct IdMemo<V> {
    generations: Mutex<Generations<V>>,
}

/// Object sizes by id.
pub type ObjectSizes = IdMemo<u64>;

type IdMap<V> = std::collections::HashMap<gix::ObjectId, V, gix::hashtable::hash::Builder>;

#[derive(Debug)]
struct Generations<V> {
    current: IdMap<V>,
    old: IdMap<V>,
}

impl<V> Default for Generations<V> {
    fn default() -> Self {
        Generations {
            current: IdMap::default(),
            old: IdMap::default(),
        }
    }
}

/// Facts of one generation (two are kept: for sizes at most about 9 MiB).
const GENERATION: usize = 100_000;

impl<V: Copy> IdMemo<V> {
    /// What is remembered of `id`.
    pub fn get(&self, id: gix::ObjectId) -> Option<V> {
        self.lock().get(&id)
    }

    /// Remembers `value` for `id`.
    pub fn insert(&self, id: gix::ObjectId, value: V) {
        self.lock().insert(id, value);
    }

    /// What is remembered of each of `ids`, else what `read` finds (then remembered). The
    /// memo is locked once to look all of them up and once to remember what was read, not once
    /// an id: a tree listing asks for hundreds while every worker shares the memo.
    pub fn get_or_read_all<E>(
        &self,
        ids: &[gix::ObjectId],
        mut read: impl FnMut(gix::ObjectId) -> Result<V, E>,
    ) -> Result<Vec<V>, E> {
        let remembered: Vec<Option<V>> = {
            let mut generations = self.lock();
            ids.iter().map(|id| generations.get(id)).collect()
        };
        let mut read_now = Vec::new();
        let values = ids
            .iter()
            .zip(remembered)
            .map(|(&id, value)| match value {
                Some(value) => Ok(value),
                None => {
                    let value = read(id)?;
                    read_now.push((id, value));
                    Ok(value)
                }
            })
            .collect::<Result<Vec<V>, E>>()?;
        if !read_now.is_empty() {
            let mut generations = self.lock();
            for (id, value) in read_now {
                generations.insert(id, value);
            }
        }
        Ok(values)
    }

    /// Bytes the two generations' tables hold, estimated from their capacities: a table has 8
    /// buckets for every 7 entries it may hold, each bucket an id, a value and a control byte.
    pub fn bytes(&self) -> usize {
        let generations = self.lock();
        let capacity = generations.current.capacity() + generations.old.capacity();
        capacity * 8 / 7 * (std::mem::size_of::<(gix::ObjectId, V)>() + 1)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Generations<V>> {
        self.generations.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl<V: Copy> Generations<V> {
    fn get(&mut self, id: &gix::ObjectId) -> Option<V> {
        if let Some(value) = self.current.get(id) {
            return Some(*value);
        }
        let value = self.old.remove(id)?;
        self.insert(*id, value);
        Some(value)
    }

    fn insert(&mut self, id: gix::ObjectId, value: V) {
        if self.current.len() >= GENERATION {
            self.old = std::mem::take(&mut self.current);
            self.current.reserve(GENERATION);
        }
        self.current.insert(id, value);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::convert::Infallible;

    /// Distinct ids whose first bytes look random, as a hash's do (the memo's hasher uses them).
    fn id(n: usize) -> gix::ObjectId {
        let mut bytes = [0u8; 20];
        let mixed = (n as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        bytes[..8].copy_from_slice(&mixed.to_le_bytes());
        bytes[12..].copy_from_slice(&(n as u64).to_le_bytes());
        gix::ObjectId::from_bytes_or_panic(&bytes)
    }

    #[test]
    fn id_memo_keeps_what_is_asked_for_and_forgets_the_rest() {
        let memo = IdMemo::<u64>::default();
        for n in 0..GENERATION {
            memo.insert(id(n), n as u64);
        }
        // a full generation turns old; what is still asked for moves over
        memo.insert(id(GENERATION), 0);
        assert_eq!(memo.get(id(7)), Some(7));
        for n in GENERATION + 1..3 * GENERATION {
            memo.insert(id(n), n as u64);
        }
        assert_eq!(memo.get(id(8)), None, "two generations later it is gone");
        assert_eq!(
            memo.get(id(3 * GENERATION - 1)),
            Some(3 * GENERATION as u64 - 1)
        );
        let bytes = memo.bytes();
        let entry = std::mem::size_of::<(gix::ObjectId, u64)>();
        assert!(bytes > 2 * GENERATION * entry, "{bytes} bytes estimated");
        assert!(bytes < 9 << 20, "{bytes} bytes estimated");
        let generations = memo.lock();
        let kept = generations.current.len() + generations.old.len();
        assert!(kept <= 2 * GENERATION, "{kept} facts kept");
    }

    #[test]
    fn id_memo_reads_only_what_it_does_not_remember() {
        let memo = IdMemo::<u64>::default();
        memo.insert(id(1), 10);
        let mut read = Vec::new();
        let values = memo.get_or_read_all::<Infallible>(&[id(1), id(2), id(3)], |i| {
            read.push(i);
            Ok(read.len() as u64 * 100)
        });
        assert_eq!(values.unwrap(), [10, 100, 200]);
        assert_eq!(read, [id(2), id(3)]);
        assert_eq!(memo.get(id(3)), Some(200), "what was read is remembered");
        let failed = memo.get_or_read_all(&[id(1), id(4)], |_| Err("unreadable"));
        assert_eq!(failed, Err("unreadable"));
        assert_eq!(memo.get(id(4)), None);
    }
}
