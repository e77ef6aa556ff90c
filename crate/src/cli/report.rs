//! `nsys-lens report`: the explainer report of one trace, written to a directory as
//! `report.md`, `report.json`, `tables/*.csv` and one self-contained `report.html`.

use std::path::{Path, PathBuf};

use clap::Args;

use nsys_lens::drill::DrillOptions;
use nsys_lens::error::{Error, Result};
use nsys_lens::report::{csv, document, html, markdown, outline};
use nsys_lens::trace::LoadOptions;

#[derive(Args)]
pub struct ReportArgs {
    /// The SQLite export.
    pub trace: PathBuf,
    /// Directory to write the report into (created if missing).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// How many largest gaps and names to list per table.
    #[arg(long, default_value_t = nsys_lens::drill::DEFAULT_TOP, value_parser = super::drill::top_count)]
    pub top: usize,
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| Error::Io {
        path: path.display().to_string(),
        detail: e.to_string(),
    })
}

fn create_dir(path: &Path) -> Result<()> {
    std::fs::create_dir_all(path).map_err(|e| Error::Io {
        path: path.display().to_string(),
        detail: format!("cannot create the output directory: {e}"),
    })
}

pub fn run(args: &ReportArgs) -> Result<()> {
    let label = args.trace.display().to_string();
    let export = super::OpenExport::open(&args.trace, LoadOptions::all())?;
    let rows = export.rows();
    let opts = DrillOptions {
        top: args.top,
        window: None,
    };
    let doc = document::build_rows(&rows, &label, &opts, &|cfg| {
        nsys_lens::detect::detect_rows(&rows, cfg)
    })?;
    let json = serde_json::to_string_pretty(&doc)
        .map_err(|e| Error::Usage(format!("cannot serialize the report: {e}")))?;
    let tables = csv::csv_files(&outline::tables(&doc))?;
    let dir = &args.out;
    create_dir(&dir.join("tables"))?;
    write(&dir.join("report.md"), markdown::render(&doc).as_bytes())?;
    write(&dir.join("report.json"), (json + "\n").as_bytes())?;
    write(&dir.join("report.html"), html::render(&doc).as_bytes())?;
    for (name, text) in &tables {
        write(&dir.join("tables").join(name), text.as_bytes())?;
    }
    eprintln!(
        "wrote {} (report.md, report.json, report.html, {} tables)",
        dir.display(),
        tables.len()
    );
    Ok(())
}
