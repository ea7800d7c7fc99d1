"""robots.txt rules (RFC 9309): conformance vectors and behaviour of crawler.robots.rules."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from crawler.robots.rules import ROBOTS_MAX_BYTES, RobotsRules, product_token, robots_text

VECTORS_PATH = Path(__file__).parent / "data" / "robots_rfc9309.jsonl"
VECTORS = [json.loads(line) for line in VECTORS_PATH.read_text("utf-8").splitlines() if line]
SHARED_VECTORS_PATH = Path("/work/shared/conformance/robots_rfc9309.jsonl")

# The 12 vectors flagged rfc_ambiguous ("User-Agent: FOO BAR") expect the line to name the product
# token "FOO". That is our reading (a user-agent line names the token it starts with), so they carry
# no xfail marker. The 5 google_specific ones (empty user agent or URL, user agent with a space) pass
# as they are: an empty URL is the path "/", and a token that is not a product token matches only "*".


def test_all_conformance_vectors_are_loaded():
    assert len(VECTORS) == 148
    assert len({v["id"] for v in VECTORS}) == 148
    assert sum(bool(v.get("rfc_ambiguous")) for v in VECTORS) == 12


@pytest.mark.skipif(not SHARED_VECTORS_PATH.exists(), reason="shared conformance directory not present")
def test_vectors_are_a_byte_identical_copy_of_the_shared_file():
    assert VECTORS_PATH.read_bytes() == SHARED_VECTORS_PATH.read_bytes()


@pytest.mark.parametrize("vector", VECTORS, ids=[v["id"] for v in VECTORS])
def test_conformance_vector(vector):
    rules = RobotsRules.parse(vector["robots_txt"].encode(), vector["user_agent"])
    assert rules.allowed(vector["url"]) is vector["allowed"]


# --- choosing the group (RFC 9309 2.2.1) -----------------------------------------------


def test_group_of_a_shorter_token_does_not_apply_to_us_2_2_1():
    rules = RobotsRules.parse(b"User-agent: Foo\nDisallow: /\n", "FooBot")
    assert rules.allowed("http://a.test/page")


def test_group_token_matches_case_insensitively_2_2_1():
    rules = RobotsRules.parse(b"User-agent: foobot\nDisallow: /\n", "FooBot")
    assert not rules.allowed("http://a.test/page")


def test_group_of_a_longer_token_does_not_apply_to_us_2_2_1():
    rules = RobotsRules.parse(b"User-agent: FooBotPlus\nDisallow: /\n", "FooBot")
    assert rules.allowed("http://a.test/page")


def test_our_group_replaces_the_star_group_2_2_1():
    body = b"User-agent: *\nDisallow: /private/\n\nUser-agent: FooBot\nDisallow: /cart/\n"
    rules = RobotsRules.parse(body, "FooBot")
    assert rules.allowed("/private/x")
    assert not rules.allowed("/cart/x")


def test_star_group_applies_when_no_group_names_us_2_2_1():
    body = b"User-agent: Foo\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n"
    rules = RobotsRules.parse(body, "FooBot")
    assert not rules.allowed("/private/x")
    assert rules.allowed("/public")


def test_user_agent_line_names_the_token_it_starts_with_2_2_1():
    # Our reading of a line that is not a bare product token (the rfc_ambiguous vectors).
    for line in ("FOO BAR", "foo/1.2", "Foo (+http://foo.test)", "foo, BarBot"):
        body = f"User-agent: {line}\nDisallow: /\n".encode()
        assert not RobotsRules.parse(body, "Foo").allowed("/x"), line
        assert RobotsRules.parse(body, "Bar").allowed("/x"), line
        assert RobotsRules.parse(body, "FooBar").allowed("/x"), line


def test_token_that_is_not_a_product_token_matches_only_the_star_group_2_2_1():
    body = b"User-agent: Foo Bar\nDisallow: /\n\nUser-agent: *\nDisallow: /private/\n"
    for token in ("", "Foo Bar"):
        rules = RobotsRules.parse(body, token)
        assert rules.allowed("/public"), token
        assert not rules.allowed("/private/x"), token


def test_repeated_groups_for_our_token_are_combined_2_2_1():
    body = (
        b"User-agent: FooBot\nDisallow: /a/\n\n"
        b"User-agent: *\nDisallow: /b/\n\n"
        b"User-agent: foobot\nDisallow: /c/\nAllow: /a/open\n"
    )
    rules = RobotsRules.parse(body, "FooBot")
    assert not rules.allowed("/a/x")
    assert not rules.allowed("/c/x")
    assert rules.allowed("/a/open")
    assert rules.allowed("/b/x")


def test_user_agent_lines_in_a_row_share_one_group_2_2_1():
    body = b"User-agent: BarBot\nUser-agent: FooBot\n\nUser-agent: BazBot\nDisallow: /x/\n"
    rules = RobotsRules.parse(body, "FooBot")
    assert not rules.allowed("/x/y")


# --- lines that are not group members (RFC 9309 2.2.4) ---------------------------------------


def test_unknown_line_between_user_agent_lines_does_not_end_the_group_2_2_4():
    body = b"User-agent: FooBot\nInvalid-Unknown-Line: unknown\nUser-agent: *\nDisallow: /\n"
    assert not RobotsRules.parse(body, "FooBot").allowed("/x")


def test_unknown_line_among_rules_does_not_end_the_group_2_2_4():
    body = b"User-agent: FooBot\nDisallow: /a/\nNoindex: /b/\nDisallow: /c/\n"
    rules = RobotsRules.parse(body, "FooBot")
    assert not rules.allowed("/c/x")
    assert rules.allowed("/b/x")


def test_sitemap_line_between_user_agent_lines_does_not_end_the_group_2_2_4():
    body = b"User-agent: FooBot\nSitemap: https://a.test/sitemap.xml\nUser-agent: *\nDisallow: /\n"
    assert not RobotsRules.parse(body, "FooBot").allowed("/x")


def test_crawl_delay_is_a_member_of_its_group():
    # Crawl-delay is read as Bing, Yandex and Protego read it: a line of the group it is in, so
    # "User-agent: *, Crawl-delay: 10, User-agent: BarBot, Crawl-delay: 2" gives '*' 10, not 2.
    body = b"User-agent: FooBot\nCrawl-delay: 5\nUser-agent: BarBot\nDisallow: /\n"
    rules = RobotsRules.parse(body, "FooBot")
    assert rules.allowed("/x")
    assert rules.crawl_delay == 5.0


def test_rule_before_any_user_agent_line_is_ignored_2_2():
    body = b"Disallow: /\nUser-agent: FooBot\nDisallow: /private/\n"
    assert RobotsRules.parse(body, "FooBot").allowed("/public")


# --- matching (RFC 9309 2.2.2, 2.2.3) -------------------------------------------------------

SHOP = b"""# https://shop.example/robots.txt
User-agent: MWBot
Disallow: /cart/
Allow: /cart/help
Disallow: /search

User-agent: *
Disallow: /private/

Sitemap: https://shop.example/sitemap.xml
"""


def test_longest_match_wins_2_2_2():
    mwbot = RobotsRules.parse(SHOP, "MWBot")
    assert mwbot.allowed("https://shop.example/cart/help")  # Allow, 10 octets, beats Disallow, 6
    assert not mwbot.allowed("https://shop.example/cart/items")
    assert not mwbot.allowed("https://shop.example/search?q=x")
    other = RobotsRules.parse(SHOP, "OtherBot")
    assert not other.allowed("https://shop.example/private/x")
    assert other.allowed("https://shop.example/search")


def test_equal_length_allow_wins_2_2_2():
    body = b"User-agent: FooBot\nDisallow: /folder\nAllow: /folder\n"
    assert RobotsRules.parse(body, "FooBot").allowed("/folder/page")


def test_query_is_matched_with_the_path_2_2_2():
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /*?session=\n", "FooBot")
    assert not rules.allowed("http://a.test/list?session=1")
    assert not rules.allowed("/list?session=1")
    assert rules.allowed("http://a.test/list?page=2")


def test_empty_url_is_the_root_path_2_2_2():
    assert not RobotsRules.parse(b"User-agent: *\nDisallow: /\n", "FooBot").allowed("")


def test_robots_txt_itself_is_always_allowed_2_2_2():
    parsed = RobotsRules.parse(b"User-agent: *\nDisallow: /\n", "FooBot")
    for rules in (parsed, RobotsRules.disallow_all()):
        assert rules.allowed("https://a.test/robots.txt")
        assert rules.allowed("/robots.txt")
        assert not rules.allowed("https://a.test/robots.txt.bak")
        assert not rules.allowed("https://a.test/dir/robots.txt")


# --- fetch outcomes (RFC 9309 2.3.1.3, 2.3.1.4) -----------------------------------------------


def test_allow_all_allows_every_path_2_3_1_3():
    rules = RobotsRules.allow_all()
    assert rules.kind == "allow_all"
    assert rules.allowed("https://a.test/")
    assert rules.allowed("/private/x?y=1")
    assert rules.crawl_delay is None
    assert rules.sitemaps == []


def test_disallow_all_is_a_complete_disallow_2_3_1_4():
    rules = RobotsRules.disallow_all()
    assert rules.kind == "disallow_all"
    assert not rules.allowed("https://a.test/")
    assert not rules.allowed("/any/path")
    assert rules.crawl_delay is None
    assert rules.sitemaps == []


def test_parsed_rules_are_of_kind_parsed():
    assert RobotsRules.parse(b"", "FooBot").kind == "parsed"


def test_empty_body_allows_everything_2_3_1():
    assert RobotsRules.parse(b"", "FooBot").allowed("/anything")


# --- reading the body (RFC 9309 2.2, 2.5) -------------------------------------------------


def _padding(size: int) -> bytes:
    """Comment lines of ``size`` bytes in all."""
    line = b"#" + b"x" * 98 + b"\n"
    full, rest = divmod(size, len(line))
    return line * full + (b"#" + b"x" * (rest - 2) + b"\n" if rest else b"")


def test_rule_past_500_kib_is_not_applied_2_5():
    head = b"User-agent: *\nDisallow: /early/\n"
    body = head + _padding(ROBOTS_MAX_BYTES + 10 * 1024 - len(head)) + b"Disallow: /\n"
    body += _padding(600 * 1024 - len(body))
    assert len(body) == 600 * 1024
    rules = RobotsRules.parse(body, "FooBot")
    assert rules.allowed("/page")
    assert not rules.allowed("/early/page")


def test_line_cut_by_the_500_kib_limit_is_dropped_2_5():
    head = b"User-agent: *\n"
    body = head + _padding(ROBOTS_MAX_BYTES - len(head) - 5) + b"Disallow: /private\n"
    # Read whole, "Disallow: /pri" would block /print: the cut line is dropped instead.
    rules = RobotsRules.parse(body, "FooBot")
    assert rules.allowed("/print")
    assert rules.allowed("/private")


def test_line_ending_exactly_at_500_kib_is_kept_2_5():
    head = b"User-agent: *\n"
    rule = b"Disallow: /private"
    body = head + _padding(ROBOTS_MAX_BYTES - len(head) - len(rule)) + rule + b"\nDisallow: /\n"
    assert len(body) > ROBOTS_MAX_BYTES
    rules = RobotsRules.parse(body, "FooBot")
    assert not rules.allowed("/private/x")
    assert rules.allowed("/public")


def test_byte_order_mark_is_ignored_2_2():
    rules = RobotsRules.parse(b"\xef\xbb\xbfUser-agent: FooBot\nDisallow: /\n", "FooBot")
    assert not rules.allowed("/x")


def test_crlf_and_cr_line_endings_2_2():
    for eol in (b"\r\n", b"\r"):
        body = eol.join([b"User-agent: FooBot", b"Disallow: /a/", b"", b"User-agent: *", b"Disallow: /"])
        rules = RobotsRules.parse(body, "FooBot")
        assert not rules.allowed("/a/x"), eol
        assert rules.allowed("/b/x"), eol


def test_invalid_utf8_is_replaced_not_fatal_2_2():
    rules = RobotsRules.parse(b"User-agent: FooBot\nDisallow: /caf\xe9/\nDisallow: /x/\n", "FooBot")
    assert not rules.allowed("/x/y")
    assert rules.allowed("/cafe/")


def test_non_ascii_rule_matches_its_percent_encoded_url_2_2_2():
    rules = RobotsRules.parse("User-agent: *\nDisallow: /café\n".encode(), "FooBot")
    assert not rules.allowed("https://a.test/caf%C3%A9/menu")


def test_comments_are_ignored_2_2():
    body = b"User-agent: FooBot # us\n# Disallow: /\nDisallow: /a/ # not /b/\n"
    rules = RobotsRules.parse(body, "FooBot")
    assert not rules.allowed("/a/x")
    assert rules.allowed("/b/x")


# --- Crawl-delay and Sitemap (other records, RFC 9309 2.2.4) --------------------------------


def test_crawl_delay_of_our_group():
    body = b"User-agent: *\nCrawl-delay: 10\n\nUser-agent: FooBot\nCrawl-delay: 2.5\nDisallow: /x/\n"
    assert RobotsRules.parse(body, "FooBot").crawl_delay == 2.5


def test_crawl_delay_of_star_group_when_no_group_names_us():
    body = b"User-agent: *\nCrawl-delay: 10\n\nUser-agent: BarBot\nCrawl-delay: 2.5\n"
    assert RobotsRules.parse(body, "FooBot").crawl_delay == 10.0


def test_crawl_delay_absent_or_invalid_is_none():
    assert RobotsRules.parse(b"User-agent: *\nDisallow: /x/\n", "FooBot").crawl_delay is None
    for value in (b"soon", b"-1", b"nan", b""):
        body = b"User-agent: *\nCrawl-delay: " + value + b"\n"
        assert RobotsRules.parse(body, "FooBot").crawl_delay is None, value


def test_crawl_delay_of_a_shorter_token_group_is_not_ours_2_2_1():
    body = b"User-agent: Foo\nCrawl-delay: 30\n\nUser-agent: *\nCrawl-delay: 1\n"
    assert RobotsRules.parse(body, "FooBot").crawl_delay == 1.0


def test_sitemaps_are_listed_in_order_for_the_whole_file_2_2_4():
    body = (
        b"Sitemap: https://a.test/first.xml\n"
        b"User-agent: BarBot\nSitemap: https://a.test/second.xml\nDisallow: /\n"
        b"sitemap: https://a.test/third.xml # comment\n"
    )
    assert RobotsRules.parse(body, "FooBot").sitemaps == [
        "https://a.test/first.xml",
        "https://a.test/second.xml",
        "https://a.test/third.xml",
    ]


# --- product tokens (RFC 9309 2.2.1) --------------------------------------------------------


@pytest.mark.parametrize(
    ("user_agent", "token"),
    [
        ("MyBot/1.2 (+http://x)", "MyBot"),
        ("FooBot", "FooBot"),
        ("Foo-Bot_2/3.0", "Foo-Bot_2"),
        ("  Crawler (+https://crawler.test/about)", "Crawler"),
        ("Mozilla/5.0 (compatible; Googlebot/2.1)", "Mozilla"),
        ("", ""),
        ("/1.0", ""),
    ],
)
def test_product_token_of_a_user_agent_header_2_2_1(user_agent, token):
    assert product_token(user_agent) == token


def test_product_token_of_a_user_agent_header_selects_our_group_2_2_1():
    body = b"User-agent: MyBot\nDisallow: /\n"
    assert not RobotsRules.parse(body, product_token("MyBot/1.2 (+http://x)")).allowed("/x")


@pytest.mark.parametrize("encoding, name", [("utf-16", "utf-16-le"), ("utf-32", "utf-32-le"),
                                            ("utf-8-sig", "utf-8")])
def test_a_robots_txt_with_a_byte_order_mark_is_read_in_its_encoding(encoding, name):
    # RFC 9309 2.2 asks for UTF-8; an editor's UTF-16 file with its BOM still says what it means.
    rules = RobotsRules.parse("User-agent: *\r\nDisallow: /private/\r\n".encode(encoding), "bot")
    assert rules.encoding == name
    assert not rules.allowed("/private/x") and rules.allowed("/public")


def test_a_utf16_robots_txt_over_the_limit_keeps_its_whole_lines():
    body = ("User-agent: *\n" + "Disallow: /x\n" * 60_000).encode("utf-16")
    text, encoding = robots_text(body)
    assert encoding == "utf-16-le" and text.endswith("Disallow: /x\n")
