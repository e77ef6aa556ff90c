//! line_profiler rounds (`nsys_lens::lprof`): the parser on every format variant, the hotspot
//! types and drill-down on fixtures whose answers were placed, and three rounds with known deltas.
//! The fixtures are written by `fixtures/lprof/make_fixtures.py` from line_profiler's format.

use std::path::PathBuf;

use nsys_lens::lprof::classify::Kind;
use nsys_lens::lprof::names::Certainty;
use nsys_lens::lprof::rounds::Status;
use nsys_lens::lprof::{self, Function, LprofInput, LprofReport, Options};

fn fixture(name: &str) -> LprofInput {
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/lprof")
        .join(name);
    LprofInput {
        name: name.to_string(),
        text: std::fs::read_to_string(&path).expect("fixture"),
    }
}

fn run(names: &[&str], options: &Options) -> LprofReport {
    let inputs: Vec<LprofInput> = names.iter().map(|n| fixture(n)).collect();
    lprof::analyze(&inputs, options).expect("analyse")
}

fn function<'a>(r: &'a LprofReport, round: usize, name: &str) -> &'a Function {
    r.rounds[round]
        .functions
        .iter()
        .find(|f| f.name == name)
        .unwrap_or_else(|| panic!("no function {name}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b.abs().max(1.0)
}

#[test]
fn v3_microsecond_output_gives_rows_never_hit_lines_and_source_text() {
    let r = run(&["v3_us.txt"], &Options::default());
    let f = function(&r, 0, "_update_requests");
    assert!(
        f.file
            .ends_with("tensorrt_llm/_torch/pyexecutor/py_executor.py")
    );
    assert_eq!(f.start_line, 200);
    assert!(close(f.total_s, 0.050135), "{}", f.total_s);
    assert_eq!(f.lines.len(), 9, "one row per source line, 200..=208");
    let never: Vec<u32> = f
        .lines
        .iter()
        .filter(|l| l.hits.is_none())
        .map(|l| l.line)
        .collect();
    assert_eq!(never, vec![200, 201, 204, 206]);
    let sync = f.lines.iter().find(|l| l.line == 205).expect("205");
    assert_eq!(sync.hits, Some(400));
    assert!(close(sync.time_s, 0.048), "48000 µs: {}", sync.time_s);
    assert!(close(sync.per_hit_us.expect("per hit"), 120.0));
    assert_eq!(sync.percent, Some(95.7));
    assert_eq!(
        sync.text, "            tok = req.new_token.item()",
        "indentation kept"
    );
    assert_eq!(
        f.calls,
        Some(50),
        "hits of `done = []`, the first statement"
    );
    assert_eq!(sync.hits_per_call, Some(8.0));
    assert_eq!(sync.kind, Some(Kind::HostSync));
    let header = f.lines.iter().find(|l| l.line == 203).expect("203");
    assert_eq!(header.loop_iterations_per_call, Some(8.0));
    assert_eq!(header.kind, Some(Kind::Pyloop));
}

#[test]
fn v4_nanosecond_output_reads_g_numbers_and_the_summary_block() {
    let r = run(&["v4_ns_summary.txt"], &Options::default());
    assert_eq!(
        r.rounds[0].functions.len(),
        2,
        "summary entries name printed functions"
    );
    let ev = function(&r, 0, "event_loop");
    assert!(close(ev.total_s, 65.101));
    let fwd = ev.lines.iter().find(|l| l.line == 303).expect("303");
    assert!(close(fwd.time_s, 59.2), "`5.92e+10` ns: {}", fwd.time_s);
    assert!(
        close(fwd.per_hit_us.expect("per hit"), 14_400.0),
        "`1.44e+07` ns"
    );
    let spin = ev.lines.iter().find(|l| l.line == 304).expect("304");
    assert_eq!(spin.hits, Some(1_234_570_000), "`1.23457e+09` as printed");
    assert!(close(spin.time_s, 3.1));
    assert_eq!(
        ev.calls, None,
        "a body that is only a `while` loop gives no call count"
    );
    let hot = &r.rounds[0].hot_lines[0];
    assert_eq!((hot.function_name.as_str(), hot.line), ("event_loop", 303));
}

#[test]
fn summary_only_output_gives_function_totals() {
    let text = "Timer unit: 1e-09 s\n\n  1.25 seconds - /x/tensorrt_llm/_torch/pyexecutor/sampler.py:40 - update_requests\n";
    let r = lprof::analyze(
        &[LprofInput {
            name: "s.txt".into(),
            text: text.into(),
        }],
        &Options::default(),
    )
    .expect("summary only");
    let f = &r.rounds[0].functions[0];
    assert!(f.summary_only && f.lines.is_empty());
    assert!(close(f.total_s, 1.25));
    assert_eq!(
        f.qualified.as_deref(),
        Some("tensorrt_llm._torch.pyexecutor.sampler.TorchSampler.update_requests")
    );
}

#[test]
fn rich_ansi_output_reads_as_the_plain_one() {
    let plain = run(&["v3_us.txt"], &Options::default());
    let rich = run(&["rich_ansi.txt"], &Options::default());
    assert!(
        fixture("rich_ansi.txt").text.contains('\x1b'),
        "the fixture carries escape codes"
    );
    assert_eq!(rich.rounds[0].functions, plain.rounds[0].functions);
}

#[test]
fn output_cut_mid_row_keeps_complete_rows_and_says_so() {
    let r = run(&["truncated.txt"], &Options::default());
    let round = &r.rounds[0];
    assert_eq!(round.functions.len(), 2);
    assert!(!round.functions[0].truncated);
    let cut = function(&r, 0, "_schedule");
    assert!(cut.truncated);
    assert_eq!(
        cut.lines.iter().map(|l| l.line).collect::<Vec<_>>(),
        vec![600],
        "the half-written row 601 is dropped"
    );
    assert!(
        round
            .warnings
            .iter()
            .any(|w| w.contains("_schedule") && w.contains("cut"))
    );
}

#[test]
fn rules_of_equals_around_the_output_are_not_tables() {
    // As pytest's line-profiler plugin prints it: a titled rule before, a bare rule after.
    let text = "==== Line Profile result for test_a.py::test_b ====\nTimer unit: 1e-09 s\n\n\
        Total time: 0.0001 s\nFile: /t/m.py\nFunction: bar at line 5\n\n\
        Line #      Hits         Time  Per Hit   % Time  Line Contents\n\
        ==============================================================\n\
             5                                           def bar():\n\
             6         2     100000.0  50000.0    100.0      foo()\n\n\
        ==================================================================\n";
    let r = lprof::analyze(
        &[LprofInput {
            name: "pytest.txt".into(),
            text: text.into(),
        }],
        &Options::default(),
    )
    .expect("parse");
    let f = &r.rounds[0].functions[0];
    assert!(!f.truncated, "{:?}", r.rounds[0].warnings);
    assert_eq!(f.lines.len(), 2);
    assert!(r.rounds[0].warnings.is_empty());
}

#[test]
fn missing_source_keeps_the_timings_without_text() {
    let r = run(&["missing_source.txt"], &Options::default());
    let f = &r.rounds[0].functions[0];
    assert!(f.source_missing);
    assert_eq!(f.file, "bench/run.py");
    let l11 = f.lines.iter().find(|l| l.line == 11).expect("11");
    assert_eq!(l11.hits, Some(10));
    assert!(close(l11.time_s, 0.009));
}

#[test]
fn text_that_is_not_line_profiler_output_is_refused_with_a_reason() {
    for (name, text) in [
        ("not_lprof.txt", fixture("not_lprof.txt").text),
        ("empty.txt", String::new()),
        ("pickle.lprof", "\u{80}\u{4}\0\0binary".to_string()),
    ] {
        let err = lprof::analyze(
            &[LprofInput {
                name: name.into(),
                text,
            }],
            &Options::default(),
        )
        .expect_err(name);
        assert_eq!(err.code(), "not-line-profiler");
        let msg = err.to_string();
        assert!(
            msg.starts_with(name) && msg.contains("line_profiler"),
            "{msg}"
        );
    }
}

#[test]
fn every_prefix_of_every_fixture_parses_without_panic() {
    for name in [
        "v3_us.txt",
        "v4_ns_summary.txt",
        "rich_ansi.txt",
        "classify.txt",
        "round1.txt",
    ] {
        let text = fixture(name).text;
        for cut in (0..=text.len()).filter(|&i| text.is_char_boundary(i)) {
            let input = LprofInput {
                name: name.into(),
                text: text[..cut].to_string(),
            };
            let _ = lprof::analyze(&[input], &Options::default());
        }
    }
}

#[test]
fn each_hit_line_gets_the_type_placed_for_it() {
    let r = run(&["classify.txt"], &Options::default());
    let f = function(&r, 0, "_prepare_batch");
    assert_eq!(f.calls, Some(100));
    let expected = [
        (502, Kind::Compute),
        (503, Kind::Pyloop),
        (504, Kind::Container),
        (505, Kind::Funcall),
        (506, Kind::Alloc),
        (507, Kind::HostSync),
        (508, Kind::RedundantIter),
        (509, Kind::Sync),
        (510, Kind::Comm),
        (511, Kind::Serialize),
        (512, Kind::Gil),
        (513, Kind::Gc),
        (514, Kind::Compute),
        (515, Kind::Compute),
    ];
    for (line, kind) in expected {
        let l = f.lines.iter().find(|l| l.line == line).expect("line");
        assert_eq!(l.kind, Some(kind), "line {line} `{}`: {:?}", l.text, l.rule);
        assert!(l.rule.as_deref().is_some_and(|r| !r.is_empty()));
    }
    let redundant = f.lines.iter().find(|l| l.line == 508).expect("508");
    assert!(
        redundant
            .rule
            .as_deref()
            .is_some_and(|r| r.contains("line 503"))
    );
    assert_eq!(
        f.lines.iter().find(|l| l.line == 501).and_then(|l| l.kind),
        None
    );
}

#[test]
fn hot_lines_are_ranked_by_absolute_time_across_functions() {
    let r = run(
        &["classify.txt"],
        &Options {
            top: 3,
            ..Options::default()
        },
    );
    let hot: Vec<(&str, u32)> = r.rounds[0]
        .hot_lines
        .iter()
        .map(|h| (h.function_name.as_str(), h.line))
        .collect();
    // 54.94 s, 4.1 s, 0.16 s in _forward_step, then 64 ms in _prepare_batch (line 507 is 67 %
    // of its function, more than any share but the forward's; absolute time decides).
    assert_eq!(
        hot,
        vec![
            ("_forward_step", 402),
            ("_forward_step", 401),
            ("_forward_step", 403)
        ]
    );
}

#[test]
fn a_line_over_80_percent_calling_an_unprofiled_function_is_drilled_into() {
    let handoff = vec![
        "tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._update_requests".to_string(),
        "tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._forward_step".to_string(),
    ];
    let r = run(
        &["classify.txt"],
        &Options {
            handoff_functions: handoff,
            ..Options::default()
        },
    );
    let d = &r.rounds[0].drill_down;
    let got: Vec<(u32, &str, Option<&str>, Option<Certainty>)> = d
        .iter()
        .map(|s| {
            (
                s.line,
                s.callee.as_str(),
                s.qualified.as_deref(),
                s.certainty,
            )
        })
        .collect();
    assert_eq!(
        got,
        vec![
            (
                402,
                "self.model_engine.forward",
                Some("tensorrt_llm._torch.pyexecutor.model_engine.PyTorchModelEngine.forward"),
                Some(Certainty::Known)
            ),
            (
                602,
                "self._merge_queues",
                Some("tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._merge_queues"),
                Some(Certainty::Assumed)
            ),
            (11, "helper.plan", None, None),
        ]
    );
    // 54.94 s placed, printed as `5.49e+10` ns: the share is what the file says.
    assert!(close(d[0].share, 54.9 / 59.2));
    let pe = "tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor";
    assert_eq!(
        r.line_profiler.as_deref(),
        Some(
            format!(
                "TLLM_LINE_PROFILER_FUNCTIONS=\"{pe}._forward_step,{pe}._schedule,{pe}._update_requests,tensorrt_llm._torch.pyexecutor.model_engine.PyTorchModelEngine.forward,{pe}._merge_queues\""
            )
            .as_str()
        ),
        "profiled (known), then the hand-off's, then the drill-down's, without repeats"
    );
}

#[test]
fn three_rounds_give_the_placed_deltas_shift_and_advice() {
    let r = run(
        &["round1.txt", "round2.txt", "round3.txt"],
        &Options::default(),
    );
    let c = r.comparison.as_ref().expect("comparison");
    let s0 = &c.steps[0];
    assert!(close(s0.common_before_s, 1.181) && close(s0.common_after_s, 0.68));
    assert!(close(
        s0.improvement_pct.expect("pct"),
        (1.181 - 0.68) / 1.181 * 100.0
    ));
    let status = |step: &nsys_lens::lprof::rounds::Step, f: &str| {
        step.functions
            .iter()
            .find(|d| d.function.starts_with(f))
            .map(|d| (d.status, d.delta_s))
    };
    let (st, d) = status(s0, "_update_requests").expect("A");
    assert_eq!(st, Status::Improved);
    assert!(close(d, -0.501));
    assert_eq!(
        status(s0, "_handle_responses").map(|x| x.0),
        Some(Status::Unchanged)
    );
    let line = |step: &nsys_lens::lprof::rounds::Step, text: &str| {
        step.lines
            .iter()
            .find(|l| l.text == text)
            .map(|l| (l.status, l.delta_s))
    };
    assert_eq!(
        line(s0, "v = req.logits.item()").map(|x| x.0),
        Some(Status::Removed)
    );
    assert_eq!(
        line(s0, "values = state.logits.tolist()").map(|x| x.0),
        Some(Status::New)
    );
    assert!(
        s0.shift
            .as_deref()
            .is_some_and(|s| s.starts_with("fixing `v = req.logits.item()`")
                && s.contains("revealed `req.append(v)`")),
        "{:?}",
        s0.shift
    );
    let s1 = &c.steps[1];
    assert_eq!(
        status(s1, "_update_requests").map(|x| x.0),
        Some(Status::Unchanged),
        "−2.4 %"
    );
    let (st, d) = status(s1, "_handle_responses").expect("B");
    assert_eq!(st, Status::Regression);
    assert!(close(d, 0.02));
    assert_eq!(
        status(s1, "_enqueue_responses").map(|x| x.0),
        Some(Status::New)
    );
    let (st, d) = line(s1, "req.append(v)").expect("append");
    assert_eq!(st, Status::Improved, "−6 %");
    assert!(close(d, -0.012));
    assert!(
        s1.shift
            .as_deref()
            .is_some_and(|s| s.contains("revealed `resp = self._build(self.done)`"))
    );
    assert!(close(
        s1.improvement_pct.expect("pct"),
        (0.68 - 0.688) / 0.68 * 100.0
    ));
    // Round 3's `_enqueue_responses` spends all its time in `list.extend`, C code: no drill-down.
    let callees: Vec<&str> = r.rounds[2]
        .drill_down
        .iter()
        .map(|d| d.callee.as_str())
        .collect();
    assert_eq!(callees, vec!["self._build"]);
    let cumulative = (1.0 - 0.688 / 1.181) * 100.0;
    assert!(close(
        c.cumulative_improvement_pct.expect("cumulative"),
        cumulative
    ));
    assert!(close(
        c.stopping.last_two_pct.expect("last two"),
        cumulative
    ));
    assert!(!c.stopping.diminishing_returns);
    assert!(c.stopping.advice.starts_with("Continue"));
}

#[test]
fn under_five_percent_over_the_last_two_rounds_means_stop() {
    let r = run(
        &["round2.txt", "round3.txt", "round4.txt"],
        &Options::default(),
    );
    let stop = &r.comparison.as_ref().expect("comparison").stopping;
    // Round 2 → 3 over A and B (0.68 → 0.688 s), round 3 → 4 over A, B and C (0.738 → 0.736 s).
    let expected = (1.0 - (0.688 / 0.68) * (0.736 / 0.738)) * 100.0;
    assert!(close(stop.last_two_pct.expect("pct"), expected));
    assert!(stop.diminishing_returns);
    assert!(stop.advice.starts_with("Stop"), "{}", stop.advice);
}

#[test]
fn rank_files_merge_into_one_round() {
    let r = run(
        &["rank0.txt", "rank1.txt"],
        &Options {
            ranks: true,
            ..Options::default()
        },
    );
    assert_eq!(r.rounds.len(), 1);
    assert!(r.comparison.is_none());
    let f = function(&r, 0, "_handle_responses");
    assert!(close(f.total_s, 0.48));
    let l = &f.lines[1];
    assert_eq!(l.hits, Some(2000));
    assert!(close(l.time_s, 0.48) && close(l.per_hit_us.expect("per hit"), 240.0));
}

#[test]
fn markdown_report_holds_rounds_comparison_and_the_next_line() {
    let r = run(
        &["round1.txt", "round2.txt", "round3.txt"],
        &Options::default(),
    );
    let md = lprof::report::markdown(&r);
    assert!(md.contains("## Round 1 · round1.txt"));
    assert!(md.contains("### Round 1 → 2"));
    assert!(md.contains("Bottleneck shift: fixing"));
    assert!(md.contains("Cumulative improvement: 41.7 %"), "{md}");
    assert!(md.contains("**Continue"));
    assert!(md.contains(
        "TLLM_LINE_PROFILER_FUNCTIONS=\"tensorrt_llm._torch.pyexecutor.py_executor.PyExecutor._update_requests"
    ));
}

#[test]
fn cli_json_is_the_library_result() {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/lprof");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_nsys-lens"))
        .args(["lprof", "--json"])
        .args(["round1.txt", "round2.txt", "round3.txt"].map(|n| dir.join(n)))
        .output()
        .expect("run the CLI");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let cli: serde_json::Value = serde_json::from_slice(&out.stdout).expect("json");
    let lib = run(
        &["round1.txt", "round2.txt", "round3.txt"],
        &Options::default(),
    );
    let lib = serde_json::to_value(nsys_lens::report::Versioned(&lib)).expect("value");
    assert_eq!(cli, lib);
    assert_eq!(
        cli["schema_version"],
        nsys_lens::report::SCHEMA_VERSION,
        "the JSON says its schema version"
    );
    let bad = std::process::Command::new(env!("CARGO_BIN_EXE_nsys-lens"))
        .args(["lprof"])
        .arg(dir.join("not_lprof.txt"))
        .output()
        .expect("run the CLI");
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not line_profiler text output"));
}
