//! The two loading paths (sequential with progress, used in wasm; parallel, used natively) give
//! the same trace, progress is reported, and a progress callback can cancel.

mod common;

use nsys_lens::detect::{DetectConfig, detect};
use nsys_lens::profile::Profile;
use nsys_lens::trace::{self, LoadOptions};

fn generated(scenario: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, path, _) = common::generated(scenario, 1, 3);
    (dir, path)
}

#[test]
fn sequential_and_parallel_loads_agree() {
    let (_dir, path) = generated("tp2-straggler");
    let label = path.display().to_string();
    for opts in [LoadOptions::all(), LoadOptions::detect()] {
        let parallel = trace::load_path(&path, opts).expect("parallel load");
        let conn = trace::open_path(&path).expect("open");
        let sequential = trace::load(&conn, &label, opts, &mut |_| true).expect("sequential load");
        assert_eq!(parallel.kernels.len(), sequential.kernels.len());
        let gpid = |t: &nsys_lens::model::Trace, i: usize| {
            t.processes.global_pid[t.kernels.process[i] as usize]
        };
        for i in 0..parallel.kernels.len() {
            assert_eq!(
                gpid(&parallel, i),
                gpid(&sequential, i),
                "kernel {i} process"
            );
        }
        for profile in [Profile::Standard, Profile::TrtllmSkill] {
            let cfg = DetectConfig {
                profile,
                file_label: label.clone(),
                ..DetectConfig::default()
            };
            let a = serde_json::to_value(detect(&parallel, &cfg).expect("detect")).expect("json");
            let b = serde_json::to_value(detect(&sequential, &cfg).expect("detect")).expect("json");
            assert_eq!(a, b, "{profile:?}");
        }
    }
}

#[test]
fn progress_is_reported_and_can_cancel() {
    let (_dir, path) = generated("host-bound");
    let conn = trace::open_path(&path).expect("open");
    let mut steps: Vec<&'static str> = Vec::new();
    trace::load(&conn, "t", LoadOptions::all(), &mut |p| {
        if steps.last() != Some(&p.step) {
            steps.push(p.step);
        }
        true
    })
    .expect("load");
    for step in [
        "probing schema",
        "loading kernels",
        "loading CUDA API calls",
        "loading NVTX ranges",
        "done",
    ] {
        assert!(steps.contains(&step), "missing step {step} in {steps:?}");
    }
    let err = trace::load(&conn, "t", LoadOptions::all(), &mut |p| {
        p.step != "loading kernels"
    })
    .expect_err("cancel");
    assert!(matches!(err, nsys_lens::Error::Cancelled), "{err}");
}

/// The page's streaming path: the host side in steps, then the kernel table read in `rowid`
/// chunks, gives every kernel of a full load, in table order, with the same processes and names.
#[test]
fn staged_host_load_and_kernel_rows_give_the_loaded_trace() {
    let (_dir, path) = generated("tp2-straggler");
    let label = path.display().to_string();
    let conn = trace::open_path(&path).expect("open");
    let full = trace::load(&conn, &label, LoadOptions::all(), &mut |_| true).expect("load");
    let mut staged = trace::StagedLoad::begin(&conn, &label, &mut |_| true).expect("begin");
    staged
        .nvtx(&conn, &label, false, &mut |_| true)
        .expect("nvtx");
    assert_eq!(staged.trace().nvtx.len(), full.nvtx.len());
    let schema = staged.schema().clone();
    let mut rows = trace::KernelRows::new(&conn, &schema, &label, true).expect("rows");
    let strings = staged.trace().strings.clone();
    let mut events = Vec::new();
    let mut chunks = 0;
    while !rows.is_done() {
        rows.next_chunk(
            &conn,
            &label,
            97,
            |id| strings.resolve(id),
            staged.processes_mut(),
            |e| events.push(e),
        )
        .expect("chunk");
        chunks += 1;
    }
    assert_eq!(rows.progress().0, rows.progress().1);
    assert!(chunks > 1, "read in several chunks");
    let host = staged
        .finish(&conn, &label, LoadOptions::all(), &mut |_| true)
        .expect("finish");
    let k = &full.kernels;
    assert_eq!(events.len(), k.len());
    for (i, e) in events.iter().enumerate() {
        assert_eq!(
            (e.start, e.end, e.device, e.stream),
            (k.start[i], k.end[i], k.device[i], k.stream[i]),
            "kernel {i}"
        );
        assert_eq!(e.short_name, k.short_name[i], "kernel {i} name");
        assert_eq!(
            host.processes.global_pid[e.process as usize],
            full.processes.global_pid[k.process[i] as usize],
            "kernel {i} process"
        );
        assert!(i == 0 || e.row > events[i - 1].row, "rowid order");
    }
    assert_eq!(host.runtime.len(), full.runtime.len());
}

/// A staged load of `path` up to its window-defining NVTX ranges, as the page's analysis worker
/// has it when it builds the kernel pass's plan.
fn up_to_window_nvtx(path: &std::path::Path) -> (String, rusqlite::Connection, trace::StagedLoad) {
    let label = path.display().to_string();
    let conn = trace::open_path(path).expect("open");
    let mut staged = trace::StagedLoad::begin(&conn, &label, &mut |_| true).expect("begin");
    staged
        .nvtx(&conn, &label, true, &mut |_| true)
        .expect("nvtx");
    (label, conn, staged)
}

/// The launch calls merged from their sorted runs come in start order, equal to the loaded calls
/// stably sorted by start, with threads numbered as a whole load numbers them — on every public
/// export (one has its runtime table in five runs) and on a table shuffled into many runs.
#[test]
fn launch_calls_merge_from_sorted_runs_in_start_order() {
    use nsys_lens::trace::{LaunchRuns, LaunchScan};
    let (_dir, shuffled) = generated("tp2-phases");
    // Rewrite the runtime table as eight blocks in reverse order: eight sorted runs.
    let conn = rusqlite::Connection::open(&shuffled).expect("open");
    conn.execute_batch(
        "CREATE TABLE rt AS SELECT * FROM CUPTI_ACTIVITY_KIND_RUNTIME 
           ORDER BY (rowid * 8 / (SELECT max(rowid) + 1 FROM CUPTI_ACTIVITY_KIND_RUNTIME)) DESC, rowid;
         DELETE FROM CUPTI_ACTIVITY_KIND_RUNTIME;
         INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME SELECT * FROM rt;
         DROP TABLE rt;",
    )
    .expect("shuffle");
    drop(conn);
    let mut paths = vec![shuffled];
    paths.extend(
        std::fs::read_dir(common::public_traces_dir())
            .expect("public traces")
            .filter_map(|e| {
                let p = e.expect("entry").path();
                (p.extension().and_then(|x| x.to_str()) == Some("sqlite")).then_some(p)
            }),
    );
    let mut multi_run = 0;
    for path in paths {
        let (label, conn, staged) = up_to_window_nvtx(&path);
        let mut host = staged.trace().clone();
        let scan = LaunchRuns::scan(
            &conn,
            staged.schema(),
            &label,
            &host.strings,
            &mut host.threads,
            &mut host.processes,
        )
        .expect("scan");
        let whole = staged
            .finish(&conn, &label, LoadOptions::detect(), &mut |_| true)
            .expect("whole");
        let runs = match scan {
            LaunchScan::Runs(runs) => runs,
            LaunchScan::Absent => {
                assert!(
                    whole.runtime.is_empty(),
                    "{label}: no runtime table, no calls"
                );
                continue;
            }
            LaunchScan::Load => panic!("{label}: more than {} runs", trace::MAX_RUNS),
        };
        multi_run += usize::from(runs.run_count() > 1);
        // Later steps (thread names) intern more threads; the launching ones come first, in order.
        let n = host.threads.len();
        assert_eq!(
            host.threads.global_tid[..],
            whole.threads.global_tid[..n],
            "{label}: threads"
        );
        let rt = &whole.runtime;
        let mut want: Vec<(i64, i64, u32, u32)> = (0..rt.len())
            .map(|i| {
                let p = whole.threads.process[rt.thread[i] as usize];
                (rt.start[i], rt.end[i], p, rt.name[i])
            })
            .collect();
        want.sort_by_key(|c| c.0);
        let mut got = Vec::new();
        runs.for_each(&conn, &label, &host.strings, &host.threads, |c| {
            got.push((c.start, c.end, c.process, c.name));
            Ok(())
        })
        .expect("merge");
        assert_eq!(runs.calls as usize, want.len(), "{label}: calls counted");
        assert!(
            got == want,
            "{label}: merged calls differ from the sorted loaded calls"
        );
    }
    assert!(multi_run >= 2, "only {multi_run} tables in several runs");
}
