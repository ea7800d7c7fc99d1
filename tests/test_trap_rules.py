"""The trap rules that learn (crawler.traps) and rel=canonical, pure, without I/O."""

from __future__ import annotations

import pytest

from crawler.dedup.same import SameText
from crawler.traps.content import Probe, counts_for_demotion, is_soft_404, probe_url, should_demote
from crawler.traps.params import LEARN, RELEVANT, Variant, same_resource, strip_params, variants, verdict
from crawler.urls.canonical import header_canonical, page_canonical
from crawler.urls.normalize import normalize_url


def test_variants_name_each_query_and_path_parameter_with_the_url_without_it():
    found = list(variants("http://a.test/x;jsessionid=9/y?id=7&sid=k"))
    assert found == [
        Variant("id", "7", "http://a.test/x;jsessionid=9/y?sid=k"),
        Variant("sid", "k", "http://a.test/x;jsessionid=9/y?id=7"),
        Variant(";jsessionid", "9", "http://a.test/x/y?id=7&sid=k"),
    ]
    assert list(variants("http://a.test")) == []
    assert list(variants("http://a.test/p?flag")) == [Variant("flag", "", "http://a.test/p")]


@pytest.mark.parametrize(("url", "names", "expected"), [
    ("http://a.test/p?id=7&sid=k", {"sid"}, "http://a.test/p?id=7"),
    ("http://a.test/p?sid=k", {"sid"}, "http://a.test/p"),
    ("http://a.test/p;jsessionid=9?sid=k", {";jsessionid"}, "http://a.test/p?sid=k"),
    ("http://a.test/p;v=1;jsessionid=9", {";jsessionid"}, "http://a.test/p;v=1"),
    ("http://a.test/p?sid=k", set(), "http://a.test/p?sid=k"),
    ("http://a.test/p?jsessionid=k", {";jsessionid"}, "http://a.test/p?jsessionid=k"),  # not a path param
])
def test_strip_params(url, names, expected):
    assert strip_params(url, names) == expected


def test_a_parameter_is_learned_on_enough_values_with_one_text_and_never_when_text_changes():
    assert verdict({"a": "h1", "b": "h1"}, evidence=3) is None
    assert verdict({"a": "h1", "b": "h1", "c": "h1"}, evidence=3) == LEARN
    assert verdict({"a": "h1", "b": "h2"}, evidence=3) == RELEVANT
    assert verdict({"a": "h1", "b": "h1", "c": "h2", "d": "h1"}, evidence=3) == RELEVANT


def test_the_probe_path_is_random_nonsense_on_the_host():
    one, two = probe_url("http://a.test"), probe_url("http://a.test")
    assert one != two and one.startswith("http://a.test/") and normalize_url(one) == one


def test_soft_404_is_an_exact_or_near_copy_of_the_probe_text():
    probe = Probe("http://a.test/x", "aa", 0b1111_0000)
    same = SameText(max_distance=3, min_words=20)
    assert is_soft_404(same.print("aa", 0, 1), probe, same)
    assert is_soft_404(same.print("bb", 0b1111_0111, 50), probe, same)
    assert not is_soft_404(same.print("bb", 0b1111_1111, 50), probe, same)  # 4 bits
    assert not is_soft_404(same.print("bb", 0b1111_0000, 5), probe, same)  # too short for near


def test_a_near_copy_is_no_change_of_a_parameter():
    same = SameText(max_distance=3, min_words=20)
    clock = [same.print(sha, 0b1010_0000 ^ flip, 200).token()
             for sha, flip in (("a1", 0), ("b2", 1), ("c3", 6))]
    assert verdict(dict(zip("xyz", clock, strict=True)), 3, same.same_tokens) == LEARN
    assert verdict(dict(zip("xyz", clock, strict=True)), 3) == RELEVANT  # as exact texts: never learned
    far = same.print("d4", 0b0101_1111, 200).token()
    assert verdict({"x": clock[0], "y": far}, 3, same.same_tokens) == RELEVANT
    short = [same.print(sha, 0, 5).token() for sha in ("a1", "b2")]  # too short: exact only
    assert verdict(dict(zip("xy", short, strict=True)), 3, same.same_tokens) == RELEVANT


def test_demotion_needs_a_full_window_with_more_than_the_rate_of_duplicates():
    assert not should_demote([True] * 9, window=10, rate=0.5)
    assert not should_demote([True] * 5 + [False] * 5, window=10, rate=0.5)
    assert should_demote([True] * 6 + [False] * 4, window=10, rate=0.5)
    assert not should_demote([False] * 5 + [True] * 6, window=10, rate=0.5)  # the newest count


def test_canonical_from_the_link_header_wins_over_the_link_element():
    assert header_canonical(['<https://a.test/x>; rel="canonical"']) == "https://a.test/x"
    assert header_canonical(['</s.css>; rel=preload, </y>; rel=canonical']) == "/y"
    assert header_canonical(['</s.css>; rel="preload"']) is None
    page = "http://a.test/p?ref=1"
    assert page_canonical(page, "/p", "/q", normalize_url) == ("http://a.test/q", True)
    assert page_canonical(page, "/p", None, normalize_url) == ("http://a.test/p", True)
    assert page_canonical(page, "http://b.test/p", None, normalize_url) == ("http://b.test/p", False)
    assert page_canonical(page, "javascript:x", None, normalize_url) == (None, False)
    assert page_canonical(page, None, None, normalize_url) == (None, False)


def test_only_copies_under_another_path_count_against_a_host():
    assert same_resource("http://a.test/p;s=1?x=1", "http://a.test/p?y=2")
    assert not same_resource("http://a.test/p", "http://a.test/q")
    assert counts_for_demotion("http://a.test/tag/2", "http://a.test/tag/1", "exact")
    assert counts_for_demotion("http://a.test/tag/2", "http://a.test/tag/1", "near")
    assert not counts_for_demotion("http://a.test/p?sid=2", "http://a.test/p?sid=1", "exact")
    assert not counts_for_demotion("http://a.test/x", "http://a.test/zz-no-such-page.html", "soft_404")
    assert not counts_for_demotion("http://a.test/x", None, None)
