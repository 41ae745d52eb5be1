"""`k6 archive` of a built-in scenario: the script and its lib/ imports in one tarball.

k6 runs an archive with the options it had when it was packed, so the runner variables
marked `archived` in elves.engine.planning.k6.RUNNER_VARIABLES (the run's scenarios and test id) are
packed in; secrets (the tokens) never are, they reach the runners as environment variables,
which override the packed ones.
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from pathlib import Path

ARCHIVE_TIMEOUT_SECONDS = 60.0
# A ConfigMap holds at most 1 MiB, keys and metadata included.
MAX_ARCHIVE_BYTES = 900 * 1024


class ArchiveError(RuntimeError):
    """The script cannot be packed; the message says why and what to do."""


def pack(k6: str, script: Path, env: dict[str, str], timeout: float = ARCHIVE_TIMEOUT_SECONDS) -> bytes:
    """The k6 archive of `script` with `env` baked in (elves.engine.planning.k6.archived_env)."""
    if not script.is_file():
        raise ArchiveError(f"the built-in scenario {script} is not in the operator's image: "
                           "set ELVES_SCENARIOS_DIR to the directory holding loadtests/scenarios")
    with tempfile.TemporaryDirectory(prefix="elves-k6-archive-") as scratch:
        out = Path(scratch) / "archive.tar"
        argv = [k6, "archive", "--quiet", "-O", str(out)]
        for name, value in env.items():
            argv += ["-e", f"{name}={value}"]
        # k6 may write its config under $HOME, which is read-only in the operator's pod.
        process_env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": scratch,
                       "XDG_CONFIG_HOME": scratch, "K6_NO_USAGE_REPORT": "true"}
        try:
            result = subprocess.run(argv + [str(script)], env=process_env, capture_output=True, text=True,
                                    timeout=timeout, stdin=subprocess.DEVNULL)
        except FileNotFoundError:
            raise ArchiveError(f"k6 not found ({k6!r}): the operator packs built-in scenarios with it; "
                               "install k6 in its image or point ELVES_K6 at it") from None
        except subprocess.TimeoutExpired:
            raise ArchiveError(f"`k6 archive {script.name}` took longer than {timeout:g}s") from None
        if result.returncode != 0:
            detail = (result.stderr or result.stdout).strip()[-1500:]
            raise ArchiveError(f"`k6 archive {script.name}` failed (exit {result.returncode}): {detail}")
        archive = out.read_bytes()
    if len(archive) > MAX_ARCHIVE_BYTES:
        raise ArchiveError(f"the k6 archive of {script.name} is {len(archive)} bytes, more than a ConfigMap holds "
                           f"({MAX_ARCHIVE_BYTES}); keep large data out of the script")
    return archive
