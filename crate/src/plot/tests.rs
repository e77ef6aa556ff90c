use super::*;
use crate::timeline::LaneView;

fn lane(busy: Vec<f32>, idle: Vec<bool>) -> LaneView {
    let n = busy.len();
    let columns = crate::timeline::columns::Columns {
        busy,
        count: vec![1; n],
        top: vec![-1; n],
    };
    LaneView {
        device: Some(0),
        stream: Some(7),
        idle,
        ..LaneView::of_columns("GPU 0 · stream 7".into(), "kernels", columns)
    }
}

#[test]
fn a_long_lane_label_keeps_what_the_lane_holds_and_shortens_the_ids() {
    let width = f64::from(TIMELINE_LAYOUT.label_width_px) - 10.0;
    assert_eq!(
        fit_lane_label("GPU 0 · stream 7", width),
        ("GPU 0 · stream 7".to_string(), 12.0)
    );
    let (text, size) = fit_lane_label("▾ 227916/227950 CUDA API", width);
    assert_eq!(size, 10.0);
    assert!(text_width(&text, size) <= width, "{text}");
    let (text, size) = fit_lane_label("▾ 2279161234/2279501234 CUDA API", width);
    assert!(text.ends_with("… CUDA API"), "{text}");
    assert!(text.starts_with("▾ 2279"), "{text}");
    assert!(text_width(&text, size) <= width, "{text}");
}

#[test]
fn histogram_draws_nine_bars_with_labels() {
    let trace = crate::model::Trace::default();
    let mut hist = crate::drill::gaps::idle_gap_histogram(&trace, None);
    hist.buckets[2].count = 4;
    hist.buckets[2].total_us = 30.0;
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (420, 240)).into_drawing_area();
        draw_gap_histogram(&root, &hist).expect("draw");
    }
    assert_eq!(
        svg.matches("<rect").count(),
        1 + 9,
        "background + one bar per bucket"
    );
    assert!(svg.contains("500 µs–1 ms"), "{svg}");
    assert!(
        svg.lines().any(|l| l.trim() == "4"),
        "the count of the populated bucket: {svg}"
    );
}

#[test]
fn runs_merge_equal_neighbours() {
    assert_eq!(
        runs(&[1, 1, 2, 2, 2, 1], |&v| v),
        vec![(0, 2, 1), (2, 5, 2), (5, 6, 1)]
    );
    assert!(runs::<u8, u8>(&[], |&v| v).is_empty());
}

#[test]
fn timeline_draws_one_rectangle_per_run() {
    let view = TimelineView {
        start_ns: 0,
        end_ns: 1_000,
        columns: 6,
        lanes: vec![lane(
            vec![0.0, 1.0, 1.0, 0.5, 0.0, 0.0],
            vec![true, false, false, false, true, true],
        )],
        names: vec![],
        classes: vec![],
        origin_ns: 0,
        range_label: String::new(),
    };
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (200, timeline_height(&view))).into_drawing_area();
        draw_timeline(&root, &view).expect("draw");
    }
    // background lane + 2 idle runs + 2 busy runs (full, half) = 5 lane rectangles + canvas fill.
    assert_eq!(svg.matches("<rect").count(), 6, "{svg}");
    assert!(svg.contains("GPU 0 · stream 7"));
}

#[test]
fn kernels_drawn_one_by_one_carry_their_names_and_the_arrow_its_head() {
    let mut kernels = lane(vec![1.0; 400], vec![false; 400]);
    kernels.items = vec![
        Item {
            start_ns: 0,
            end_ns: 600,
            name: 0,
            depth: 0,
        },
        Item {
            start_ns: 700,
            end_ns: 720,
            name: 1,
            depth: 0,
        },
    ];
    let mut api = lane(vec![0.0; 400], vec![false; 400]);
    api.kind = "api".into();
    api.device = None;
    api.items = vec![Item {
        start_ns: 0,
        end_ns: 100,
        name: 2,
        depth: 0,
    }];
    let view = TimelineView {
        start_ns: 0,
        end_ns: 1_000,
        columns: 400,
        lanes: vec![api, kernels],
        names: vec![
            "ampere_sgemm_128x64_tn_with_a_long_tail_of_template_arguments".into(),
            "short".into(),
            "cudaLaunchKernel".into(),
        ],
        classes: vec!["gemm".into(), "other".into(), "other".into()],
        origin_ns: 0,
        range_label: String::new(),
    };
    let arrow = Arrow {
        from_lane: 0,
        from_ns: 0,
        to_lane: 1,
        to_ns: 0,
    };
    let mut svg = String::new();
    {
        let root =
            SVGBackend::with_string(&mut svg, (560, timeline_height(&view))).into_drawing_area();
        draw_timeline_with(&root, &view, Some(&arrow), &[]).expect("draw");
    }
    // 240 px wide at 11 px (6.16 px a character): 37 characters, the last one "…"; the
    // 8 px kernel has no room for a name; the 40 px call keeps 5.
    let texts: Vec<&str> = svg.lines().filter(|l| !l.starts_with('<')).collect();
    assert!(
        texts.contains(&"ampere_sgemm_128x64_tn_with_a_long_t…"),
        "{texts:?}"
    );
    assert!(texts.contains(&"cuda…"), "{texts:?}");
    assert!(!texts.iter().any(|t| t.starts_with("sho")), "{texts:?}");
    assert_eq!(svg.matches("<circle").count(), 1, "the arrow's tail");
    let strokes = svg.matches("stroke=\"#111827\" stroke-width=\"2\"").count();
    assert_eq!(strokes, 3, "shaft and two strokes of the head: {svg}");
}

#[test]
fn nested_nvtx_ranges_are_named_in_their_depth_rows() {
    let mut nvtx = lane(vec![1.0; 600], vec![false; 600]);
    nvtx.kind = "nvtx".into();
    nvtx.device = None;
    nvtx.depths = 3;
    let item = |start_ns, end_ns, name, depth| Item {
        start_ns,
        end_ns,
        name,
        depth,
    };
    nvtx.items = vec![
        item(0, 1_000, 0, 0),
        item(100, 900, 1, 1),
        item(200, 800, 2, 2),
    ];
    let kernels = lane(vec![1.0; 600], vec![false; 600]);
    let view = TimelineView {
        start_ns: 0,
        end_ns: 1_000,
        columns: 600,
        lanes: vec![nvtx, kernels],
        names: vec![
            "aten::reshape".into(),
            "aten::clone".into(),
            "aten::copy_".into(),
        ],
        classes: vec!["other".into(); 3],
        origin_ns: 0,
        range_label: String::new(),
    };
    let layout = lane_layout(&view);
    let l = TIMELINE_LAYOUT;
    // Three named rows, then the kernel lane below them.
    let rows: Vec<(u32, u32)> = layout.lanes[0]
        .rows
        .iter()
        .map(|r| (r.top_px, r.height_px))
        .collect();
    let d = l.depth_row_px;
    assert_eq!(rows, vec![(24, d), (24 + d, d), (24 + 2 * d, d)]);
    assert_eq!(layout.lanes[1].top_px, 24 + 3 * d + l.lane_gap_px);
    assert_eq!(layout.height_px, layout.lanes[1].top_px + 24 + 4);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, layout.height_px)).into_drawing_area();
        draw_timeline(&root, &view).expect("draw");
    }
    let texts: Vec<&str> = svg.lines().filter(|l| !l.starts_with('<')).collect();
    for name in ["aten::reshape", "aten::clone", "aten::copy_"] {
        assert!(texts.contains(&name), "{name}: {texts:?}");
    }
    // The depth-2 range's box starts at its row's top, below its parents' rows.
    let top = 24 + 2 * d;
    let x = l.label_width_px + 120;
    assert!(
        svg.contains(&format!("<rect x=\"{x}\" y=\"{top}\"")),
        "a box at ({x}, {top}): {svg}"
    );
}

#[test]
fn a_crowded_nvtx_lane_shades_each_depth_row_from_its_own_columns() {
    // Three depth rows over 600 columns: row 0 busy in the first half, row 1 in the first
    // quarter, row 2 nowhere; the lane's overall busy (every column) is not drawn.
    let mut nvtx = lane(vec![1.0; 600], vec![false; 600]);
    nvtx.kind = "nvtx".into();
    nvtx.depths = 3;
    let digits = |busy: usize| "9".repeat(busy) + &"0".repeat(600 - busy);
    nvtx.depth_busy = vec![digits(300), digits(150), digits(0)];
    let view = TimelineView {
        start_ns: 0,
        end_ns: 1_000,
        columns: 600,
        lanes: vec![nvtx],
        names: Vec::new(),
        classes: Vec::new(),
        origin_ns: 0,
        range_label: String::new(),
    };
    let layout = lane_layout(&view);
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (760, layout.height_px)).into_drawing_area();
        draw_timeline(&root, &view).expect("draw");
    }
    let (x0, d) = (TIMELINE_LAYOUT.label_width_px, TIMELINE_LAYOUT.depth_row_px);
    let rects: Vec<&str> = svg.lines().filter(|l| l.starts_with("<rect")).collect();
    let filled = |y: u32, width: u32| {
        let at = format!(
            "<rect x=\"{x0}\" y=\"{y}\" width=\"{width}\" height=\"{}\"",
            d - 1
        );
        rects.iter().any(|r| r.starts_with(&at))
    };
    assert!(filled(24, 300), "row 0 over half the columns: {rects:?}");
    assert!(filled(24 + d, 150), "row 1 over a quarter: {rects:?}");
    let whole = format!(
        "<rect x=\"{x0}\" y=\"24\" width=\"600\" height=\"{}\"",
        3 * d
    );
    let busy_fill = format!("fill=\"#{:02X}{:02X}{:02X}\"", NVTX.0, NVTX.1, NVTX.2);
    assert!(
        !rects
            .iter()
            .any(|r| r.starts_with(&whole) && r.contains(&busy_fill)),
        "no block over the whole lane: {rects:?}"
    );
    assert!(
        !rects
            .iter()
            .any(|r| r.contains(&format!("y=\"{}\"", 24 + 2 * d))),
        "row 2 empty: {rects:?}"
    );
}
