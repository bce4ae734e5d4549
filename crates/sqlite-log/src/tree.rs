//! The page-to-table map: every page of the b-trees followed, with its table and its parent
//! page, built once from the root pages and kept current per commit from the interior pages
//! the commit wrote (fileformat2.html, "B-tree Pages").
//!
//! Per commit and table, [`PageMap::reshape`] walks the table's b-tree as it is after the
//! commit, from its root, into the pages the commit wrote and their old ancestors only: a
//! page it did not write keeps its subtree, under whichever parent now points to it. A page
//! that was in the region and is no longer reached left the tree (a merge, a cleared table),
//! and so did its old children nobody points to now. The rows of the pages written and of the
//! pages that left are what the commit can have changed; every other page's rows are as they
//! were.

use hashbrown::{HashMap, HashSet};

use crate::error::DecodeError;
use crate::page::{Kind, Page};
use crate::schema::TableId;
use crate::view::{Side, View};

/// A page's place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node {
    pub table: TableId,
    /// Its parent page (0: the root); for an overflow page, the page of the cell it holds the
    /// payload of.
    pub parent: u32,
    /// An overflow page of one of the table's rows.
    pub overflow: bool,
}

impl Node {
    pub(crate) fn tree(table: TableId, parent: u32) -> Node {
        Node {
            table,
            parent,
            overflow: false,
        }
    }
}

/// How one commit moved a table's pages.
#[derive(Debug, Default)]
pub(crate) struct Reshape {
    /// Pages whose old images hold the rows the commit may have changed or removed.
    pub old_rows: Vec<u32>,
    /// Pages whose new images hold the rows the commit may have changed or added.
    pub new_rows: Vec<u32>,
    /// The table's pages and parents after the commit, where they changed.
    pub placed: Vec<(u32, u32)>,
    /// The table's pages that left its tree.
    pub removed: Vec<u32>,
}

/// Every followed page's table and parent.
#[derive(Debug, Default, Clone)]
pub(crate) struct PageMap {
    nodes: HashMap<u32, Node>,
}

/// The kinds a table's pages must have.
pub(crate) fn kinds_fit(kind: Kind, without_rowid: bool) -> bool {
    kind.table() != without_rowid
}

impl PageMap {
    pub(crate) fn get(&self, page: u32) -> Option<Node> {
        self.nodes.get(&page).copied()
    }

    /// Pages followed.
    pub(crate) fn len(&self) -> usize {
        self.nodes.len()
    }

    pub(crate) fn insert(&mut self, page: u32, node: Node) {
        self.nodes.insert(page, node);
    }

    pub(crate) fn remove(&mut self, page: u32) {
        self.nodes.remove(&page);
    }

    /// Forgets the pages past `db_pages` (the database shrank).
    pub(crate) fn truncate(&mut self, db_pages: u32) {
        self.nodes.retain(|p, _| *p <= db_pages);
    }

    /// Forgets every page of `table`.
    pub(crate) fn drop_table(&mut self, table: TableId) {
        self.nodes.retain(|_, n| n.table != table);
    }

    /// Maps the b-tree of `table` from `root` as `side` of `view` shows it, every page and
    /// every overflow chain (an overflow page rewritten in place is a row changed); returns
    /// the pages holding rows.
    pub(crate) fn walk(
        &mut self,
        view: &mut View<'_, '_>,
        table: TableId,
        root: u32,
        without_rowid: bool,
    ) -> Result<Vec<u32>, DecodeError> {
        let mut stack = vec![(root, 0u32)];
        let mut found = Vec::new();
        while let Some((page, parent)) = stack.pop() {
            if self.nodes.insert(page, Node::tree(table, parent)).is_some() {
                return Err(DecodeError::corrupt(
                    page,
                    "a page in two places of the b-trees",
                ));
            }
            let img = view.page(Side::New, page)?;
            let p = Page::parse(page, &img, view_usable(view))?;
            if !kinds_fit(p.kind, without_rowid) {
                return Err(DecodeError::corrupt(
                    page,
                    "a page of the wrong kind for its table",
                ));
            }
            if p.kind.holds_rows() {
                found.push(page);
                for i in 0..p.len() {
                    if let Some(payload) = p.cell(i)?.payload.filter(|c| c.overflow.is_some()) {
                        view.payload(Side::New, page, &payload)?;
                    }
                }
            }
            stack.extend(p.children()?.into_iter().map(|c| (c, page)));
        }
        self.overflow_pages(view, table)?;
        Ok(found)
    }

    /// The overflow pages `view` read on its new side, owned by pages of `table`.
    fn overflow_pages(
        &mut self,
        view: &mut View<'_, '_>,
        table: TableId,
    ) -> Result<(), DecodeError> {
        for (side, owner, page) in std::mem::take(&mut view.chains) {
            if side == Side::New
                && self
                    .get(owner)
                    .is_some_and(|n| n.table == table && !n.overflow)
            {
                let node = Node {
                    table,
                    parent: owner,
                    overflow: true,
                };
                if self.nodes.insert(page, node).is_some_and(|n| n != node) {
                    return Err(DecodeError::corrupt(
                        page,
                        "a page in two places of the b-trees",
                    ));
                }
            }
        }
        Ok(())
    }

    /// After a commit: the overflow chains `chains` read, those of the old side forgotten,
    /// then those of the new side mapped to their owners' tables.
    pub(crate) fn rechain(&mut self, chains: &[(Side, u32, u32)]) {
        for (side, owner, page) in chains {
            if *side == Side::Old
                && self
                    .get(*page)
                    .is_some_and(|n| n.overflow && n.parent == *owner)
            {
                self.nodes.remove(page);
            }
        }
        for (side, owner, page) in chains {
            if let Some(n) = self
                .get(*owner)
                .filter(|n| *side == Side::New && !n.overflow)
            {
                self.nodes.insert(
                    *page,
                    Node {
                        table: n.table,
                        parent: *owner,
                        overflow: true,
                    },
                );
            }
        }
    }

    /// How the commit in `view` moved `table`'s b-tree, now rooted at `root`. `whole`: its
    /// root page moved (VACUUM, a root relocated by auto-vacuum), so every page of it is
    /// compared, written or not.
    pub(crate) fn reshape(
        &self,
        view: &mut View<'_, '_>,
        table: TableId,
        root: u32,
        without_rowid: bool,
        whole: bool,
    ) -> Result<Reshape, DecodeError> {
        let mine = |p: &u32| self.get(*p).filter(|n| n.table == table);
        let mut written: Vec<u32> = if whole {
            self.nodes
                .iter()
                .filter(|(_, n)| n.table == table && !n.overflow)
                .map(|(p, _)| *p)
                .collect()
        } else {
            view.written()
                .filter(|p| mine(p).is_some_and(|n| !n.overflow))
                .collect()
        };
        written.sort_unstable();
        // Overflow pages rewritten in place: their owners' rows are compared too.
        let mut owners: Vec<u32> = view
            .written()
            .filter_map(|p| mine(&p).filter(|n| n.overflow).map(|n| n.parent))
            .collect();
        owners.sort_unstable();
        owners.dedup();
        let mut ancestors = self.ancestors(&written);
        ancestors.extend(self.ancestors(&owners));
        ancestors.extend(owners.iter().copied());
        let mut out = Reshape::default();
        let reached = self.reach(
            view,
            (table, root, without_rowid, whole),
            &ancestors,
            &mut out,
        )?;
        out.old_rows = written.clone();
        self.removed(view, &written, &reached, &mut out)?;
        for o in owners.into_iter().filter(|o| reached.contains(o)) {
            if !out.new_rows.contains(&o) {
                out.new_rows.push(o);
            }
            if !out.old_rows.contains(&o) {
                out.old_rows.push(o);
            }
        }
        Ok(out)
    }

    /// Walks `table`'s tree after the commit from `root` into the pages written and the
    /// pages of `ancestors`; returns every page reached (those kept whole included).
    fn reach(
        &self,
        view: &mut View<'_, '_>,
        (table, root, without_rowid, whole): (TableId, u32, bool, bool),
        ancestors: &HashSet<u32>,
        out: &mut Reshape,
    ) -> Result<HashSet<u32>, DecodeError> {
        let mut reached: HashSet<u32> = HashSet::new();
        let mut stack = vec![(root, 0u32)];
        while let Some((page, parent)) = stack.pop() {
            if !reached.insert(page) {
                return Err(DecodeError::corrupt(
                    page,
                    "a page in two places of the b-tree",
                ));
            }
            let img = view.page(Side::New, page)?;
            let p = Page::parse(page, &img, view_usable(view))?;
            if !kinds_fit(p.kind, without_rowid) {
                return Err(DecodeError::corrupt(
                    page,
                    "a page of the wrong kind for its table",
                ));
            }
            let known = self.get(page);
            let changed = whole
                || view.is_written(page)
                || known.is_none_or(|n| n.table != table || n.overflow);
            if changed && p.kind.holds_rows() {
                out.new_rows.push(page);
            }
            if known != Some(Node::tree(table, parent)) {
                out.placed.push((page, parent));
            }
            for c in p.children()? {
                if whole || view.is_written(c) || ancestors.contains(&c) || self.get(c).is_none() {
                    stack.push((c, page));
                } else if reached.insert(c) && self.get(c) != Some(Node::tree(table, page)) {
                    out.placed.push((c, page));
                }
            }
        }
        Ok(reached)
    }

    /// The old ancestors of `pages`.
    fn ancestors(&self, pages: &[u32]) -> HashSet<u32> {
        let mut out = HashSet::new();
        for p in pages {
            let mut at = self.get(*p).map_or(0, |n| n.parent);
            // A cycle in the map cannot come from a b-tree; the bound keeps a bug finite.
            let mut hops = 0;
            while at != 0 && out.insert(at) && hops < 64 {
                at = self.get(at).map_or(0, |n| n.parent);
                hops += 1;
            }
        }
        out
    }

    /// The pages of `written` not reached, and the old children of written or left pages
    /// that nothing reaches now, recursively: they left the tree.
    fn removed(
        &self,
        view: &mut View<'_, '_>,
        written: &[u32],
        reached: &HashSet<u32>,
        out: &mut Reshape,
    ) -> Result<(), DecodeError> {
        let mut gone: HashSet<u32> = HashSet::new();
        let mut work: Vec<u32> = written.to_vec();
        while let Some(page) = work.pop() {
            if page == 0 {
                continue;
            }
            let left = !reached.contains(&page);
            if left && !gone.insert(page) {
                continue;
            }
            if left && written.binary_search(&page).is_err() {
                out.old_rows.push(page);
            }
            let img = view.page(Side::Old, page)?;
            let p = Page::parse(page, &img, view_usable(view))?;
            for c in p.children()? {
                if !reached.contains(&c) && !gone.contains(&c) {
                    work.push(c);
                }
            }
        }
        out.removed = gone.into_iter().collect();
        out.removed.sort_unstable();
        Ok(())
    }
}

fn view_usable(view: &View<'_, '_>) -> usize {
    view.usable()
}
