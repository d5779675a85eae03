//! A stable content hash for validators: equal input gives an equal value in every process, on
//! every machine and with every Rust release (SipHash-1-3, 128 bits, fixed keys, over input
//! framed explicitly: lengths and integers little-endian), so that several instances serving
//! the same content derive the same ETags. `std`'s `DefaultHasher` promises none of that.

use crate::config::{Globals, RepoConfig, Scheduling};
use siphasher::sip128::{Hasher128, SipHasher13};
use std::hash::Hasher;

/// Builds one content hash from a sequence of framed values.
#[derive(Clone, Debug)]
pub struct ContentHash(SipHasher13);

impl Default for ContentHash {
    fn default() -> Self {
        ContentHash::new()
    }
}

impl ContentHash {
    pub fn new() -> ContentHash {
        // "cgitd-etag-v1": changing the keys changes every validator.
        ContentHash(SipHasher13::new_with_keys(
            0x6367_6974_642d_6574,
            0x6167_2d76_3100_0000,
        ))
    }

    /// Adds a byte string, length first (so `("ab", "c")` and `("a", "bc")` differ).
    pub fn bytes(&mut self, bytes: &[u8]) -> &mut ContentHash {
        self.u64(bytes.len() as u64);
        self.0.write(bytes);
        self
    }

    pub fn str(&mut self, s: &str) -> &mut ContentHash {
        self.bytes(s.as_bytes())
    }

    pub fn u64(&mut self, value: u64) -> &mut ContentHash {
        self.0.write(&value.to_le_bytes());
        self
    }

    pub fn u128(&mut self, value: u128) -> &mut ContentHash {
        self.0.write(&value.to_le_bytes());
        self
    }

    /// An optional string: absent and empty differ.
    pub fn opt_str(&mut self, s: Option<&str>) -> &mut ContentHash {
        match s {
            None => self.u64(0),
            Some(s) => self.u64(1).str(s),
        }
    }

    pub fn finish(&self) -> u128 {
        self.0.finish128().as_u128()
    }
}

/// The content hash of the global options in force, as loaded (so the contents of `header=`,
/// `footer=` and included files count, not the text that named them), without the options
/// that only tune this process (workers, log sampling, cache budgets, the metrics path).
pub(super) fn globals_hash(globals: &Globals) -> u128 {
    let mut g = globals.clone();
    g.scheduling = Scheduling::default();
    g.access_log_sample = 0;
    g.fragment_cache_size = 0;
    g.watch_refs = true;
    g.max_warm_handles = 0;
    g.metrics_path = None;
    g.trusted_proxies.clear();
    ContentHash::new().str(&format!("{g:?}")).finish()
}

/// The content hash of one repository's options (with the globals they render with), without
/// where the repository lies on disk: copies of the same repositories at other paths, served
/// with the same options, give the same hash.
pub(super) fn repo_config_hash(globals: u128, repo: &RepoConfig) -> u128 {
    let mut r = repo.clone();
    r.path = Default::default();
    r.origin = String::new();
    ContentHash::new()
        .u128(globals)
        .str(&format!("{r:?}"))
        .finish()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_fixed_and_framed() {
        let h = |parts: &[&str]| {
            let mut c = ContentHash::new();
            for p in parts {
                c.str(p);
            }
            c.finish()
        };
        assert_eq!(h(&["ab", "c"]), h(&["ab", "c"]));
        assert_ne!(h(&["ab", "c"]), h(&["a", "bc"]));
        // A fixed value: a change here changes every ETag of every deployed instance.
        assert_eq!(
            format!("{:032x}", h(&["cgitd"])),
            "f2872baa3221a8c685c1d4ce5265af5c"
        );
    }
}
