//! Reading the records of why the host was slow ([`HostRecords`]): `CUPTI_ACTIVITY_KIND_OVERHEAD`,
//! `PROFILER_OVERHEAD`, `SCHED_EVENTS`, `COMPOSITE_EVENTS` + `SAMPLING_CALLCHAINS`, `OSRT_API` +
//! `OSRT_CALLCHAINS`.
//!
//! Read last of a load, by every engine alike ([`Loader::finish_host`]), and only for threads
//! and processes the event tables made known: no id is numbered here. Each table is sorted by
//! time after reading, so the order nsys wrote it in does not matter.

use hashbrown::HashMap;

use super::decode::{int, opt_int, time};
use super::schema::Schema;
use super::tables::Loader;
use crate::error::Result;
use crate::model::host_records::{
    HostRecords, OffCpu, OsCallRow, OverheadKind, OverheadRow, RecordTables, SampleRow, SchedRow,
};
use crate::model::{NO_NAME, Ns, Trace};

pub const DRIVER_OVERHEAD_TABLE: &str = "CUPTI_ACTIVITY_KIND_OVERHEAD";
pub const PROFILER_OVERHEAD_TABLE: &str = "PROFILER_OVERHEAD";
pub const SCHED_TABLE: &str = "SCHED_EVENTS";
pub const SAMPLES_TABLE: &str = "COMPOSITE_EVENTS";
pub const CALLCHAINS_TABLE: &str = "SAMPLING_CALLCHAINS";
pub const OSRT_TABLE: &str = super::load::OSRT_TABLE;
pub const OSRT_CALLCHAINS_TABLE: &str = "OSRT_CALLCHAINS";

/// More scheduling records or OS calls than this and they are not read (a note says so):
/// about 24 bytes each are held.
const MAX_RECORD_ROWS: i64 = 20_000_000;

/// Modules of the profiler itself: a sample's frames there are nsys's, not the application's.
const PROFILER_MODULES: [&str; 2] = ["libToolsInjection", "nsight-systems"];

/// Files of the C library, the threads library and the dynamic loader (by their name's start):
/// an OS call's frames there are the call itself, not the code that made it.
const SYSTEM_MODULES: [&str; 4] = ["libc.so", "libc-", "libpthread", "ld-linux"];

impl Loader<'_, '_> {
    /// Reads every record table the file has into `trace.records`.
    pub(super) fn load_host_records(&mut self, schema: &Schema, trace: &mut Trace) -> Result<()> {
        let present = RecordTables {
            driver_overhead: schema.has_table(DRIVER_OVERHEAD_TABLE),
            profiler_overhead: schema.has_table(PROFILER_OVERHEAD_TABLE),
            sched: schema.has_table(SCHED_TABLE),
            samples: schema.has_table(SAMPLES_TABLE) && schema.has_table(CALLCHAINS_TABLE),
            os_calls: schema.has_table(OSRT_TABLE),
        };
        let mut records = HostRecords {
            present,
            ..HostRecords::default()
        };
        // A record table that cannot be read loses its explanations, not the analysis.
        if present.driver_overhead {
            let read =
                self.read_overheads(schema, trace, DRIVER_OVERHEAD_TABLE, &mut records.overheads);
            kept(trace, DRIVER_OVERHEAD_TABLE, read)?;
        }
        if present.profiler_overhead {
            let read = self.read_overheads(
                schema,
                trace,
                PROFILER_OVERHEAD_TABLE,
                &mut records.overheads,
            );
            kept(trace, PROFILER_OVERHEAD_TABLE, read)?;
        }
        records.overheads.sort_by_key(|o| (o.start, o.end));
        if present.sched {
            let read = self.read_sched(schema, trace, &mut records.sched);
            kept(trace, SCHED_TABLE, read)?;
        }
        if present.samples {
            let read = self.read_samples(schema, trace, &mut records);
            kept(trace, SAMPLES_TABLE, read)?;
        }
        if present.os_calls {
            let read = self.read_os_calls(schema, trace, &mut records);
            kept(trace, OSRT_TABLE, read)?;
        }
        trace.records = records;
        Ok(())
    }

    /// Overhead records of known processes: the driver's carry their kind in `overheadType`;
    /// every `PROFILER_OVERHEAD` row is the profiler's (its `overheadType`, where present, is
    /// the CUPTI enum, or absent in older exports).
    fn read_overheads(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        table: &'static str,
        out: &mut Vec<OverheadRow>,
    ) -> Result<()> {
        let columns = ["start", "end", "globalTid", "nameId", "overheadType"];
        let sql = Self::select(schema, table, &columns, "");
        let driver = table == DRIVER_OVERHEAD_TABLE;
        let (processes, threads, strings) = (&trace.processes, &trace.threads, &trace.strings);
        self.read_rows("loading overhead records", table, &sql, |r| {
            let (start, end) = (time(r.get_ref(0)?)?, time(r.get_ref(1)?)?);
            let Some(tid) = opt_int(r.get_ref(2)?) else {
                return Ok(());
            };
            let Some(process) = processes.find(tid) else {
                return Ok(());
            };
            let kind = match driver {
                true => OverheadKind::of_cupti(int(r.get_ref(4)?, 0)),
                false => OverheadKind::Profiler,
            };
            let name = opt_int(r.get_ref(3)?).map_or(NO_NAME, |id| strings.resolve(id));
            if end > start {
                out.push(OverheadRow {
                    start,
                    end,
                    process,
                    thread: threads.find(tid),
                    kind,
                    name,
                });
            }
            Ok(())
        })
    }

    /// Whether `table` holds more rows than a load keeps of it (a note then says so).
    fn too_many(&mut self, trace: &mut Trace, table: &str, what: &str) -> bool {
        let many = self.estimate_rows(table) as i64 > MAX_RECORD_ROWS;
        if many {
            trace.note(
                table,
                format!("more than {MAX_RECORD_ROWS} {what}: not read"),
            );
        }
        many
    }

    /// OS runtime calls of known threads, each with the code that made it when nsys kept its
    /// backtrace.
    fn read_os_calls(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        records: &mut HostRecords,
    ) -> Result<()> {
        if self.too_many(trace, OSRT_TABLE, "OS runtime calls") {
            return Ok(());
        }
        let columns = ["start", "end", "globalTid", "nameId", "callchainId"];
        let sql = Self::select(schema, OSRT_TABLE, &columns, "");
        let (threads, strings) = (&trace.threads, &trace.strings);
        // Per call kept, its backtrace's id (0 or NULL: none).
        let mut chains: Vec<i64> = Vec::new();
        let out = &mut records.os_calls;
        self.read_rows("loading OS runtime calls", OSRT_TABLE, &sql, |r| {
            let Some(thread) = opt_int(r.get_ref(2)?).and_then(|t| threads.find(t)) else {
                return Ok(());
            };
            let (start, end) = (time(r.get_ref(0)?)?, time(r.get_ref(1)?)?);
            let name = opt_int(r.get_ref(3)?).map_or(NO_NAME, |id| strings.resolve(id));
            if end > start {
                out.push(OsCallRow {
                    start,
                    end,
                    thread,
                    name,
                    caller: None,
                });
                chains.push(int(r.get_ref(4)?, 0));
            }
            Ok(())
        })?;
        if schema.has_table(OSRT_CALLCHAINS_TABLE) && chains.iter().any(|&c| c != 0) {
            let callers =
                self.first_frames(schema, trace, OSRT_CALLCHAINS_TABLE, Frames::Callers)?;
            let mut index: HashMap<String, u32> = HashMap::new();
            for (call, chain) in records.os_calls.iter_mut().zip(&chains) {
                let Some((_, frame)) = callers.get(chain).filter(|_| *chain != 0) else {
                    continue;
                };
                let label = format!("{} from {frame}", trace.strings.get(call.name));
                let next = records.os_labels.len() as u32;
                call.caller = Some(*index.entry(label).or_insert_with_key(|label| {
                    records.os_labels.push(label.clone());
                    next
                }));
            }
        }
        records.os_calls.sort_by_key(|c| (c.start, c.end));
        Ok(())
    }

    /// Switches of known threads onto and off CPUs.
    fn read_sched(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        out: &mut Vec<SchedRow>,
    ) -> Result<()> {
        if self.too_many(trace, SCHED_TABLE, "scheduling records") {
            return Ok(());
        }
        let columns = ["start", "globalTid", "isSchedIn", "threadState"];
        let sql = Self::select(schema, SCHED_TABLE, &columns, "");
        let threads = &trace.threads;
        self.read_rows("loading thread scheduling", SCHED_TABLE, &sql, |r| {
            let Some(thread) = opt_int(r.get_ref(1)?).and_then(|t| threads.find(t)) else {
                return Ok(());
            };
            let on_cpu = int(r.get_ref(2)?, 0) != 0;
            out.push(SchedRow {
                at: time(r.get_ref(0)?)?,
                thread,
                on_cpu,
                off: OffCpu::of_state(opt_int(r.get_ref(3)?)),
            });
            Ok(())
        })?;
        out.sort_by_key(|s| s.at);
        Ok(())
    }

    /// CPU samples of known threads, each named by its shallowest telling frame.
    fn read_samples(
        &mut self,
        schema: &Schema,
        trace: &mut Trace,
        records: &mut HostRecords,
    ) -> Result<()> {
        let mut kept: Vec<(i64, Ns, u32)> = Vec::new();
        let sql = Self::select(schema, SAMPLES_TABLE, &["id", "start", "globalTid"], "");
        let threads = &trace.threads;
        self.read_rows("loading CPU samples", SAMPLES_TABLE, &sql, |r| {
            let id = int(r.get_ref(0)?, 0);
            if let Some(thread) = opt_int(r.get_ref(2)?).and_then(|t| threads.find(t)) {
                kept.push((id, time(r.get_ref(1)?)?, thread));
            }
            Ok(())
        })?;
        if kept.is_empty() {
            return Ok(());
        }
        let mut best = self.first_frames(schema, trace, CALLCHAINS_TABLE, Frames::Samples)?;
        let mut index: HashMap<String, u32> = HashMap::new();
        for &(id, at, thread) in &kept {
            let Some((_, label)) = best.remove(&id) else {
                continue;
            };
            let next = records.frames.len() as u32;
            let frame = *index.entry(label).or_insert_with_key(|label| {
                records.frames.push(label.clone());
                next
            });
            records.samples.push(SampleRow { at, thread, frame });
        }
        records.samples.sort_by_key(|s| s.at);
        Ok(())
    }

    /// Per call chain id of `table` (`SAMPLING_CALLCHAINS`, `OSRT_CALLCHAINS`), its shallowest
    /// frame that names code (depth, name): any telling frame of a sample; the first frame of an
    /// OS call outside the C library, the threads library, the loader and the kernel. Chains
    /// without one are absent. The chains are read in table order.
    fn first_frames(
        &mut self,
        schema: &Schema,
        trace: &Trace,
        table: &'static str,
        which: Frames,
    ) -> Result<HashMap<i64, (i64, String)>> {
        let columns = [
            "id",
            "symbol",
            "module",
            "unresolved",
            "stackDepth",
            "kernelMode",
        ];
        let sql = Self::select(schema, table, &columns, "");
        let mut best: HashMap<i64, (i64, String)> = HashMap::new();
        let strings = &trace.strings;
        let step = match which {
            Frames::Samples => "loading CPU call chains",
            Frames::Callers => "loading OS call chains",
        };
        self.read_rows(step, table, &sql, |r| {
            let (id, depth) = (int(r.get_ref(0)?, 0), int(r.get_ref(4)?, 0));
            if best.get(&id).is_some_and(|(d, _)| *d <= depth) {
                return Ok(());
            }
            let text = |v| opt_int(v).map_or("", |s| strings.get(strings.resolve(s)));
            let (symbol, module) = (text(r.get_ref(1)?), text(r.get_ref(2)?));
            let kernel = int(r.get_ref(5)?, 0) != 0;
            if which == Frames::Callers && (kernel || system_module(module)) {
                return Ok(());
            }
            let unresolved = int(r.get_ref(3)?, 0) != 0;
            if let Some(frame) = frame_label(symbol, module, unresolved) {
                best.insert(id, (depth, frame));
            }
            Ok(())
        })?;
        Ok(best)
    }
}

/// Which frame of a call chain names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Frames {
    /// A CPU sample: its shallowest telling frame.
    Samples,
    /// An OS runtime call: the code that made it, its first frame outside the system's
    /// libraries and the kernel.
    Callers,
}

/// Whether `module` is the C library, the threads library, the dynamic loader or the kernel
/// (`[kernel.kallsyms]`, `[vdso]`): where an OS call's own frames are.
pub fn system_module(module: &str) -> bool {
    let file = module.rsplit('/').next().unwrap_or(module);
    file.starts_with('[') || SYSTEM_MODULES.iter().any(|m| file.starts_with(m))
}

/// `read` of an optional record table: a failure other than a cancel becomes a coverage note.
fn kept(trace: &mut Trace, table: &str, read: Result<()>) -> Result<()> {
    match read {
        Err(crate::error::Error::Cancelled) => Err(crate::error::Error::Cancelled),
        Err(e) => {
            trace.note(
                table,
                format!("not read ({e}): its records explain no idle time"),
            );
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

/// How a sample's frame is named, or `None` when the frame is the profiler's own: `symbol
/// (module)`, the module's file name only; an unresolved symbol (an address) by its module.
pub fn frame_label(symbol: &str, module: &str, unresolved: bool) -> Option<String> {
    if PROFILER_MODULES.iter().any(|m| module.contains(m)) {
        return None;
    }
    // nsys's own entries (`[Broken backtraces]`, `[Max depth]`) name no code.
    if symbol.starts_with('[') {
        return None;
    }
    let file = module.rsplit('/').next().unwrap_or(module);
    let address = unresolved || symbol.starts_with("0x");
    match (address, file.is_empty()) {
        (true, true) => None,
        (true, false) => Some(format!("{file} (unresolved)")),
        (false, true) => Some(symbol.to_string()),
        (false, false) => Some(format!("{symbol} ({file})")),
    }
}

#[cfg(test)]
mod tests {
    use super::{frame_label, system_module};

    #[test]
    fn an_os_calls_own_frames_are_in_the_c_library_the_loader_or_the_kernel() {
        for m in [
            "/usr/lib/x86_64-linux-gnu/libc.so.6",
            "/usr/lib/x86_64-linux-gnu/libc-2.31.so",
            "/usr/lib/x86_64-linux-gnu/libpthread-2.31.so",
            "/lib64/ld-linux-x86-64.so.2",
            "[kernel.kallsyms]",
        ] {
            assert!(system_module(m), "{m}");
        }
        for m in [
            "/usr/bin/python3.11",
            "/usr/lib64-nvidia/libcuda.so.550.54.15",
            "/usr/lib/libcrypto.so.3",
        ] {
            assert!(!system_module(m), "{m}");
        }
    }

    #[test]
    fn frames_are_named_by_symbol_and_module_file_and_the_profilers_are_skipped() {
        assert_eq!(
            frame_label("_Py_dg_dtoa", "/usr/bin/python3.11", false).as_deref(),
            Some("_Py_dg_dtoa (python3.11)")
        );
        assert_eq!(
            frame_label("0x7cfa361805c1", "/usr/lib64-nvidia/libcuda.so.550", true).as_deref(),
            Some("libcuda.so.550 (unresolved)")
        );
        assert_eq!(
            frame_label("0x1", "/opt/nsight-systems/libToolsInjection64.so", true),
            None
        );
        assert_eq!(
            frame_label("[Broken backtraces]", "[Broken backtraces]", false),
            None
        );
    }
}
