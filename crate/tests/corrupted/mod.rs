//! Damaged copies of SQLite files for the fuzz tests (`tests/fuzz.rs` natively, `tests/web.rs`
//! in the browser): a small seeded generator and seven kinds of damage done to bytes, each case
//! the same on every machine and target. No I/O: the damage is done to bytes in memory.

// Each test file uses a different subset of these helpers.
#![allow(dead_code)]

/// xorshift64* (Vigna): small, seedable, the same everywhere.
pub struct Rng(u64);

impl Rng {
    /// The generator of case `case` of run `seed` (splitmix64 of both, never 0).
    pub fn for_case(seed: u64, case: usize) -> Rng {
        let mut z = seed ^ (case as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        Rng((z ^ (z >> 31)) | 1)
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (`n > 0`; the bias is negligible for file offsets).
    pub fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }

    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }

    pub fn fill(&mut self, bytes: &mut [u8]) {
        for b in bytes {
            *b = (self.next() >> 56) as u8;
        }
    }
}

/// The kinds of damage, in turn by case number.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    BitFlips,
    GarbledPage,
    Truncated,
    ZeroedBlock,
    /// Two cell pointers of a table b-tree page swapped (a leaf's mostly): its rows, or its
    /// children, out of `rowid` order.
    SwappedCells,
    /// A cell's `rowid` (its key, on an interior page) written over its neighbour's: the same
    /// `rowid` twice in a table.
    DuplicatedRowid,
    /// A bit flipped in two different table b-tree pages. Three times in four, the shape of
    /// issue 48: a bit of a row's first integer (the start time of nsys's event tables) on a
    /// leaf, and a bit of a key of the interior page above it, which grows. There, a time out
    /// of order made `NVTX_EVENTS` several sorted runs, read by `rowid` ranges, and the grown
    /// key sent each read back to rows it had read, for ever. Else a bit of a leaf's `rowid`
    /// and a bit of another table page's cells.
    TwoPages,
    /// Values no export holds (times far from the session start, huge sizes, text where a
    /// number belongs) written into a few rows through SQLite, the file otherwise intact: by
    /// the native test (`tests/fuzz.rs`), which can write a database; [`corrupt`] leaves the
    /// bytes as they are.
    ExtremeValues,
}

/// The damage done to bytes, by [`corrupt`].
pub const KINDS: [Kind; 7] = [
    Kind::BitFlips,
    Kind::GarbledPage,
    Kind::Truncated,
    Kind::ZeroedBlock,
    Kind::SwappedCells,
    Kind::DuplicatedRowid,
    Kind::TwoPages,
];

/// The kinds that break the order of a table's b-tree ([`corrupt`] says which page).
pub const BTREE_KINDS: [Kind; 3] = [Kind::SwappedCells, Kind::DuplicatedRowid, Kind::TwoPages];

/// The SQLite page size the header gives.
pub fn page_size(db: &[u8]) -> usize {
    match u16::from_be_bytes([db[16], db[17]]) {
        1 => 65_536,
        n => usize::from(n),
    }
}

/// Pages of `db` whose b-tree page type is interior (table 0x05 or index 0x02).
pub fn interior_pages(db: &[u8], page: usize) -> Vec<usize> {
    (0..db.len() / page)
        .filter(|&i| {
            let header = if i == 0 { 100 } else { 0 };
            matches!(db[i * page + header], 0x02 | 0x05)
        })
        .collect()
}

/// The cell content areas (byte ranges) of `db`'s table leaf pages (b-tree page type 0x0d):
/// where the rows' values lie.
pub fn table_leaves(db: &[u8], page: usize) -> Vec<(usize, usize)> {
    (1..db.len() / page)
        .filter(|&i| db[i * page] == 0x0d)
        .filter_map(|i| {
            let start = i * page;
            let content = match u16::from_be_bytes([db[start + 5], db[start + 6]]) {
                0 => 65_536,
                n => usize::from(n),
            };
            (content < page).then_some((start + content, start + page))
        })
        .collect()
}

/// Where bit flips go.
enum Target {
    Anywhere,
    Cells,
    Integers,
}

/// An SQLite varint at `at` (big-endian, 7 bits a byte, the ninth byte whole) and its length.
pub fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    for i in 0..9 {
        let byte = *b.get(at + i)?;
        if i == 8 {
            return Some(((v << 8) | u64::from(byte), 9));
        }
        v = (v << 7) | u64::from(byte & 0x7f);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// `value` written over `out` as an SQLite varint of exactly `out.len()` bytes (a form longer
/// than needed is valid: leading bytes 0x80), if it fits.
pub fn put_varint(out: &mut [u8], value: u64) -> bool {
    let n = out.len();
    let bits = if n == 9 { 64 } else { 7 * n };
    if n == 0 || n > 9 || (bits < 64 && value >> bits != 0) {
        return false;
    }
    let mut v = value;
    if n == 9 {
        out[8] = v as u8;
        v >>= 8;
    }
    for i in (0..n.min(8)).rev() {
        let more = if i + 1 < n { 0x80 } else { 0 };
        out[i] = (v & 0x7f) as u8 | more;
        v >>= 7;
    }
    true
}

/// A table b-tree page: interior (type 0x05: a child's page number and a key per cell) or leaf
/// (0x0d: a row per cell).
pub struct TablePage {
    /// Its number from 0 (SQLite's is one more).
    pub number: usize,
    pub interior: bool,
    /// Where its cell pointer array starts in the file (2 bytes a cell).
    pub pointers: usize,
    /// Where its cells start in the file, in pointer order.
    pub cells: Vec<usize>,
}

impl TablePage {
    /// Where the `rowid` of cell `c` (its key, on an interior page) lies and what it is:
    /// `(offset, length, rowid)`.
    pub fn rowid(&self, db: &[u8], c: usize) -> Option<(usize, usize, u64)> {
        let cell = *self.cells.get(c)?;
        let at = match self.interior {
            true => cell + 4,
            false => cell + varint(db, cell)?.1,
        };
        let (rowid, len) = varint(db, at)?;
        Some((at, len, rowid))
    }

    /// The pages an interior page points to (numbered from 0), its right-most child last.
    pub fn children(&self, db: &[u8]) -> Vec<usize> {
        let page_number = |at: usize| -> Option<usize> {
            let n = u32::from_be_bytes(db.get(at..at + 4)?.try_into().ok()?);
            usize::try_from(n).ok()?.checked_sub(1)
        };
        match self.interior {
            true => self
                .cells
                .iter()
                .copied()
                .chain([self.pointers - 4])
                .filter_map(page_number)
                .collect(),
            false => Vec::new(),
        }
    }

    /// Adds the integers of 3 to 8 bytes (serial types 3–6: times, ids, sizes) in the records
    /// of this page, a leaf (`page` bytes), to `out` as `(offset, length)`; records that spill
    /// to overflow pages are skipped.
    pub fn integers(&self, db: &[u8], page: usize, out: &mut Vec<(usize, usize)>) {
        for c in 0..self.cells.len() {
            self.row_integers(db, page, c, out);
        }
    }

    /// [`TablePage::integers`] of the row in cell `c`, in column order.
    pub fn row_integers(&self, db: &[u8], page: usize, c: usize, out: &mut Vec<(usize, usize)>) {
        let end = (self.number + 1) * page;
        let (Some((len, _)), Some((at, n, _))) = (varint(db, self.cells[c]), self.rowid(db, c))
        else {
            return;
        };
        let payload = at + n;
        if self.interior || payload + len as usize > end {
            return;
        }
        let Some((head, h)) = varint(db, payload) else {
            return;
        };
        let (mut at, mut value) = (payload + h, payload + head as usize);
        while at < payload + head as usize {
            let Some((serial, n)) = varint(db, at) else {
                break;
            };
            at += n;
            let size = match serial {
                0 | 8 | 9 => 0,
                1..=4 => serial as usize,
                5 => 6,
                6 | 7 => 8,
                s if s >= 12 => (s as usize - 12) / 2,
                _ => break,
            };
            if (3..=6).contains(&serial) && value + size <= end {
                out.push((value, size));
            }
            value += size;
        }
    }

    /// As SQLite's `PRAGMA integrity_check` names it ("tree page N").
    pub fn name(&self) -> String {
        let kind = if self.interior { "interior" } else { "leaf" };
        format!("table {kind} page {}", self.number + 1)
    }
}

/// The table b-tree pages of `db` (pages of `page` bytes).
pub fn table_pages(db: &[u8], page: usize) -> Vec<TablePage> {
    (0..db.len() / page)
        .filter_map(|number| {
            let base = number * page;
            let header = base + if number == 0 { 100 } else { 0 };
            let interior = match db[header] {
                0x05 => true,
                0x0d => false,
                _ => return None,
            };
            let pointers = header + if interior { 12 } else { 8 };
            let count = usize::from(u16::from_be_bytes([db[header + 3], db[header + 4]]));
            let cells = (0..count)
                .map(|c| pointers + 2 * c)
                .take_while(|&ptr| ptr + 2 <= base + page)
                .map(|ptr| base + usize::from(u16::from_be_bytes([db[ptr], db[ptr + 1]])))
                .collect();
            Some(TablePage {
                number,
                interior,
                pointers,
                cells,
            })
        })
        .collect()
}

/// A table page of at least `cells` cells, picked at random: an interior one with a chance of 1
/// in `interior_one_in` (if the file has one), else a leaf.
fn pick_page<'p>(
    pages: &'p [TablePage],
    rng: &mut Rng,
    cells: usize,
    interior_one_in: usize,
) -> Option<&'p TablePage> {
    let interior = rng.chance(interior_one_in);
    let of = |interior: bool| -> Vec<&TablePage> {
        pages
            .iter()
            .filter(|p| p.interior == interior && p.cells.len() >= cells)
            .collect()
    };
    let mut choice = of(interior);
    if choice.is_empty() {
        choice = of(!interior);
    }
    (!choice.is_empty()).then(|| choice[rng.below(choice.len())])
}

/// Flips a bit of the value of cell `c`'s `rowid` (its key, on an interior page) and says where
/// (`0`: no such cell); one of the 7 value bits of a varint's byte, not its length bit, so the
/// cell still reads. A leaf's `rowid`: in its most significant byte three times in four. An
/// interior page's key: there always, a bit that is 0, so that the key grows by hundreds or
/// thousands of rows, past where a read by `rowid` range starts (issue 48's hang). A key made
/// smaller hides rows from reads by range instead: an answer short of rows, which this test
/// cannot tell from a right one.
fn flip_in_rowid(db: &mut [u8], original: &[u8], p: &TablePage, c: usize, rng: &mut Rng) -> usize {
    let Some((at, len, _)) = p.rowid(original, c) else {
        return 0;
    };
    let leaf_byte = !p.interior && rng.chance(4);
    let at = at + if leaf_byte { rng.below(len) } else { 0 };
    let zeros: Vec<u8> = (0..7).filter(|b| db[at] & (1 << b) == 0).collect();
    let bit = match p.interior && !zeros.is_empty() {
        true => zeros[rng.below(zeros.len())],
        false => rng.below(7) as u8,
    };
    db[at] ^= 1 << bit;
    at
}

/// Flips a bit anywhere in the cells of `p` (pages of `page` bytes) and says where.
fn flip_in_cells(db: &mut [u8], p: &TablePage, page: usize, rng: &mut Rng) -> usize {
    let end = (p.number + 1) * page;
    let start = p
        .cells
        .iter()
        .copied()
        .min()
        .unwrap_or(p.pointers)
        .min(end - 1);
    let at = start + rng.below(end - start);
    db[at] ^= 1 << rng.below(8);
    at
}

/// The integers of 3 to 8 bytes (serial types 3–6: times, ids, sizes) in the records of
/// `db`'s table leaf pages, as `(offset, length)`; records that spill to overflow pages are
/// skipped.
pub fn integers(db: &[u8], page: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for p in table_pages(db, page) {
        p.integers(db, page, &mut out);
    }
    out
}

/// Sets the header's page count to `pages` (and makes it trusted: "version-valid-for" equal to
/// the change counter), so the header check passes and SQLite meets what is missing.
pub fn set_page_count(db: &mut [u8], pages: usize) {
    let pages = u32::try_from(pages.max(1)).expect("page count");
    db[28..32].copy_from_slice(&pages.to_be_bytes());
    let counter: [u8; 4] = db[24..28].try_into().expect("4 bytes");
    db[92..96].copy_from_slice(&counter);
}

/// `original` damaged as `kind` says, with what was done (for the failure message).
pub fn corrupt(original: &[u8], kind: Kind, rng: &mut Rng) -> (Vec<u8>, String) {
    let mut db = original.to_vec();
    let page = page_size(original);
    let pages = db.len() / page;
    let what = match kind {
        Kind::BitFlips => {
            let n = 1 + rng.below(16);
            let bytes = rng.chance(2);
            let leaves = table_leaves(original, page);
            let ints = integers(original, page);
            // Mostly in the rows — in the cells of table leaves, or in their integers (times,
            // ids: values SQLite does not check) — else anywhere past the 100-byte header (a
            // damaged header is refused up front), at times in it.
            let (target, from) = match rng.below(16) {
                _ if leaves.is_empty() || ints.is_empty() => (Target::Anywhere, 100),
                0 => (Target::Anywhere, 0),
                1..6 => (Target::Anywhere, 100),
                6..11 => (Target::Cells, 0),
                _ => (Target::Integers, 0),
            };
            for _ in 0..n {
                let at = match target {
                    Target::Cells => {
                        let (start, end) = leaves[rng.below(leaves.len())];
                        start + rng.below(end - start)
                    }
                    // A byte of an integer, its most significant one half the time.
                    Target::Integers => {
                        let (start, len) = ints[rng.below(ints.len())];
                        start + if rng.chance(2) { 0 } else { rng.below(len) }
                    }
                    Target::Anywhere => from + rng.below(db.len() - from),
                };
                if bytes {
                    db[at] = (rng.next() >> 56) as u8;
                } else {
                    db[at] ^= 1 << rng.below(8);
                }
            }
            let how = ["bit flips", "random bytes"][usize::from(bytes)];
            match target {
                Target::Cells => format!("{n} {how} in the cells of table leaves"),
                Target::Integers => format!("{n} {how} in integers of table rows"),
                Target::Anywhere => format!("{n} {how} from byte {from}"),
            }
        }
        Kind::GarbledPage => {
            let interior = interior_pages(original, page);
            let (index, which) = match rng.below(4) {
                0 => (0, "page"),
                1 if !interior.is_empty() => (interior[rng.below(interior.len())], "interior page"),
                _ => (rng.below(pages), "page"),
            };
            // Keep page 1's database header, or a b-tree page's own header (8 or 12 bytes), at
            // times, so SQLite reads on into the random cells.
            let keep = match (index, rng.below(3)) {
                (0, 0) => 0,
                (0, _) => 100,
                (_, 0) => 12,
                _ => 0,
            };
            let start = index * page;
            rng.fill(&mut db[start + keep..start + page]);
            format!("{which} {} garbled after byte {keep}", index + 1)
        }
        Kind::Truncated => {
            let at_boundary = rng.chance(2);
            let len = match at_boundary {
                true => page * (1 + rng.below(pages - 1)),
                false => 1 + rng.below(db.len() - 1),
            };
            db.truncate(len);
            // Half the time the header is made to agree, so the damage is SQLite's to meet.
            let fixed = len >= 100 && rng.chance(2);
            if fixed {
                set_page_count(&mut db, len / page);
            }
            format!(
                "truncated to {len} bytes ({}){}",
                if at_boundary {
                    "a page boundary"
                } else {
                    "mid-page"
                },
                if fixed {
                    ", header's page count fixed"
                } else {
                    ""
                }
            )
        }
        Kind::SwappedCells => {
            let pages = table_pages(original, page);
            match pick_page(&pages, rng, 2, 4) {
                Some(p) => {
                    let n = p.cells.len();
                    let i = rng.below(n);
                    // A neighbour half the time (rows out of order by one), else any other.
                    let j = match rng.chance(2) {
                        true if i + 1 < n => i + 1,
                        true => i - 1,
                        false => (i + 1 + rng.below(n - 1)) % n,
                    };
                    let (a, b) = (p.pointers + 2 * i, p.pointers + 2 * j);
                    db.swap(a, b);
                    db.swap(a + 1, b + 1);
                    format!("cell pointers {i} and {j} of {} swapped", p.name())
                }
                None => "no table page of two cells: the bytes as they are".to_string(),
            }
        }
        Kind::DuplicatedRowid => {
            let pages = table_pages(original, page);
            let Some(p) = pick_page(&pages, rng, 2, 4) else {
                return (
                    db,
                    "no table page of two cells: the bytes as they are".to_string(),
                );
            };
            let from = rng.below(p.cells.len());
            let to = match from + 1 < p.cells.len() && (from == 0 || rng.chance(2)) {
                true => from + 1,
                false => from - 1,
            };
            match (p.rowid(original, from), p.rowid(original, to)) {
                (Some((_, _, rowid)), Some((at, len, _)))
                    if put_varint(&mut db[at..at + len], rowid) =>
                {
                    format!(
                        "rowid {rowid} of cell {from} written over cell {to}'s on {}",
                        p.name()
                    )
                }
                _ => format!("no room for cell {from}'s rowid in cell {to}: the bytes as they are"),
            }
        }
        Kind::TwoPages => {
            let pages = table_pages(original, page);
            // A leaf, so a big table more often than a small one; the interior page above it.
            let leaves: Vec<&TablePage> = pages
                .iter()
                .filter(|p| !p.interior && !p.cells.is_empty())
                .collect();
            if leaves.is_empty() {
                return (db, "no table leaf: the bytes as they are".to_string());
            }
            let leaf = leaves[rng.below(leaves.len())];
            let parent = pages
                .iter()
                .filter(|p| p.interior && !p.cells.is_empty())
                .find(|p| p.children(original).contains(&leaf.number));
            match parent.filter(|_| !rng.chance(4)) {
                Some(parent) => {
                    // The first integer of a row: a start time in an event table (any of its
                    // bytes: out of order, or past 2^53 ns at times).
                    let mut ints = Vec::new();
                    leaf.row_integers(original, page, rng.below(leaf.cells.len()), &mut ints);
                    let time = match ints.first() {
                        Some(&(start, len)) => {
                            let at = start + rng.below(len);
                            db[at] ^= 1 << rng.below(8);
                            at
                        }
                        None => flip_in_cells(&mut db, leaf, page, rng),
                    };
                    let c = rng.below(parent.cells.len());
                    let key = flip_in_rowid(&mut db, original, parent, c, rng);
                    format!(
                        "a bit of byte {time} in a row of {}; a bit of byte {key} in the key of \
                         cell {c} of {} above it",
                        leaf.name(),
                        parent.name()
                    )
                }
                None => {
                    let c = rng.below(leaf.cells.len());
                    let key = flip_in_rowid(&mut db, original, leaf, c, rng);
                    let others: Vec<&TablePage> = pages
                        .iter()
                        .filter(|p| p.number != leaf.number && !p.cells.is_empty())
                        .collect();
                    let other = match others.is_empty() {
                        true => "no other page".to_string(),
                        false => {
                            let p = others[rng.below(others.len())];
                            let at = flip_in_cells(&mut db, p, page, rng);
                            format!("a bit of byte {at} in the cells of {}", p.name())
                        }
                    };
                    format!(
                        "a bit of byte {key} in the rowid of cell {c} of {}; {other}",
                        leaf.name()
                    )
                }
            }
        }
        Kind::ExtremeValues => "the bytes as they are".to_string(),
        Kind::ZeroedBlock => {
            let (start, len) = if rng.chance(2) {
                // Whole pages, page 1 only rarely (a zeroed header is "not SQLite").
                let first = if rng.chance(16) {
                    0
                } else {
                    1 + rng.below(pages - 1)
                };
                let n = 1 + rng.below(4).min(pages - first - 1);
                (first * page, n * page)
            } else {
                let len = 1 + rng.below(2 * page);
                let start = 100 + rng.below(db.len() - 100);
                (start, len.min(db.len() - start))
            };
            db[start..start + len].fill(0);
            format!("{len} bytes zeroed at {start}")
        }
    };
    (db, what)
}
