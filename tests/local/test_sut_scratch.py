"""The ingestor leaves nothing in its scratch directory after a job, done or failed.

No getData body the gateway accepts makes a job fail once its scratch files exist (the
ingestor rejects a bad request before it writes anything), so the failure comes from the
ingestor's own settings, as a LoadTest's `system.env` would set them: an image too big for
the heap it is given. Rendering then fails after the volume was written and read back, on
every delivery, until the ingestor reports the request FAILED.
"""

from sut_helpers import Gateway, unique, wait_jobs_finished, wait_scratch_empty

GOOD = 5
FAILING = 2
ROLLOUT_SECONDS = 300
# 8192 x 8192 RGB pixels need 256 MiB: more than this heap has, while the volume (5 MiB at
# the default 600 gates x 6 sweeps) and Spring fit. Without -XX:+ExitOnOutOfMemoryError the
# ingestor treats the error like any failed job: retried, then FAILED at the delivery limit.
STARVED = {"ELVES_INGESTOR_IMAGE_SIZE": "8192", "JAVA_TOOL_OPTIONS": "-Xmx160m"}


def ingestor_pods(stack) -> set[str]:
    return {pod["pod"] for pod in stack.pods("ingestor")}


def wait_rolled_out(stack) -> None:
    def done() -> bool:
        deployment = stack.supervisor.state()["deployments"]["ingestor"]
        pods = deployment["pods"]
        return (deployment["settled"] and len(pods) == deployment["replicas"]
                and all(p["ready"] and p["generation"] == deployment["generation"] for p in pods))

    stack.wait_for(done, "the ingestor's rolling restart", ROLLOUT_SECONDS)


def test_scratch_is_empty_after_done_and_failed_jobs(exclusive_stack):
    stack = exclusive_stack
    user = unique("sut-scratch")
    good = Gateway(stack, user, unique("sut-scratch-good"))
    for _ in range(GOOD):
        good.request_plot()
    done = wait_jobs_finished(stack, good.test_id, GOOD)
    pods = ingestor_pods(stack)
    assert done["results"] == {"done": GOOD, "failed": 0}, done
    wait_scratch_empty(stack, pods)

    env = stack.supervisor.state()["deployments"]["ingestor"]["env"]
    try:
        stack.supervisor.configure("ingestor", env={**env, **STARVED})
        wait_rolled_out(stack)
        pods |= ingestor_pods(stack)
        failing = Gateway(stack, user, unique("sut-scratch-failing"))
        for _ in range(FAILING):
            failing.request_plot()
        failed = wait_jobs_finished(stack, failing.test_id, FAILING)
        assert failed["results"] == {"done": 0, "failed": FAILING}, failed
        wait_scratch_empty(stack, pods)
    finally:
        stack.supervisor.configure("ingestor", env=env)
        wait_rolled_out(stack)
