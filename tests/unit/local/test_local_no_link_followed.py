"""A root supervisor follows no symbolic link in a directory another user may write.

Under root, RabbitMQ's, Prometheus' and PostgreSQL's directories under the state directory belong
to their OS users; here `nobody` stands in for them. A link such a user plants where the supervisor
expects its own file or directory is refused, naming it, before anything is changed: the link's
target (a root-owned directory or file, like /etc) keeps its owner, mode and content.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from prerequisites import require

from elves.local import infra, nofollow
from elves.local.background import Background
from elves.local.infra_runner import InfraRunner
from elves.local.layout import Layout
from elves.local.operations import Operations
from elves.local.os_users import own
from elves.local.ports import Ports

NOBODY = 65534


@pytest.fixture
def state():
    """A prepared state directory in a directory `nobody` may pass (tmp_path's may not be)."""
    require(os.geteuid() == 0, "root: the supervisor gives directories to other users only as root")
    top = Path(tempfile.mkdtemp(prefix="elves-nofollow-"))
    top.chmod(0o755)
    root = top / "state"
    done = subprocess.run([sys.executable, "-m", "elves.cli", "local", "prepare"], capture_output=True, text=True,
                          env={**os.environ, "ELVES_STATE_DIR": str(root)}, timeout=60)
    assert done.returncode == 0, done.stderr
    yield Layout(root)
    shutil.rmtree(top)


@pytest.fixture
def victims(state):
    """What root owns outside the state directory: a directory and a file, as /etc and /etc/passwd."""
    directory = state.root.parent / "etc"
    directory.mkdir(mode=0o755)
    directory.chmod(0o755)
    file = directory / "passwd"
    file.write_text("root:x:0:0\n")
    file.chmod(0o644)
    return directory, file


def untouched(path: Path, mode: int, content: str | None = None) -> bool:
    info = path.lstat()
    same = (info.st_uid, info.st_gid, stat.S_IMODE(info.st_mode)) == (0, 0, mode)
    return same and (content is None or path.read_text() == content)


def as_nobody(component_class: type[infra.Component]) -> type[infra.Component]:
    return type(f"Nobodys{component_class.__name__}", (component_class,), {"system_user": "nobody"})


def component(layout: Layout, component_class: type[infra.Component]) -> infra.Component:
    made = as_nobody(component_class)(component_class.__name__.lower(), layout, Ports(0))
    made.prepare()  # a first, clean start: its directory becomes nobody's
    return made


@pytest.mark.parametrize("planted", ["home", "advanced.config", "rabbitmq.conf"])
def test_rabbitmq_s_directory_refuses_a_planted_link(state, victims, planted):
    rabbitmq = component(state, infra.RabbitMQ)
    assert state.rabbitmq.stat().st_uid == NOBODY
    directory, file = victims
    link = state.rabbitmq / planted
    shutil.rmtree(link) if link.is_dir() else link.unlink()
    link.symlink_to(directory if planted == "home" else file)
    os.lchown(link, NOBODY, NOBODY)
    with pytest.raises(nofollow.LinkRefused) as refused:
        rabbitmq.prepare()
    assert f"{link} is a symbolic link" in str(refused.value) and "nobody may write" in str(refused.value)
    assert f"rm {link}" in str(refused.value)
    assert untouched(directory, 0o755) and untouched(file, 0o644, "root:x:0:0\n")
    assert sorted(p.name for p in directory.iterdir()) == ["passwd"]


@pytest.mark.parametrize("planted", ["targets", "prometheus.yml"])
def test_prometheus_directory_refuses_a_planted_link(state, victims, planted):
    prometheus = component(state, infra.Prometheus)
    directory, file = victims
    link = state.prometheus / planted
    shutil.rmtree(link) if link.is_dir() else link.unlink()
    link.symlink_to(directory if planted == "targets" else file)
    with pytest.raises(nofollow.LinkRefused, match="is a symbolic link"):
        prometheus.prepare()
    assert untouched(directory, 0o755) and untouched(file, 0o644, "root:x:0:0\n")
    assert sorted(p.name for p in directory.iterdir()) == ["passwd"]


def test_the_supervisors_targets_file_is_never_written_through_a_link(state, victims):
    prometheus = component(state, infra.Prometheus)
    _, file = victims
    prometheus.targets_file.unlink()
    prometheus.targets_file.symlink_to(file)
    with pytest.raises(nofollow.LinkRefused, match="services.json is a symbolic link"):
        prometheus.write(prometheus.targets_file, "[]\n")  # what the supervisor writes on every change
    assert untouched(file, 0o644, "root:x:0:0\n")


def test_a_link_or_a_hard_link_inside_a_tree_given_away_leaves_its_target_root_s(state, victims):
    rabbitmq = component(state, infra.RabbitMQ)
    directory, file = victims
    mnesia = state.rabbitmq / "mnesia"
    mnesia.mkdir()
    (mnesia / "to-etc").symlink_to(directory)
    (mnesia / "to-passwd").symlink_to(file)
    rabbitmq.prepare()  # a link inside is given away itself (lchown), never its target
    assert (mnesia / "to-etc").lstat().st_uid == NOBODY
    assert untouched(directory, 0o755) and untouched(file, 0o644)
    os.link(file, mnesia / "hard")  # as root here; protected_hardlinks keeps the user from it
    with pytest.raises(nofollow.LinkRefused, match="hard links"):
        rabbitmq.prepare()
    assert untouched(file, 0o644, "root:x:0:0\n")


def test_postgres_refuses_a_data_directory_that_is_a_link(state, victims):
    postgres = as_nobody(infra.Postgres)("postgres", state, Ports(0))
    postgres.prepare()
    directory, _ = victims
    (state.postgres / "data").symlink_to(directory)
    with pytest.raises(nofollow.LinkRefused, match="data is a symbolic link"):
        asyncio.run(postgres.initialise())  # would delete a half-written cluster, then initdb
    assert untouched(directory, 0o755) and (directory / "passwd").exists()


def test_a_directory_given_to_a_user_is_never_reached_through_a_link(state, victims):
    directory, _ = victims
    scratch = state.root / "scratch"
    scratch.mkdir()
    (scratch / "ingestor-0").symlink_to(directory)
    with pytest.raises(nofollow.LinkRefused, match="ingestor-0 is a symbolic link"):
        own(scratch / "ingestor-0", "nobody", base=state.root)
    assert untouched(directory, 0o755)


def test_the_supervisor_reports_the_refusal_as_the_components_failure(state, victims):
    """Started (or restarted after a crash or a fault) by the supervisor, the component fails with
    the refusal in its state, as any component that cannot start: the supervisor goes on."""
    prometheus = component(state, infra.Prometheus)
    _, file = victims
    (state.prometheus / "prometheus.yml").unlink()
    (state.prometheus / "prometheus.yml").symlink_to(file)
    runner = InfraRunner({"prometheus": prometheus}, Operations(Background()), lambda: None)
    with pytest.raises(infra.InfraError, match="prometheus.yml is a symbolic link"):
        asyncio.run(runner.start("prometheus"))
    assert runner.states["prometheus"].phase == "failed"
    assert "prometheus.yml is a symbolic link" in runner.states["prometheus"].detail
    assert not runner.children, "nothing started"
    assert untouched(file, 0o644, "root:x:0:0\n")
