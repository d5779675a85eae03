//! Blob contents and sizes read once per diff computation.

use super::spans::span_counts;
use crate::git::Repo;
use crate::git::error::GitError;
use gix::ObjectId;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;

pub struct Blobs<'r> {
    repo: &'r Repo<'r>,
    /// Kept as read (shared with the pack reader's caches).
    data: HashMap<ObjectId, Arc<Vec<u8>>>,
    sizes: HashMap<ObjectId, u64>,
    spans: HashMap<ObjectId, Rc<Vec<(u32, u64)>>>,
}

impl<'r> Blobs<'r> {
    pub fn new(repo: &'r Repo<'r>) -> Self {
        Blobs {
            repo,
            data: HashMap::new(),
            sizes: HashMap::new(),
            spans: HashMap::new(),
        }
    }

    pub fn get(&mut self, id: ObjectId) -> Result<Arc<Vec<u8>>, GitError> {
        if let Some(d) = self.data.get(&id) {
            return Ok(Arc::clone(d));
        }
        let data = self.repo.read_named_blob(&id)?;
        self.sizes.insert(id, data.len() as u64);
        self.data.insert(id, Arc::clone(&data));
        Ok(data)
    }

    pub fn size(&mut self, id: ObjectId) -> Result<u64, GitError> {
        if let Some(s) = self.sizes.get(&id) {
            return Ok(*s);
        }
        // A tree names the blob: its absence is a broken repository, not a user's mistake.
        let size = self.repo.object_size(&id).map_err(|e| match e {
            GitError::NotFound(_) => GitError::internal_msg(format!("missing blob {id}")),
            e => e,
        })?;
        self.sizes.insert(id, size);
        Ok(size)
    }

    pub fn span_counts(&mut self, id: ObjectId) -> Result<Rc<Vec<(u32, u64)>>, GitError> {
        if let Some(s) = self.spans.get(&id) {
            return Ok(Rc::clone(s));
        }
        let spans = Rc::new(span_counts(&self.get(id)?));
        self.spans.insert(id, Rc::clone(&spans));
        Ok(spans)
    }
}
