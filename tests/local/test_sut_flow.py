"""A user's path through the gateway: a plot request ends DONE with a real PNG, and the
history shows every call, the latest 20 and all of them, paged, each as it should."""

import struct

from sut_helpers import PNG_SIGNATURE, Gateway, job_deadline, ledger, unique, wait_ledger

CALLS_BEYOND_LATEST = 25  # more than the 20 that getHistory returns
PAGE_SIZE = 8  # several pages for the calls above


def read_png_size(png: bytes) -> tuple[int, int]:
    """Width and height from the IHDR chunk, which a valid PNG has first."""
    assert png[:8] == PNG_SIGNATURE, f"not a PNG: starts with {png[:8]!r}"
    assert png[12:16] == b"IHDR", f"PNG without IHDR first: {png[12:16]!r}"
    return struct.unpack(">II", png[16:24])


def wait_status(local_stack, gateway: Gateway, request_id: str, status: str) -> dict:
    """Polls getStatus as a client would (404 while the registry has not seen the request yet)."""
    def reached():
        answer = gateway.status(request_id)
        assert answer.status_code in (200, 404), f"getStatus answered {answer.status_code}: {answer.text}"
        if answer.status_code == 200:
            assert answer.json()["status"] in ("QUEUED", "PROCESSING", status), answer.text
            return answer.json() if answer.json()["status"] == status else None
        return None

    return local_stack.wait_for(reached, f"request {request_id} to be {status}", job_deadline(1))


def test_get_data_ends_done_with_a_png(local_stack):
    gateway = Gateway(local_stack, unique("sut-flow"), unique("sut-flow"))

    request_id = gateway.request_plot()
    status = wait_status(local_stack, gateway, request_id, "DONE")
    plot = gateway.plot(request_id)

    assert status["id"] == request_id and status["radar"] == "KTLX", status
    assert plot.status_code == 200, plot.text
    assert plot.headers["Content-Type"] == "image/png"
    width, height = read_png_size(plot.content)
    assert width >= 64 and height >= 64, (width, height)
    assert len(plot.content) > 5_000, f"a {len(plot.content)}-byte PNG is too small for a radar plot"
    assert plot.content[-8:-4] == b"IEND", "the PNG is cut short"


def test_history_latest_20_and_all_paged(local_stack):
    user = unique("sut-history")
    calls = Gateway(local_stack, user, unique("sut-history-calls"))
    # The history reads log themselves too: under their own test id they are counted apart.
    reads = Gateway(local_stack, user, unique("sut-history-reads"))
    request_id = calls.request_plot()
    for _ in range(CALLS_BEYOND_LATEST - 1):
        assert calls.me().status_code == 200
    wait_ledger(local_stack, calls.test_id, lambda entry: entry["logs"] == CALLS_BEYOND_LATEST, 60,
                f"the {CALLS_BEYOND_LATEST} activity logs of the calls")

    latest_answer = reads.history()
    assert latest_answer.status_code == 200, latest_answer.text
    latest = latest_answer.json()["items"]
    # A read shows what was persisted before it, then logs itself. Waiting for each read's
    # log makes the paging exact: every page read pushes the list down by one item.
    wait_ledger(local_stack, reads.test_id, lambda entry: entry["logs"] == 1, 60, "the log of getHistory")
    pages = []
    while True:
        answer = reads.history(all="true", page=len(pages), size=PAGE_SIZE)
        assert answer.status_code == 200, answer.text
        pages.append(answer.json()["items"])
        wait_ledger(local_stack, reads.test_id, lambda entry, n=len(pages) + 1: entry["logs"] == n, 60,
                    f"the log of getAllHistory page {len(pages) - 1}")
        if not answer.json()["hasNext"]:
            break

    # Offset paging while the user's own reads are logged: consecutive pages share one item.
    for before, after in zip(pages, pages[1:]):
        assert len(before) == PAGE_SIZE and after[0]["id"] == before[-1]["id"], "pages do not join up"
    everything = pages[0] + [item for page in pages[1:] for item in page[1:]]
    ids = [item["id"] for item in everything]
    assert len(latest) == 20, f"getHistory returned {len(latest)} items, not the latest 20"
    assert len(ids) == len(set(ids)) == CALLS_BEYOND_LATEST + 1, "not each call once plus the getHistory before"
    assert {item["userId"] for item in everything} == {user}
    for listing in (latest, everything):
        times = [item["time"] for item in listing]
        assert times == sorted(times, reverse=True), "not newest first"
    assert everything[0]["endpoint"] == "getHistory" and everything[0]["testId"] == reads.test_id
    assert [item["id"] for item in latest] == ids[1:21], "the latest 20 are not the head of all history"
    assert everything[-1]["id"] == request_id and everything[-1]["endpoint"] == "getData"
    assert request_id not in {item["id"] for item in latest}, "the oldest call is still among the latest 20"
    assert ledger(local_stack, calls.test_id)["logsByEndpoint"] == dict(calls.logged)
