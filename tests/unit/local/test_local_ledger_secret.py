"""A SystemUnderTest's SQL persisted count in the local mode: the database URL is the
file .elves/secrets/own-system/<name>/<key>, a Secret as a cluster mounts it, private to its owner,
and names a database on this machine only, as the local Prometheus scrapes only loopback targets.
Whatever is wrong is an error naming secretRef, which never shows the URL."""

from __future__ import annotations

import pytest

from elves.engine.results.sql_count import SqlCountError
from elves.local.platform import LocalPlatform
from elves.local.settings import Settings

URL = "postgresql://reader:Pa55word@127.0.0.1:5432/orders"


@pytest.fixture
def platform(tmp_path):
    return LocalPlatform(Settings.from_env({"ELVES_STATE_DIR": str(tmp_path)}))


def write(platform: LocalPlatform, text: str, mode: int = 0o600, name: str = "orders-ledger-db", key: str = "url"):
    path = platform.layout.own_system_secrets / name / key
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(mode)
    return path


def test_the_url_is_the_private_file_of_the_secret_and_key(platform):
    path = write(platform, URL + "\n")
    assert path == platform.layout.root / "secrets" / "own-system" / "orders-ledger-db" / "url"
    assert platform.target_secret("orders-ledger-db", "url") == URL
    write(platform, "postgresql://reader:x@[::1]:5432/orders", name="v6")
    assert platform.target_secret("v6", "url").startswith("postgresql://reader:x@[::1]")


@pytest.mark.parametrize("text, mode, says", [
    (None, 0o600, "is missing: write the database URL there"),
    (URL, 0o644, "may be read by others (mode 644): run `chmod 600"),
    ("  \n", 0o600, "is empty"),
    ("postgresql://reader:Pa55word@orders-db.example:5432/orders", 0o600,
     "names host orders-db.example: the local mode reaches databases on this machine only"),
    ("reader:Pa55word", 0o600, "the value is not a usable postgresql:// URL"),
])
def test_a_missing_shared_or_remote_url_is_an_error_naming_the_secret_ref(platform, text, mode, says):
    if text is not None:
        write(platform, text, mode)
    with pytest.raises(SqlCountError) as error:
        platform.target_secret("orders-ledger-db", "url")
    assert str(error.value).startswith("spec.ledger.persisted.sql.secretRef") and says in str(error.value)
    assert "Pa55word" not in str(error.value)


def test_a_key_cannot_leave_the_secrets_directory(platform):
    with pytest.raises(SqlCountError, match="is not a file name"):
        platform.target_secret("orders-ledger-db", "..")


def test_a_name_cannot_leave_the_secrets_directory_either(platform):
    with pytest.raises(SqlCountError, match="secretRef.name: '../own-system' is not a file name"):
        platform.target_secret("../own-system", "url")
