//! The page's detect path: a kernel summary swept from a start-order stream, assembled with a
//! host part that holds no kernel, must give exactly the report `detect` gives on the full trace
//! (both profiles from one stream, on every generated scenario and every public export).

mod common;

use nsys_lens::detect::host_facts::HostFactsBuilder;
use nsys_lens::detect::{
    DetectConfig, HostFacts, KernelSummary, KernelSweep, ThresholdOverrides, detect,
    detect_with_host_facts, detect_with_kernels,
};
use nsys_lens::model::{Kernels, Ns, Trace};
use nsys_lens::profile::Profile;
use nsys_lens::steps::Step;
use nsys_lens::synth::{self, GenOptions};
use nsys_lens::trace::{LoadOptions, load_path};

const PROFILES: [Profile; 2] = [Profile::Standard, Profile::TrtllmSkill];

fn config(profile: Profile, label: &str) -> DetectConfig {
    DetectConfig {
        profile,
        file_label: label.to_string(),
        ..DetectConfig::default()
    }
}

/// One stream of kernels feeding one sweep per profile, as the page does.
fn summaries(trace: &Trace, cfgs: &[DetectConfig]) -> Vec<KernelSummary> {
    // Each profile's busy rows: every GPU operation (standard) or the kernels (trtllm-skill).
    cfgs.iter()
        .map(|c| {
            let mut s = KernelSweep::new(trace, c);
            for k in c.profile.switches().busy_rows(trace) {
                s.push(k.event()).expect("a sorted stream is accepted");
            }
            s.finish()
        })
        .collect()
}

/// The summary of a sweep fed the NVTX ranges as the kernels need them (every range starting
/// before a kernel's end, as the page's kernel pass does), and the most window and host-prep
/// spans it held at once; `None` when the NVTX table is out of start order.
fn fed_summary(trace: &Trace, cfg: &DetectConfig) -> Option<(KernelSummary, usize)> {
    let mut sweep = KernelSweep::fed(HostFacts::new(trace, cfg).sweep_inputs(cfg));
    let mut feed = Feed {
        builder: Some(HostFactsBuilder::new(&trace.strings, cfg)),
        next: 0,
    };
    let mut most = 0;
    for ev in cfg.profile.switches().busy_rows(trace).map(|k| k.event()) {
        while !sweep.ready_for(ev.end) {
            feed.row(trace, &mut sweep)?;
        }
        sweep.push(ev).expect("a sorted stream is accepted");
        most = most.max(sweep.held_spans());
    }
    while feed.builder.is_some() {
        feed.row(trace, &mut sweep)?;
    }
    Some((sweep.finish(), most))
}

/// Reads NVTX ranges into a fed sweep, one at a time.
struct Feed {
    builder: Option<HostFactsBuilder>,
    next: usize,
}

impl Feed {
    /// Feeds the next range (or, past the last, what the builder still holds).
    fn row(&mut self, trace: &Trace, sweep: &mut KernelSweep) -> Option<()> {
        let nvtx = &trace.nvtx;
        let mut steps: Vec<Step> = Vec::new();
        let mut prep: Vec<(usize, usize, (Ns, Ns))> = Vec::new();
        if self.next < nvtx.len() {
            let row = nvtx.row(self.next);
            self.next += 1;
            let builder = self.builder.as_mut()?;
            let host = (&trace.strings, &trace.threads);
            let until = builder
                .feed(&row, host, &mut steps, &mut |slot, k, r| {
                    prep.push((slot, k, r))
                })
                .ok()?;
            apply(sweep, &steps, &prep);
            if let Some(until) = until {
                sweep.feed_until(until);
            }
        } else {
            let builder = self.builder.take()?;
            builder.finish(trace.processes.len(), &mut steps);
            apply(sweep, &steps, &prep);
            sweep.feed_done();
        }
        Some(())
    }
}

fn apply(sweep: &mut KernelSweep, steps: &[Step], prep: &[(usize, usize, (Ns, Ns))]) {
    for s in steps {
        sweep.feed_step(s).expect("steps in start order");
    }
    for &(slot, pattern, range) in prep {
        sweep
            .feed_prep(slot, pattern, range)
            .expect("ranges in start order");
    }
}

fn without_kernels(trace: &Trace) -> Trace {
    Trace {
        kernels: Kernels::default(),
        ..trace.clone()
    }
}

/// The host facts with their loaded launch calls swept before the kernel hull's end is known, as
/// the page does when the file's calls cannot be swept. The page gives the last kernel row's end as
/// a lower bound of the hull's end; the lowest one, the first kernel's start, leaves every call and
/// union piece waiting for the hull's end.
fn swept_ahead(trace: &Trace, cfg: &DetectConfig) -> HostFacts {
    // The first busy row's start: every GPU operation's under the standard profile.
    let first = cfg
        .profile
        .switches()
        .busy_rows(trace)
        .next()
        .map(|k| k.start)
        .expect("kernels");
    let mut facts = HostFacts::new(trace, cfg);
    facts.sweep_loaded_launches(trace, (first, first));
    facts
}

/// `detect_with_kernels(host without kernels, summary)` equals `detect(full trace)`, as JSON,
/// for a summary swept with the windows whole and one fed them as the kernels pass, and with
/// the launch calls swept ahead ([`swept_ahead`]); returns whether the fed summary could be
/// (NVTX in start order).
fn assert_same_reports(trace: &Trace, label: &str) -> bool {
    let mut fed_all = true;
    let cfgs: Vec<DetectConfig> = PROFILES.iter().map(|&p| config(p, label)).collect();
    let host = without_kernels(trace);
    for (cfg, summary) in cfgs.iter().zip(summaries(trace, &cfgs)) {
        let full = detect(trace, cfg).unwrap_or_else(|e| panic!("{label}: detect: {e}"));
        let paged = detect_with_kernels(&host, &summary, cfg)
            .unwrap_or_else(|e| panic!("{label}: detect_with_kernels: {e}"));
        let (a, b) = (
            serde_json::to_string(&full).expect("json"),
            serde_json::to_string(&paged).expect("json"),
        );
        assert_eq!(a, b, "{label} {}", cfg.profile.name());
        let ahead = detect_with_host_facts(&host, &swept_ahead(trace, cfg), &summary, cfg)
            .unwrap_or_else(|e| panic!("{label}: launch calls swept ahead: {e}"));
        let ahead = serde_json::to_string(&ahead).expect("json");
        assert_eq!(a, ahead, "{label} {}: swept ahead", cfg.profile.name());
        let Some((fed, _)) = fed_summary(trace, cfg) else {
            fed_all = false;
            continue;
        };
        let report = detect_with_kernels(&host, &fed, cfg)
            .unwrap_or_else(|e| panic!("{label}: fed summary: {e}"));
        let c = serde_json::to_string(&report).expect("json");
        assert_eq!(a, c, "{label} {}: fed", cfg.profile.name());
    }
    fed_all
}

#[test]
fn summary_path_equals_detect_on_every_scenario_in_both_profiles() {
    let dir = tempfile::tempdir().expect("tempdir");
    for &(scenario, _) in synth::scenarios() {
        let path = dir.path().join(format!("{scenario}.sqlite"));
        synth::generate(scenario, &path, &GenOptions::default())
            .unwrap_or_else(|e| panic!("generate {scenario}: {e}"));
        let trace =
            load_path(&path, LoadOptions::all()).unwrap_or_else(|e| panic!("load {scenario}: {e}"));
        assert!(assert_same_reports(&trace, scenario), "{scenario}: fed");
    }
}

#[test]
fn summary_path_equals_detect_on_every_public_export() {
    let dir = common::public_traces_dir();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("public dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "sqlite"))
        .collect();
    files.sort();
    let mut fed = 0;
    for path in files {
        let label = path.display().to_string();
        let Ok(trace) = load_path(&path, LoadOptions::detect()) else {
            continue;
        };
        if trace.kernels.is_empty() {
            continue;
        }
        fed += usize::from(assert_same_reports(&trace, &label));
    }
    assert!(fed >= 8, "{fed} exports fed");
}

/// The `host-bound` scenario, generated and loaded.
fn host_bound() -> Trace {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = dir.path().join("host-bound.sqlite");
    synth::generate("host-bound", &path, &GenOptions::default()).expect("generate");
    load_path(&path, LoadOptions::all()).expect("load")
}

#[test]
fn thresholds_act_in_assembly_only() {
    let trace = host_bound();
    let host = without_kernels(&trace);
    for profile in PROFILES {
        let plain = config(profile, "t");
        let edited = DetectConfig {
            thresholds: ThresholdOverrides {
                gpu_idle_ratio: Some(0.01),
                launch_overhead_ratio: Some(0.9),
                gpu_utilization: Some(0.99),
                ..ThresholdOverrides::default()
            },
            ..plain.clone()
        };
        let swept = summaries(&trace, &[plain.clone(), edited.clone()]);
        assert_eq!(swept[0], swept[1], "thresholds changed the sweep");
        let reassembled = detect_with_kernels(&host, &swept[0], &edited).expect("assemble");
        let full = detect(&trace, &edited).expect("detect");
        assert_eq!(
            serde_json::to_string(&reassembled).expect("json"),
            serde_json::to_string(&full).expect("json")
        );
        let first = detect_with_kernels(&host, &swept[0], &plain).expect("assemble");
        assert_ne!(first.thresholds, reassembled.thresholds);
    }
}

#[test]
fn a_summary_from_another_profile_or_window_is_refused() {
    let trace = host_bound();
    let standard = config(Profile::Standard, "t");
    let summary = &summaries(&trace, std::slice::from_ref(&standard))[0];
    let skill = config(Profile::TrtllmSkill, "t");
    assert!(detect_with_kernels(&trace, summary, &skill).is_err());
    let windowed = DetectConfig {
        window: Some((0, 1_000)),
        ..standard.clone()
    };
    assert!(detect_with_kernels(&trace, summary, &windowed).is_err());
    let empty = KernelSweep::new(&trace, &standard).finish();
    assert!(detect_with_kernels(&without_kernels(&trace), &empty, &standard).is_err());
}

#[test]
fn a_fed_sweep_holds_as_many_spans_on_a_trace_four_times_longer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let held = |scale: u32| {
        let path = dir.path().join(format!("host-bound-{scale}.sqlite"));
        let opts = GenOptions {
            scale,
            ..GenOptions::default()
        };
        synth::generate("host-bound", &path, &opts).expect("generate");
        let trace = load_path(&path, LoadOptions::all()).expect("load");
        PROFILES.map(|profile| {
            let cfg = config(profile, "host-bound");
            let steps = HostFacts::new(&trace, &cfg).step_counts().steps;
            let (_, most) = fed_summary(&trace, &cfg).expect("NVTX in start order");
            (steps, most)
        })
    };
    let (short, long) = (held(8), held(32));
    for (profile, ((steps, most), (long_steps, long_most))) in
        PROFILES.iter().zip(short.into_iter().zip(long))
    {
        assert_eq!(long_steps, 4 * steps, "{profile:?}");
        // What is held is what one trim interval brings, not what the trace has.
        eprintln!("{profile:?}: {steps} steps, {most} held; {long_steps} steps, {long_most} held");
        assert!(
            long_most <= most + most / 4,
            "{profile:?}: {most} then {long_most}"
        );
        assert!(
            long_most * 8 < long_steps,
            "{profile:?}: {long_most} of {long_steps}"
        );
    }
}
