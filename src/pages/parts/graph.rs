//! The log's ASCII commit graph: a simple lane assignment, one lane per line of history,
//! drawn with `*`, `|`, `\` and `/` in cgit's `span.column1..6` colours.

use gix::ObjectId;

/// One character of a graph cell and its colour class (`None`: uncoloured, like `*`).
pub struct Glyph {
    pub class: Option<&'static str>,
    pub ch: char,
}

/// The graph cells for one commit: its own row, and filler rows where lines join before it
/// or fork after it.
pub struct GraphRow {
    pub before: Option<Vec<Glyph>>,
    pub commit: Vec<Glyph>,
    pub after: Option<Vec<Glyph>>,
    /// The lanes going on below the commit (beside its message).
    pub continuation: Vec<Glyph>,
}

const COLUMNS: [&str; 6] = [
    "column1", "column2", "column3", "column4", "column5", "column6",
];

/// Lanes of history, each waiting for the commit it leads to.
#[derive(Default)]
pub struct Lanes {
    lanes: Vec<Option<ObjectId>>,
}

impl Lanes {
    /// Places a commit (given in a child-before-parent order) and returns its cells.
    pub fn row(&mut self, id: ObjectId, parents: &[ObjectId]) -> GraphRow {
        let waiting: Vec<usize> = (0..self.lanes.len())
            .filter(|i| self.lanes[*i] == Some(id))
            .collect();
        let joined = &waiting[waiting.len().min(1)..];
        let before =
            (!joined.is_empty()).then(|| self.draw(|i| joined.contains(&i).then_some('/')));
        for i in joined {
            self.lanes[*i] = None;
        }
        self.trim();
        let col = match waiting.first() {
            Some(c) => *c,
            None => self.free_lane(0),
        };
        self.lanes[col] = Some(id);
        let commit = self.draw(|i| (i == col).then_some('*'));
        self.lanes[col] = parents.first().copied();
        let mut forked = Vec::new();
        for p in parents.iter().skip(1) {
            if !self.lanes.contains(&Some(*p)) {
                let lane = self.free_lane(col + 1);
                self.lanes[lane] = Some(*p);
                forked.push(lane);
            }
        }
        let after =
            (!forked.is_empty()).then(|| self.draw(|i| forked.contains(&i).then_some('\\')));
        self.trim();
        GraphRow {
            before,
            commit,
            after,
            continuation: self.draw(|_| None),
        }
    }

    fn trim(&mut self) {
        while self.lanes.last() == Some(&None) {
            self.lanes.pop();
        }
    }

    /// The first empty lane at or after `from`, adding one when all are taken.
    fn free_lane(&mut self, from: usize) -> usize {
        match (from..self.lanes.len()).find(|i| self.lanes[*i].is_none()) {
            Some(i) => i,
            None => {
                self.lanes.push(None);
                self.lanes.len() - 1
            }
        }
    }

    /// Draws every lane: `special` decides a lane's glyph, else `|` for a busy lane.
    fn draw(&self, special: impl Fn(usize) -> Option<char>) -> Vec<Glyph> {
        let width = self.lanes.len();
        (0..width)
            .map(|i| match special(i) {
                Some('*') => Glyph {
                    class: None,
                    ch: '*',
                },
                Some(ch) => Glyph {
                    class: Some(COLUMNS[i % COLUMNS.len()]),
                    ch,
                },
                None if self.lanes[i].is_some() => Glyph {
                    class: Some(COLUMNS[i % COLUMNS.len()]),
                    ch: '|',
                },
                None => Glyph {
                    class: None,
                    ch: ' ',
                },
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn text(glyphs: &[Glyph]) -> String {
        glyphs.iter().map(|g| g.ch).collect()
    }

    #[test]
    fn a_merge_forks_and_joins() {
        // five -> merge(three, two); three -> one; two -> one
        let mut lanes = Lanes::default();
        let r = lanes.row(id(5), &[id(4)]);
        assert_eq!(text(&r.commit), "*");
        let r = lanes.row(id(4), &[id(3), id(2)]);
        assert_eq!(text(&r.commit), "*");
        assert_eq!(text(r.after.as_ref().unwrap()), "|\\");
        let r = lanes.row(id(2), &[id(1)]);
        assert_eq!(text(&r.commit), "|*");
        let r = lanes.row(id(3), &[id(1)]);
        assert_eq!(text(&r.commit), "*|");
        let r = lanes.row(id(1), &[]);
        assert_eq!(text(r.before.as_ref().unwrap()), "|/");
        assert_eq!(text(&r.commit), "*");
    }
}
