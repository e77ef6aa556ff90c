//! The report's tables, once, as rows of cells: Markdown, CSV and HTML render the same tables.
//! This module holds the table type and how a cell reads; the tables themselves are built in
//! `trace` (the verdict and the explainer's tables of one trace), `drill` (the drill-down's) and
//! `whatif` (what a fix would buy).

mod drill;
mod ranks;
mod trace;
mod whatif;

pub use drill::*;
pub use ranks::*;
pub use trace::*;
pub use whatif::*;

use crate::drill::attribution::Overlap;
use crate::format::{self, TimeUnit};

/// What a column holds, which decides how it reads in Markdown and HTML (CSV keeps raw values).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Free text that may wrap (names, readings).
    Text,
    /// A key, label or id that must not be split (metric keys, buckets, pids, devices).
    Key,
    /// A label of a few words (what bounds a rank, how it was named): it wraps between its
    /// words and after a hyphen, never inside a word.
    Label,
    /// A duration in µs: one unit per column, named once in the header.
    Duration,
    /// A session timestamp in ns, shown in ms from the session start.
    Timestamp,
    /// A share (0–1), shown as a percentage.
    Share,
    /// A count, with thousands separators.
    Count,
    /// A byte count, in the binary unit that fits it.
    Bytes,
}

impl Kind {
    /// Numbers are right-aligned and never wrap.
    pub fn is_number(self) -> bool {
        !matches!(self, Kind::Text | Kind::Key | Kind::Label)
    }

    /// The class of a cell of this kind in the HTML report and the page: numbers right-aligned
    /// and unbroken, keys unbroken, labels wrapped between words, text wrapped (long kernel and
    /// file names anywhere).
    pub fn class(self) -> &'static str {
        match self {
            Kind::Text => "text",
            Kind::Key => "key",
            Kind::Label => "label",
            _ => "num",
        }
    }
}

/// A column: its CSV key, its header for people and what it holds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Column {
    pub key: &'static str,
    pub label: &'static str,
    pub kind: Kind,
    /// Left out of the Markdown and HTML when every row holds the same value (the file of a
    /// one-file report, already in the report's title).
    pub once: bool,
    /// Only in the CSV: what the Markdown and HTML already say otherwise (a bucket's bounds are
    /// its label; a gap's end is its start plus its length).
    pub csv_only: bool,
    /// Only in the Markdown and HTML: what the CSV has in columns of its own, put together for
    /// reading (a gap's kernels either side).
    pub shown_only: bool,
}

/// One cell's value.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    Text(String),
    /// Items, most important first: all of them in the CSV, the first [`LIST_SHOWN`] and how many
    /// more for people, one per line.
    List(Vec<String>),
    Num(f64),
    Int(u64),
    Missing,
}

impl Cell {
    /// The CSV form: full precision, no unit (the unit is in the column key).
    fn raw(&self, kind: Kind) -> String {
        match (self, kind) {
            (Cell::Text(s), _) => s.clone(),
            (Cell::List(items), _) => items.join("; "),
            (Cell::Num(v), Kind::Duration) => us3(*v),
            (Cell::Num(v), Kind::Share) => r4(*v),
            (Cell::Num(v), _) => v.to_string(),
            (Cell::Int(n), _) => n.to_string(),
            (Cell::Missing, _) => String::new(),
        }
    }

    fn is_empty(&self) -> bool {
        match self {
            Cell::Text(s) => s.is_empty(),
            Cell::List(items) => items.is_empty(),
            Cell::Missing => true,
            _ => false,
        }
    }

    fn num(&self) -> Option<f64> {
        match self {
            Cell::Num(v) => Some(*v),
            Cell::Int(n) => Some(*n as f64),
            _ => None,
        }
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

impl From<&str> for Cell {
    fn from(s: &str) -> Cell {
        Cell::Text(s.to_string())
    }
}

impl From<f64> for Cell {
    fn from(v: f64) -> Cell {
        Cell::Num(v)
    }
}

impl From<u64> for Cell {
    fn from(n: u64) -> Cell {
        Cell::Int(n)
    }
}

impl From<u32> for Cell {
    fn from(n: u32) -> Cell {
        Cell::Int(u64::from(n))
    }
}

impl<T: Into<Cell>> From<Option<T>> for Cell {
    fn from(v: Option<T>) -> Cell {
        v.map_or(Cell::Missing, Into::into)
    }
}

/// One table: a file stem for CSV, a title, columns and rows of cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Table {
    pub name: &'static str,
    pub title: &'static str,
    pub columns: Vec<Column>,
    pub rows: Vec<Vec<Cell>>,
    /// Rows drawn emphasized, with why (the straggler among the ranks): `(row, why)`, rows in
    /// ascending order. The renderers style them; the CSV says it in a column of its own.
    pub emphasized: Vec<(usize, &'static str)>,
}

impl serde::Serialize for Table {
    /// As people read it (the page's host side renders it): `{name, title, headers, classes,
    /// rows, emphasized}` with the display headers and cells of [`Table::shown`], each column's
    /// cell class ([`Kind::class`]), and the rows to emphasize as `[{row, why}]`.
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct;
        #[derive(serde::Serialize)]
        struct Emphasis<'a> {
            row: usize,
            why: &'a str,
        }
        let shown = self.shown();
        let emphasized: Vec<Emphasis<'_>> = self
            .emphasized
            .iter()
            .map(|&(row, why)| Emphasis { row, why })
            .collect();
        let classes: Vec<&str> = shown.kinds.iter().map(|k| k.class()).collect();
        let mut out = s.serialize_struct("Table", 6)?;
        out.serialize_field("name", self.name)?;
        out.serialize_field("title", self.title)?;
        out.serialize_field("headers", &shown.headers)?;
        out.serialize_field("classes", &classes)?;
        out.serialize_field("rows", &shown.rows)?;
        out.serialize_field("emphasized", &emphasized)?;
        out.end()
    }
}

/// A table as people read it: the columns kept, headers with their unit, display cells.
#[derive(Debug, Clone, PartialEq)]
pub struct Shown {
    pub headers: Vec<String>,
    pub kinds: Vec<Kind>,
    pub rows: Vec<Vec<String>>,
}

/// How the cells of one column read.
type CellFormat = Box<dyn Fn(&Cell) -> String>;

pub(crate) const fn col(key: &'static str, label: &'static str, kind: Kind) -> Column {
    Column {
        key,
        label,
        kind,
        once: false,
        csv_only: false,
        shown_only: false,
    }
}

const fn csv_only(key: &'static str, kind: Kind) -> Column {
    Column {
        csv_only: true,
        ..col(key, key, kind)
    }
}

const fn shown_only(label: &'static str, kind: Kind) -> Column {
    Column {
        shown_only: true,
        ..col("", label, kind)
    }
}

/// The file a row comes from: shown only when the rows come from several files.
const FILE: Column = Column {
    key: "file",
    label: "File",
    kind: Kind::Text,
    once: true,
    csv_only: false,
    shown_only: false,
};

impl Table {
    pub(crate) fn new(name: &'static str, title: &'static str, columns: &[Column]) -> Table {
        Table {
            name,
            title,
            columns: columns.to_vec(),
            rows: Vec::new(),
            emphasized: Vec::new(),
        }
    }

    pub(crate) fn row(&mut self, cells: Vec<Cell>) {
        self.rows.push(cells);
    }

    /// Emphasizes the row added last, saying `why` (a mark the reader's eye should find first,
    /// as the straggler among the ranks).
    pub(crate) fn emphasize_last(&mut self, why: &'static str) {
        if let Some(row) = self.rows.len().checked_sub(1) {
            self.emphasized.push((row, why));
        }
    }

    /// `why` row `row` is emphasized, if it is.
    pub fn emphasis(&self, row: usize) -> Option<&'static str> {
        self.emphasized
            .iter()
            .find(|(r, _)| *r == row)
            .map(|&(_, why)| why)
    }

    /// The CSV header: the columns' keys.
    pub fn keys(&self) -> Vec<&'static str> {
        self.columns
            .iter()
            .filter(|c| !c.shown_only)
            .map(|c| c.key)
            .collect()
    }

    /// The CSV rows: raw values.
    pub fn raw_rows(&self) -> Vec<Vec<String>> {
        self.rows
            .iter()
            .map(|r| {
                r.iter()
                    .zip(&self.columns)
                    .filter(|(_, col)| !col.shown_only)
                    .map(|(c, col)| c.raw(col.kind))
                    .collect()
            })
            .collect()
    }

    fn cells(&self, i: usize) -> impl Iterator<Item = &Cell> {
        self.rows.iter().filter_map(move |r| r.get(i))
    }

    /// Whether column `i` says nothing: every cell empty, or a `once` column with one value.
    fn omitted(&self, i: usize) -> bool {
        let mut cells = self.cells(i);
        if self.columns[i].csv_only || self.cells(i).all(Cell::is_empty) {
            return true;
        }
        self.columns[i].once && cells.next().is_some_and(|f| self.cells(i).all(|c| c == f))
    }

    /// The table for people: empty columns and a one-valued `once` column left out, one unit per
    /// duration column named in its header, every number through `crate::format`.
    pub fn shown(&self) -> Shown {
        let keep: Vec<usize> = (0..self.columns.len())
            .filter(|&i| !self.omitted(i))
            .collect();
        let mut headers = Vec::new();
        let mut kinds = Vec::new();
        let mut fmts: Vec<CellFormat> = Vec::new();
        for &i in &keep {
            let c = self.columns[i];
            kinds.push(c.kind);
            match c.kind {
                Kind::Duration => match TimeUnit::shared(self.cells(i).filter_map(Cell::num)) {
                    Some(unit) => {
                        headers.push(format!("{} ({})", c.label, unit.symbol()));
                        fmts.push(Box::new(move |x| {
                            x.num().map_or(String::new(), |v| unit.number(v))
                        }));
                    }
                    None => {
                        headers.push(c.label.to_string());
                        fmts.push(Box::new(|x| {
                            x.num().map_or(String::new(), format::duration_us)
                        }));
                    }
                },
                Kind::Timestamp => {
                    headers.push(format!("{} (ms)", c.label));
                    fmts.push(Box::new(|x| {
                        x.num().map_or(String::new(), |v| format::mean(v / 1e6, 3))
                    }));
                }
                _ => {
                    headers.push(c.label.to_string());
                    fmts.push(Box::new(move |x| shown_cell(x, c.kind)));
                }
            }
        }
        let rows = self
            .rows
            .iter()
            .map(|r| {
                keep.iter()
                    .zip(&fmts)
                    .map(|(&i, f)| r.get(i).map_or(String::new(), f))
                    .collect()
            })
            .collect();
        Shown {
            headers,
            kinds,
            rows,
        }
    }
}

/// How many items of a list cell the Markdown and HTML show.
pub const LIST_SHOWN: usize = 3;

fn shown_cell(c: &Cell, kind: Kind) -> String {
    match (c, kind) {
        (Cell::Text(s), _) => s.clone(),
        (Cell::List(items), _) => {
            let mut shown: Vec<String> = items.iter().take(LIST_SHOWN).cloned().collect();
            if items.len() > LIST_SHOWN {
                shown.push(format!("+{} more", items.len() - LIST_SHOWN));
            }
            shown.join("\n")
        }
        (Cell::Missing, _) => String::new(),
        (Cell::Num(v), Kind::Share) => format::percent(*v),
        (Cell::Num(v), Kind::Duration) => format::duration_us(*v),
        (Cell::Int(n), Kind::Count) => format::count(*n),
        (Cell::Int(n), Kind::Bytes) => format::bytes(*n),
        (Cell::Num(v), Kind::Count) => format::mean(*v, 1),
        (Cell::Num(v), _) => v.to_string(),
        (Cell::Int(n), _) => n.to_string(),
    }
}

/// µs with 3 decimals (ns precision).
pub fn us3(v: f64) -> String {
    format!("{v:.3}")
}

/// A ratio with 4 decimals.
pub fn r4(v: f64) -> String {
    format!("{v:.4}")
}

/// `name ×count (overlap)`, `; `-separated.
pub fn overlaps(v: &[Overlap]) -> String {
    overlap_items(v).join("; ")
}

/// Each overlap as `name ×count (overlap)`, the count left out when 1.
fn overlap_items(v: &[Overlap]) -> Vec<String> {
    v.iter()
        .map(|o| {
            let count = if o.count > 1 {
                format!(" ×{}", format::count(o.count))
            } else {
                String::new()
            };
            format!("{}{count} ({})", o.name, format::duration_us(o.overlap_us))
        })
        .collect()
}
