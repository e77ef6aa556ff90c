//! Names of NVTX rows: inline texts interned, and the forward-step names when the string table
//! holds none ([`Strings::without_step_names`], which no reader asks for now).
//!
//! A TensorRT-LLM trace names every forward step differently, so a table holding the names
//! grows with the trace. Instead a row named by a step gets [`UNHELD_NAME`] and carries the
//! parsed step ([`NvtxRow::step`]): from its inline text, or from `StringIds` read again by
//! `textId`. nsys numbers strings as it meets them, so the steps' ids rise with time: the rows
//! are read a block of ids at a time (a lookup per step costs the page about 3% of its open).

use rusqlite::Connection;

use super::schema::text_ref;
use crate::model::{NO_NAME, NameId, NvtxRow, Strings, UNHELD_NAME};
use crate::names::steps::StepText;
use crate::names::steps::step_text;

/// `StringIds` ids read at a time.
const BLOCK: i64 = 256;

/// The names of one NVTX row, as [`NvtxRow`] holds them.
#[derive(Debug, Clone, Copy)]
pub struct RowNames {
    pub name: NameId,
    pub text_id_name: NameId,
    pub step: Option<StepText>,
    pub text_id_step: Option<StepText>,
}

impl RowNames {
    /// Sets `row`'s names.
    pub fn apply(self, row: &mut NvtxRow) {
        row.name = self.name;
        row.text_id_name = self.text_id_name;
        row.step = self.step;
        row.text_id_step = self.text_id_step;
    }
}

/// Names NVTX rows, reading the forward-step names the string table does not hold.
pub struct RowNamer<'c> {
    conn: &'c Connection,
    /// The steps named by `StringIds` ids `first..first + steps.len()` (`None`: no step, or
    /// no such id).
    first: i64,
    steps: Vec<Option<StepText>>,
}

impl<'c> RowNamer<'c> {
    pub fn new(conn: &'c Connection) -> RowNamer<'c> {
        RowNamer {
            conn,
            first: 0,
            steps: Vec::new(),
        }
    }

    /// The names of a row with inline `text` and `textId` `text_id`, an inline text the
    /// table holds interned.
    pub fn name(
        &mut self,
        strings: &mut Strings,
        text: Option<&str>,
        text_id: Option<i64>,
    ) -> rusqlite::Result<RowNames> {
        let (mut names, held) = self.name_but_text(strings, text, text_id)?;
        if let Some(t) = held {
            names.name = strings.intern(t);
        }
        Ok(names)
    }

    /// [`RowNamer::name`] for a row read again: an inline text the table holds was interned
    /// when the row was first read (`NO_NAME` if it was not).
    pub fn name_again(
        &mut self,
        strings: &Strings,
        text: Option<&str>,
        text_id: Option<i64>,
    ) -> rusqlite::Result<RowNames> {
        let (mut names, held) = self.name_but_text(strings, text, text_id)?;
        if let Some(t) = held {
            names.name = strings.find_text(t).unwrap_or(NO_NAME);
        }
        Ok(names)
    }

    /// The names, but for an inline text the table holds: that text is handed back for the
    /// caller to name.
    fn name_but_text<'t>(
        &mut self,
        strings: &Strings,
        text: Option<&'t str>,
        text_id: Option<i64>,
    ) -> rusqlite::Result<(RowNames, Option<&'t str>)> {
        let by_id = text_id.map_or(NO_NAME, |id| strings.resolve(id));
        let (text_id_name, text_id_step) = match text_id {
            Some(id) if strings.is_unheld(by_id) => (UNHELD_NAME, self.read_step(id)?),
            _ => (by_id, None),
        };
        let mut held = None;
        let (name, step) = match text {
            Some(t) => match step_text(t).filter(|_| !strings.holds_step_names()) {
                Some(step) => (UNHELD_NAME, Some(step)),
                None => {
                    held = Some(t);
                    (NO_NAME, None)
                }
            },
            None => (text_id_name, text_id_step),
        };
        let names = RowNames {
            name,
            text_id_name,
            step,
            text_id_step,
        };
        Ok((names, held))
    }

    /// The step `StringIds` row `id` names. It was found to name one when the table was
    /// loaded; should it read otherwise now, the row names no step.
    fn read_step(&mut self, id: i64) -> rusqlite::Result<Option<StepText>> {
        let at = |n: &RowNamer| {
            usize::try_from(id - n.first)
                .ok()
                .filter(|&i| i < n.steps.len())
        };
        if let Some(i) = at(self) {
            return Ok(self.steps[i]);
        }
        self.read_block(id)?;
        Ok(at(self).and_then(|i| self.steps[i]))
    }

    /// Reads ids `first..first + BLOCK`.
    fn read_block(&mut self, first: i64) -> rusqlite::Result<()> {
        self.first = first;
        self.steps.clear();
        let mut stmt = self
            .conn
            .prepare_cached("SELECT id, value FROM StringIds WHERE id >= ?1 AND id < ?2")?;
        let mut rows = stmt.query([first, first.saturating_add(BLOCK)])?;
        while let Some(r) = rows.next()? {
            let Some(i) = r
                .get::<_, i64>(0)?
                .checked_sub(first)
                .and_then(|i| usize::try_from(i).ok())
            else {
                continue;
            };
            if self.steps.len() <= i {
                self.steps.resize(i + 1, None);
            }
            self.steps[i] = step_text(&text_ref(r.get_ref(1)?));
        }
        Ok(())
    }
}
