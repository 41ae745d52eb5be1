"""The study: its cases run in order (`elves suite`), two runs compared (`elves compare`) and
the page that puts each case's results beside the study's (`elves results-page`).

"Results" in code means what a run measured (elves.engine.models.status.RunResults, a LoadTest's
status.results) and the pages built from them (docs/results/); this package is named for
the study it runs, not for the results it reads."""
