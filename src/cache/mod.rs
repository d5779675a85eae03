//! Caches of what pages are made from, shared by every repository: rendered fragments by
//! object id, recent walks, facts about objects; and the admission rule they share with the
//! response cache.

mod admission;
mod fragments;
mod id_memo;
mod walks;

pub use admission::{Admission, COSTLY, thread_cpu_time};
pub use fragments::{CacheStats, FragmentCache};
pub use id_memo::{IdMemo, ObjectSizes};
pub use walks::WalkCache;
