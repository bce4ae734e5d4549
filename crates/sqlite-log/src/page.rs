//! B-tree pages (fileformat2.html, "B-tree Pages"): the page header, the cell pointer array
//! and the four kinds of cell. Every offset is checked against the page: a corrupt image is a
//! [`DecodeError::Corrupt`], never a panic.

use crate::error::DecodeError;
use crate::varint;

/// The kind of a b-tree page, from its first header byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// 0x02: an index b-tree's interior page (cells carry keys: rows, for WITHOUT ROWID).
    IndexInterior,
    /// 0x05: a table b-tree's interior page (cells carry a rowid and a child).
    TableInterior,
    /// 0x0a: an index b-tree's leaf page.
    IndexLeaf,
    /// 0x0d: a table b-tree's leaf page (cells carry a rowid and a record).
    TableLeaf,
}

impl Kind {
    fn of(byte: u8) -> Option<Kind> {
        match byte {
            0x02 => Some(Kind::IndexInterior),
            0x05 => Some(Kind::TableInterior),
            0x0a => Some(Kind::IndexLeaf),
            0x0d => Some(Kind::TableLeaf),
            _ => None,
        }
    }

    /// Interior (has children).
    pub(crate) fn interior(self) -> bool {
        matches!(self, Kind::IndexInterior | Kind::TableInterior)
    }

    /// A table (intkey) b-tree's page.
    pub(crate) fn table(self) -> bool {
        matches!(self, Kind::TableInterior | Kind::TableLeaf)
    }

    /// Its cells hold rows of the tree's table: a table leaf, or any page of an index b-tree
    /// (a WITHOUT ROWID table's rows are its keys, interior cells included).
    pub(crate) fn holds_rows(self) -> bool {
        !matches!(self, Kind::TableInterior)
    }
}

/// A cell's payload: its whole size, the bytes on the page, and the first overflow page when
/// the rest spills.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Payload<'a> {
    /// Bytes of the whole payload.
    pub size: u64,
    /// The bytes stored on the page.
    pub local: &'a [u8],
    /// The first overflow page, when `size` exceeds `local`.
    pub overflow: Option<u32>,
}

/// One cell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Cell<'a> {
    /// The rowid (table b-tree cells).
    pub rowid: Option<i64>,
    /// The payload (all cells but a table interior page's).
    pub payload: Option<Payload<'a>>,
}

/// A parsed b-tree page image.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Page<'a> {
    number: u32,
    data: &'a [u8],
    usable: usize,
    /// The page's kind.
    pub kind: Kind,
    /// Where its header starts (100 on page 1).
    header: usize,
    cells: usize,
    right: Option<u32>,
}

fn be16(data: &[u8], at: usize) -> Option<usize> {
    let b = data.get(at..at + 2)?;
    Some(usize::from(u16::from_be_bytes([b[0], b[1]])))
}

pub(crate) fn be32(data: &[u8], at: usize) -> Option<u32> {
    let b = data.get(at..at + 4)?;
    Some(u32::from_be_bytes([b[0], b[1], b[2], b[3]]))
}

impl<'a> Page<'a> {
    /// Page `number`'s image `data` as a b-tree page; `usable`: bytes per page less the
    /// reserved bytes at each page's end.
    pub(crate) fn parse(
        number: u32,
        data: &'a [u8],
        usable: usize,
    ) -> Result<Page<'a>, DecodeError> {
        let bad = |what| DecodeError::corrupt(number, what);
        if data.len() < usable || usable < 480 {
            return Err(bad("shorter than a page"));
        }
        let header = if number == 1 { 100 } else { 0 };
        let kind = data
            .get(header)
            .copied()
            .and_then(Kind::of)
            .ok_or(bad("not a b-tree page"))?;
        let cells = be16(data, header + 3).ok_or(bad("truncated header"))?;
        let right = if kind.interior() {
            Some(be32(data, header + 8).ok_or(bad("truncated header"))?)
        } else {
            None
        };
        let page = Page {
            number,
            data,
            usable,
            kind,
            header,
            cells,
            right,
        };
        if page.pointers() + 2 * cells > usable {
            return Err(bad("more cells than the page holds"));
        }
        Ok(page)
    }

    fn pointers(&self) -> usize {
        self.header + if self.kind.interior() { 12 } else { 8 }
    }

    /// Its number of cells.
    pub(crate) fn len(&self) -> usize {
        self.cells
    }

    /// Its child pages, left to right (the right-most pointer last); empty for a leaf.
    pub(crate) fn children(&self) -> Result<Vec<u32>, DecodeError> {
        let Some(right) = self.right else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity(self.cells + 1);
        for i in 0..self.cells {
            let at = self.cell_offset(i)?;
            out.push(be32(self.data, at).ok_or(self.bad("truncated cell"))?);
        }
        out.push(right);
        Ok(out)
    }

    fn bad(&self, what: &'static str) -> DecodeError {
        DecodeError::corrupt(self.number, what)
    }

    fn cell_offset(&self, i: usize) -> Result<usize, DecodeError> {
        let at =
            be16(self.data, self.pointers() + 2 * i).ok_or(self.bad("truncated cell pointers"))?;
        if at < self.pointers() || at >= self.usable {
            return Err(self.bad("a cell pointer outside the cell content area"));
        }
        Ok(at)
    }

    /// Cell `i` (0-based, in key order).
    pub(crate) fn cell(&self, i: usize) -> Result<Cell<'a>, DecodeError> {
        let mut at = self.cell_offset(i)?;
        if self.kind.interior() {
            at += 4;
        }
        let area = &self.data[..self.usable];
        let varint = |at: &mut usize| {
            let (v, n) = varint::read(area.get(*at..).unwrap_or_default())
                .ok_or(self.bad("truncated cell"))?;
            *at += n;
            Ok::<u64, DecodeError>(v)
        };
        if self.kind == Kind::TableInterior {
            let rowid = varint(&mut at)? as i64;
            return Ok(Cell {
                rowid: Some(rowid),
                payload: None,
            });
        }
        let size = varint(&mut at)?;
        let rowid = if self.kind == Kind::TableLeaf {
            Some(varint(&mut at)? as i64)
        } else {
            None
        };
        let local = local_size(self.kind, size, self.usable as u64);
        let end = at
            .checked_add(local)
            .ok_or(self.bad("a cell past the page"))?;
        let bytes = area.get(at..end).ok_or(self.bad("a cell past the page"))?;
        let overflow = if (local as u64) < size {
            Some(be32(area, end).ok_or(self.bad("a cell past the page"))?)
        } else {
            None
        };
        Ok(Cell {
            rowid,
            payload: Some(Payload {
                size,
                local: bytes,
                overflow,
            }),
        })
    }
}

/// Bytes of a payload of `size` bytes stored on a page of kind `kind` with `usable` bytes
/// (fileformat2.html, "Cell Payload Overflow Pages").
fn local_size(kind: Kind, size: u64, usable: u64) -> usize {
    let max = if kind == Kind::TableLeaf {
        usable - 35
    } else {
        (usable - 12) * 64 / 255 - 23
    };
    let min = (usable - 12) * 32 / 255 - 23;
    if size <= max {
        return size as usize;
    }
    let k = min + (size - min) % (usable - 4);
    (if k <= max { k } else { min }) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_payload_sizes_follow_the_file_format() {
        // 4096-byte pages, no reserved bytes: X = 4061 (table leaf), 1002 (index); M = 489.
        let cases = [
            (Kind::TableLeaf, 4061, 4061),
            (Kind::TableLeaf, 4062, 489),
            (Kind::TableLeaf, 10_000, 1816),
            (Kind::IndexLeaf, 1002, 1002),
            (Kind::IndexLeaf, 1003, 489),
            (Kind::IndexInterior, 5000, 908),
        ];
        for (kind, size, want) in cases {
            assert_eq!(local_size(kind, size, 4096), want, "{kind:?} {size}");
        }
    }

    #[test]
    fn corrupt_pages_are_errors() {
        let mut page = vec![0u8; 512];
        assert!(Page::parse(2, &page, 512).is_err(), "kind byte 0");
        page[0] = 0x0d;
        page[3..5].copy_from_slice(&300u16.to_be_bytes());
        assert!(
            Page::parse(2, &page, 512).is_err(),
            "300 cells on 512 bytes"
        );
        page[3..5].copy_from_slice(&1u16.to_be_bytes());
        page[8..10].copy_from_slice(&2u16.to_be_bytes());
        let p = Page::parse(2, &page, 512).expect("header");
        assert!(p.cell(0).is_err(), "a cell pointer into the header");
        page[8..10].copy_from_slice(&511u16.to_be_bytes());
        page[511] = 0x7f;
        let p = Page::parse(2, &page, 512).expect("header");
        assert!(p.cell(0).is_err(), "a cell running past the page");
        assert!(
            Page::parse(2, &page[..100], 512).is_err(),
            "truncated image"
        );
    }
}
