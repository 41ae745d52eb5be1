"""elves.kafka.broker: the KRaft cluster id its storage is formatted with. The broker itself runs in
tier 2 (tests/local/test_kafka.py); an id the storage tool refuses failed one start in 64 there."""

import base64

from elves.kafka.broker import cluster_id

# With one id in 64 starting with "-", 2,000 ids hold one with a chance of 1 - (63/64)**2000 > 0.999999.
DRAWS = 2000


def test_no_cluster_id_starts_with_a_dash_that_the_storage_tool_would_read_as_an_option() -> None:
    ids = [cluster_id() for _ in range(DRAWS)]
    assert [i for i in ids if i.startswith("-")] == []


def test_a_cluster_id_is_sixteen_bytes_in_url_safe_base64_without_padding() -> None:
    for _ in range(DRAWS):
        found = cluster_id()
        assert len(found) == 22 and "=" not in found
        assert len(base64.urlsafe_b64decode(found + "==")) == 16
