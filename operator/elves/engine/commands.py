"""The engine's subcommands: `elves report`, `elves crd`, `elves builtin-system`, `elves scenarios`, `elves validate`
(`elves run` needs a platform: elves.local.commands registers it)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Callable

from elves.constants import KIND, SUT_KIND
from elves.engine.models.errors import SpecError
from elves.engine.models.loadtest import load_resources


def register(subcommands) -> None:
    """Add this part's subcommands; each sets `handler` to a function(args) -> exit code."""
    report = subcommands.add_parser("report", help="re-render a report directory from its summary.json",
                                    description="Re-render report.html from summary.json and series.json in DIR.")
    report.add_argument("directory", metavar="DIR")
    report.set_defaults(handler=_report)

    crd = subcommands.add_parser("crd", help="print a CRD (LoadTest, SystemUnderTest) generated from the models",
                                 description="Generate the LoadTest or SystemUnderTest CustomResourceDefinition from"
                                             " the models (the chart ships both in charts/elves/crds/).")
    crd.add_argument("--kind", choices=(KIND, SUT_KIND), default=KIND,
                     help="which resource's CRD (default: LoadTest)")
    crd.add_argument("--output", metavar="FILE", help="write it to FILE instead of standard output")
    crd.set_defaults(handler=_crd)

    builtin = subcommands.add_parser(
        "builtin-system", help="print the built-in SystemUnderTest (Elves' own system) the chart ships",
        description="Generate charts/elves/files/system-under-test.yaml from elves.engine.models.target.")
    builtin.add_argument("--output", metavar="FILE", help="write it to FILE instead of standard output")
    builtin.set_defaults(handler=_builtin_system)

    facts = subcommands.add_parser(
        "scenarios", help="print the built-in scenarios' facts the k6 scripts read",
        description="Generate loadtests/lib/scenario-facts.js from elves.engine.models.scenarios.")
    facts.add_argument("--output", metavar="FILE", help="write it to FILE instead of standard output")
    facts.set_defaults(handler=_scenarios)

    validate = subcommands.add_parser("validate", help="check LoadTest and SystemUnderTest files against the models",
                                      description="Validate LoadTest and SystemUnderTest files; exit 1 when any is"
                                                  " invalid.")
    validate.add_argument("files", nargs="+", metavar="FILE")
    validate.set_defaults(handler=_validate)


def _generated(args: argparse.Namespace, text: Callable[[], str], write: Callable[[Path], Path]) -> int:
    """A generated file to standard output, or written to --output."""
    if args.output:
        print(f"wrote {write(Path(args.output))}")
    else:
        sys.stdout.write(text())
    return 0


def _crd(args: argparse.Namespace) -> int:
    from elves.engine.models.crd import RESOURCES, crd_yaml, write_crd

    resource = next(r for r in RESOURCES if r.kind == args.kind)
    return _generated(args, lambda: crd_yaml(resource), lambda path: write_crd(path, resource))


def _builtin_system(args: argparse.Namespace) -> int:
    from elves.engine.models.builtin_system import builtin_system_yaml, write_builtin_system

    return _generated(args, builtin_system_yaml, write_builtin_system)


def _scenarios(args: argparse.Namespace) -> int:
    from elves.engine.models.scenarios import facts_module, write_facts

    return _generated(args, facts_module, write_facts)


def _validate(args: argparse.Namespace) -> int:
    failed = 0
    for path in args.files:
        try:
            tests = load_resources(path)
        except SpecError as exc:
            failed += 1
            print(exc, file=sys.stderr)
            continue
        if problems := _target_problems(tests):
            failed += 1
            print(f"{path}: invalid LoadTest\n" + "\n".join(f"  {p}" for p in problems), file=sys.stderr)
            continue
        names = ", ".join(t.name for t in tests)
        print(f"ok {path} ({names})")
    return 1 if failed else 0


def _target_problems(resources: list) -> list[str]:
    """What the LoadTests of a file ask of a SystemUnderTest the same file holds that it does not
    offer (workloads, settings), as the operator refuses it (elves.engine.planning.target_scope)."""
    from elves.engine.models.loadtest import LoadTest
    from elves.engine.planning.target import Target
    from elves.engine.planning.target_scope import workload_problems

    systems = {r.name: r for r in resources if not isinstance(r, LoadTest)}
    return [problem for test in resources if isinstance(test, LoadTest) and test.spec.target is not None
            and (system := systems.get(test.spec.system_under_test)) is not None
            for problem in workload_problems(test.spec, Target.other("", system.spec),
                                             f"SystemUnderTest {system.name!r}")]


def _report(args: argparse.Namespace) -> int:
    from elves.engine.results.report import rerender

    try:
        path = rerender(Path(args.directory))
    except (OSError, ValueError) as exc:
        print(f"elves report: {exc}", file=sys.stderr)
        return 2  # a harness error, as `elves run` reports one
    print(f"report: {path}")
    return 0
