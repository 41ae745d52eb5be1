"""The engine's commands as a person types them: validate, crd, builtin-system, scenarios, and run's bad-input path."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from elves.cli import build_parser
from elves.cli import main as elves_main
from elves.engine.models.builtin_system import builtin_system_yaml
from elves.engine.models.crd import SYSTEM_UNDER_TEST, crd_yaml
from elves.engine.models.scenarios import facts_module

REPO = Path(__file__).resolve().parents[3]


def test_validate_names_the_bad_field_and_exits_1(tmp_path, make_document, capsys):
    good = tmp_path / "good.yaml"
    good.write_text(yaml.safe_dump(make_document()))
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(make_document(load={"scenario": "system-mix", "rate": "lots", "duration": "1m"})))
    assert elves_main(["validate", str(good)]) == 0
    assert capsys.readouterr().out == f"ok {good} (unit)\n"
    assert elves_main(["validate", str(good), str(bad)]) == 1
    err = capsys.readouterr().err
    assert f"{bad}: invalid LoadTest" in err and "spec.load.rate: 'lots' is not a rate" in err


def test_validate_checks_a_loadtest_against_the_system_under_test_of_the_same_file(tmp_path, capsys):
    example = REPO / "loadtests" / "examples" / "own-system-sweep" / "orders-workers.yaml"
    assert elves_main(["validate", str(example)]) == 0
    capsys.readouterr()
    documents = list(yaml.safe_load_all(example.read_text()))
    documents[1]["spec"]["sweep"]["system.env.orders-api.WORKER_CONCURRENCY"] = [1, 2]
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump_all(documents))
    assert elves_main(["validate", str(bad)]) == 1
    assert capsys.readouterr().err == (
        f"{bad}: invalid LoadTest\n  spec.sweep.system.env.orders-api.WORKER_CONCURRENCY: WORKER_CONCURRENCY is not a"
        " setting SystemUnderTest 'orders' offers for orders-api (its settings.env: none)\n")


def test_run_with_a_bad_spec_exits_2_naming_the_field_before_touching_anything(tmp_path, make_document, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text(yaml.safe_dump(make_document(faults=[{"at": "1m", "killPod": {"deployment": "database"}}])))
    assert elves_main(["run", str(bad), "--reports", str(tmp_path / "reports")]) == 2
    assert "spec.faults[0].killPod.deployment" in capsys.readouterr().err
    assert not (tmp_path / "reports").exists()


def test_run_of_a_missing_file_exits_2(tmp_path, capsys):
    assert elves_main(["run", str(tmp_path / "nope.yaml")]) == 2
    assert "cannot read" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "generated"), [
    (["crd"], crd_yaml), (["crd", "--kind", "SystemUnderTest"], lambda: crd_yaml(SYSTEM_UNDER_TEST)),
    (["builtin-system"], builtin_system_yaml), (["scenarios"], facts_module)])
def test_a_generator_prints_or_writes_its_file(tmp_path, capsys, command, generated):
    assert elves_main(command) == 0
    assert capsys.readouterr().out == generated()
    target = tmp_path / "generated"
    assert elves_main([*command, "--output", str(target)]) == 0
    assert target.read_text() == generated()


def test_the_old_profile_command_still_prints_the_builtin_system_and_names_its_new_name(capsys):
    assert elves_main(["profile"]) == 0
    printed = capsys.readouterr()
    assert printed.out == builtin_system_yaml()
    assert "`elves profile` is now `elves builtin-system`" in printed.err
    assert "{report," in build_parser().format_help() and " profile" not in build_parser().format_help(), \
        "the old name is hidden from --help"


def test_the_verdict_line_of_an_error_quotes_k6s_own_last_error():
    from elves.engine.results.console import headline

    reason = ('k6 failed for local/t/0: k6 exited with code 108 (the script called test.abort()): p(90)=4.99s\n'
              'time="x" level=error msg="test aborted: the gateway at http://127.0.0.1:8080 is not reachable"\n'
              'time="y" level=warning msg="Request Failed"')
    assert headline(reason) == ("k6 failed for local/t/0: k6 exited with code 108 (the script called test.abort()):"
                                " test aborted: the gateway at http://127.0.0.1:8080 is not reachable")
    assert headline("Prometheus at http://x is unreachable: Connection refused\nmore") == \
        "Prometheus at http://x is unreachable: Connection refused"
