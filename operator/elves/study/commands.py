"""The study's subcommands: `elves compare`, `elves suite`, `elves results-page`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from elves.engine.results.compare import DEFAULTS_HELP, RULES_HELP
from elves.engine.results.compare.plans import ALLOW_HELP
from elves.engine.results.machine_state import SATURATED_LOAD_PER_CORE

DEFAULT_STUDY = "loadtests/study/study.yaml"
DEFAULT_RESULTS = "docs/results"


def register(subcommands) -> None:
    """Add this part's subcommands; each sets `handler` to a function(args) -> exit code."""
    compare = subcommands.add_parser(
        "compare", help="compare two runs' summary.json: exit 0 only when the new run is as good as its baseline",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compare BASELINE (the earlier run) with NEW: every figure, its change and the rules that watch it.\n"
                    "Like with like: the two runs must have asked the same (load, system, target, faults, platform,\n"
                    "machine) unless --allow-plan-change names what may differ.\n"
                    "Exit 0 when NEW is as good as BASELINE by every rule; 1 when a figure crossed a rule or is\n"
                    "missing from NEW (the baseline has it, NEW lacks it or has NaN), or NEW ended Failed; 2 when\n"
                    "nothing can be compared, each reason named: plans that differ, a run that ended in Error or was\n"
                    "limited by its load generator, a run from a busy machine or one saturated even by its own stack\n"
                    f"(a load average over {SATURATED_LOAD_PER_CORE:g} per core; the run.json beside its summary says"
                    " so, read as the results\n"
                    "page reads it; no flag lets it through), no run with results, another LoadTest shape, a rule\n"
                    "that watches no figure; or a file is unusable.",
        epilog=RULES_HELP + "\n" + DEFAULTS_HELP)
    compare.add_argument("baseline", metavar="BASELINE", help="summary.json or a report directory (the earlier run)")
    compare.add_argument("new", metavar="NEW", help="summary.json or a report directory (the later run)")
    compare.add_argument("--fail-on", metavar="RULES", default=None,
                         help="comma-separated rules on top of the defaults below, e.g. p99:+25%%,restarts:off")
    compare.add_argument("--allow-plan-change", metavar="PATHS", default=None,
                         help="the change is the point: " + ALLOW_HELP.replace("%", "%%")
                              + ". The allowed differences are listed, the figures judged as usual")
    compare.add_argument("--html", metavar="FILE", help="also write the comparison as an HTML section to FILE")
    compare.set_defaults(handler=_compare)

    suite = subcommands.add_parser(
        "suite", help="run a set of LoadTests in order (local mode) and write the results page",
        description="Run the cases of DIR/study.yaml in order (or every *.yaml in DIR), keep every report, "
                    "copy each summary.json under --results and rebuild the results page after each case.")
    suite.add_argument("directory", metavar="DIR", help="a directory with study.yaml, or with LoadTest files")
    suite.add_argument("--only", metavar="IDS", help="comma-separated case ids to run (default: all)")
    suite.add_argument("--results", metavar="DIR", default=DEFAULT_RESULTS,
                       help=f"where summaries and the machine go (default: {DEFAULT_RESULTS})")
    suite.add_argument("--reports", metavar="DIR", default="reports/suite", help="where full reports go")
    suite.add_argument("--page", metavar="FILE", default="docs/results.md", help="the results page (default: docs/results.md)")
    suite.add_argument("--quiet-wait", metavar="DURATION", default="10m",
                       help="how long a case waits for a quiet machine before it runs anyway, marked busy"
                            " (default: 10m; 0s: measure, do not wait)")
    suite.set_defaults(handler=_suite)

    page = subcommands.add_parser(
        "results-page", help="rebuild docs/results.md and .html from committed summaries",
        description="Write the results page from DIR/<case>/summary.json and the study's data, without running anything.")
    page.add_argument("directory", metavar="DIR", nargs="?", default=DEFAULT_RESULTS)
    page.add_argument("--study", metavar="FILE", default=DEFAULT_STUDY, help=f"the study's cases (default: {DEFAULT_STUDY})")
    page.add_argument("--page", metavar="FILE", default="docs/results.md", help="the Markdown page; its .html twin beside it")
    page.set_defaults(handler=_page)


def _compare(args: argparse.Namespace) -> int:
    from elves.engine.results.compare import CompareError, compare_paths, html_section, text_lines

    try:
        comparison = compare_paths(Path(args.baseline), Path(args.new), args.fail_on, args.allow_plan_change)
    except CompareError as exc:
        print(f"elves compare: {exc}", file=sys.stderr)
        return 2
    print("\n".join(text_lines(comparison)))
    if args.html:
        Path(args.html).write_text(html_section(comparison) + "\n", encoding="utf-8")
    return comparison.outcome


def _suite(args: argparse.Namespace) -> int:
    from elves.engine.models.units import parse_duration
    from elves.study.suite import run_suite

    only = [s.strip() for s in args.only.split(",")] if args.only else None
    try:
        quiet_wait = parse_duration(args.quiet_wait)
    except ValueError as exc:
        print(f"elves suite: --quiet-wait: {exc}", file=sys.stderr)
        return 2
    return run_suite(Path(args.directory), Path(args.results), Path(args.reports), Path(args.page), only,
                     quiet_wait=quiet_wait)


def _page(args: argparse.Namespace) -> int:
    from elves.study.page import write_page
    from elves.study.cases import StudyError

    try:
        paths = write_page(Path(args.directory), Path(args.study), Path(args.page))
    except StudyError as exc:
        print(f"elves results-page: {exc}", file=sys.stderr)
        return 2
    print("wrote " + ", ".join(str(p) for p in paths))
    return 0
