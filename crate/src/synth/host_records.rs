//! The records of why the host was slow, as nsys writes them: the driver's overhead records
//! (`CUPTI_ACTIVITY_KIND_OVERHEAD`, with `ENUM_CUPTI_OVERHEAD_TYPE`), the profiler's own
//! (`PROFILER_OVERHEAD`), thread scheduling (`SCHED_EVENTS`) and CPU samples (`COMPOSITE_EVENTS`
//! with `SAMPLING_CALLCHAINS`). Each table is created only when a scenario placed rows in it.
//!
//! The DDL is copied from real exports: the overhead tables from nsys 2026.2
//! (`GindaChen_nsys-ai__h100_2gpu_1s.v2`), the scheduling and sampling tables from nsys 2025.3.1
//! (`brycelelbach_nsightful__power_iteration__baseline`). The enum's rows are NVIDIA's
//! (CUPTI's `CUpti_ActivityOverheadKind`, as that export lists them). Sources: `docs/host-records.md`.

use rusqlite::{Connection, params};

use super::timeline::Timeline;

const OVERHEAD_DDL: &str = "
CREATE TABLE ENUM_CUPTI_OVERHEAD_TYPE (
    -- CUPTI overhead type labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value.
    name                        TEXT,                                  -- Enum symbol name.
    label                       TEXT                                   -- Enum human name.
);
CREATE TABLE CUPTI_ACTIVITY_KIND_OVERHEAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    eventClass                  INTEGER   NOT NULL,                    -- REFERENCES ENUM_NSYS_EVENT_CLASS(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    correlationId               INTEGER,                               -- ID used to identify events that this function call has triggered.
    nameId                      INTEGER,                               -- REFERENCES StringIds(id) -- Function name
    overheadType                INTEGER   NOT NULL                     -- REFERENCES ENUM_CUPTI_OVERHEAD_TYPE(id)
);
CREATE TABLE PROFILER_OVERHEAD (
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    end                         INTEGER   NOT NULL,                    -- Event end timestamp (ns).
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    nameId                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    overheadType                INTEGER   NOT NULL                     -- REFERENCES ENUM_CUPTI_OVERHEAD_TYPE(id)
);
";

const OVERHEAD_TYPES: [(i64, &str, &str); 9] = [
    (0, "OVERHEAD_UNDEFINED", "Undefined"),
    (1, "OVERHEAD_UNKNOWN", "Unknown"),
    (2, "OVERHEAD_DRIVER_COMPILER", "Driver JIT compiler (CUDA)"),
    (3, "OVERHEAD_CUPTI_BUFFER_FLUSH", "Buffer flush (Profiler)"),
    (
        4,
        "OVERHEAD_CUPTI_INSTRUMENTATION",
        "Instrumentation (Profiler)",
    ),
    (
        5,
        "OVERHEAD_CUPTI_RESOURCE",
        "Resource creation/destruction (Profiler)",
    ),
    (
        6,
        "OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING",
        "Runtime module loading (CUDA)",
    ),
    (
        7,
        "OVERHEAD_LAZY_FUNCTION_LOADING",
        "Lazy function loading (CUDA)",
    ),
    (
        8,
        "OVERHEAD_COMMAND_BUFFER_FULL",
        "Command buffer full (CUDA)",
    ),
];

const SCHED_DDL: &str = "
CREATE TABLE ENUM_SAMPLING_THREAD_STATE (
    -- Sampling thread state labels

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- Enum numerical value.
    name                        TEXT,                                  -- Enum symbol name.
    label                       TEXT                                   -- Enum human name.
);
CREATE TABLE SCHED_EVENTS (
    -- Thread scheduling events.

    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    cpu                         INTEGER   NOT NULL,                    -- ID of CPU this thread was scheduled in or out.
    isSchedIn                   INTEGER   NOT NULL,                    -- 0 if thread was scheduled out, non-zero otherwise.
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    threadState                 INTEGER,                               -- REFERENCES ENUM_SAMPLING_THREAD_STATE(id)
    threadBlock                 INTEGER                                -- REFERENCES ENUM_SCHEDULING_THREAD_BLOCK(id)
);
";

const THREAD_STATES: [(i64, &str); 4] = [
    (0, "Unknown"),
    (1, "Running"),
    (2, "Interruptible"),
    (3, "Uninterruptible"),
];

const SAMPLES_DDL: &str = "
CREATE TABLE COMPOSITE_EVENTS (
    -- Thread sampling events.

    id                          INTEGER   NOT NULL   PRIMARY KEY,      -- ID of the composite event.
    start                       INTEGER   NOT NULL,                    -- Event start timestamp (ns).
    cpu                         INTEGER,                               -- ID of CPU this thread was running on.
    threadState                 INTEGER,                               -- REFERENCES ENUM_SAMPLING_THREAD_STATE(id)
    globalTid                   INTEGER,                               -- Serialized GlobalId.
    cpuCycles                   INTEGER   NOT NULL                     -- Value of Performance Monitoring Unit (PMU) counter.
);
CREATE TABLE SAMPLING_CALLCHAINS (
    -- Callchain entries obtained from composite events, used to construct function table views.

    id                          INTEGER   NOT NULL,                    -- REFERENCES COMPOSITE_EVENTS(id)
    symbol                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Function name
    module                      INTEGER   NOT NULL,                    -- REFERENCES StringIds(id) -- Module name
    kernelMode                  INTEGER,                               -- True if kernel mode.
    thumbCode                   INTEGER,                               -- True if thumb code.
    unresolved                  INTEGER,                               -- True if the symbol was not resolved.
    specialEntry                INTEGER,                               -- True if artifical entry added during processing callchain.
    originalIP                  INTEGER,                               -- Instruction pointer value.
    unwindMethod                INTEGER,                               -- REFERENCES ENUM_STACK_UNWIND_METHOD(id)
    stackDepth                  INTEGER   NOT NULL,                    -- Zero-base index of the given function in call stack.

    PRIMARY KEY (id, stackDepth)
);
";

/// The `eventClass` nsys gives overhead records (`ENUM_NSYS_EVENT_CLASS`), as in the real rows.
const OVERHEAD_EVENT_CLASS: i64 = 103;

/// Writes the record tables `tl` placed rows in.
pub fn write(conn: &Connection, tl: &Timeline) -> rusqlite::Result<()> {
    let tid = |proc: u8, tid: u32| tl.procs.get(usize::from(proc)).map(|p| p.global_tid(tid));
    if !tl.overheads.is_empty() {
        conn.execute_batch(OVERHEAD_DDL)?;
        let mut enums = conn.prepare("INSERT INTO ENUM_CUPTI_OVERHEAD_TYPE VALUES (?1, ?2, ?3)")?;
        for (id, name, label) in OVERHEAD_TYPES {
            enums.execute(params![id, name, label])?;
        }
        let mut driver = conn.prepare(
            "INSERT INTO CUPTI_ACTIVITY_KIND_OVERHEAD VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
        )?;
        let mut profiler =
            conn.prepare("INSERT INTO PROFILER_OVERHEAD VALUES (?1, ?2, ?3, ?4, ?5)")?;
        for o in &tl.overheads {
            let (gtid, kind) = (tid(o.proc, o.tid), o.overhead_type);
            match o.profiler {
                true => profiler.execute(params![o.start, o.end, gtid, o.name, kind])?,
                false => driver.execute(params![
                    o.start,
                    o.end,
                    OVERHEAD_EVENT_CLASS,
                    gtid,
                    (o.corr != 0).then_some(o.corr),
                    o.name,
                    kind
                ])?,
            };
        }
    }
    if !tl.switches.is_empty() {
        conn.execute_batch(SCHED_DDL)?;
        let mut states =
            conn.prepare("INSERT INTO ENUM_SAMPLING_THREAD_STATE VALUES (?1, ?2, ?2)")?;
        for (id, name) in THREAD_STATES {
            states.execute(params![id, name])?;
        }
        let mut st = conn.prepare("INSERT INTO SCHED_EVENTS VALUES (?1, 1, ?2, ?3, ?4, NULL)")?;
        for s in &tl.switches {
            st.execute(params![
                s.at,
                i64::from(s.on_cpu),
                tid(s.proc, s.tid),
                s.state
            ])?;
        }
    }
    if !tl.samples.is_empty() {
        conn.execute_batch(SAMPLES_DDL)?;
        let mut ev = conn.prepare("INSERT INTO COMPOSITE_EVENTS VALUES (?1, ?2, 1, 1, ?3, 1)")?;
        let mut chain = conn.prepare(
            "INSERT INTO SAMPLING_CALLCHAINS VALUES (?1, ?2, ?3, 0, 0, ?4, 0, 0, 1, ?5)",
        )?;
        for (id, s) in (1i64..).zip(&tl.samples) {
            ev.execute(params![id, s.at, tid(s.proc, s.tid)])?;
            for (depth, &(symbol, module, unresolved)) in (0i64..).zip(&s.frames) {
                chain.execute(params![id, symbol, module, i64::from(unresolved), depth])?;
            }
        }
    }
    Ok(())
}
