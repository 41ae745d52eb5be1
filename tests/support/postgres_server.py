"""A throwaway PostgreSQL 15 (Debian's, as the local stack runs it) for tests that need a real
database: its own cluster in a temporary directory, on a free loopback port, password logins over
TCP (scram-sha-256) and a trusted Unix socket for the test's own set-up; run as the `postgres` OS
user when the tests run as root (PostgreSQL refuses root); stopped by its PID and removed."""

from __future__ import annotations

import shutil
import signal
import subprocess
import tempfile
from pathlib import Path
from urllib.parse import quote

import pg8000.native
from engine_testkit import free_port
from polling import wait_for
from prerequisites import require

from elves.local.infra import POSTGRES_BIN
from elves.local.os_users import own, unprivileged
from elves.local.processes import identity_of

START_TIMEOUT_SECONDS = 30.0


class PostgresServer:
    """`database`: one to create for the test (its tables are the test's to make); `tls`: TLS
    offered, with a self-signed certificate (for 127.0.0.1, which no system CA vouches for)."""

    def __init__(self, database: str | None = None, tls: bool = False) -> None:
        require((POSTGRES_BIN / "postgres").exists(), "postgresql-15 is missing (tools/install-local-deps.sh)")
        self.user = unprivileged("postgres")
        # Not under pytest's tmp_path: its directories are private to the caller, and the server's user must pass.
        self.root = Path(tempfile.mkdtemp(prefix="elves-postgres-"))
        own(self.root, self.user)
        self.data, self.socket_dir = self.root / "data", self.root / "socket"
        self.port = free_port()
        self._as_user(POSTGRES_BIN / "initdb", "-D", str(self.data), "-U", "postgres", "--auth-local=trust",
                      "--auth-host=scram-sha-256", "--encoding=UTF8", "--locale=C.UTF-8")
        own(self.socket_dir, self.user)
        settings = ["-c", "ssl=on"] if tls else []
        if tls:
            self._as_user("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj",
                          "/CN=127.0.0.1", "-keyout", self.data / "server.key", "-out", self.data / "server.crt")
        self.log = (self.root / "postgres.log").open("w")
        self.process = subprocess.Popen(
            [str(POSTGRES_BIN / "postgres"), "-D", str(self.data), "-c", f"port={self.port}",
             "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.socket_dir}",
             "-c", "fsync=off", "-c", "shared_buffers=16MB", "-c", "max_connections=40", *settings],
            stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True, **identity_of(self.user))
        self._wait_ready()
        if database is not None:
            self.run(f"CREATE DATABASE {database}")

    def _as_user(self, *argv: object) -> None:
        subprocess.run([str(a) for a in argv], check=True, capture_output=True, timeout=120, **identity_of(self.user))

    def _wait_ready(self) -> None:
        def accepting() -> bool:
            if self.process.poll() is not None:
                raise RuntimeError(f"postgres exited with {self.process.returncode}; see {self.log.name}")
            self.admin().close()
            return True

        wait_for(accepting, f"postgres to accept connections (see {self.log.name})", START_TIMEOUT_SECONDS,
                 interval=0.1, ignore=(pg8000.native.InterfaceError, pg8000.native.DatabaseError, OSError))

    def admin(self, database: str = "postgres") -> pg8000.native.Connection:
        """The superuser, over the trusted Unix socket (the test's own set-up, never the code under test's)."""
        return pg8000.native.Connection("postgres", database=database,
                                        unix_sock=str(self.socket_dir / f".s.PGSQL.{self.port}"))

    def run(self, sql: str, database: str = "postgres", **params: object) -> list:
        connection = self.admin(database)
        try:
            return connection.run(sql, **params)
        finally:
            connection.close()

    def login_role(self, name: str, password: str) -> None:
        """A role that logs in with `password` over TCP, allowed nothing yet (GRANT what it may)."""
        self.run(f"CREATE ROLE {name} LOGIN PASSWORD {pg8000.native.literal(password)}")

    def url(self, user: str, password: str, database: str, host: str = "127.0.0.1", **parameters: str) -> str:
        """A libpq URL of a role, its password URL-encoded."""
        query = "&".join(f"{k}={v}" for k, v in parameters.items())
        return (f"postgresql://{quote(user, safe='')}:{quote(password, safe='')}@{host}:{self.port}/{database}"
                + (f"?{query}" if query else ""))

    def stop(self) -> None:
        self.process.send_signal(signal.SIGINT)  # PostgreSQL's fast shutdown
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.log.close()
        shutil.rmtree(self.root, ignore_errors=True)
