"""How a local replica starts warm: the trained form of its build on JDK 25 when the cache has
one, the default java and the fat jar (said once in the log) when not."""

from __future__ import annotations

import logging
import os

import pytest
from service_jars import write_jar

from elves import warm_start
from elves.local import services
from elves.local.layout import Layout
from elves.local.settings import Settings


def fake_jdk(path, version):
    (path / "bin").mkdir(parents=True)
    (path / "bin" / "java").write_text("")
    (path / "release").write_text(f'IMPLEMENTOR="x"\nJAVA_VERSION="{version}"\n')
    return path


def trained(settings, deployment, jar, served=False):
    """What `elves local train` (`--served`) leaves in the cache for this build."""
    entry = warm_start.entry(settings.cache_dir, deployment, jar, served=served)
    (entry / warm_start.APP_DIR / "lib").mkdir(parents=True)
    (entry / warm_start.APP_DIR / f"{deployment}.jar").write_text("thin")
    (entry / warm_start.APP_DIR / "lib" / "spring.jar").write_text("lib")
    (entry / warm_start.AOT_FILE).write_text("aot")
    os.utime(entry / warm_start.APP_DIR / "lib" / "spring.jar", ns=(10**18, 10**18))
    return entry


@pytest.fixture
def stack(tmp_path, monkeypatch):
    monkeypatch.setattr(warm_start, "WARM_JDK", fake_jdk(tmp_path / "jdk25", "25.0.3"))
    monkeypatch.setattr(services, "_told", set())
    settings = Settings.from_env({"ELVES_REPO": str(tmp_path), "ELVES_CACHE": str(tmp_path / "cache")})
    write_jar(settings.service_jar("gateway"), "v1")
    return settings, Layout(tmp_path / ".elves")


def test_a_trained_build_runs_on_jdk_25_with_its_aot_cache_copied_beside_the_jar(stack):
    settings, layout = stack
    trained(settings, "gateway", settings.service_jar("gateway"))
    argv = services.command(settings, layout, "gateway")
    copy = services.runnable_jar(settings, layout, "gateway")
    local = copy.with_suffix(".warm")
    assert argv == [str(warm_start.WARM_JDK / "bin" / "java"), f"-XX:AOTCache={local / 'app.aot'}",
                    "--sun-misc-unsafe-memory-access=allow",
                    "-jar", str(local / "app" / "gateway.jar")]
    # The JVM refuses a cache whose jars' times differ from the training's: the copy keeps them.
    assert (local / "app" / "lib" / "spring.jar").stat().st_mtime_ns == 10**18


def test_an_untrained_build_a_missing_jdk_or_cold_start_fall_back_to_java_jar_saying_why(stack, monkeypatch, caplog):
    settings, layout = stack
    caplog.set_level(logging.INFO, logger="elves.local.services")
    argv = services.command(settings, layout, "gateway")
    assert argv[:2] == ["java", "-jar"] and argv[2].endswith(".jar")
    services.command(settings, layout, "gateway")
    untrained = [r.message for r in caplog.records if "has not been trained" in r.message]
    assert len(untrained) == 1 and "./deployments.sh --local trains it" in untrained[0]  # once, not per replica

    trained(settings, "gateway", settings.service_jar("gateway"))
    cold = Settings.from_env({"ELVES_REPO": str(settings.repo_dir), "ELVES_CACHE": str(settings.cache_dir),
                              "ELVES_LOCAL_START": "cold"})
    assert services.command(cold, layout, "gateway")[:2] == ["java", "-jar"]

    monkeypatch.setattr(warm_start, "WARM_JDK", fake_jdk(settings.repo_dir / "jdk17", "17.0.15"))
    assert services.command(settings, layout, "gateway")[:2] == ["java", "-jar"]
    assert any("is JDK 17.0.15, the AOT cache needs 25" in r.message for r in caplog.records)
    with pytest.raises(ValueError, match="ELVES_LOCAL_START"):
        Settings.from_env({"ELVES_LOCAL_START": "lukewarm"})


def test_a_new_build_is_never_run_with_the_cache_of_another(stack):
    settings, layout = stack
    trained(settings, "gateway", settings.service_jar("gateway"))
    write_jar(settings.service_jar("gateway"), "v2")
    os.utime(settings.service_jar("gateway"), ns=(2 * 10**18, 2 * 10**18))
    assert services.command(settings, layout, "gateway")[:2] == ["java", "-jar"]


def test_pruning_an_old_build_removes_its_warm_copy_unless_a_replica_runs_it(stack):
    settings, layout = stack
    trained(settings, "gateway", settings.service_jar("gateway"))
    old_argv = services.command(settings, layout, "gateway")
    old_copy = services.runnable_jar(settings, layout, "gateway")
    write_jar(settings.service_jar("gateway"), "v2")
    os.utime(settings.service_jar("gateway"), ns=(2 * 10**18, 2 * 10**18))
    new_copy = services.runnable_jar(settings, layout, "gateway")
    services.prune_jars(layout, "gateway", in_use={old_argv[-1]})
    assert old_copy.exists() and old_copy.with_suffix(".warm").exists()  # a replica still runs it
    services.prune_jars(layout, "gateway", in_use={str(new_copy)})
    assert not old_copy.exists() and not old_copy.with_suffix(".warm").exists() and new_copy.exists()


def test_the_cache_keeps_each_services_newest_builds_and_the_one_just_trained(tmp_path):
    warm = tmp_path / "warm"
    names = ["gateway-a-served", "gateway-a", "gateway-b", "gateway-c", "gateway-d", "registry-a"]
    for age, name in enumerate(names):
        (warm / name).mkdir(parents=True)
        os.utime(warm / name, ns=(10**18 - age * 10**9, 10**18 - age * 10**9))  # a is the newest
    just_trained = warm / "gateway-d"  # an old build trained again keeps its entry's old time
    warm_start.prune(tmp_path, "gateway", keep=just_trained)
    # Four entries: the newest build's two trainings and the next build's, or four builds' starts.
    assert sorted(p.name for p in warm.iterdir()) == ["gateway-a", "gateway-a-served", "gateway-b", "gateway-d",
                                                      "registry-a"]


def test_a_build_copied_warm_stays_warm_after_the_cache_pruned_its_entry(stack):
    import shutil

    settings, layout = stack
    entry = trained(settings, "gateway", settings.service_jar("gateway"))
    first = services.command(settings, layout, "gateway")
    shutil.rmtree(entry)  # another checkout's builds pushed it out of the shared cache
    assert services.command(settings, layout, "gateway") == first


def test_the_form_trained_on_served_requests_is_preferred_unless_the_start_trained_one_is_asked_for(stack):
    settings, layout = stack
    trained(settings, "gateway", settings.service_jar("gateway"))
    copy = services.runnable_jar(settings, layout, "gateway")
    assert services.command(settings, layout, "gateway")[-1] == str(copy.with_suffix(".warm") / "app" / "gateway.jar")
    served = trained(settings, "gateway", settings.service_jar("gateway"), served=True)
    assert served.name.endswith("-served")
    # A replica started after the served training (the rollout that follows it) runs that form.
    argv = services.command(settings, layout, "gateway")
    assert argv[1] == f"-XX:AOTCache={copy.with_suffix('.served') / 'app.aot'}"
    start_trained = Settings.from_env({"ELVES_REPO": str(settings.repo_dir), "ELVES_CACHE": str(settings.cache_dir),
                                       "ELVES_LOCAL_START": "start-trained"})
    assert services.command(start_trained, layout, "gateway")[1] == f"-XX:AOTCache={copy.with_suffix('.warm') / 'app.aot'}"
    write_jar(settings.service_jar("gateway"), "v2")
    os.utime(settings.service_jar("gateway"), ns=(2 * 10**18, 2 * 10**18))
    services.runnable_jar(settings, layout, "gateway")
    services.prune_jars(layout, "gateway", in_use=set())
    assert not copy.with_suffix(".served").exists() and not copy.with_suffix(".warm").exists()
