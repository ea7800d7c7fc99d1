"""One worker's traps over a store: learning, the probe, demotion (no network)."""

from __future__ import annotations

from collections import Counter

from crawler.traps.content import Probe
from crawler.traps.state import Traps, TrapSettings
from crawler.traps.store import EmbeddedTrapStore


class Stats(Counter):
    def inc_value(self, key, n=1):
        self[key] += n


def traps(store=None, **settings) -> Traps:
    return Traps(store or EmbeddedTrapStore(":memory:"), Stats(), TrapSettings(**settings),
                 clock=lambda: 0.0)


def test_a_parameter_with_one_text_on_three_values_is_learned_and_removed():
    t = traps()
    for sid in ("a", "b"):
        t.observe(f"http://s.test/p?id=1&sid={sid}", "h1")
    assert t.rewrite("http://s.test/q?sid=zz") == "http://s.test/q?sid=zz"  # not learned yet
    t.observe("http://s.test/p?id=1&sid=c", "h1")
    assert t.stats["traps/params_learned"] == 1
    assert t.store.learned("s.test") == {"sid"}
    # the form fetched (with sid values) is dropped; a new one loses its sid
    assert t.rewrite("http://s.test/p?id=1&sid=new") is None
    assert t.rewrite("http://s.test/q?sid=zz") == "http://s.test/q"
    assert t.rewrite("http://other.test/q?sid=zz") == "http://other.test/q?sid=zz"
    assert t.stats["traps/dropped/learned_params"] == 1
    # a link stripped already (by a worker that read the rule without checking), or
    # linked without sid, is dropped too when a sid spelling of it was fetched
    assert t.rewrite("http://s.test/p?id=1") is None
    assert t.rewrite("http://s.test/q") == "http://s.test/q"


def test_the_page_without_the_parameter_is_one_of_its_values():
    t = traps()
    t.observe("http://s.test/", "h1")  # the seed, before its ?sid= links
    t.observe("http://s.test/?sid=a", "h1")
    assert t.store.learned("s.test") == frozenset()
    t.observe("http://s.test/?sid=b", "h1")  # the third fetch of '/' settles it
    assert t.store.learned("s.test") == {"sid"}
    assert t.rewrite("http://s.test/?sid=c") is None


def test_the_page_without_the_parameter_can_make_it_relevant():
    t = traps()
    t.observe("http://s.test/list", "h0")
    t.observe("http://s.test/list?page=2", "h2")
    assert t.stats["traps/params_relevant"] == 1


def test_a_worker_on_the_reactor_strips_links_with_the_rule_as_last_read():
    t = traps(refresh=10)
    assert t.known_learned("s.test") == (frozenset(), False)  # never read: read it elsewhere
    for sid in ("a", "b", "c"):
        t.observe(f"http://s.test/p?sid={sid}", "h1")
    assert t.known_learned("s.test") == ({"sid"}, True)  # read again as it was learned
    t.clock = lambda: 1e9
    assert t.known_learned("s.test") == ({"sid"}, False)  # stale: still used, read again


def test_a_parameter_that_changes_the_text_is_never_learned():
    t = traps()
    t.observe("http://s.test/list?page=1", "h1")
    t.observe("http://s.test/list?page=2", "h2")
    for page in range(3, 9):  # later pages with equal texts do not undo it
        t.observe(f"http://s.test/other?page={page}", "h3")
    assert t.store.learned("s.test") == frozenset()
    assert t.stats["traps/params_relevant"] == 1
    assert t.rewrite("http://s.test/list?page=3") == "http://s.test/list?page=3"


def test_what_one_worker_learned_another_sees_after_the_refresh(tmp_path):
    now = [0.0]
    one = Traps(EmbeddedTrapStore(tmp_path / "t.sqlite"), Stats(), TrapSettings(refresh=10), lambda: now[0])
    two = Traps(EmbeddedTrapStore(tmp_path / "t.sqlite"), Stats(), TrapSettings(refresh=10), lambda: now[0])
    assert two.rewrite("http://s.test/q?sid=1") == "http://s.test/q?sid=1"
    for sid in "abc":
        one.observe(f"http://s.test/p?sid={sid}", "h1")
    now[0] = 11.0
    assert two.rewrite("http://s.test/q?sid=1") == "http://s.test/q"


def test_the_probe_is_claimed_once_and_copies_of_its_answer_are_soft_404s():
    store = EmbeddedTrapStore(":memory:")
    t, other = traps(store), traps(store)
    assert t.claim_probe("s.test") and not t.claim_probe("s.test") and not other.claim_probe("s.test")
    probe = Probe("http://s.test/zz-no-such-page.html", "aa" * 32, 0xFF)
    assert t.soft_404("http://s.test/missing", "aa" * 32, 0xFF, 50) is None  # not answered yet
    t.probe_answered("s.test", probe)
    assert t.soft_404("http://s.test/missing", "aa" * 32, 0xFF, 50) == probe
    assert t.soft_404("http://s.test/near", "bb" * 32, 0xFE, 50) == probe
    assert t.soft_404("http://s.test/real", "cc" * 32, 0xFF00FF00, 50) is None
    assert t.stats["traps/soft_404"] == 2


def test_a_host_is_demoted_once_when_most_of_its_window_is_duplicates():
    t = traps(window=4, rate=0.5)
    outcomes = [t.page_seen("http://d.test/", duplicate) for duplicate in (False, True, True, False)]
    assert outcomes == [False] * 4  # 2 of 4: not more than half
    assert t.page_seen("http://d.test/", True)  # 3 of the last 4
    assert not t.page_seen("http://d.test/", True)
    assert t.stats["traps/hosts_demoted"] == 1
