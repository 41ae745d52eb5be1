"""Two runs compared: every figure of their summaries, its change, and the rules of a
regression gate that fails closed.

`elves compare BASELINE NEW` reads two summary.json files (or report directories), the
earlier first, and lists each figure of each run (the total, every endpoint, queue and
deployment, the ledger) with its change and the rules that watch it (models/thresholds.py says
how to write one, and the defaults). It exits 0 only when the new run is as good as its baseline,
1 when a figure crossed a rule or is missing from the new run, 2 when nothing can be
compared. `spec.baseline` applies the same rules inside a run (`baseline_checks`).

    summaries.py   reading summary.json, leniently, into runs
    figures.py     a run's figures by scope (named in models/figure_table.py); rows side by side
    (the rules, their syntax and defaults: models/thresholds.py, with the spec that writes them)
    comparison.py  judging the rows: the comparison, its outcome, spec.baseline's checks
    text.py        the terminal table, the outcome lines, the HTML section
    history.py     spec.baseline.loadTest: the earlier run picked from the report history
"""

from elves.engine.models.figure_table import Row
from elves.engine.models.thresholds import (DEFAULT_THRESHOLDS, DEFAULTS_HELP, RULES_HELP, CompareError, Threshold,
                                            parse_thresholds)
from elves.engine.results.compare.comparison import (BREACHED, INCOMPARABLE, PASSED, Breach, Comparison,
                                                     baseline_checks, compare, compare_paths, compare_runs)
from elves.engine.results.compare.summaries import known_fields, load_summary, parse_summary, summary_status
from elves.engine.results.compare.text import html_section, text_lines

__all__ = ["BREACHED", "INCOMPARABLE", "PASSED", "Breach", "Comparison", "CompareError", "DEFAULTS_HELP",
           "DEFAULT_THRESHOLDS", "RULES_HELP", "Row", "Threshold", "baseline_checks", "compare", "compare_paths",
           "compare_runs", "html_section", "known_fields", "load_summary", "parse_summary", "parse_thresholds",
           "summary_status", "text_lines"]
