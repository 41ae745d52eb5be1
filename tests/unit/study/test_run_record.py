"""What each case's run.json says about the code it ran: the commit, and whether the checkout
held uncommitted changes. The suite rewrites its own results and page after every case; those
must not make every later case read "with uncommitted changes" (2026-11-27: every case after the
first did), while a changed source file still must."""

from __future__ import annotations

import subprocess
from pathlib import Path

from elves.study.suite import commit, dirty


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True)


def test_the_suites_own_outputs_are_not_uncommitted_code(tmp_path, monkeypatch):
    repo = tmp_path / "checkout"
    results, page = repo / "docs" / "results", repo / "docs" / "results.md"
    results.mkdir(parents=True)
    (repo / "service.py").write_text("RATE = 1\n")
    (results / "case-1a.json").write_text("{}\n")
    page.write_text("# results\n")
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "-m", "start")
    monkeypatch.chdir(repo)
    assert commit() and dirty(results, page) is False

    (results / "case-1a.json").write_text('{"rate": 2}\n')  # what the suite writes after a case
    page.write_text("# results, rewritten\n")
    assert dirty(results, page) is False
    assert dirty() is True  # without naming them, any change counts

    (repo / "service.py").write_text("RATE = 2\n")  # the code the cases run
    assert dirty(results, page) is True


def test_outside_a_checkout_nothing_is_claimed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert commit() == "" and dirty(tmp_path / "results") is None
