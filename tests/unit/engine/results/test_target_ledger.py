"""A SystemUnderTest's counts ledger through a real Prometheus: accepted as k6's 2xx
answers of an endpoint tag or the target's PromQL, persisted by the target's PromQL, both scoped
to the run's test id by $TEST_ID; lost and surplus; the drain waiting until persisted catches up;
and the verdict that a ledger with nothing accepted could not be checked (either kind). Persisted
by SQL too, against a real PostgreSQL: waited for by the drain, checked before the
load, and a database that fails ends the test in Error, never in a verdict."""

from __future__ import annotations

import socket
import time

import pytest

from elves.engine.models.loadtest import parse_loadtest
from elves.engine.models.objectives import Objective
from elves.engine.models.status import Ledger, LoadTestStatus, RunResults, Window
from elves.engine.models.target import Queues, parse_system_under_test
from elves.engine.planning.platform import Readiness
from elves.engine.planning.target import Target
from elves.engine.results.analysis import RunWindow, queue_results
from elves.engine.results.console import closing_tables
from elves.engine.results.prometheus import Prometheus
from elves.engine.results.report import write_report
from elves.engine.results.target_ledger import counts_complete, for_test, read_counts
from elves.engine.results.verdict import evaluate
from elves.engine.runner import Context, step
from engine_testkit import PrometheusServer, backfill
from foreign_system import foreign_system
from postgres_server import PostgresServer
from runner_testkit import FakeClock, FakePlatform, harness_error

NAMESPACE = "shop"
BASE = (int(time.time()) - 3 * 3600) // 60 * 60  # the history's start, well inside Prometheus's lookback
SPAN = 1800  # seconds of history, every 5 s
CAUGHT_UP = BASE + 120  # when the persisted count of ORDERS reaches the accepted one
ACCEPTED = 40
PERSISTED = 'sum(orders_saved_total{test_id="$TEST_ID"})'
ORDERS, LOSSY, TWICE, EMPTY, OTHER = (f"{NAMESPACE}/{name}/0" for name in ("orders", "lossy", "twice", "empty", "other"))
K6 = 'k6_http_reqs_total{{testid="{tid}",endpoint="{endpoint}",status="{status}",expected_response="{ok}"}}'


def history() -> list[tuple[str, float, float]]:
    """Each test id's k6 answers and the system's counters, constant except ORDERS's persisted
    count, which lags until CAUGHT_UP; OTHER's far larger figures must never be counted."""
    samples = []
    for t in range(BASE, BASE + SPAN + 1, 5):
        for tid in (ORDERS, LOSSY, TWICE):
            samples.append((K6.format(tid=tid, endpoint="placeOrder", status="201", ok="true"), ACCEPTED, t))
            samples.append((K6.format(tid=tid, endpoint="getOrder", status="200", ok="true"), 7, t))
            samples.append((f'orders_accepted_total{{test_id="{tid}"}}', ACCEPTED, t))
        samples.append((K6.format(tid=EMPTY, endpoint="placeOrder", status="503", ok="false"), 12, t))
        samples.append((K6.format(tid=OTHER, endpoint="placeOrder", status="201", ok="true"), 999, t))
        samples.append((f'orders_accepted_total{{test_id="{OTHER}"}}', 999, t))
        samples.append((f'orders_saved_total{{test_id="{OTHER}",pod="orders-worker-0"}}', 5000, t))
        # Persisted, in two worker pods' series that the target's PromQL sums.
        samples.append((f'orders_saved_total{{test_id="{ORDERS}",pod="orders-worker-0"}}', 5 if t < CAUGHT_UP else 20, t))
        samples.append((f'orders_saved_total{{test_id="{ORDERS}",pod="orders-worker-1"}}', 5 if t < CAUGHT_UP else 20, t))
        samples.append((f'orders_saved_total{{test_id="{LOSSY}",pod="orders-worker-0"}}', ACCEPTED - 3, t))
        samples.append((f'orders_saved_total{{test_id="{TWICE}",pod="orders-worker-0"}}', ACCEPTED + 3, t))
        # The target's queue in its own namespace, and one of the same name in Elves' namespace.
        depth = 9 if BASE + 60 <= t < BASE + 90 else 0
        samples.append((f'rabbitmq_detailed_queue_messages_ready{{namespace="{NAMESPACE}",queue="orders.in"}}', depth, t))
        samples.append(('rabbitmq_detailed_queue_messages_ready{namespace="elves",queue="orders.in"}', 500, t))
    return samples


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    workdir = tmp_path_factory.mktemp("target-ledger")
    server = PrometheusServer(workdir, data_dir=backfill(workdir, history()))
    yield Prometheus(server.url, system_namespace="elves")
    server.stop()


def counts(**ledger):
    return parse_system_under_test(foreign_system(ledger={"persisted": {"promql": PERSISTED}, **ledger})).spec.ledger


BY_ENDPOINT = {"accepted": {"endpoint": "placeOrder"}}
BY_PROMQL = {"accepted": {"promql": 'sum(orders_accepted_total{test_id="$TEST_ID"})'}}


def window(test_id: str, end: float = BASE + SPAN) -> RunWindow:
    return RunWindow(test_id, BASE + 30, BASE + 90, end)


def test_the_placeholder_becomes_the_test_id_inside_its_string_and_cannot_end_it(prom):
    assert for_test(PERSISTED, ORDERS) == 'sum(orders_saved_total{test_id="shop/orders/0"})'
    hostile = 'x"} or vector(1) #\\'
    query = for_test(PERSISTED, hostile)
    assert query == 'sum(orders_saved_total{test_id="x\\"} or vector(1) #\\\\"})'
    assert prom.query(query, BASE + SPAN) == []  # one selector, of a test id that has no series


@pytest.mark.parametrize("accepted", [BY_ENDPOINT, BY_PROMQL], ids=["endpoint", "promql"])
def test_accepted_and_persisted_are_the_runs_own_counts(prom, accepted):
    ledger = read_counts(prom, counts(**accepted), window(ORDERS))
    # Only this test id's: OTHER's 999 accepted and 5000 persisted are in the same series names.
    assert (ledger.kind, ledger.requests_accepted, ledger.requests_persisted) == ("counts", ACCEPTED, ACCEPTED)
    assert (ledger.lost_requests, ledger.surplus) == (0, 0)
    assert ledger.accepted_counted == ("k6's 2xx answers of endpoint placeOrder" if accepted is BY_ENDPOINT else
                                       "the target's accepted PromQL sum(orders_accepted_total{test_id=\"shop/orders/0\"})")


def test_lost_is_accepted_minus_persisted_and_a_surplus_is_shown_not_set_off(prom):
    lossy = read_counts(prom, counts(**BY_ENDPOINT), window(LOSSY))
    assert (lossy.requests_accepted, lossy.requests_persisted, lossy.lost_requests, lossy.surplus) == (40, 37, 3, 0)
    twice = read_counts(prom, counts(**BY_ENDPOINT), window(TWICE))
    assert (twice.requests_accepted, twice.requests_persisted, twice.lost_requests, twice.surplus) == (40, 43, 0, 3)
    # The duplicates objective reads a counts ledger's surplus; lost_requests holds.
    checks = evaluate([Objective(metric="lost_requests", op="==", value=0),
                       Objective(metric="duplicates", op="==", value=0)], results(twice)).checks
    assert [(c.name, c.observed, c.ok) for c in checks] == [("lost_requests", 0.0, True), ("duplicates", 3.0, False)]


def test_the_persisted_count_is_read_as_of_the_windows_end(prom):
    before = read_counts(prom, counts(**BY_ENDPOINT), window(ORDERS, end=CAUGHT_UP - 10))
    assert (before.requests_persisted, before.lost_requests) == (10, 30)
    assert counts_complete(before) == (False, "ledger incomplete: 10 of 40 accepted persisted so far")
    assert counts_complete(read_counts(prom, counts(**BY_ENDPOINT), window(ORDERS, end=CAUGHT_UP + 10))) == (True, "")


def test_a_named_targets_queues_are_read_in_its_own_namespace(prom):
    queues = parse_system_under_test(foreign_system()).spec.queues
    figures = queue_results(prom, window(ORDERS, end=BASE + 120), queues, NAMESPACE)
    assert {q: (r.max, r.final) for q, r in figures.items()} == {"orders.in": (9.0, 0.0)}
    # The built-in path reads Elves' queues in the system's namespace, as before: none here.
    assert queue_results(prom, window(ORDERS, end=BASE + 120)) == {}
    # A target's depth by its own PromQL.
    own = Queues(promql=f'sum by (queue) (rabbitmq_detailed_queue_messages_ready{{namespace="{NAMESPACE}"}})')
    assert {q: r.max for q, r in queue_results(prom, window(ORDERS, end=BASE + 120), own).items()} == {"orders.in": 9.0}


def results(ledger: Ledger | None) -> RunResults:
    moment = Window(start=time.time(), end=time.time())  # type: ignore[arg-type]
    return RunResults(window=moment, load_seconds=60.0, ledger=ledger)


LEDGER_OBJECTIVES = [Objective(metric=m, op="==", value=0) for m in ("lost_requests", "lost_logs", "duplicates")]


def test_a_counts_ledger_with_nothing_accepted_could_not_be_checked(prom):
    empty = read_counts(prom, counts(**BY_ENDPOINT), window(EMPTY))
    assert (empty.requests_accepted, empty.lost_requests) == (0, 0)
    verdict = evaluate(LEDGER_OBJECTIVES, results(empty))
    assert not verdict.passed and [c.ok for c in verdict.checks] == [False] * 3
    for check in verdict.checks:
        assert check.observed is None
        assert check.detail == ("the ledger could not be checked: nothing was accepted"
                                " (k6's 2xx answers of endpoint placeOrder: 0)")


def test_a_registry_ledger_with_no_request_and_no_log_could_not_be_checked():
    verdict = evaluate(LEDGER_OBJECTIVES, results(Ledger(accepted=0)))
    assert not verdict.passed
    assert {c.detail for c in verdict.checks} == {
        "the ledger could not be checked: nothing was accepted (0 getData answered 202 and 0 activity logs"
        " promised, of 0 2xx answers k6 saw, against the registry's ledger)"}
    # Something accepted, even only activity logs (a registry-mix of addAppLog): checked as before.
    logs_only = evaluate(LEDGER_OBJECTIVES, results(Ledger(accepted=5, logs_expected=5, logs_persisted=5)))
    assert logs_only.passed and [c.observed for c in logs_only.checks] == [0.0, 0.0, 0.0]
    # The registry unavailable: said as before.
    assert {c.detail for c in evaluate(LEDGER_OBJECTIVES, results(None)).checks} == {
        "the registry's ledger was unavailable"}


def test_a_counts_ledger_has_no_activity_logs_to_check(prom):
    ledger = read_counts(prom, counts(**BY_ENDPOINT), window(ORDERS))
    (check,) = evaluate([Objective(metric="lost_logs", op="==", value=0)], results(ledger)).checks
    assert not check.ok and "counts no activity logs" in check.detail


# --- the phase machine ------------------------------------------------------------------

def orders_test(name: str = "orders"):
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest",
                           "metadata": {"name": name, "namespace": NAMESPACE},
                           "spec": {"load": {"script": {"configMap": {"name": "orders-k6", "file": "orders.js"}},
                                             "rate": "60/min", "duration": "20s"},
                                    "target": {"systemUnderTest": "orders"}, "drain": {"timeout": "5m"}}})


def orders_target(ledger_complete: bool = True):
    # Queues by PromQL, empty at any time: the drain then waits on the ledger alone.
    return parse_system_under_test(foreign_system(
        queues={"promql": 'label_replace(vector(0), "queue", "orders.in", "", "")'},
        ledger={**BY_ENDPOINT, "persisted": {"promql": PERSISTED}},
        drained={"ledgerComplete": ledger_complete})).spec


def drive_draining(ctx: Context, platform: FakePlatform, clock: FakeClock) -> tuple[LoadTestStatus, list[str]]:
    """step() until the test ends, moving the clock by each delay; what it waited for while draining."""
    status, waited = LoadTestStatus(), []
    for _ in range(500):
        result = step(ctx, status, platform, clock)
        status = result.status
        if status.phase == "Draining" and status.progress.waiting_for:
            waited.append(status.progress.waiting_for)
        if status.final:
            return status, waited
        clock.t += max(result.delay, 0.5)
    raise AssertionError(f"still {status.phase}/{status.progress.step}")


def test_the_drain_waits_until_the_persisted_count_catches_up_then_the_run_passes(prom, tmp_path):
    platform = FakePlatform(prom.url, load_states=["running"] * 30 + ["finished"])
    clock = FakeClock(float(BASE + 10))
    ctx = Context(orders_test(), target=Target.other(NAMESPACE, orders_target()))
    status, waited = drive_draining(ctx, platform, clock)
    run = status.runs[0]
    assert run.test_id == ORDERS
    assert run.load_ended_at.timestamp() < CAUGHT_UP - 30  # the load ended well before persisted caught up
    assert waited and all(w == "draining: ledger incomplete: 10 of 40 accepted persisted so far" for w in waited)
    assert CAUGHT_UP <= run.drained_at.timestamp() <= CAUGHT_UP + ctx.intervals.draining + 0.5
    ledger = run.results.ledger
    assert (ledger.kind, ledger.requests_accepted, ledger.requests_persisted, ledger.lost_requests) == (
        "counts", 40, 40, 0)
    assert status.phase == "Succeeded", [c for c in status.verdict.checks if not c.ok]
    assert platform.called("ledger") == []  # the registry is never asked for a counts target
    # Least power: another system's runners get none of Elves' gateway tokens or registry credential.
    (load_run,) = platform.called("start_load")
    assert (load_run.tokens, load_run.admin_token, load_run.run_credential) == ([], "", "")
    # Completed work per second: the persisted count over the load and the drain.
    assert run.results.throughput == pytest.approx(40 / (run.results.load_seconds + run.results.drain_seconds))
    # What `elves run` prints and the report shows of a counts ledger.
    assert ("ledger: 40 accepted (k6's 2xx answers of endpoint placeOrder), 40 persisted; lost 0, surplus 0"
            in closing_tables(status, "5m"))
    page = write_report(tmp_path, ctx.test, status, None).read_text()
    assert "Accepted: k6&#x27;s 2xx answers of endpoint placeOrder." in page and "surplus (persisted beyond" in page


def test_a_drain_on_queues_only_does_not_wait_for_the_ledger_and_the_lag_is_lost(prom):
    platform = FakePlatform(prom.url, load_states=["running"] * 30 + ["finished"])
    clock = FakeClock(float(BASE + 10))
    ctx = Context(orders_test(), target=Target.other(NAMESPACE, orders_target(ledger_complete=False)))
    status, waited = drive_draining(ctx, platform, clock)
    run = status.runs[0]
    assert waited == [] and run.drained_at.timestamp() < CAUGHT_UP
    assert (run.results.ledger.requests_persisted, run.results.ledger.lost_requests) == (10, 30)
    assert status.phase == "Failed"
    (lost,) = [c for c in status.verdict.checks if c.name == "lost_requests"]
    assert (lost.observed, lost.ok) == (30.0, False)
    assert platform.called("ledger") == []


def test_the_drain_waits_for_another_systems_workloads_to_be_ready_again_and_says_what_it_found(prom):
    """A fault late in the load (a killed worker's successor still starting when the load ends):
    the drain holds the verdict until the target's workloads are ready, as it does for its queues."""
    platform = FakePlatform(prom.url, load_states=["running"] * 30 + ["finished"])
    clock = FakeClock(float(BASE + 10))
    ctx = Context(orders_test(), target=Target.other(NAMESPACE, orders_target(ledger_complete=False)))
    starting = "Deployment orders-worker: 0 of 1 replicas ready"
    back_at: list[float] = []

    def the_worker(status: LoadTestStatus) -> None:  # its successor is ready 20 s into the drain
        if status.phase == "Draining" and not back_at:
            platform.ready, back_at[:] = Readiness(False, starting), [clock.t + 20]
        elif back_at and clock.t >= back_at[0]:
            platform.ready = Readiness(True)

    status, events = drive_sql(ctx, platform, clock, the_worker)
    run = status.runs[0]
    assert run.unready_after_load == starting
    assert back_at[0] <= run.drained_at.timestamp() <= back_at[0] + ctx.intervals.draining + 0.5
    assert [e.message for e in events if "ready again" in e.message] == [
        f"draining: waiting for the workloads to be ready again: {starting}"]  # said once, not at every look
    assert run.results.drain_seconds >= 20


# --- the persisted count by SQL, through the phase machine ---------------------

SECRET = "orders-ledger-db/url"
READER_PASSWORD = "ledger-reader-Pa55word"
SQL_COUNT = "SELECT count(*) FROM orders WHERE test_id = $TEST_ID"


@pytest.fixture(scope="module")
def postgres():
    server = PostgresServer("shop")
    server.login_role("reader", READER_PASSWORD)
    yield server
    server.stop()


@pytest.fixture
def orders_db(postgres):
    """An empty orders table (this test's own) and the reader's URL."""
    postgres.run("DROP TABLE IF EXISTS orders; CREATE TABLE orders (test_id text NOT NULL)", "shop")
    postgres.run("GRANT SELECT ON orders TO reader", "shop")
    return postgres.url("reader", READER_PASSWORD, "shop")


def persist(postgres, test_id: str, rows: int) -> None:
    postgres.run("INSERT INTO orders SELECT :t FROM generate_series(1, :n)", "shop", t=test_id, n=rows)


def sql_target(query: str = SQL_COUNT):
    return parse_system_under_test(foreign_system(
        queues={"promql": 'label_replace(vector(0), "queue", "orders.in", "", "")'},
        ledger={**BY_ENDPOINT, "persisted": {"sql": {"secretRef": {"name": "orders-ledger-db", "key": "url"},
                                                     "query": query}}},
        drained={"ledgerComplete": True})).spec


def drive_sql(ctx: Context, platform: FakePlatform, clock: FakeClock, on_step=lambda status: None):
    """step() until the test ends; `on_step(status)` after each (the system's work, a failure)."""
    status, events = LoadTestStatus(), []
    for _ in range(500):
        result = step(ctx, status, platform, clock)
        status = result.status
        events += result.events
        on_step(status)
        if status.final:
            return status, events
        clock.t += max(result.delay, 0.5)
    raise AssertionError(f"still {status.phase}/{status.progress.step}")


def error_of(status: LoadTestStatus) -> tuple[str, str, str]:
    """(phase, the harness error's reason, its message)."""
    condition = harness_error(status)
    return status.phase, condition.reason, condition.message


def shown(status: LoadTestStatus, events) -> str:
    """Everything a person sees of a test: its status (kubectl, the report's data) and its events."""
    return status.model_dump_json(by_alias=True) + "\n".join(e.message for e in events)


def test_the_drain_waits_for_the_sql_count_and_an_earlier_runs_rows_are_left_out(prom, postgres, orders_db):
    persist(postgres, ORDERS, 3)  # an earlier run of the same test id left 3 rows
    platform = FakePlatform(prom.url, load_states=["running"] * 30 + ["finished"], ledger_secrets={SECRET: orders_db})
    clock = FakeClock(float(BASE + 10))
    waited: list[str] = []

    def the_system_works(status: LoadTestStatus) -> None:
        """It persists the 40 accepted orders a few drain steps after the load."""
        if status.phase == "Draining" and status.progress.waiting_for:
            waited.append(status.progress.waiting_for)
            if len(waited) == 3:
                persist(postgres, ORDERS, 40)

    ctx = Context(orders_test(), target=Target.other(NAMESPACE, sql_target()))
    status, events = drive_sql(ctx, platform, clock, the_system_works)
    assert waited[:3] == ["draining: ledger incomplete: 0 of 40 accepted persisted so far"] * 3
    run = status.runs[0]
    assert run.ledger_baseline == {"persisted": 3}
    assert f"the persisted count by SQL answers; 3 from an earlier run of {ORDERS} left out" in [e.message for e in events]
    ledger = run.results.ledger
    assert (ledger.kind, ledger.requests_accepted, ledger.requests_persisted, ledger.lost_requests) == ("counts", 40, 40, 0)
    assert status.phase == "Succeeded", [c for c in status.verdict.checks if not c.ok]
    assert set(platform.called("target_secret")) == {SECRET} and platform.called("ledger") == []
    assert READER_PASSWORD not in shown(status, events) and orders_db not in shown(status, events)


def test_a_query_that_cannot_count_ends_the_test_before_the_load_naming_the_field(prom, orders_db):
    platform = FakePlatform(prom.url, ledger_secrets={SECRET: orders_db})
    ctx = Context(orders_test(), target=Target.other(NAMESPACE, sql_target("SELECT count(*), 1 FROM orders WHERE test_id = $TEST_ID")))
    status, events = drive_sql(ctx, platform, FakeClock(float(BASE + 10)))
    assert error_of(status) == ("Error", "LedgerError", "spec.ledger.persisted.sql.query: must return one row of"
                                                        " one integer column; its row has 2 columns")
    assert platform.called("start_load") == []  # nothing was spent on a test that could not be judged
    # A Secret the platform cannot give: the same, naming the secretRef.
    platform = FakePlatform(prom.url)
    status, _ = drive_sql(Context(orders_test(), target=Target.other(NAMESPACE, sql_target())), platform,
                          FakeClock(float(BASE + 10)))
    phase, reason, message = error_of(status)
    assert (phase, reason) == ("Error", "LedgerError") and message.startswith("spec.ledger.persisted.sql.secretRef: ")


def test_a_failing_query_shows_its_sqlstate_in_the_status_never_the_servers_message(prom, postgres, orders_db):
    """PostgreSQL's message quotes the value it could not cast: a row of the table, which would
    land in the LoadTest's status and events."""
    persist(postgres, "row-only-the-database-knows", 1)
    platform = FakePlatform(prom.url, ledger_secrets={SECRET: orders_db})
    query = "SELECT count(*) FROM orders WHERE test_id = $TEST_ID OR test_id::int = 0"
    ctx = Context(orders_test(), target=Target.other(NAMESPACE, sql_target(query)))
    status, events = drive_sql(ctx, platform, FakeClock(float(BASE + 10)))
    phase, reason, message = error_of(status)
    assert (phase, reason) == ("Error", "LedgerError")
    assert message.startswith("spec.ledger.persisted.sql.query: PostgreSQL at 127.0.0.1:")
    assert message.endswith("/shop refused it (SQLSTATE 22P02: a text that is not a value of its type)")
    for server_text in ("row-only-the-database-knows", "invalid input syntax"):
        assert server_text not in shown(status, events)


def test_a_database_that_cannot_be_reached_ends_in_error_never_in_a_pass(prom, postgres, orders_db):
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    gone = f"postgresql://reader:{READER_PASSWORD}@127.0.0.1:{closed.getsockname()[1]}/shop"
    closed.close()
    # Unreachable before the load: waited for (system_ready's deadline), then Error; no load.
    platform = FakePlatform(prom.url, ledger_secrets={SECRET: gone})
    ctx = Context(orders_test(), target=Target.other(NAMESPACE, sql_target()))
    status, events = drive_sql(ctx, platform, FakeClock(float(BASE + 10)))
    phase, reason, message = error_of(status)
    assert (phase, reason) == ("Error", "LedgerUnavailable")
    assert message.startswith("gave up after 5m: the persisted count does not answer: spec.ledger.persisted.sql:"
                              " could not connect to PostgreSQL at 127.0.0.1:")
    assert platform.called("start_load") == []
    assert READER_PASSWORD not in shown(status, events)
    # Gone during the drain: ridden out for a while (elves.engine.results.blips), then Error, not a verdict.
    platform = FakePlatform(prom.url, load_states=["running"] * 30 + ["finished"], ledger_secrets={SECRET: orders_db})

    def the_database_goes(status: LoadTestStatus) -> None:
        if status.phase == "Draining":
            platform.ledger_secrets[SECRET] = gone

    status, events = drive_sql(Context(orders_test(), target=Target.other(NAMESPACE, sql_target())), platform,
                               FakeClock(float(BASE + 10)), the_database_goes)
    phase, reason, message = error_of(status)
    assert (phase, reason, status.verdict) == ("Error", "LedgerUnavailable", None)
    assert "spec.ledger.persisted.sql: could not connect to PostgreSQL at 127.0.0.1:" in message
    assert READER_PASSWORD not in shown(status, events) and gone not in shown(status, events)


# --- the target's reset steps (spec.reset of its SystemUnderTest) ----------------------------

RESET_SECRET = "orders-reset-db/url"


def resetting_test():
    document = orders_test().model_dump(by_alias=True, exclude_none=True)
    document["spec"]["reset"] = True
    return parse_loadtest({"apiVersion": "elves.dev/v1alpha1", "kind": "LoadTest", "metadata": document["metadata"],
                           "spec": document["spec"]})


def resetting_target(statements: list[str]):
    target = sql_target()
    document = foreign_system(**{**target.model_dump(by_alias=True, exclude_none=True),
                                 "reset": {"sql": {"secretRef": {"name": "orders-reset-db", "key": "url"},
                                                   "statements": statements}}})
    return parse_system_under_test(document).spec


def test_reset_runs_the_targets_statements_before_the_run_and_not_elves_reset(prom, postgres, orders_db):
    persist(postgres, ORDERS, 3)  # what an earlier run left: gone after the reset
    reset_url = resetter_url(postgres)
    postgres.run("GRANT DELETE ON orders TO resetter", "shop")
    platform = FakePlatform(prom.url, load_states=["running"] * 30 + ["finished"],
                            ledger_secrets={SECRET: orders_db, RESET_SECRET: reset_url})
    persisted = []

    def the_system_works(status: LoadTestStatus) -> None:
        if status.phase == "Draining" and status.progress.waiting_for and not persisted:
            persisted.append(40)
            persist(postgres, ORDERS, 40)

    ctx = Context(resetting_test(), target=Target.other(NAMESPACE, resetting_target(["DELETE FROM orders"])))
    status, events = drive_sql(ctx, platform, FakeClock(float(BASE + 10)), the_system_works)
    messages = [e.message for e in events]
    assert "reset: ran the SystemUnderTest's reset steps (1 statements)" in messages
    assert platform.called("reset") == []  # Elves' own services are not restarted for another system's test
    assert status.runs[0].ledger_baseline == {"persisted": 0}
    assert status.runs[0].results.ledger.requests_persisted == 40 and status.phase == "Succeeded"
    assert "resetter-Pa55" not in shown(status, events)


def test_a_reset_that_fails_ends_the_test_before_the_load_naming_the_statement(prom, postgres, orders_db):
    platform = FakePlatform(prom.url, ledger_secrets={SECRET: orders_db, RESET_SECRET: resetter_url(postgres)})
    ctx = Context(resetting_test(), target=Target.other(NAMESPACE, resetting_target(["TRUNCATE orders"])))
    status, _ = drive_sql(ctx, platform, FakeClock(float(BASE + 10)))
    phase, reason, message = error_of(status)
    assert (phase, reason) == ("Error", "ResetFailed")
    assert message.startswith("spec.reset.sql.statements[0]: PostgreSQL at 127.0.0.1:") and "permission denied" in message
    assert platform.called("start_load") == []


def resetter_url(postgres) -> str:
    if not postgres.run("SELECT 1 FROM pg_roles WHERE rolname = 'resetter'"):
        postgres.login_role("resetter", "resetter-Pa55")
    return postgres.url("resetter", "resetter-Pa55", "shop")
