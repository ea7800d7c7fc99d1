"""URL policy: conformance vectors and behaviour of crawler.urls."""

from __future__ import annotations

import json
import random
import re
import socket
from pathlib import Path

import pytest

from crawler.defaults import URL_DROP_PARAMS
from crawler.urls import keys
from crawler.urls.keys import fingerprint, registered_domain, url_fingerprint, url_host
from crawler.urls.normalize import DEFAULT_DROP_PARAMS, UrlNormalizer, normalize_url
from crawler.urls.traps import has_repeated_segments

VECTORS_PATH = Path(__file__).parent / "data" / "url_normalization.jsonl"
VECTORS = [json.loads(line) for line in VECTORS_PATH.read_text("utf-8").splitlines() if line]


def test_all_conformance_vectors_are_loaded():
    assert len(VECTORS) == 175
    assert len({v["id"] for v in VECTORS}) == 175


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector(vector):
    assert normalize_url(vector["input"], vector["base"]) == vector["expected"]


# --- normalisation behaviour ---------------------------------------------------------


def test_normalisation_is_idempotent_on_every_vector_output():
    outputs = [v["expected"] for v in VECTORS if v["expected"] is not None]
    for url in outputs:
        assert normalize_url(url) == url


def _random_urls(count: int, seed: int = 7) -> list[tuple[str, str | None]]:
    """Seeded random (url, base) pairs built from URL syntax pieces and odd characters."""
    rng = random.Random(seed)
    pieces = [*"aB9-._~:/?#[]@!$&'()*+,;=% \t\n\\\"<>{}|^`\x00\x7féü中"]
    pieces += ["%2e", "%2E", "%41", "%zz", "%c0", "..", "./", "../", "//", "xn--", "%C3%BC"]
    pieces += ["ß", "\uff25", "\u3002", ":80", ":443", "&utm_source=1", "&", "=", "[::1]", "\ud800"]
    prefixes = ["http://", "https://", "HTTP://", "", "//", "http:"]
    bases = [None, "http://h.com/a/b?c", "https://X.org", "http://[::1]:81/x/"]
    return [
        (
            rng.choice(prefixes) + "".join(rng.choice(pieces) for _ in range(rng.randint(0, 25))),
            rng.choice(bases),
        )
        for _ in range(count)
    ]


def test_normalisation_is_idempotent_on_random_inputs():
    for url, base in _random_urls(3000):
        normal = normalize_url(url, base)
        if normal is not None:
            assert normalize_url(normal) == normal, (url, base)


def test_default_drop_params_come_from_settings():
    assert DEFAULT_DROP_PARAMS == URL_DROP_PARAMS


def test_tracking_parameters_are_dropped_whatever_their_case_or_escaping():
    assert normalize_url("http://a.com/p?UTM_Source=x&id=1&FBCLID=y") == "http://a.com/p?id=1"
    # "_" is unreserved, so its escape is decoded before the name is matched
    assert normalize_url("http://a.com/p?utm%5Fsource=x&id=1") == "http://a.com/p?id=1"


def test_custom_drop_regex_replaces_the_default():
    normalize = UrlNormalizer(r"ref|src_\w+")
    assert normalize("http://a.com/?src_x=1&b=2&REF=3&utm_source=z") == ("http://a.com/?b=2&utm_source=z")


def test_custom_drop_regex_must_match_the_whole_name():
    normalize = UrlNormalizer("ref")
    assert normalize("http://a.com/?referrer=1&ref=2") == "http://a.com/?referrer=1"


def test_compiled_drop_pattern_is_matched_case_insensitively():
    normalize = UrlNormalizer(re.compile("sid"))
    assert normalize("http://a.com/?SID=1&x=2") == "http://a.com/?x=2"


@pytest.mark.parametrize("drop_nothing", [None, ""])
def test_drop_nothing_keeps_every_parameter_but_still_sorts(drop_nothing):
    normalize = UrlNormalizer(drop_nothing)
    assert normalize("http://a.com/?utm_source=x&b=1&a=2") == "http://a.com/?a=2&b=1&utm_source=x"


def test_instance_with_default_policy_matches_module_function():
    normalize = UrlNormalizer()
    for v in VECTORS:
        assert normalize(v["input"], v["base"]) == v["expected"]


def test_empty_pieces_of_the_query_are_dropped():
    assert normalize_url("http://a.com/?b=1&&a=2&") == "http://a.com/?a=2&b=1"
    assert normalize_url("http://a.com/?&&") == "http://a.com/"


def test_tab_cr_lf_inside_a_url_are_removed_like_browsers_do():
    assert normalize_url("ht\ttp://exa\nmple.com/a\r/b") == "http://example.com/a/b"


def test_escaped_dot_segments_are_removed_after_decoding():
    # RFC 3986 6.2.2.3: dot-segments come out after unreserved escapes are decoded
    assert normalize_url("http://a.com/b/%2E%2e/c/%2e/d") == "http://a.com/c/d"


def test_lone_percent_is_encoded_as_percent_25():
    assert normalize_url("http://a.com/100%/x%zz%4") == "http://a.com/100%25/x%25zz%254"


def test_backslash_backtick_and_controls_in_path_are_percent_encoded():
    assert normalize_url("http://a.com/a\\b`c\x7f") == "http://a.com/a%5Cb%60c%7F"


def test_lone_surrogate_is_encoded_as_replacement_character():
    assert normalize_url("http://a.com/\ud800") == "http://a.com/%EF%BF%BD"


def test_host_escapes_are_decoded_then_idna_encoded():
    assert normalize_url("http://b%C3%BCcher.de/") == "http://xn--bcher-kva.de/"


def test_idn_host_uses_non_transitional_mapping_like_browsers():
    # UTS 46 non-transitional: "ß" is kept (xn--fa-hia), not folded to "ss"
    assert normalize_url("http://faß.de/") == "http://xn--fa-hia.de/"


@pytest.mark.parametrize(
    "url",
    [
        "http://a b.com/",
        "http://a..b.com/",
        "http://exa%zzmple.com/",
        "http://%FF.com/",
        "http://a<b.com/",
        "http://[v1.fe]/",
        "http://[::1]x/",
        "http://[not:an:ip:address:at:all:x:y:z]/",
    ],
)
def test_host_that_cannot_be_a_hostname_is_rejected(url):
    assert normalize_url(url) is None


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("http://a.com:8080/", "http://a.com:8080/"),
        ("http://a.com:0080/", "http://a.com/"),
        ("https://a.com:00443/", "https://a.com/"),
        ("http://a.com:443/", "http://a.com:443/"),
        ("http://a.com:/", "http://a.com/"),
        ("http://a.com:99999/", None),
        ("http://a.com:65536/", None),
        ("http://a.com:0/", None),
        ("http://a.com:8o/", None),
        ("http://a.com:٨٠/", None),  # Arabic-Indic digits are not a port
    ],
)
def test_port_rules(url, expected):
    assert normalize_url(url) == expected


@pytest.mark.parametrize(
    ("ref", "base", "expected"),
    [
        # RFC 3986 5.4.1 normal examples (those that stay http)
        ("g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
        ("./g", "http://a/b/c/d;p?q", "http://a/b/c/g"),
        ("g/", "http://a/b/c/d;p?q", "http://a/b/c/g/"),
        ("/g", "http://a/b/c/d;p?q", "http://a/g"),
        ("//g", "http://a/b/c/d;p?q", "http://g/"),
        ("?y", "http://a/b/c/d;p?q", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/d;p?q", "http://a/b/c/g?y"),
        ("#s", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
        ("", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
        ("..", "http://a/b/c/d;p?q", "http://a/b/"),
        ("../..", "http://a/b/c/d;p?q", "http://a/"),
        ("../../../g", "http://a/b/c/d;p?q", "http://a/g"),
        ("g;x=1/../y", "http://a/b/c/d;p?q", "http://a/b/c/y"),
        # base without a path, relative to a different scheme, absolute refs
        ("x", "https://A.com", "https://a.com/x"),
        ("//b.com/x", "https://a.com/", "https://b.com/x"),
        ("http://b.com/x", "https://a.com/", "http://b.com/x"),
        ("mailto:x@y", "https://a.com/", None),
        ("x", "mailto:x@y", None),
        ("x", "not a url", None),
    ],
)
def test_relative_references_resolve_against_the_base(ref, base, expected):
    assert normalize_url(ref, base) == expected


def test_relative_url_without_base_is_not_crawlable():
    assert normalize_url("/a/b") is None
    assert normalize_url("//a.com/b") is None


NASTY_INPUTS = [
    "",
    " ",
    "\x00",
    "http://[::1",
    "http://[",
    "http://a:99999/",
    "http://",
    "http:",
    "http:/",
    "https:///x",
    "ht!tp://x",
    "http://@/",
    "http://:80/",
    "http://a:" + "9" * 5000 + "/",
    "http://" + "a" * 100_000 + ".com/",
    "http://a.com/" + "%" * 50_000,
    "http://a.com/" + "../" * 20_000,
    "http://a.com/?" + "&" * 50_000,
    "x" * 200_000,
    "\ud800://\udfff",
    "http://\ud800/",
    "http://%/",
    "http://xn--/",
    "http://。/",
    "javascript:alert(1)",
    "data:text/html,hi",
]


@pytest.mark.parametrize("garbage", NASTY_INPUTS, ids=range(len(NASTY_INPUTS)))
def test_never_raises_on_garbage_input(garbage):
    result = normalize_url(garbage)
    assert result is None or result.startswith(("http://", "https://"))
    result = normalize_url("x", garbage)
    assert result is None or result.startswith(("http://", "https://"))
    result = normalize_url(garbage, "http://a.com/b/")
    assert result is None or result.startswith(("http://", "https://"))


def test_never_raises_on_non_string_input():
    assert normalize_url(None) is None  # type: ignore[arg-type]
    assert normalize_url(b"http://a.com/") is None  # type: ignore[arg-type]


# --- fingerprints ----------------------------------------------------------------------


def test_fingerprint_is_a_known_stable_blake2b_64_value():
    # blake2b(b"http://example.com/", digest_size=8), big-endian: a change here
    # would silently invalidate every stored seen-set.
    assert fingerprint("http://example.com/") == 18096097815684820230


def test_fingerprint_is_64_bit_unsigned():
    for v in VECTORS:
        if v["expected"] is not None:
            assert 0 <= fingerprint(v["expected"]) < 2**64


def test_equivalent_urls_have_equal_fingerprints():
    a = url_fingerprint("HTTP://Example.COM:80/a/./b/../c?b=2&utm_source=x&a=1#top")
    b = url_fingerprint("http://example.com/a/c?a=1&b=2")
    assert a == b == fingerprint("http://example.com/a/c?a=1&b=2")
    assert url_fingerprint("http://example.com/a") != url_fingerprint("http://example.com/b")


@pytest.mark.parametrize("url", ["mailto:x@y", "/relative", "http://", ""])
def test_url_fingerprint_raises_value_error_naming_the_url(url):
    with pytest.raises(ValueError, match=re.escape(repr(url))):
        url_fingerprint(url)


# --- host keys -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "host"),
    [
        ("http://example.com/", "example.com"),
        ("https://a.b.example.co.uk:8443/x?y=1", "a.b.example.co.uk"),
        ("http://[::1]:8080/x", "::1"),
        ("http://[2001:db8::1]/", "2001:db8::1"),
        ("http://127.0.0.1:81/", "127.0.0.1"),
    ],
)
def test_url_host_is_hostname_without_port(url, host):
    assert url_host(url) == host


@pytest.mark.parametrize(
    ("host", "domain"),
    [
        ("a.b.example.co.uk", "example.co.uk"),
        ("www.example.com", "example.com"),
        ("example.com", "example.com"),
        ("www.xn--bcher-kva.de", "xn--bcher-kva.de"),
        ("www.example.org.", "example.org"),
        ("127.0.0.1", "127.0.0.1"),
        ("::1", "::1"),
        ("[::1]", "[::1]"),
        ("localhost", "localhost"),
    ],
)
def test_registered_domain_is_etld_plus_one(host, domain):
    assert registered_domain(host) == domain


def test_registered_domain_uses_bundled_snapshot_without_network_or_cache(monkeypatch, tmp_path):
    def no_network(*args, **kwargs):
        raise AssertionError("registered_domain touched the network")

    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("TLDEXTRACT_CACHE", str(tmp_path / "tldcache"))
    monkeypatch.setattr(keys, "_tld_extract", None)
    registered_domain.cache_clear()
    try:
        assert registered_domain("news.bbc.co.uk") == "bbc.co.uk"
    finally:
        registered_domain.cache_clear()
    assert list(tmp_path.iterdir()) == []


# --- trap rules ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "repeats", "expected"),
    [
        ("http://x.com/a/b/a/b/a/b/", 3, True),
        ("http://x.com/x/x/x", 3, True),
        ("http://x.com/1/2/3/1/2/3/1/2/3/page.html", 3, True),
        ("http://x.com/p/a/a/a/b", 3, True),
        ("http://x.com/a/b/a/b", 3, False),
        ("http://x.com/a/b/a/b", 2, True),
        ("http://x.com/a/b/c/d", 3, False),
        ("http://x.com/2024/01/01/story", 3, False),
        ("http://x.com/", 3, False),
        ("http://x.com/x?p=/a/a/a/a", 3, False),  # only the path is examined
        ("http://x.com////", 3, False),  # empty segments alone are no trap
    ],
)
def test_has_repeated_segments(url, repeats, expected):
    assert has_repeated_segments(url, repeats) is expected


def test_has_repeated_segments_rejects_repeats_below_two():
    with pytest.raises(ValueError):
        has_repeated_segments("http://x.com/a/a", 1)


@pytest.mark.parametrize("url", [
    "http://Example.COM/a", "https://user:pw@Host.test:8443/x?y#z", "http://[::1]:8080/", "HTTP://a.test",
    "http://xn--bcher-kva.test/", "http://b\u00fccher.test/p", "http://127.0.0.1:80/", "https://a.test./",
    "http://a.test:/", "http://%61.test/",
])
def test_the_host_key_of_any_url_is_its_fast_path_on_the_normal_form(url):
    normal = normalize_url(url)
    assert keys.host_key(normal) == url_host(normal)
