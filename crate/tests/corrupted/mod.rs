//! Damaged copies of SQLite files for the fuzz tests (`tests/fuzz.rs` natively, `tests/web.rs`
//! in the browser): a small seeded generator and four kinds of damage, each case the same on
//! every machine and target. No I/O: the damage is done to bytes in memory.

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
    /// Values no export holds (times far from the session start, huge sizes, text where a
    /// number belongs) written into a few rows through SQLite, the file otherwise intact: by
    /// the native test (`tests/fuzz.rs`), which can write a database; [`corrupt`] leaves the
    /// bytes as they are.
    ExtremeValues,
}

/// The damage done to bytes, by [`corrupt`].
pub const KINDS: [Kind; 4] = [
    Kind::BitFlips,
    Kind::GarbledPage,
    Kind::Truncated,
    Kind::ZeroedBlock,
];

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
fn varint(b: &[u8], at: usize) -> Option<(u64, usize)> {
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

/// The integers of 3 to 8 bytes (serial types 3–6: times, ids, sizes) in the records of
/// `db`'s table leaf pages, as `(offset, length)`; records that spill to overflow pages are
/// skipped.
pub fn integers(db: &[u8], page: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    for p in 0..db.len() / page {
        let base = p * page;
        let header = base + if p == 0 { 100 } else { 0 };
        if db[header] != 0x0d {
            continue;
        }
        let end = base + page;
        let cells = usize::from(u16::from_be_bytes([db[header + 3], db[header + 4]]));
        for c in 0..cells {
            let ptr = header + 8 + 2 * c;
            if ptr + 2 > end {
                break;
            }
            let cell = base + usize::from(u16::from_be_bytes([db[ptr], db[ptr + 1]]));
            let Some((len, a)) = varint(db, cell) else {
                continue;
            };
            let Some((_, b)) = varint(db, cell + a) else {
                continue;
            };
            let payload = cell + a + b;
            if payload + len as usize > end {
                continue;
            }
            let Some((head, h)) = varint(db, payload) else {
                continue;
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
