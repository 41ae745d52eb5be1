"""The suite's results: running the study's cases in order, comparing runs, the results page."""
