//! The log's commit graph, drawn the way `git log --graph` draws it (and so the way cgit,
//! which uses git's own code, shows it): one column per line of history, merges that open
//! their parents' lines right beside the `*`, octopus merges with `-.` dashes, lines that
//! slide left with `/` and `_` as soon as they are free to, and the colours `column1..6`
//! assigned as git assigns them.
//!
//! Written from a reading of how git's graph works (the states a commit's output goes through:
//! padding, skip, pre-commit, commit, post-merge, collapsing); no code is taken from it.
//!
//! A commit's lines come one at a time from [`Graph::next_line`] after [`Graph::update`]:
//! first any lines that make room for it, then the line with its `*`, then the lines that
//! open its parents and move the other lines into place. Lines are HTML: each drawn
//! character of a column inside `<span class='columnN'>`, the `*` and spaces bare.

use gix::ObjectId;

const COLOURS: [&str; 6] = [
    "column1", "column2", "column3", "column4", "column5", "column6",
];
/// The colour index that means "no colour".
const NO_COLOUR: u16 = COLOURS.len() as u16;

/// What the next line for the current commit is.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum State {
    /// The commit is done: lines continue straight down.
    Padding,
    /// Commits were passed over without drawing: a `...` line.
    Skip,
    /// An octopus merge needs lines to its right pushed apart first.
    PreCommit,
    /// The line with the `*`.
    Commit,
    /// The line that opens a merge's parents.
    PostMerge,
    /// Lines moving left into the places they keep.
    Collapsing,
}

#[derive(Clone, Copy)]
struct Column {
    /// The commit this line of history leads to.
    commit: ObjectId,
    colour: u16,
}

/// One line of the graph being written: its HTML and how many characters it shows.
struct Line {
    html: String,
    width: usize,
}

impl Line {
    fn new() -> Line {
        Line {
            html: String::new(),
            width: 0,
        }
    }

    fn plain(&mut self, ch: char, n: usize) {
        for _ in 0..n {
            self.html.push(ch);
        }
        self.width += n;
    }

    fn column(&mut self, colour: u16, ch: char) {
        match COLOURS.get(usize::from(colour)) {
            Some(class) => {
                self.html.push_str("<span class='");
                self.html.push_str(class);
                self.html.push_str("'>");
                self.html.push(ch);
                self.html.push_str("</span>");
            }
            None => self.html.push(ch),
        }
        self.width += 1;
    }
}

/// The graph state across the commits of one walk, given child before parent.
pub struct Graph {
    commit: Option<ObjectId>,
    /// The current commit's parents that the walk shows, in order.
    parents: Vec<ObjectId>,
    /// The width every line of the current commit is padded to.
    width: usize,
    expansion_row: usize,
    state: State,
    prev_state: State,
    commit_index: usize,
    prev_commit_index: usize,
    /// 0: the first parent's line lies left of the merge; 1: it starts at the merge.
    merge_layout: i64,
    edges_added: i64,
    prev_edges_added: i64,
    /// The lines before the current commit.
    columns: Vec<Column>,
    /// The lines after it.
    new_columns: Vec<Column>,
    /// For each character position of the line being drawn, the column it moves to
    /// (-1: empty).
    mapping: Vec<i64>,
    old_mapping: Vec<i64>,
    mapping_size: usize,
    colour: u16,
}

impl Default for Graph {
    fn default() -> Self {
        Graph {
            commit: None,
            parents: Vec::new(),
            width: 0,
            expansion_row: 0,
            state: State::Padding,
            prev_state: State::Padding,
            commit_index: 0,
            prev_commit_index: 0,
            merge_layout: 0,
            edges_added: 0,
            prev_edges_added: 0,
            columns: Vec::new(),
            new_columns: Vec::new(),
            mapping: Vec::new(),
            old_mapping: Vec::new(),
            mapping_size: 0,
            // the first commit moves this on to the first colour
            colour: NO_COLOUR - 1,
        }
    }
}

/// The entry at `i` of a mapping, -1 past either end.
fn at(mapping: &[i64], i: i64) -> i64 {
    usize::try_from(i)
        .ok()
        .and_then(|i| mapping.get(i).copied())
        .unwrap_or(-1)
}

fn set(mapping: &mut [i64], i: i64, value: i64) {
    if let Some(slot) = usize::try_from(i).ok().and_then(|i| mapping.get_mut(i)) {
        *slot = value;
    }
}

impl Graph {
    /// Moves on to the next commit of the walk. `parents` are its parents that the walk
    /// shows (all of them, unless a range hides some), in the commit's order.
    pub fn update(&mut self, id: ObjectId, parents: &[ObjectId]) {
        self.commit = Some(id);
        self.parents.clear();
        for p in parents {
            // a parent named twice is one line
            if !self.parents.contains(p) {
                self.parents.push(*p);
            }
        }
        self.prev_commit_index = self.commit_index;
        self.update_columns();
        self.expansion_row = 0;
        // Not through set_state: no line of the old state was drawn.
        self.state = if self.state != State::Padding {
            State::Skip
        } else if self.needs_pre_commit_line() {
            State::PreCommit
        } else {
            State::Commit
        };
    }

    /// Whether every line of the current commit has been drawn.
    pub fn is_commit_finished(&self) -> bool {
        self.state == State::Padding
    }

    /// The next line of the graph (HTML), and whether it is the current commit's own line.
    pub fn next_line(&mut self) -> (String, bool) {
        let mut line = Line::new();
        if self.commit.is_none() {
            return (line.html, false);
        }
        let mut is_commit = false;
        match self.state {
            State::Padding => self.padding_line(&mut line),
            State::Skip => self.skip_line(&mut line),
            State::PreCommit => self.pre_commit_line(&mut line),
            State::Commit => {
                self.commit_line(&mut line);
                is_commit = true;
            }
            State::PostMerge => self.post_merge_line(&mut line),
            State::Collapsing => self.collapsing_line(&mut line),
        }
        if line.width < self.width {
            line.plain(' ', self.width - line.width);
        }
        (line.html, is_commit)
    }

    fn set_state(&mut self, s: State) {
        self.prev_state = self.state;
        self.state = s;
    }

    fn num_parents(&self) -> usize {
        self.parents.len()
    }

    fn next_colour(&mut self) {
        self.colour = (self.colour + 1) % NO_COLOUR;
    }

    fn colour_of(&self, commit: &ObjectId) -> u16 {
        self.columns
            .iter()
            .find(|c| c.commit == *commit)
            .map_or(self.colour, |c| c.colour)
    }

    fn new_column_of(&self, commit: &ObjectId) -> Option<usize> {
        self.new_columns.iter().position(|c| c.commit == *commit)
    }

    /// Puts `commit` among the lines after the current commit (once) and records where the
    /// character position being laid out goes. `merge_at` is the current commit's column when
    /// `commit` is one of its parents.
    fn insert_into_new_columns(&mut self, commit: ObjectId, merge_at: Option<usize>) {
        let i = match self.new_column_of(&commit) {
            Some(i) => i,
            None => {
                let colour = self.colour_of(&commit);
                self.new_columns.push(Column { commit, colour });
                self.new_columns.len() - 1
            }
        };
        let i = i as i64;
        let width = self.width as i64;
        let mapping_idx;
        match merge_at {
            Some(idx) if self.num_parents() > 1 && self.merge_layout == -1 => {
                // The first parent of a merge: where its line is decides the layout.
                let dist = idx as i64 - i;
                let shift = if dist > 1 { 2 * dist - 3 } else { 1 };
                self.merge_layout = if dist > 0 { 0 } else { 1 };
                self.edges_added = self.num_parents() as i64 + self.merge_layout - 2;
                mapping_idx = width + (self.merge_layout - 1) * shift;
                self.width = (width + 2 * self.merge_layout) as usize;
            }
            _ if self.edges_added > 0 && i == at(&self.mapping, width - 2) => {
                // A merge opened a line, but this one joins the line just left of it.
                mapping_idx = width - 2;
                self.edges_added = -1;
            }
            _ => {
                mapping_idx = width;
                self.width += 2;
            }
        }
        set(&mut self.mapping, mapping_idx, i);
    }

    fn update_columns(&mut self) {
        std::mem::swap(&mut self.columns, &mut self.new_columns);
        self.new_columns.clear();
        let max_new_columns = self.columns.len() + self.num_parents();
        self.mapping_size = 2 * max_new_columns;
        self.mapping.clear();
        self.mapping.resize(self.mapping_size, -1);
        if self.old_mapping.len() < self.mapping_size {
            self.old_mapping.resize(self.mapping_size, -1);
        }
        self.width = 0;
        self.prev_edges_added = self.edges_added;
        self.edges_added = 0;
        let current = self.commit.expect("update sets the commit");
        let mut seen_this = false;
        let mut in_columns = true;
        let num_columns = self.columns.len();
        for i in 0..=num_columns {
            let col_commit = if i == num_columns {
                if seen_this {
                    break;
                }
                in_columns = false;
                current
            } else {
                self.columns[i].commit
            };
            if col_commit == current {
                seen_this = true;
                self.commit_index = i;
                self.merge_layout = -1;
                for p in self.parents.clone() {
                    // a merge, or a line that starts here, takes the next colour
                    if self.num_parents() > 1 || !in_columns {
                        self.next_colour();
                    }
                    self.insert_into_new_columns(p, Some(i));
                }
                // a commit takes two characters even without parents
                if self.num_parents() == 0 {
                    self.width += 2;
                }
            } else {
                self.insert_into_new_columns(col_commit, None);
            }
        }
        while self.mapping_size > 1 && self.mapping[self.mapping_size - 1] < 0 {
            self.mapping_size -= 1;
        }
    }

    fn num_dashed_parents(&self) -> i64 {
        self.num_parents() as i64 + self.merge_layout - 3
    }

    fn needs_pre_commit_line(&self) -> bool {
        self.num_parents() >= 3
            && self.commit_index + 1 < self.columns.len()
            && (self.expansion_row as i64) < self.num_dashed_parents() * 2
    }

    /// Every line already where it goes (or one to the right, drawn as `/`).
    fn is_mapping_correct(&self) -> bool {
        self.mapping[..self.mapping_size]
            .iter()
            .enumerate()
            .all(|(i, t)| *t < 0 || *t == (i / 2) as i64)
    }

    fn padding_line(&self, line: &mut Line) {
        for c in &self.new_columns {
            line.column(c.colour, '|');
            line.plain(' ', 1);
        }
    }

    fn skip_line(&mut self, line: &mut Line) {
        line.plain('.', 3);
        let next = if self.needs_pre_commit_line() {
            State::PreCommit
        } else {
            State::Commit
        };
        self.set_state(next);
    }

    fn pre_commit_line(&mut self, line: &mut Line) {
        let current = self.commit.expect("update sets the commit");
        let mut seen_this = false;
        for (i, col) in self.columns.iter().enumerate() {
            if col.commit == current {
                seen_this = true;
                line.column(col.colour, '|');
                line.plain(' ', self.expansion_row);
            } else if seen_this && self.expansion_row == 0 {
                // lines a merge just above drew as `\` go on as `\`
                if self.prev_state == State::PostMerge && self.prev_commit_index < i {
                    line.column(col.colour, '\\');
                } else {
                    line.column(col.colour, '|');
                }
            } else if seen_this {
                line.column(col.colour, '\\');
            } else {
                line.column(col.colour, '|');
            }
            line.plain(' ', 1);
        }
        self.expansion_row += 1;
        if !self.needs_pre_commit_line() {
            self.set_state(State::Commit);
        }
    }

    fn octopus_dashes(&self, line: &mut Line) {
        let dashed = self.num_dashed_parents();
        for i in 0..dashed {
            let j = at(&self.mapping, (self.commit_index as i64 + i + 2) * 2);
            let colour = usize::try_from(j)
                .ok()
                .and_then(|j| self.new_columns.get(j))
                .map_or(NO_COLOUR, |c| c.colour);
            line.column(colour, '-');
            line.column(colour, if i == dashed - 1 { '.' } else { '-' });
        }
    }

    /// The commits drawn left to right with their places: each column's, then the current
    /// commit in a place of its own when no column holds it.
    fn drawn_commits(&self, current: ObjectId) -> impl Iterator<Item = (usize, ObjectId)> + '_ {
        let held = self.columns.iter().any(|c| c.commit == current);
        let own_place = (!held).then_some(current);
        self.columns
            .iter()
            .map(|c| c.commit)
            .chain(own_place)
            .enumerate()
    }

    fn commit_line(&mut self, line: &mut Line) {
        let current = self.commit.expect("update sets the commit");
        let mut seen_this = false;
        for (i, col_commit) in self.drawn_commits(current) {
            if col_commit == current {
                seen_this = true;
                line.plain('*', 1);
                if self.num_parents() > 2 {
                    self.octopus_dashes(line);
                }
            } else {
                let colour = self.columns[i].colour;
                let i64_ = i as i64;
                if seen_this && self.edges_added > 1 {
                    line.column(colour, '\\');
                } else if seen_this && self.edges_added == 1 {
                    // the first line of a merge right after another merge's `\`s
                    if self.prev_state == State::PostMerge
                        && self.prev_edges_added > 0
                        && self.prev_commit_index < i
                    {
                        line.column(colour, '\\');
                    } else {
                        line.column(colour, '|');
                    }
                } else if self.prev_state == State::Collapsing
                    && at(&self.old_mapping, 2 * i64_ + 1) == i64_
                    && at(&self.mapping, 2 * i64_) < i64_
                {
                    line.column(colour, '/');
                } else {
                    line.column(colour, '|');
                }
            }
            line.plain(' ', 1);
        }
        let next = if self.num_parents() > 1 {
            State::PostMerge
        } else if self.is_mapping_correct() {
            State::Padding
        } else {
            State::Collapsing
        };
        self.set_state(next);
    }

    fn post_merge_line(&mut self, line: &mut Line) {
        const MERGE_CHARS: [char; 3] = ['/', '|', '\\'];
        let current = self.commit.expect("update sets the commit");
        let first_parent = self.parents.first().copied();
        let mut seen_this = false;
        let mut parent_colour: Option<u16> = None;
        for (i, col_commit) in self.drawn_commits(current) {
            if col_commit == current {
                seen_this = true;
                let mut idx = self.merge_layout.clamp(0, 2) as usize;
                let n = self.num_parents();
                for (j, p) in self.parents.iter().enumerate() {
                    let colour = self
                        .new_column_of(p)
                        .map_or(NO_COLOUR, |c| self.new_columns[c].colour);
                    line.column(colour, MERGE_CHARS[idx]);
                    if idx == 2 {
                        if self.edges_added > 0 || j + 1 < n {
                            line.plain(' ', 1);
                        }
                    } else {
                        idx += 1;
                    }
                }
                if self.edges_added == 0 {
                    line.plain(' ', 1);
                }
            } else if seen_this {
                let colour = self.columns[i].colour;
                line.column(colour, if self.edges_added > 0 { '\\' } else { '|' });
                line.plain(' ', 1);
            } else {
                line.column(self.columns[i].colour, '|');
                if self.merge_layout != 0 || i + 1 != self.commit_index {
                    match parent_colour {
                        Some(c) => line.column(c, '_'),
                        None => line.plain(' ', 1),
                    }
                }
            }
            if Some(col_commit) == first_parent {
                parent_colour = Some(self.columns[i].colour);
            }
        }
        let next = if self.is_mapping_correct() {
            State::Padding
        } else {
            State::Collapsing
        };
        self.set_state(next);
    }

    fn collapsing_line(&mut self, line: &mut Line) {
        let size = self.mapping_size;
        std::mem::swap(&mut self.mapping, &mut self.old_mapping);
        if self.mapping.len() < size {
            self.mapping.resize(size, -1);
        }
        for m in &mut self.mapping[..size] {
            *m = -1;
        }
        let mut horizontal_edge: i64 = -1;
        let mut horizontal_target: i64 = -1;
        for i in 0..size as i64 {
            let target = at(&self.old_mapping, i);
            if target < 0 {
                continue;
            }
            // lines only ever move left
            if target * 2 == i {
                set(&mut self.mapping, i, target);
            } else if at(&self.mapping, i - 1) < 0 {
                // free to the left: one step left
                set(&mut self.mapping, i - 1, target);
                if horizontal_edge == -1 {
                    horizontal_edge = i;
                    horizontal_target = target;
                    let mut j = target * 2 + 3;
                    while j < i - 2 {
                        set(&mut self.mapping, j, target);
                        j += 2;
                    }
                }
            } else if at(&self.mapping, i - 1) == target {
                // joins the line beside it, which goes the same way
            } else {
                // crosses the line to its left
                set(&mut self.mapping, i - 2, target);
                if horizontal_edge == -1 {
                    horizontal_target = target;
                    horizontal_edge = i - 1;
                    let mut j = target * 2 + 3;
                    while j < i - 2 {
                        set(&mut self.mapping, j, target);
                        j += 2;
                    }
                }
            }
        }
        self.old_mapping[..size].copy_from_slice(&self.mapping[..size]);
        if self.mapping_size > 0 && self.mapping[self.mapping_size - 1] < 0 {
            self.mapping_size -= 1;
        }
        let mut used_horizontal = false;
        for i in 0..self.mapping_size as i64 {
            let target = at(&self.mapping, i);
            let colour = usize::try_from(target)
                .ok()
                .and_then(|t| self.new_columns.get(t))
                .map_or(NO_COLOUR, |c| c.colour);
            if target < 0 {
                line.plain(' ', 1);
            } else if target * 2 == i {
                line.column(colour, '|');
            } else if target == horizontal_target && i != horizontal_edge - 1 {
                // only the first segment of a horizontal run goes on to the next line
                if i != target * 2 + 3 {
                    set(&mut self.mapping, i, -1);
                }
                used_horizontal = true;
                line.column(colour, '_');
            } else {
                if used_horizontal && i < horizontal_edge {
                    set(&mut self.mapping, i, -1);
                }
                line.column(colour, '/');
            }
        }
        if self.is_mapping_correct() {
            self.set_state(State::Padding);
        }
    }
}

/// The graph cells of one commit as the log shows them.
pub struct GraphRow {
    /// Lines before the commit's own, each a row of its own.
    pub before: Vec<String>,
    /// The commit's own line.
    pub commit: String,
    /// Lines after it, drawn in one cell beside the message (cgit's second row).
    pub after: Vec<String>,
}

impl Graph {
    /// Draws a commit: the lines up to and including its own, then, while the commit is not
    /// finished or until `min_after` lines are drawn, the lines after it.
    pub fn row(&mut self, id: ObjectId, parents: &[ObjectId], min_after: usize) -> GraphRow {
        self.update(id, parents);
        let mut before = Vec::new();
        let commit = loop {
            let (html, is_commit) = self.next_line();
            if is_commit {
                break html;
            }
            before.push(html);
        };
        let mut after = Vec::new();
        while after.len() < min_after || !self.is_commit_finished() {
            after.push(self.next_line().0);
        }
        GraphRow {
            before,
            commit,
            after,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u8) -> ObjectId {
        ObjectId::from_bytes_or_panic(&[n; 20])
    }

    fn text(html: &str) -> String {
        crate::pages::parts::html::strip_tags(html)
            .trim_end()
            .to_string()
    }

    /// The whole drawing of a walk, one string per line.
    fn draw(commits: &[(u8, &[u8])]) -> Vec<String> {
        let mut g = Graph::default();
        let mut out = Vec::new();
        for (c, parents) in commits {
            let parents: Vec<ObjectId> = parents.iter().map(|p| id(*p)).collect();
            let row = g.row(id(*c), &parents, 0);
            out.extend(row.before.iter().map(|l| text(l)));
            out.push(text(&row.commit));
            out.extend(row.after.iter().map(|l| text(l)));
        }
        out
    }

    #[test]
    fn a_merge_opens_beside_its_commit() {
        let lines = draw(&[(5, &[4]), (4, &[3, 2]), (2, &[1]), (3, &[1]), (1, &[])]);
        assert_eq!(lines, ["*", "*", "|\\", "| *", "* |", "|/", "*"]);
    }

    #[test]
    fn an_octopus_draws_dashes() {
        let lines = draw(&[(9, &[3, 2, 1]), (1, &[]), (2, &[]), (3, &[])]);
        assert_eq!(lines[0], "*-.");
        assert_eq!(lines[1], "|\\ \\");
    }

    #[test]
    fn colours_are_spans() {
        let mut g = Graph::default();
        let row = g.row(id(2), &[id(1), id(3)], 0);
        assert_eq!(row.commit, "*   ");
        assert_eq!(
            row.after[0],
            "<span class='column1'>|</span><span class='column2'>\\</span>  "
        );
    }
}
