//! Rename detection with git's rules and git's similarity estimate: exact renames first (same
//! blob, preferring the same basename), then pairs with a unique common basename, then the
//! similarity matrix, each limited by the rename limit.

use super::blobs::Blobs;
use super::spans::copied_bytes;
use super::tree::{Entry, RawChange};
use crate::git::error::GitError;
use std::collections::HashMap;

/// git's full score; a similarity index is `score * 100 / MAX_SCORE`.
pub const MAX_SCORE: u64 = 60_000;
/// git's default minimum score for a rename (50%).
const MIN_SCORE: u64 = 30_000;
/// Candidates kept per destination in the similarity matrix.
const CANDIDATES_PER_DST: usize = 4;

/// A file pair after rename detection; `score` is set for renames.
#[derive(Clone, Debug)]
pub struct Pair {
    pub old: Option<Entry>,
    pub new: Option<Entry>,
    pub score: Option<u64>,
}

fn is_regular(e: &Entry) -> bool {
    e.mode & 0o170000 == 0o100000
}

fn basename(path: &[u8]) -> &[u8] {
    match path.iter().rposition(|&b| b == b'/') {
        Some(i) => &path[i + 1..],
        None => path,
    }
}

/// Detects renames among the additions and deletions of `changes` (git's `-M` defaults).
/// `limit` < 0 means git's default (1000), 0 means unlimited.
pub fn detect(
    changes: Vec<RawChange>,
    blobs: &mut Blobs<'_>,
    limit: i64,
) -> Result<Vec<Pair>, GitError> {
    let mut sources: Vec<usize> = Vec::new();
    let mut dests: Vec<usize> = Vec::new();
    for (i, c) in changes.iter().enumerate() {
        match (&c.old, &c.new) {
            (Some(_), None) => sources.push(i),
            (None, Some(_)) => dests.push(i),
            _ => {}
        }
    }
    let mut renames: HashMap<usize, (usize, u64)> = HashMap::new();
    if !sources.is_empty() && !dests.is_empty() {
        let mut d = Detector {
            changes: &changes,
            blobs,
            sources,
            dests,
            renames: &mut renames,
            used: Vec::new(),
        };
        d.run(limit)?;
    }
    let used_sources: std::collections::HashSet<usize> =
        renames.values().map(|(s, _)| *s).collect();
    let mut out = Vec::with_capacity(changes.len());
    for (i, c) in changes.iter().enumerate() {
        if let Some((src, score)) = renames.get(&i) {
            out.push(Pair {
                old: changes[*src].old.clone(),
                new: c.new.clone(),
                score: Some(*score),
            });
        } else if !used_sources.contains(&i) {
            out.push(Pair {
                old: c.old.clone(),
                new: c.new.clone(),
                score: None,
            });
        }
    }
    Ok(out)
}

struct Detector<'a, 'r> {
    changes: &'a [RawChange],
    blobs: &'a mut Blobs<'r>,
    /// Indices into `changes` of deletions still available as sources.
    sources: Vec<usize>,
    /// Indices into `changes` of additions.
    dests: Vec<usize>,
    /// destination change index → (source change index, score)
    renames: &'a mut HashMap<usize, (usize, u64)>,
    used: Vec<usize>,
}

#[derive(Clone, Copy)]
struct Candidate {
    score: u64,
    same_name: bool,
    dst: usize,
    src: usize,
}

/// git's `score_compare`: better candidates sort first, empty slots last.
fn candidate_order(a: &Option<Candidate>, b: &Option<Candidate>) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Greater,
        (Some(_), None) => Ordering::Less,
        (Some(a), Some(b)) => b.score.cmp(&a.score).then(b.same_name.cmp(&a.same_name)),
    }
}

impl Detector<'_, '_> {
    fn src(&self, i: usize) -> &Entry {
        self.changes[i].old.as_ref().expect("sources are deletions")
    }

    fn dst(&self, i: usize) -> &Entry {
        self.changes[i]
            .new
            .as_ref()
            .expect("destinations are additions")
    }

    fn record(&mut self, dst: usize, src: usize, score: u64) {
        self.renames.insert(dst, (src, score));
        self.used.push(src);
    }

    fn drop_used_sources(&mut self) {
        let used = std::mem::take(&mut self.used);
        self.sources.retain(|s| !used.contains(s));
    }

    fn remaining_dests(&self) -> Vec<usize> {
        self.dests
            .iter()
            .copied()
            .filter(|d| !self.renames.contains_key(d))
            .collect()
    }

    fn run(&mut self, limit: i64) -> Result<(), GitError> {
        self.exact();
        self.drop_used_sources();
        self.by_basename()?;
        self.drop_used_sources();
        let dests = self.remaining_dests();
        if dests.is_empty() || self.sources.is_empty() {
            return Ok(());
        }
        let limit = if limit < 0 { 1000 } else { limit as u64 };
        if limit > 0 && (dests.len() as u64) * (self.sources.len() as u64) > limit * limit {
            return Ok(());
        }
        self.matrix(&dests)
    }

    /// Destinations whose blob equals a source's: prefer unused sources with the same basename.
    fn exact(&mut self) {
        let mut by_id: HashMap<gix::ObjectId, Vec<usize>> = HashMap::new();
        for &s in &self.sources {
            by_id.entry(self.src(s).id).or_default().push(s);
        }
        for d in self.dests.clone() {
            let target = self.dst(d).clone();
            let Some(candidates) = by_id.get(&target.id) else {
                continue;
            };
            let mut best: Option<(usize, u32)> = None;
            for &s in candidates.iter().take(100) {
                let source = self.src(s);
                if (!is_regular(source) || !is_regular(&target)) && source.mode != target.mode {
                    continue;
                }
                if self.used.contains(&s) {
                    continue;
                }
                let score = 1 + u32::from(basename(&source.path) == basename(&target.path));
                if best.is_none_or(|(_, b)| score > b) {
                    best = Some((s, score));
                    if score == 2 {
                        break;
                    }
                }
            }
            if let Some((s, _)) = best {
                self.record(d, s, MAX_SCORE);
            }
        }
    }

    /// Pairs whose basename is unique among the sources and among the destinations.
    fn by_basename(&mut self) -> Result<(), GitError> {
        let min_score = MIN_SCORE + (MAX_SCORE - MIN_SCORE) / 2;
        let unique = |names: Vec<(usize, Vec<u8>)>| {
            let mut map: HashMap<Vec<u8>, Option<usize>> = HashMap::new();
            for (i, name) in names {
                map.entry(name).and_modify(|v| *v = None).or_insert(Some(i));
            }
            map
        };
        let sources = unique(
            self.sources
                .iter()
                .map(|&s| (s, basename(&self.src(s).path).to_vec()))
                .collect(),
        );
        let dests = unique(
            self.remaining_dests()
                .into_iter()
                .map(|d| (d, basename(&self.dst(d).path).to_vec()))
                .collect(),
        );
        let mut pairs: Vec<(usize, usize)> = sources
            .iter()
            .filter_map(|(name, s)| Some(((*s)?, dests.get(name).copied().flatten()?)))
            .collect();
        pairs.sort_unstable();
        for (s, d) in pairs {
            let (src, dst) = (self.src(s).clone(), self.dst(d).clone());
            let score = self.similarity(&src, &dst, min_score)?;
            if score >= min_score {
                self.record(d, s, score);
            }
        }
        Ok(())
    }

    /// git's inexact matrix: best candidates per destination, then greedy by score.
    fn matrix(&mut self, dests: &[usize]) -> Result<(), GitError> {
        let mut all: Vec<Option<Candidate>> = Vec::with_capacity(dests.len() * CANDIDATES_PER_DST);
        for &d in dests {
            let mut slots: [Option<Candidate>; CANDIDATES_PER_DST] = [None; CANDIDATES_PER_DST];
            let dst = self.dst(d).clone();
            for s in self.sources.clone() {
                let src = self.src(s).clone();
                let candidate = Some(Candidate {
                    score: self.similarity(&src, &dst, MIN_SCORE)?,
                    same_name: basename(&src.path) == basename(&dst.path),
                    dst: d,
                    src: s,
                });
                let mut worst = 0;
                for i in 1..CANDIDATES_PER_DST {
                    if candidate_order(&slots[i], &slots[worst]).is_gt() {
                        worst = i;
                    }
                }
                if candidate_order(&slots[worst], &candidate).is_gt() {
                    slots[worst] = candidate;
                }
            }
            all.extend(slots);
        }
        all.sort_by(candidate_order);
        for c in all {
            let Some(c) = c else { break };
            if c.score < MIN_SCORE {
                break;
            }
            if self.renames.contains_key(&c.dst) || self.used.contains(&c.src) {
                continue;
            }
            self.record(c.dst, c.src, c.score);
        }
        Ok(())
    }

    /// git's `estimate_similarity`: 0 unless both are regular files of comparable size.
    fn similarity(&mut self, src: &Entry, dst: &Entry, min_score: u64) -> Result<u64, GitError> {
        if !is_regular(src) || !is_regular(dst) {
            return Ok(0);
        }
        let src_size = self.blobs.size(src.id)?;
        let dst_size = self.blobs.size(dst.id)?;
        let max = src_size.max(dst_size);
        let delta = max - src_size.min(dst_size);
        if max * (MAX_SCORE - min_score) < delta * MAX_SCORE {
            return Ok(0);
        }
        if dst_size == 0 {
            return Ok(0);
        }
        let copied = {
            let a = self.blobs.span_counts(src.id)?;
            let b = self.blobs.span_counts(dst.id)?;
            copied_bytes(&a, &b)
        };
        Ok(copied * MAX_SCORE / max)
    }
}
