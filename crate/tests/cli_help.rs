//! Every subcommand's `--help` ends with its exit codes and a one-line example, and names no
//! internal document.

use crate::common;

use common::nsys_lens;

const SUBCOMMANDS: [&str; 7] = [
    "detect", "analyze", "drill", "ranks", "report", "lprof", "gen",
];

#[test]
fn every_subcommand_help_has_an_example_and_its_exit_codes_and_no_internal_reference() {
    let top = nsys_lens(["--help"]);
    let top = String::from_utf8_lossy(&top.stdout).into_owned();
    for command in SUBCOMMANDS {
        assert!(top.contains(command), "{command} listed in:\n{top}");
        let out = nsys_lens([command, "--help"]);
        assert_eq!(out.status.code(), Some(0), "{command} --help");
        let help = String::from_utf8_lossy(&out.stdout);
        let example = help
            .lines()
            .find(|l| l.starts_with("Example: "))
            .unwrap_or_else(|| panic!("{command} --help has no example:\n{help}"));
        assert!(
            example.starts_with(&format!("Example: nsys-lens {command} ")),
            "{command}: {example}"
        );
        assert!(help.contains("Exit codes: 0 "), "{command}:\n{help}");
        for internal in ["spec §", "reference §", "§", "docs/", "spec.md"] {
            assert!(
                !help.contains(internal) && !top.contains(internal),
                "{command} --help names {internal:?}:\n{help}"
            );
        }
    }
    // `ranks` shows its map and reduce too.
    let help = nsys_lens(["ranks", "--help"]);
    let help = String::from_utf8_lossy(&help.stdout);
    for step in ["  nsys-lens ranks --summary ", "  nsys-lens ranks --merge "] {
        assert!(help.contains(step), "ranks: {step:?} in\n{help}");
    }
    let gates = [
        ("detect", "1 the run is bounded by a --fail-on kind"),
        ("analyze", "1 the target regressed"),
        (
            "analyze",
            "4 --fail-on-regression was given traces that cannot be compared",
        ),
    ];
    for (command, code) in gates {
        let help = nsys_lens([command, "--help"]);
        let help = String::from_utf8_lossy(&help.stdout);
        assert!(help.contains(code), "{command}: {code:?} in\n{help}");
    }
}
