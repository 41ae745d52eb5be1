"""The local Service's rendered configuration: HAProxy's, and the kernel's DNAT rules."""

from __future__ import annotations

import subprocess

from prerequisites import require

from elves.local.kernel_nat import chain_name, parse_jump_counters, render_rules
from elves.local.ports import MAX_SLOTS, Ports
from elves.local.proxy import HAPROXY, render_config

PORTS = Ports(300)
SERVICES = {"gateway": PORTS.gateway, "registry": PORTS.registry}


def blocks(config: str) -> dict[str, list[str]]:
    """Each section of an HAProxy configuration ("backend gateway") with its lines."""
    sections: dict[str, list[str]] = {}
    for line in config.splitlines():
        if line and not line.startswith(" "):
            current = sections.setdefault(line, [])
        elif line.strip():
            current.append(line.strip())
    return sections


def test_haproxy_balances_requests_and_answers_503_when_none_is_ready(tmp_path):
    sections = blocks(render_config(PORTS, SERVICES, tmp_path / "admin.sock"))
    # Each request on its own: a replica out of rotation gets no further request, even on a
    # client's kept-alive connection (what a rolling restart needs).
    assert "mode http" in sections["defaults"]
    for name, port in SERVICES.items():
        assert sections[f"frontend {name}"] == [f"bind 127.0.0.1:{port}", f"use_backend {name}-none if "
                                                f"{{ nbsrv({name}) eq 0 }}", f"default_backend {name}"]
        servers = [line for line in sections[f"backend {name}"] if line.startswith("server ")]
        assert len(servers) == MAX_SLOTS and all(line.endswith(" disabled") for line in servers)
        assert servers[1] == f"server r1 127.0.0.1:{PORTS.replica_http(name, 1)} disabled"
        none = sections[f"backend {name}-none"]
        assert "http-request return status 503" in none[0] and "hdr Retry-After 1" in none[0]
        # The client's next request must open a new connection, which replicas ready by then take.
        assert none[1] == "http-after-response set-header Connection close"


def test_haproxy_accepts_the_configuration(tmp_path):
    require(HAPROXY.exists(), f"{HAPROXY} is missing (tools/install-local-deps.sh)")
    config = tmp_path / "haproxy.cfg"
    config.write_text(render_config(PORTS, SERVICES, tmp_path / "admin.sock"))
    checked = subprocess.run([str(HAPROXY), "-c", "-f", str(config)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_dnat_rules_take_the_ready_replicas_in_turn():
    rules = render_rules(SERVICES, {"gateway": [(0, 18380), (2, 18382), (5, 18385)], "registry": []})
    assert rules.splitlines() == [
        "*nat",
        # Declared chains are emptied: the whole replacement is one transaction.
        ":ELVES-SVC-8380 - [0:0]",
        ":ELVES-SVC-8381 - [0:0]",
        # Each connection that skipped the rules before meets 1 in n: connections go round-robin.
        '-A ELVES-SVC-8380 -p tcp -m statistic --mode nth --every 3 --packet 0 -m comment --comment "elves gateway r0" '
        "-j DNAT --to-destination 127.0.0.1:18380",
        '-A ELVES-SVC-8380 -p tcp -m statistic --mode nth --every 2 --packet 0 -m comment --comment "elves gateway r2" '
        "-j DNAT --to-destination 127.0.0.1:18382",
        '-A ELVES-SVC-8380 -p tcp -m comment --comment "elves gateway r5" -j DNAT --to-destination 127.0.0.1:18385',
        # No ready registry: an empty chain, the connection goes on to HAProxy on the port itself (503).
        "COMMIT",
    ]


def test_chains_are_named_by_port_so_stacks_at_other_offsets_keep_theirs():
    assert chain_name(Ports(0).gateway) != chain_name(Ports(300).gateway)
    assert len(chain_name(65535)) <= 28  # iptables' limit on a chain's name


def test_connections_are_the_packets_of_the_jump_rules():
    listing = """Chain OUTPUT (policy ACCEPT 0 packets, 0 bytes)
    pkts      bytes target     prot opt in     out     source               destination
    1134   112288 KUBE-SERVICES  0    --  *      *       0.0.0.0/0            0.0.0.0/0            /* kubernetes service portals */
     513    30780 ELVES-SVC-8381  6    --  *      *       0.0.0.0/0            127.0.0.1            tcp dpt:8381 /* elves local Service registry */
    3928   235680 ELVES-SVC-8380  6    --  *      *       0.0.0.0/0            127.0.0.1            tcp dpt:8380 /* elves local Service gateway */
       7      420 ELVES-SVC-8080  6    --  *      *       0.0.0.0/0            127.0.0.1            tcp dpt:8080 /* elves local Service gateway */
"""
    assert parse_jump_counters(listing, SERVICES) == {"gateway": 3928, "registry": 513}
