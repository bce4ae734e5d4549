//! The decoder: the database's first image read once (header, `sqlite_schema`, the page map),
//! then each commit's frames turned into [`Changes`] against the pages before it.

use crate::changes::{Changes, TableChanges};
use crate::diff::{Keying, RawChanges, diff};
use crate::error::DecodeError;
use crate::page::{Page, be32};
use crate::record::{self, Affinity};
use crate::rows::row;
use crate::schema::{Encoding, SCHEMA, Schema, SchemaChange, TableId, table_of_row};
use crate::tree::{Node, PageMap, Reshape};
use crate::view::{PageSource, Side, View};
use crate::wal::CommitFrames;

/// What page 1's first 100 bytes say (fileformat2.html, "The Database Header").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Header {
    page_size: u32,
    usable: usize,
    encoding: Encoding,
}

impl Header {
    fn parse(page1: &[u8]) -> Result<Header, DecodeError> {
        if page1.get(..16) != Some(b"SQLite format 3\0".as_slice()) {
            return Err(DecodeError::Header("not an SQLite 3 database"));
        }
        let size = match page1.get(16..18) {
            Some(b) => u32::from(u16::from_be_bytes([b[0], b[1]])),
            None => return Err(DecodeError::Header("truncated")),
        };
        let page_size = if size == 1 { 65536 } else { size };
        if !(512..=65536).contains(&page_size) || !page_size.is_power_of_two() {
            return Err(DecodeError::Header("a page size out of range"));
        }
        let reserved = u32::from(*page1.get(20).ok_or(DecodeError::Header("truncated"))?);
        let usable = page_size.checked_sub(reserved).filter(|u| *u >= 480);
        let usable = usable.ok_or(DecodeError::Header("too many reserved bytes"))? as usize;
        let encoding = match be32(page1, 56) {
            Some(0 | 1) => Encoding::Utf8,
            Some(2) => Encoding::Utf16Le,
            Some(3) => Encoding::Utf16Be,
            _ => return Err(DecodeError::Header("an unknown text encoding")),
        };
        Ok(Header {
            page_size,
            usable,
            encoding,
        })
    }
}

/// Reads commits of one database into [`Changes`]. After an error the decoder's page map may
/// be wrong: open a new one at the next snapshot.
#[derive(Debug, Clone)]
pub struct Decoder {
    seed: u64,
    header: Header,
    schema: Schema,
    map: PageMap,
    db_pages: u32,
}

impl Decoder {
    /// Reads the database as `pages` shows it (`db_pages` pages): its header, its schema and
    /// every followed b-tree's interior pages. Values will be hashed with `seed`.
    ///
    /// # Errors
    /// A header this reader does not know, a corrupt or missing page, a read error.
    pub fn open(
        pages: &mut dyn PageSource,
        db_pages: u32,
        seed: u64,
    ) -> Result<Decoder, DecodeError> {
        let page1 = pages
            .page(1)
            .map_err(|source| DecodeError::Read { page: 1, source })?
            .ok_or(DecodeError::Missing(1))?;
        let header = Header::parse(&page1)?;
        let mut view = View::new(pages, &[], db_pages, db_pages, header.usable);
        let mut map = PageMap::default();
        let leaves = map.walk(&mut view, SCHEMA, 1, false)?;
        let mut schema = Schema::new();
        let mut rows = Vec::new();
        for leaf in leaves {
            for (rowid, payload) in leaf_rows(&mut view, leaf)? {
                let values = record::values(&payload)
                    .ok_or(DecodeError::corrupt(leaf, "a schema row that is no record"))?;
                rows.push((rowid, table_of_row(&values, header.encoding)));
            }
        }
        schema.apply(rows);
        for id in schema.ids() {
            let Some(t) = schema.get(id).filter(|_| id != SCHEMA) else {
                continue;
            };
            let (root, wr) = (t.root, t.without_rowid);
            map.walk(&mut view, id, root, wr)?;
        }
        Ok(Decoder {
            seed,
            header,
            schema,
            map,
            db_pages,
        })
    }

    /// The decoder of a database with no page yet (its file empty, everything in the WAL):
    /// its first commit writes page 1. `page_size`: the WAL's.
    pub fn empty(page_size: u32, seed: u64) -> Decoder {
        Decoder {
            seed,
            header: Header {
                page_size,
                usable: page_size as usize,
                encoding: Encoding::Utf8,
            },
            schema: Schema::new(),
            map: PageMap::default(),
            db_pages: 0,
        }
    }

    /// The page size in bytes.
    pub fn page_size(&self) -> u32 {
        self.header.page_size
    }

    /// The database's size in pages after the last commit applied.
    pub fn db_pages(&self) -> u32 {
        self.db_pages
    }

    /// Pages of the followed b-trees in the page map (about 20 bytes of memory each).
    pub fn pages_mapped(&self) -> usize {
        self.map.len()
    }

    /// The rows `commit` changed; `before` shows the pages as they were before it (the
    /// database file and earlier frames).
    ///
    /// # Errors
    /// A corrupt or missing page, a read error, page 1's header changed to another page size
    /// or encoding. The decoder must be opened again after one.
    pub fn apply(
        &mut self,
        commit: &CommitFrames<'_>,
        before: &mut dyn PageSource,
    ) -> Result<Changes, DecodeError> {
        if let Ok(i) = commit.pages.binary_search_by_key(&1, |(p, _)| *p) {
            let header = Header::parse(commit.pages[i].1)?;
            // An empty database learns its header from its first commit.
            if self.db_pages != 0 && header != self.header {
                return Err(DecodeError::Header(
                    "the page size or text encoding changed",
                ));
            }
            self.header = header;
        }
        let mut view = View::new(
            before,
            &commit.pages,
            self.db_pages,
            commit.db_pages,
            self.header.usable,
        );
        // `sqlite_schema` is read only when the commit wrote one of its pages (page 1 is its root).
        let schema_written = view
            .written()
            .any(|p| self.map.get(p).is_some_and(|n| n.table == SCHEMA));
        let (schema_shape, schema_rows) = if schema_written || view.is_written(1) {
            self.table(&mut view, SCHEMA, false)?
        } else {
            Default::default()
        };
        let change = self.schema_rows(&schema_rows)?;
        let mut shapes = vec![(SCHEMA, schema_shape)];
        let mut changes = Changes {
            position: commit.position,
            db_pages: commit.db_pages,
            pages_written: commit.pages.len(),
            bytes_read: 0,
            tables: Vec::new(),
            unchanged: Vec::new(),
            created: names(&self.schema, &change.created),
            dropped: change.dropped.iter().map(|(_, t)| t.name.clone()).collect(),
        };
        for id in self.affected(&view, &change) {
            let moved = change
                .altered
                .iter()
                .any(|(a, root)| *a == id && self.schema.get(id).is_some_and(|t| t.root != *root));
            let (shape, raw) = self.table(&mut view, id, moved)?;
            self.report(id, raw, &mut changes)?;
            shapes.push((id, shape));
        }
        self.place(shapes, &change, commit.db_pages);
        self.map.rechain(&view.chains);
        changes.bytes_read = view.bytes_read;
        changes.tables.sort_by(|a, b| a.table.cmp(&b.table));
        changes.unchanged.sort();
        Ok(changes)
    }

    /// The tables whose pages the commit may have moved: those of the pages it wrote, and
    /// those it created or altered; not those it dropped.
    fn affected(&self, view: &View<'_, '_>, change: &SchemaChange) -> Vec<TableId> {
        let mut ids: Vec<TableId> = view
            .written()
            .filter_map(|p| self.map.get(p).map(|n| n.table))
            .chain(change.created.iter().copied())
            .chain(change.altered.iter().map(|(id, _)| *id))
            .filter(|id| *id != SCHEMA && self.schema.get(*id).is_some())
            .collect();
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// How the commit moved `id`'s pages, and the rows it changed; `moved`: its root page
    /// moved, every page of it is compared.
    fn table(
        &self,
        view: &mut View<'_, '_>,
        id: TableId,
        moved: bool,
    ) -> Result<(Reshape, RawChanges), DecodeError> {
        let Some(table) = self.schema.get(id) else {
            return Ok(Default::default());
        };
        let shape = self
            .map
            .reshape(view, id, table.root, table.without_rowid, moved)?;
        let affinities: Vec<Affinity> = match &table.def {
            Some(d) if table.without_rowid => d
                .primary_key
                .iter()
                .filter_map(|i| d.columns.get(*i))
                .map(|c| c.affinity)
                .collect(),
            _ => Vec::new(),
        };
        let keying = if table.without_rowid {
            Keying::Prefix(&affinities)
        } else {
            Keying::Rowid
        };
        let raw = diff(view, &shape.old_rows, &shape.new_rows, keying, self.seed)?;
        Ok((shape, raw))
    }

    /// `sqlite_schema`'s changed rows into the schema.
    fn schema_rows(&mut self, raw: &RawChanges) -> Result<SchemaChange, DecodeError> {
        let mut rows = Vec::new();
        for r in raw
            .inserted
            .iter()
            .chain(raw.updated.iter().map(|(_, new)| new))
        {
            let values = record::values(&r.payload)
                .ok_or(DecodeError::corrupt(1, "a schema row that is no record"))?;
            rows.push((
                r.rowid.unwrap_or_default(),
                table_of_row(&values, self.header.encoding),
            ));
        }
        rows.extend(
            raw.deleted
                .iter()
                .map(|r| (r.rowid.unwrap_or_default(), None)),
        );
        Ok(self.schema.apply(rows))
    }

    /// `id`'s raw changes as rows in `changes`.
    fn report(
        &self,
        id: TableId,
        raw: RawChanges,
        changes: &mut Changes,
    ) -> Result<(), DecodeError> {
        let Some(table) = self.schema.get(id).filter(|t| t.reported()) else {
            return Ok(());
        };
        if raw.inserted.is_empty() && raw.updated.is_empty() && raw.deleted.is_empty() {
            if raw.unchanged > 0 {
                changes.unchanged.push(table.name.clone());
            }
            return Ok(());
        }
        let h = self.seed;
        let one =
            |r| row(table, r, h).ok_or(DecodeError::corrupt(table.root, "a row that is no record"));
        let mut t = TableChanges {
            table: table.name.clone(),
            ..TableChanges::default()
        };
        for r in &raw.inserted {
            t.inserted.push(one(r)?);
        }
        for (old, new) in &raw.updated {
            t.updated.push(crate::changes::Update {
                old: one(old)?,
                new: one(new)?,
            });
        }
        for r in &raw.deleted {
            t.deleted.push(one(r)?);
        }
        changes.tables.push(t);
        Ok(())
    }

    /// The page map after the commit: pages that left a tree out, then pages placed in one.
    fn place(&mut self, shapes: Vec<(TableId, Reshape)>, change: &SchemaChange, db_pages: u32) {
        for (id, _) in &change.dropped {
            self.map.drop_table(*id);
        }
        for (id, shape) in &shapes {
            for p in &shape.removed {
                if self.map.get(*p).is_some_and(|n| n.table == *id) {
                    self.map.remove(*p);
                }
            }
        }
        for (id, shape) in shapes {
            for (page, parent) in shape.placed {
                self.map.insert(page, Node::tree(id, parent));
            }
        }
        if db_pages < self.db_pages {
            self.map.truncate(db_pages);
        }
        self.db_pages = db_pages;
    }
}

fn names(schema: &Schema, ids: &[TableId]) -> Vec<String> {
    let mut out: Vec<String> = ids
        .iter()
        .filter_map(|id| schema.get(*id))
        .filter(|t| t.reported())
        .map(|t| t.name.clone())
        .collect();
    out.sort();
    out
}

/// The (rowid, payload) of each cell of a table leaf page.
fn leaf_rows(view: &mut View<'_, '_>, page: u32) -> Result<Vec<(i64, Vec<u8>)>, DecodeError> {
    let img = view.page(Side::New, page)?;
    let p = Page::parse(page, &img, view.usable())?;
    let mut out = Vec::with_capacity(p.len());
    for i in 0..p.len() {
        let cell = p.cell(i)?;
        if let (Some(rowid), Some(payload)) = (cell.rowid, cell.payload) {
            out.push((rowid, view.payload(Side::New, page, &payload)?));
        }
    }
    Ok(out)
}
