"""A real Redis Cluster on loopback ports, made by ``redis-cli --cluster create`` and stopped after."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path

import redis


def cluster_port() -> int:
    """A free port whose cluster bus port (port + 10000) is free too, so <= 55535."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port > 55535:
            continue
        with socket.socket() as bus:
            try:
                bus.bind(("127.0.0.1", port + 10000))
            except OSError:
                continue
        return port
    raise RuntimeError("no free port pair for a cluster node")


class RedisClusterNodes:
    """``masters`` masters with ``replicas`` replicas each, on 127.0.0.1; ``url`` names the
    first node (the cluster client finds the rest). ``node_timeout`` (ms) is small, so a
    killed master is failed over in about a second."""

    def __init__(self, directory: Path, masters: int = 3, replicas: int = 0, node_timeout: int = 500,
                 appendonly: bool = False, full_coverage: bool = True) -> None:
        self.directory = directory
        self.options = ["--appendonly", "yes" if appendonly else "no",
                        "--cluster-require-full-coverage", "yes" if full_coverage else "no"]
        self.commands: dict[int, list[str]] = {}
        self.masters, self.replicas, self.node_timeout = masters, replicas, node_timeout
        self.cli = shutil.which("redis-cli")
        self.server = shutil.which("redis-server")
        if self.cli is None or self.server is None:
            raise RuntimeError("redis-server and redis-cli are needed (apt-get install -y redis-server)")
        self.processes: dict[int, subprocess.Popen] = {}

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{next(iter(self.processes))}/0"

    def _start_node(self, port: int | None = None) -> int:
        if port is None:
            port = cluster_port()
            home = self.directory / str(port)
            home.mkdir(parents=True)
            self.commands[port] = [
                self.server, "--bind", "127.0.0.1", "--port", str(port), "--save", "", *self.options,
                "--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                "--cluster-node-timeout", str(self.node_timeout), "--dir", str(home)]
        self.processes[port] = subprocess.Popen(self.commands[port], stdout=subprocess.DEVNULL,
                                                stderr=subprocess.DEVNULL)
        self._wait(lambda: redis.Redis(port=port).ping())
        return port

    def restart(self, port: int) -> None:
        """Start a killed node again on its port, with its data (AOF) and cluster config."""
        self._start_node(port)
        self.wait_ok()

    def _redis_cli(self, *args: str) -> str:
        done = subprocess.run([self.cli, "--cluster", *args, "--cluster-yes"], capture_output=True,
                              text=True, timeout=120, check=False)
        if done.returncode:
            raise RuntimeError(f"redis-cli --cluster {args[0]} failed: {done.stdout[-2000:]}{done.stderr}")
        return done.stdout

    @staticmethod
    def _wait(ready, seconds: float = 30) -> None:
        deadline = time.monotonic() + seconds
        while True:
            try:
                if ready():
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the cluster did not settle")
            time.sleep(0.05)

    def start(self) -> RedisClusterNodes:
        try:
            ports = [self._start_node() for _ in range(self.masters * (1 + self.replicas))]
            nodes = [f"127.0.0.1:{p}" for p in ports]
            self._redis_cli("create", *nodes, "--cluster-replicas", str(self.replicas))
            self.wait_ok()
            self._wait(self.replicas_synced)
        except BaseException:
            self.stop()
            raise
        return self

    def replicas_synced(self) -> bool:
        """Every replica has its master's data (its link is up): a replica that has not
        synced yet (about 5 s after ``create``) counts its data as too old to fail over."""
        return all(redis.Redis(port=port).info("replication").get("master_link_status") in (None, "up")
                   for port in self.processes)

    def wait_ok(self) -> None:
        """Until every live node says the cluster is ok and agrees on the masters."""
        def settled() -> bool:
            views = set()
            for port in self.processes:
                node = redis.Redis(port=port)
                if node.cluster("info")["cluster_state"] != "ok":
                    return False
                views.add(tuple(sorted(
                    (address, bool("master" in flags["flags"]), flags["connected"])
                    for address, flags in node.cluster("nodes").items() if "fail" not in flags["flags"])))
            return len(views) == 1
        self._wait(settled)

    def master_of(self, key: str) -> int:
        """The port of the master serving ``key``'s slot."""
        client = redis.RedisCluster.from_url(self.url)
        try:
            return client.get_node_from_key(key).port
        finally:
            client.close()

    def masters_ports(self) -> list[int]:
        node = redis.Redis(port=next(p for p, proc in self.processes.items() if proc.poll() is None))
        return sorted(int(address.rsplit(":", 1)[1]) for address, flags in node.cluster("nodes").items()
                      if "master" in flags["flags"] and "fail" not in flags["flags"])

    def kill(self, port: int) -> None:
        """SIGKILL a node, as a crash would."""
        self.processes[port].kill()
        self.processes[port].wait(timeout=10)

    def add_master(self) -> int:
        """A new empty master joined to the cluster; its port."""
        port = self._start_node()
        existing = next(p for p in self.processes if p != port and self.processes[p].poll() is None)
        self._redis_cli("add-node", f"127.0.0.1:{port}", f"127.0.0.1:{existing}")
        self.wait_agreed(existing, port)
        return port

    def wait_agreed(self, port: int, new: int) -> None:
        """Until ``redis-cli --cluster check`` from ``port`` sees node ``new``, every node
        agreeing on the slots and saying the cluster is ok (a node that has just joined says
        CLUSTERDOWN to a MIGRATE until it has learnt every slot)."""
        live = [p for p, process in self.processes.items() if process.poll() is None]

        def agreed() -> bool:
            infos = [redis.Redis(port=p).cluster("info") for p in live]
            if {int(i["cluster_known_nodes"]) for i in infos} != {len(live)}:
                return False
            if any(i["cluster_state"] != "ok" for i in infos):
                return False
            check = subprocess.run([self.cli, "--cluster", "check", f"127.0.0.1:{port}"], capture_output=True,
                                   text=True, timeout=30, check=False)
            return check.returncode == 0 and f"127.0.0.1:{new}" in check.stdout
        self._wait(agreed)

    def node_id(self, port: int) -> str:
        return redis.Redis(port=port).cluster("myid").decode()

    def reshard(self, source: int, target: int, slots: int) -> str:
        """Move ``slots`` slots (the source's lowest) with ``redis-cli --cluster reshard``."""
        return self._redis_cli("reshard", f"127.0.0.1:{source}", "--cluster-from", self.node_id(source),
                               "--cluster-to", self.node_id(target), "--cluster-slots", str(slots),
                               "--cluster-pipeline", "5")

    def stop(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.terminate()
        for process in self.processes.values():
            process.wait(timeout=10)
