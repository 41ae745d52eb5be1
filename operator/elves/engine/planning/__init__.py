"""The planning floor: what a LoadTest asks for, worked out before anything runs.

plan (one RunPlan per run: its k6 scenarios, faults, warm-up), platform (the Platform protocol
every platform implements, and the typed things the engine hands it), k6 (the runner's
variables and exit codes), timeouts (how long each wait may last), credentials and tokens
(what a run's runners hold). It imports only the models floor below it.
"""
