"""A real DNS server (Debian's dnsmasq) on a free loopback port, started and stopped by the tests.

It answers the names of a hosts file it owns, for the domain ``example`` only (any other
name of it: NXDOMAIN; nothing is forwarded anywhere). ``set_records`` rewrites the file
and makes dnsmasq read it again (SIGHUP); ``restart(ttl=...)`` changes the TTL it gives.
"""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import dns.message
import dns.query
import dns.rdatatype


def free_udp_and_tcp_port() -> int:
    for _ in range(50):
        with socket.socket() as tcp, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
            tcp.bind(("127.0.0.1", 0))
            port = tcp.getsockname()[1]
            try:
                udp.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError("no free loopback port for UDP and TCP")


class DnsServer:
    """``dnsmasq`` on 127.0.0.1:``port``, authoritative-like for ``*.example``."""

    def __init__(self, directory: Path, ttl: int = 120) -> None:
        self.executable = shutil.which("dnsmasq") or "/usr/sbin/dnsmasq"
        if not Path(self.executable).exists():
            raise RuntimeError("dnsmasq is not installed (apt-get install -y dnsmasq)")
        self.hosts = directory / "hosts"
        self.hosts.write_text("")
        self.port = free_udp_and_tcp_port()
        self.ttl = ttl
        self.records: dict[str, list[str]] = {}
        self.process: subprocess.Popen | None = None

    @property
    def nameserver(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> DnsServer:
        command = [
            self.executable,
            "--keep-in-foreground",
            "--user=root",
            "--group=root",
            f"--port={self.port}",
            "--listen-address=127.0.0.1",
            "--bind-interfaces",
            "--no-resolv",
            "--no-hosts",
            "--no-poll",
            f"--addn-hosts={self.hosts}",
            "--local=/example/",
            "--domain-needed",
            f"--local-ttl={self.ttl}",
            "--cache-size=0",
            "--pid-file=",
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        self.wait_for("ready.example", [])
        return self

    def set_records(self, records: dict[str, list[str]]) -> None:
        """Serve exactly ``records`` (name -> addresses) from now on."""
        self.records = records
        self.hosts.write_text(
            "".join(f"{a} {name}\n" for name, addresses in records.items() for a in addresses)
        )
        if self.process is not None:
            self.process.send_signal(signal.SIGHUP)
            for name, addresses in records.items():
                self.wait_for(name, addresses)

    def restart(self, ttl: int) -> None:
        """Stop, and start on the same port giving answers this TTL."""
        self.stop()
        self.ttl = ttl
        self.start()
        for name, addresses in self.records.items():
            self.wait_for(name, addresses)

    def ask(self, name: str, rdtype: str = "A") -> tuple[list[str], int | None]:
        """(addresses, TTL) as dnsmasq answers now, asked directly."""
        query = dns.message.make_query(name, rdtype)
        response = dns.query.udp(query, "127.0.0.1", port=self.port, timeout=1)
        for rrset in response.answer:
            if rrset.rdtype == dns.rdatatype.from_text(rdtype):
                return [r.address for r in rrset], rrset.ttl
        return [], None

    def wait_for(self, name: str, addresses: list[str], timeout: float = 10) -> None:
        """Until dnsmasq answers ``name`` with ``addresses`` (v4 ones), within ``timeout``."""
        expected = sorted(a for a in addresses if ":" not in a)
        deadline = time.monotonic() + timeout
        while True:
            try:
                if sorted(self.ask(name)[0]) == expected:
                    return
            except (OSError, dns.exception.DNSException):
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"dnsmasq does not answer {name} with {expected}")
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(timeout=10)
            self.process = None
