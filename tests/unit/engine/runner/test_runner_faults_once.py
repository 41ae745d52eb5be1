"""A fault fires at most once per run and fault index: a try of a kill, a restart, a
pause or an infrastructure restart cut by a blip (the API server answering 503 after the exec was
sent, the supervisor's answer lost) may have happened, so it is never sent again; the run says so.
A scale or a resources change, the same done twice, is tried again until it answers.

The platform is test_runner's FakePlatform (plain data) whose apply_fault acts, then fails.
"""

from __future__ import annotations

from dataclasses import dataclass

from elves.engine.models.status import LoadTestStatus
from elves.engine.results.blips import TransientError
from elves.engine.runner import Context
from runner_testkit import FakeClock, FakePlatform, drive


class AnswerLost(TransientError):
    harness_reason = "KubernetesApiUnavailable"


@dataclass
class LosingAnswers(FakePlatform):
    """Every fault acts (its call recorded), then its first `losses` answers are lost."""

    losses: int = 1

    def apply_fault(self, action, now):
        applied = super().apply_fault(action, now)
        if self.losses:
            self.losses -= 1
            raise AnswerLost("the Kubernetes API server is unavailable: HTTP 503 (the answer was lost)")
        return applied


def run_with(make_loadtest, platform: FakePlatform, fault: dict):
    test = make_loadtest(load={"scenario": "system-mix", "rate": "60/min", "duration": "20s"},
                         faults=[fault], drain={"timeout": "5s"})
    platform.load_states = ["running"] * 40 + ["finished"]
    return drive(Context(test), platform, FakeClock(), LoadTestStatus(), tick=0.5)


def test_a_kill_whose_answer_was_lost_is_never_sent_again(make_loadtest, prometheus_server):
    platform = LosingAnswers(prometheus_server.url)
    status, events = run_with(make_loadtest, platform, {"at": "5s", "killPod": {"deployment": "registry"}})
    assert [a.kind for a in platform.called("fault")] == ["killPod"]  # once, though its try failed
    (fault,) = status.runs[0].faults
    assert "may or may not have taken effect" in fault.message and "fires at most once per run" in fault.message
    assert [e.type for e in events if e.reason == "FaultUncertain"] == ["Warning"]


def test_a_scale_whose_answer_was_lost_is_tried_again_and_recorded_once(make_loadtest, prometheus_server):
    platform = LosingAnswers(prometheus_server.url, losses=2)
    status, _ = run_with(make_loadtest, platform, {"at": "5s", "scale": {"deployment": "ingestor", "replicas": 0}})
    assert [a.replicas for a in platform.called("fault")] == [0, 0, 0]  # scaling to 0 again changes nothing
    (fault,) = status.runs[0].faults
    assert fault.message == "done"
