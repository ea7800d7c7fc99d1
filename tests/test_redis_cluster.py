"""One crawl over a real Redis Cluster: spread over its masters, polite, and through a failover
and a resharding without losing a page."""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from datetime import datetime

import pytest
import redis
from crawling import reaped
from redis.crc import key_slot
from redis_cluster import RedisClusterNodes
from test_redis_workers import check_politeness, start_workers, wait_for_hits
from testweb import Site, TestWeb

from crawler.dedup.index import RedisContentIndex
from crawler.frontier.api import Entry
from crawler.frontier.backends.redis.cluster import ClusterFrontier, shard_count, shard_tags
from crawler.frontier.backends.redis.single import RedisFrontier
from crawler.store.files import LocalStore, iter_records

CLUSTER = {"REDIS_CLUSTER": True, "CRAWL_ID": "shared", "SCHEDULER_IDLE_BEFORE_CLOSE": 3}


def test_shard_tags_spread_evenly_over_the_slots():
    tags = shard_tags("crawl-a", 16)
    assert len(set(tags)) == 16
    slots = [key_slot(f"crawl:{{{tag}}}:ready".encode()) for tag in tags]
    assert [slot * 16 // 16384 for slot in slots] == list(range(16))  # one in each sixteenth
    assert shard_tags("crawl-a", 16) == tags  # every worker finds the same
    with pytest.raises(ValueError, match="REDIS_SHARDS"):
        shard_tags("crawl-a", 0)


@pytest.fixture
def cluster(tmp_path):
    nodes = RedisClusterNodes(tmp_path / "cluster").start()
    yield nodes
    nodes.stop()


def keys_by_master(nodes: RedisClusterNodes, crawl_id: str) -> Counter:
    counts = Counter()
    for port in nodes.masters_ports():
        for key in redis.Redis(port=port).scan_iter(match=f"crawl:{{{crawl_id}*", count=1000):
            counts[port] += 1
            assert key.startswith(f"crawl:{{{crawl_id}".encode())
    return counts


def test_a_worker_with_another_shard_count_is_refused(cluster):
    client = redis.RedisCluster.from_url(cluster.url)
    assert shard_count(client, "c1", None) == 16 and not client.exists("crawl:{c1}:shards")  # a reader
    assert shard_count(client, "c1", 8) == 8
    assert shard_count(client, "c1", None) == 8  # commands that do not know it read it
    with pytest.raises(ValueError, match="REDIS_SHARDS = 8"):
        shard_count(client, "c1", 16)


def test_two_workers_crawl_over_three_masters_politely(tmp_path, cluster):
    (tmp_path / "run").mkdir()
    sites = [Site(f"c{i:02d}.test", pages=8) for i in range(16)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        workers = start_workers(web, tmp_path / "run", cluster.url, "ab", seeds, **CLUSTER)
        for w in workers:
            assert w.wait(timeout=120) == 0
        expected = web.reachable(seeds)
        check_politeness(web, [s.host for s in sites])
        assert max(web.max_in_flight(s.host) for s in sites) == 1
        hits = Counter((r.host, r.path) for r in web.hits())
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "run" / "store")))
    assert set(stored) == expected and max(stored.values()) == 1 and max(hits.values()) == 1
    spread = keys_by_master(cluster, "shared")
    assert len(spread) == 3, spread  # every master holds a part of the crawl
    frontier = ClusterFrontier(redis.RedisCluster.from_url(cluster.url), "shared", 16)
    assert frontier.counters["fetched"] == len(expected) and not frontier.has_pending()


def test_workers_share_the_content_index_split_over_the_masters(tmp_path, cluster):
    sites = [Site("a.test", pages=20, fanout=3), Site("m.test", mirror_of="a.test", pages=20, fanout=3),
             Site("n.test", mirror_of="a.test", pages=20, fanout=3)]
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        for w in start_workers(web, tmp_path, cluster.url, "ab", seeds, **CLUSTER):
            assert w.wait(timeout=120) == 0
    records = list(iter_records(LocalStore(tmp_path / "store")))
    originals = {r["url"]: r for r in records if r["duplicate_of"] is None}
    # Each text kept once across both workers and every shard; every copy points at its original.
    assert len(originals) == len({r["content_sha256"] for r in originals.values()}) == 20
    assert all(originals[r["duplicate_of"]]["content_sha256"] == r["content_sha256"]
               for r in records if r["duplicate_of"] is not None)
    holding = [port for port in cluster.masters_ports()
               if any(redis.Redis(port=port).scan_iter(match="crawl:{shared:*}:content:*"))]
    assert len(holding) >= 2, holding  # the index is spread, not on the crawl's own tag


def both_running(nodes):
    """Until both workers have opened their frontier, their first heartbeat on the last
    shard (a worker starting while a master is down is another story: the scheduler
    needs Redis to open)."""
    client = redis.RedisCluster.from_url(nodes.url)
    workers = f"crawl:{{{shard_tags('shared', 16)[-1]}}}:workers"
    deadline = time.monotonic() + 60
    while client.zcard(workers) < 2 and time.monotonic() < deadline:
        time.sleep(0.02)
    client.close()


def crawl_through(tmp_path, nodes, sites, disturb, **settings):
    """Two workers crawl ``sites``; ``disturb(web)`` runs meanwhile. Returns what the web
    saw, what was stored and what the workers logged."""
    (tmp_path / "run").mkdir()
    with TestWeb(sites) as web:
        seeds = [web.url(s.host) for s in sites]
        with reaped(start_workers(web, tmp_path / "run", nodes.url, "ab", seeds, **CLUSTER,
                                  **settings)) as workers:
            disturb(web)
            for w in workers:
                assert w.wait(timeout=180) == 0
        expected = web.reachable(seeds)
        in_flight = {s.host: web.max_in_flight(s.host) for s in sites}
    stored = Counter(r["url"] for r in iter_records(LocalStore(tmp_path / "run" / "store")))
    logs = {name: (tmp_path / "run" / f"worker-{name}" / "log").read_text() for name in "ab"}
    return expected, in_flight, stored, logs


@pytest.fixture
def replicated(tmp_path):
    nodes = RedisClusterNodes(tmp_path / "cluster", replicas=1).start()
    yield nodes
    nodes.stop()


def test_a_master_killed_mid_crawl_is_failed_over_and_nothing_is_lost(tmp_path, replicated):
    sites = [Site(f"f{i:02d}.test", pages=12) for i in range(12)]
    victim = replicated.master_of(f"crawl:{{{shard_tags('shared', 16)[0]}}}:")

    def kill_a_master(web):
        both_running(replicated)
        wait_for_hits(web, 40)
        replicated.kill(victim)

    expected, in_flight, stored, logs = crawl_through(tmp_path, replicated, sites, kill_a_master,
                                                      FRONTIER_LEASE_SECONDS=5)
    assert victim not in replicated.masters_ports()  # its replica took over
    assert set(stored) == expected  # every page stored
    assert set(in_flight.values()) == {1}  # no host fetched twice at once
    for log in logs.values():
        assert "Traceback" not in log and "ERROR" not in log
        said = Counter(line.split("[")[1].split("]")[0] for line in log.splitlines()
                       if "WARNING: " in line and "nreachable" in line)
        assert max(said.values(), default=1) == 1, said  # each part says the outage once
    assert any("crawler.frontier" in line and "nreachable" in line for log in logs.values()
               for line in log.splitlines())


def test_slots_moved_to_a_new_master_mid_crawl_lose_nothing(tmp_path, cluster):
    sites = [Site(f"r{i:02d}.test", pages=20) for i in range(12)]
    tags = shard_tags("shared", 16)
    ring = ClusterFrontier(redis.RedisCluster.from_url(cluster.url), "ring", 16)  # only its host ring
    busy = {ring.shard_of(s.host) for s in sites}
    # The first master holds slots 0..5460; move its slots up to the first of its shards
    # that holds hosts of this crawl, so the move carries live queues and leases.
    moved = min((key_slot(tag.encode()), index) for index, tag in enumerate(tags)
                if index in busy and key_slot(tag.encode()) < 5461)
    source = cluster.master_of(f"crawl:{{{tags[moved[1]]}}}:")
    target = {}

    def reshard(web):
        both_running(cluster)
        wait_for_hits(web, 30)
        target["port"] = cluster.add_master()
        cluster.reshard(source, target["port"], moved[0] + 1)

    expected, in_flight, stored, logs = crawl_through(tmp_path, cluster, sites, reshard)
    assert cluster.master_of(f"crawl:{{{tags[moved[1]]}}}:") == target["port"]  # the shard moved
    assert any(redis.Redis(port=target["port"]).scan_iter(match=f"crawl:{{{tags[moved[1]]}}}:*"))
    assert set(stored) == expected  # nothing lost
    assert set(in_flight.values()) == {1}
    for log in logs.values():
        assert "Traceback" not in log and "ERROR" not in log


@contextlib.contextmanager
def slot_moving(nodes: RedisClusterNodes, key: str, moved_keys: list[str]):
    """``key``'s slot half moved to another master (``moved_keys`` already there), as
    ``redis-cli --cluster reshard`` leaves it between two MIGRATE batches; then finished."""
    slot = key_slot(key.encode())
    source = nodes.master_of(key)
    target = next(port for port in nodes.masters_ports() if port != source)
    old, new = redis.Redis(port=source), redis.Redis(port=target)
    new.execute_command("CLUSTER SETSLOT", slot, "IMPORTING", nodes.node_id(source))
    old.execute_command("CLUSTER SETSLOT", slot, "MIGRATING", nodes.node_id(target))
    old.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *moved_keys)
    yield
    rest = old.execute_command("CLUSTER GETKEYSINSLOT", slot, 1000)
    if rest:
        old.execute_command("MIGRATE", "127.0.0.1", target, "", 0, 5000, "KEYS", *rest)
    for port in (target, source):
        redis.Redis(port=port).execute_command("CLUSTER SETSLOT", slot, "NODE", nodes.node_id(target))


def test_scripts_refuse_a_slot_being_moved_and_run_once_it_has_moved(cluster):
    client = redis.RedisCluster.from_url(cluster.url)
    frontier = ClusterFrontier(client, "moving", 16)
    frontier.add([Entry(1, "a.test", 0, "http://a.test/1"), Entry(2, "a.test", 0, "http://a.test/2")])
    shard = RedisFrontier(client, shard_tags("moving", 16)[frontier.shard_of("a.test")])  # no kept steps
    index = RedisContentIndex(client, "moving")
    with slot_moving(cluster, shard.prefix, [shard.prefix + "ready:0"]):
        with pytest.raises(redis.RedisError):  # its ready set moved, its queue not yet
            shard.claim_many(0.0, 1)
        assert client.zcard(shard.prefix + "ready:0") == 1 and shard.queued == 2  # nothing written
    claims, _ = shard.claim_many(0.0, 2)
    assert [c.request for c in claims] == ["http://a.test/1"]  # one host, one claim, all state moved
    with slot_moving(cluster, index.prefix, []), pytest.raises(redis.RedisError):
        index.check_and_add(b"s" * 32, 7, "http://a.test/1", "a.test", near=False)
    assert index.check_and_add(b"s" * 32, 7, "http://a.test/1", "a.test", near=False) is None
    assert index.check_and_add(b"s" * 32, 7, "http://b.test/1", "b.test", near=False) is not None


def test_a_master_away_pauses_only_the_hosts_on_it(tmp_path):
    nodes = RedisClusterNodes(tmp_path / "cluster", appendonly=True, full_coverage=False).start()
    try:
        sites = [Site(f"p{i:02d}.test", pages=20) for i in range(12)]
        tags = shard_tags("shared", 16)
        ring = ClusterFrontier(redis.RedisCluster.from_url(nodes.url), "ring", 16)
        victim = nodes.master_of(f"crawl:{{{tags[ring.shard_of('p00.test')]}}}:")
        away = {s.host for s in sites
                if nodes.master_of(f"crawl:{{{tags[ring.shard_of(s.host)]}}}:") == victim}
        assert away and len(away) < len(sites)
        seen_during_outage = {}

        def kill_then_restart(web):
            both_running(nodes)
            wait_for_hits(web, 10)
            nodes.kill(victim)
            urls = web.reachable([web.url(s.host) for s in sites])
            wanted = Counter(url.split("/")[2].split(":")[0] for url in urls)
            deadline = time.monotonic() + 90
            while time.monotonic() < deadline and any(len({r.path for r in web.hits(host)}) < wanted[host]
                                                      for host in wanted if host not in away):
                time.sleep(0.1)
            seen_during_outage.update({host: len({r.path for r in web.hits(host)}) for host in wanted})
            seen_during_outage["wanted"] = wanted
            nodes.restart(victim)
            seen_during_outage["restarted"] = time.time()  # the records' fetched_at is wall time

        expected, in_flight, stored, logs = crawl_through(tmp_path, nodes, sites, kill_then_restart)
    finally:
        nodes.stop()
    wanted, restarted = seen_during_outage.pop("wanted"), seen_during_outage.pop("restarted")
    assert all(seen_during_outage[h] == wanted[h] for h in wanted if h not in away)  # the others went on
    assert all(seen_during_outage[h] < wanted[h] for h in away)  # the away hosts waited
    assert set(stored) == expected  # and were crawled once their master was back
    # at about the policy's pace (a 0.1 s gap), not the engine's 5 s heartbeat (2-4 pages per 5 s)
    back = {}
    for record in iter_records(LocalStore(tmp_path / "run" / "store")):
        host, at = record["url"].split("/")[2].split(":")[0], datetime.fromisoformat(record["fetched_at"])
        if host in away and at.timestamp() >= restarted:
            back.setdefault(host, []).append(at.timestamp())
    assert set(back) == away
    for host, times in back.items():
        assert len(times) == 1 or (max(times) - min(times)) / (len(times) - 1) < 0.5, (host, sorted(times))
    assert set(in_flight.values()) == {1}
    for log in logs.values():
        assert "Traceback" not in log and "ERROR" not in log
        said = Counter(line.split("[")[1].split("]")[0] for line in log.splitlines()
                       if "WARNING: " in line and "nreachable" in line)
        assert max(said.values(), default=1) == 1, said
