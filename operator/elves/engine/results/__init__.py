"""The results-and-judgement floor: reading what a run did and judging it.

prometheus and promql (the queries), ledger, sql_wire, sql_count and target_ledger (the counts
ledger), analysis, histograms, blips, generator_limit, autoscaling_figures and warmup (figures
from the series), verdict and drop_blame (the objectives judged), compare/ (the regression
gate), report/ (summary.json, series.json, report.html), format and console (figures for
people). It imports only the planning and models floors below it.
"""
