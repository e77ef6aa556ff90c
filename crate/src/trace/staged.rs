//! The host side of a trace loaded in steps, for a caller that streams the kernel table itself
//! (the page's analysis worker).

use rusqlite::Connection;

use super::capture::WarmupCalls;
use super::launch_calls::{LaunchCall, LaunchRuns, LaunchScan, LaunchSink, for_each_if_sorted};
use super::load::{LoadOptions, NvtxSink, PROGRESS_EVERY, ProgressFn, RUNTIME_TABLE, SWEEP_STEP};
use super::schema::Schema;
use super::tables::Loader;
use crate::error::Result;
use crate::model::{NvtxRanges, Processes, Trace};

/// The host side of a trace (everything but kernels) loaded in steps, for a caller that streams
/// the kernel table itself: after [`StagedLoad::nvtx`] the forward steps and host-prep ranges are
/// known, which the one-pass kernel analyses need before their pass; the CUDA API calls follow.
/// The steps run in the order [`super::load_part`] uses, so process and thread ids come out the same.
pub struct StagedLoad {
    schema: Schema,
    trace: Trace,
    /// The launch calls were scanned for a sweep ([`StagedLoad::scan_launches`]): not loaded.
    launches_scanned: bool,
}

impl StagedLoad {
    /// Schema, metadata and strings, forward-step names not held
    /// ([`crate::model::Strings::without_step_names`]): the page's analysis worker would hold
    /// one per step, and needs of each only the step its NVTX rows read as they pass.
    pub fn begin(conn: &Connection, path: &str, progress: ProgressFn<'_>) -> Result<StagedLoad> {
        let (schema, trace) = Loader {
            conn,
            path,
            progress,
        }
        .begin(true)?;
        Ok(StagedLoad {
            schema,
            trace,
            launches_scanned: false,
        })
    }

    /// The NVTX ranges; with `windows_only`, only those that may be forward steps or host-prep
    /// ranges (the verdict's windows), the others counted in `nvtx.omitted`.
    pub fn nvtx(
        &mut self,
        conn: &Connection,
        path: &str,
        windows_only: bool,
        progress: ProgressFn<'_>,
    ) -> Result<()> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        ctx.load_nvtx_where(&self.schema, &mut self.trace, false, windows_only)
    }

    /// The NVTX ranges that may be forward steps or host-prep ranges handed to `sink` instead
    /// of kept (the others only counted): the page builds its detect plans from them as they
    /// pass. `Ok(false)`: `sink` stopped the read; load them with [`StagedLoad::nvtx`] then.
    pub fn stream_nvtx(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        sink: NvtxSink<'_>,
    ) -> Result<bool> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        // Ranges the sink gets are not kept either: counted like those filtered out.
        let mut passed = NvtxRanges::default();
        let done = ctx.stream_nvtx(
            &self.schema,
            &mut self.trace,
            false,
            true,
            &mut |row, s, t| {
                passed.omit(row.name != row.text_id_name);
                sink(row, s, t)
            },
        )?;
        let omitted = &mut self.trace.nvtx.omitted;
        if done {
            omitted.count += passed.omitted.count;
            omitted.inline_text |= passed.omitted.inline_text;
        } else {
            *omitted = Default::default();
        }
        Ok(done)
    }

    /// The CUDA API calls (only launch calls with `LoadOptions::detect()`), then the remaining
    /// tables `opts` asks for, GPU info and names.
    pub fn finish(
        mut self,
        conn: &Connection,
        path: &str,
        opts: LoadOptions,
        progress: ProgressFn<'_>,
    ) -> Result<Trace> {
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        if !self.launches_scanned {
            let strings = std::mem::take(&mut self.trace.strings);
            ctx.load_runtime(&self.schema, &strings, &mut self.trace, opts)?;
            self.trace.strings = strings;
        }
        ctx.finish(&self.schema, &mut self.trace, opts)?;
        Ok(self.trace)
    }

    pub fn schema(&self) -> &Schema {
        &self.schema
    }

    /// What is loaded so far.
    pub fn trace(&self) -> &Trace {
        &self.trace
    }

    /// Lets the NVTX ranges go once what needs them (the detect plans) is built
    /// ([`crate::model::NvtxRanges::forget_ranges`]).
    pub fn forget_nvtx_ranges(&mut self) {
        self.trace.nvtx.forget_ranges();
    }

    /// Feeds the kernel-launch API calls to `sink` in start order instead of loading them (the
    /// page's M2): one pass when the table is sorted; else the sink restarts, a scan finds the
    /// table's sorted runs and a merge feeds them again. Threads are interned as loading
    /// the calls would; progress is reported (and can cancel) as while loading them. `Ok(false)`:
    /// the calls must be loaded ([`StagedLoad::finish`] does); after `Ok(true)` it loads no
    /// runtime calls. Call after NVTX.
    pub fn sweep_launches(
        &mut self,
        conn: &Connection,
        path: &str,
        progress: ProgressFn<'_>,
        sink: &mut dyn LaunchSink,
    ) -> Result<bool> {
        let has = |c: &str| self.schema.has_column(RUNTIME_TABLE, c);
        if !(has("start") && has("end") && has("globalTid") && has("nameId")) {
            return Ok(false);
        }
        let mut ctx = Loader {
            conn,
            path,
            progress,
        };
        let total = ctx.estimate_rows(RUNTIME_TABLE);
        ctx.report(SWEEP_STEP, 0, total)?;
        let Trace {
            strings,
            threads,
            processes,
            capture_fold,
            ..
        } = &mut self.trace;
        // The capture checks' warm-up calls are read on the way, when the table is sorted.
        let mut warmup = WarmupCalls::new(&self.schema, strings);
        // Pushes a call, reporting progress every `PROGRESS_EVERY` calls.
        let done = std::cell::Cell::new(0u64);
        let mut feed = |sink: &mut dyn LaunchSink, call: LaunchCall| -> Result<()> {
            sink.push(call);
            done.set(done.get() + 1);
            if done.get().is_multiple_of(PROGRESS_EVERY) {
                ctx.report(SWEEP_STEP, done.get(), total)?;
            }
            Ok(())
        };
        let sorted = for_each_if_sorted(
            conn,
            (&self.schema, path),
            strings,
            (threads, processes),
            warmup.as_mut(),
            |call| feed(sink, call),
        )?;
        if sorted.is_some() {
            capture_fold.runtime = warmup.map(WarmupCalls::finish);
        } else {
            sink.restart();
            done.set(0);
            let scan = LaunchRuns::scan(conn, &self.schema, path, strings, threads, processes)?;
            let LaunchScan::Runs(runs) = scan else {
                return Ok(false);
            };
            runs.for_each(conn, path, strings, threads, |call| feed(sink, call))?;
        }
        ctx.report(SWEEP_STEP, done.get(), total)?;
        self.trace.present.runtime = true;
        self.launches_scanned = true;
        Ok(true)
    }

    /// Processes met by the kernel pass join the table here, so every id stays one table's.
    pub fn processes_mut(&mut self) -> &mut Processes {
        &mut self.trace.processes
    }
}
