use super::*;

/// The case study's NVTX rows (reference §12.2) and the statuses the rules give.
#[test]
fn case_study_statuses() {
    let b = PerName(vec![
        ("_fetch_new_requests".into(), 36.0),
        ("_update_requests".into(), 413.0),
        ("_sample_async".into(), 1163.0),
        ("_process_requests".into(), 1056.0),
        ("_schedule".into(), 121.0),
    ]);
    let t = PerName(vec![
        ("_fetch_new_requests".into(), 270.0),
        ("broadcast_requests".into(), 250.0),
        ("_update_requests".into(), 723.0),
        ("_sample_async".into(), 720.0),
        ("_process_requests".into(), 390.0),
        ("_schedule".into(), 120.0),
    ]);
    let r = rows(&b, &t);
    let status = |n: &str| r.iter().find(|x| x.name == n).map(|x| x.status);
    assert_eq!(status("_fetch_new_requests"), Some(Status::Regression));
    assert_eq!(status("broadcast_requests"), Some(Status::New));
    assert_eq!(status("_update_requests"), Some(Status::Regression));
    assert_eq!(status("_sample_async"), Some(Status::Improved));
    assert_eq!(status("_process_requests"), Some(Status::Improved));
    assert_eq!(status("_schedule"), Some(Status::Unchanged));
    let order: Vec<&str> = r.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        order[0], "_process_requests",
        "largest |Δ| first: {order:?}"
    );
    let grew = regressions(&r);
    let top: Vec<&str> = grew.iter().map(|x| x.name.as_str()).collect();
    assert_eq!(
        top,
        [
            "_update_requests",
            "broadcast_requests",
            "_fetch_new_requests"
        ]
    );
}

fn op(name: &str, us: f64, own: f64, members: &[&str]) -> OpRow {
    OpRow {
        name: name.into(),
        us_per_step: us,
        self_us_per_step: Some(own),
        members: members
            .iter()
            .map(|m| super::super::breakdown::MemberRow {
                name: (*m).into(),
                us_per_step: us / members.len() as f64,
                calls: 1,
            })
            .collect(),
        ..OpRow::default()
    }
}

fn compared(b: &[OpRow], t: &[OpRow]) -> Vec<OpDelta> {
    let per = |ops: &[OpRow]| {
        PerName(
            ops.iter()
                .map(|o| (o.name.clone(), o.us_per_step))
                .collect(),
        )
    };
    with_tree(rows(&per(b), &per(t)), b, t)
}

#[test]
fn coverage_names_other_instances_and_work_one_trace_alone_has() {
    let b = [
        op(
            "fwd (blocks.*)",
            40.0,
            40.0,
            &["fwd (blocks.1)", "fwd (blocks.2)"],
        ),
        op("step", 60.0, 60.0, &[]),
    ];
    let t = [
        op(
            "fwd (blocks.*)",
            40.0,
            40.0,
            &["fwd (blocks.2)", "fwd (blocks.3)"],
        ),
        op("step", 60.0, 60.0, &[]),
        // Another phase: 40 of the target's 140 µs of self time (29 %).
        op("backward", 40.0, 40.0, &[]),
    ];
    let rows = compared(&b, &t);
    let fwd = rows.iter().find(|r| r.name == "fwd (blocks.*)").cloned();
    let fwd = fwd.unwrap_or_else(|| rows[0].clone());
    assert_eq!(fwd.status, Status::Unchanged);
    assert_eq!(
        fwd.instances,
        Some(Instances {
            baseline: 2,
            target: 2,
            common: 1
        })
    );
    let warnings = coverage(&rows);
    assert_eq!(warnings.len(), 2, "{warnings:?}");
    assert!(
        warnings[0].contains("fwd (blocks.*) (2 in the baseline, 2 in the target, 1 in both)"),
        "{warnings:?}"
    );
    assert!(warnings[1].starts_with("29% of the target's NVTX self time per step is in 1 op the other trace lacks (backward)"), "{warnings:?}");
    // Below the share, a new op is a change, not another phase.
    let t_small = [t[0].clone(), t[1].clone(), op("backward", 10.0, 10.0, &[])];
    assert_eq!(coverage(&compared(&b, &t_small)).len(), 1);
    // A parent whose child grew keeps its status.
    let (pb, pt) = ([op("to", 100.0, 20.0, &[])], [op("to", 180.0, 20.0, &[])]);
    let r = &compared(&pb, &pt)[0];
    assert_eq!((r.status, r.self_delta_us), (Status::Unchanged, Some(0.0)));
}

#[test]
fn status_boundaries_are_strict() {
    assert_eq!(Status::of(100.0, 150.0), Status::Unchanged);
    assert_eq!(Status::of(100.0, 150.0001), Status::Regression);
    assert_eq!(Status::of(100.0, 70.0), Status::Unchanged);
    assert_eq!(Status::of(100.0, 69.999), Status::Improved);
    assert_eq!(Status::of(0.0, 5.0), Status::New);
    assert_eq!(Status::of(5.0, 0.0), Status::Removed);
}

#[test]
fn percent_of_a_zero_baseline() {
    let skill = Delta::new(Some(0.0), Some(3.0), Profile::TrtllmSkill);
    assert_eq!((skill.delta, skill.delta_pct), (Some(3.0), Some(0.0)));
    let std = Delta::new(Some(0.0), Some(3.0), Profile::Standard);
    assert_eq!(std.delta_pct, None);
    assert_eq!(
        Delta::new(Some(4.0), Some(5.0), Profile::Standard).delta_pct,
        Some(25.0)
    );
    assert_eq!(Delta::new(None, Some(5.0), Profile::Standard).delta, None);
}

#[test]
fn standard_cause_splits_step_growth_into_launches_and_gpu() {
    assert_eq!(
        standard_cause(800.0, 150.0, 100.0, 30.0),
        "inter-step host overhead"
    );
    assert_eq!(standard_cause(10.0, 150.0, 100.0, 30.0), "launch count");
    assert_eq!(standard_cause(10.0, 150.0, 5.0, 140.0), "GPU execution");
    assert_eq!(
        standard_cause(150.0, 150.0, 0.0, 0.0),
        "launch count",
        "a tie is not the gap"
    );
}

#[test]
fn reference_conclusion_needs_the_gap_to_grow_strictly_more() {
    assert_eq!(
        reference_conclusion(10.0, 5.0).0,
        Some("inter-step host overhead")
    );
    assert_eq!(reference_conclusion(5.0, 5.0).0, Some("step execution"));
}
