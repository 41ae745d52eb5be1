"""The local mode's settings, read from ELVES_* variables, a bad one named."""

from __future__ import annotations

import pytest

from elves.local.settings import Settings


def test_settings_from_environment(tmp_path):
    settings = Settings.from_env({"ELVES_REPO": str(tmp_path), "ELVES_LOCAL_REPLICAS": "ingestor=3",
                                  "ELVES_LOCAL_PORT_OFFSET": "7", "ELVES_LOCAL_INFRA": ""})
    assert settings.state_dir == tmp_path / ".elves"
    assert settings.local_replicas == {"gateway": 1, "registry": 1, "ingestor": 3}
    assert (settings.port_offset, settings.local_infra) == (7, ())
    with pytest.raises(ValueError, match="ELVES_LOCAL_REPLICAS: 'web=2'"):
        Settings.from_env({"ELVES_LOCAL_REPLICAS": "web=2"})
    with pytest.raises(ValueError, match="ELVES_LOCAL_PORT_OFFSET"):
        Settings.from_env({"ELVES_LOCAL_PORT_OFFSET": "x"})
    assert settings.local_balancing == "kernel"
    assert Settings.from_env({"ELVES_LOCAL_BALANCING": "haproxy"}).local_balancing == "haproxy"
    with pytest.raises(ValueError, match="ELVES_LOCAL_BALANCING: 'ipvs' is not one of kernel, haproxy"):
        Settings.from_env({"ELVES_LOCAL_BALANCING": "ipvs"})


def test_the_ingestors_niceness_is_a_nice_value():
    assert Settings.from_env({}).ingestor_niceness == 10
    assert Settings.from_env({"ELVES_LOCAL_INGESTOR_NICENESS": "0"}).ingestor_niceness == 0
    with pytest.raises(ValueError, match="ELVES_LOCAL_INGESTOR_NICENESS: 20 is not a nice value from 0 to 19"):
        Settings.from_env({"ELVES_LOCAL_INGESTOR_NICENESS": "20"})
