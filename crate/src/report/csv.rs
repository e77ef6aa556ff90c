//! The report's tables as CSV files (`tables/<name>.csv`), written with the `csv` crate into
//! memory, and the zip of them the page offers for download.

use std::io::Write;

use super::tables::Table;
use crate::error::{Error, Result};

fn failed(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Io {
        path: what.to_string(),
        detail: e.to_string(),
    }
}

/// One table as CSV text: a header row, then the rows.
pub fn to_csv(t: &Table) -> Result<String> {
    let what = format!("{}.csv", t.name);
    let mut w = csv::Writer::from_writer(Vec::new());
    w.write_record(t.keys()).map_err(|e| failed(&what, e))?;
    for row in t.raw_rows() {
        w.write_record(row).map_err(|e| failed(&what, e))?;
    }
    let bytes = w.into_inner().map_err(|e| failed(&what, e))?;
    String::from_utf8(bytes).map_err(|e| failed(&what, e))
}

/// `(file name, CSV text)` for every table.
pub fn csv_files(tables: &[Table]) -> Result<Vec<(String, String)>> {
    tables
        .iter()
        .map(|t| Ok((format!("{}.csv", t.name), to_csv(t)?)))
        .collect()
}

/// A zip archive (stored, no compression) holding `files` under `tables/`.
pub fn zip(files: &[(String, String)]) -> Result<Vec<u8>> {
    let mut out = std::io::Cursor::new(Vec::new());
    {
        let mut z = zip::ZipWriter::new(&mut out);
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for (name, text) in files {
            let path = format!("tables/{name}");
            z.start_file(path.as_str(), opts)
                .map_err(|e| failed(&path, e))?;
            z.write_all(text.as_bytes()).map_err(|e| failed(&path, e))?;
        }
        z.finish().map_err(|e| failed("tables.zip", e))?;
    }
    Ok(out.into_inner())
}
