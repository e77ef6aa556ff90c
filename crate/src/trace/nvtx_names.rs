//! Names of NVTX rows: a range is named by its inline `text` when non-NULL (interned), else by
//! `StringIds[textId]`; `text_id_name` keeps the latter alone (what the reference scripts read).

use crate::model::{NO_NAME, NvtxRow, Strings};

/// Names `row` as first read, interning an inline text.
pub fn name_row(
    row: &mut NvtxRow,
    strings: &mut Strings,
    text: Option<&str>,
    text_id: Option<i64>,
) {
    row.text_id_name = text_id.map_or(NO_NAME, |id| strings.resolve(id));
    row.name = match text {
        Some(text) => strings.intern(text),
        None => row.text_id_name,
    };
}

/// Names `row` read again: an inline text by the id it was interned under when first read
/// (`NO_NAME` if it was not).
pub fn name_row_again(
    row: &mut NvtxRow,
    strings: &Strings,
    text: Option<&str>,
    text_id: Option<i64>,
) {
    row.text_id_name = text_id.map_or(NO_NAME, |id| strings.resolve(id));
    row.name = match text {
        Some(text) => strings.find_text(text).unwrap_or(NO_NAME),
        None => row.text_id_name,
    };
}
