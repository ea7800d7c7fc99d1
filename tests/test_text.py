"""One parse of a page: visible text without scripts, styles and navigation; links; head."""

from __future__ import annotations

import random
import weakref

import pytest

from crawler.dedup.simhash import content_fingerprint, normalized_words
from crawler.extract.html import (
    Lines,
    extract_head,
    extract_hrefs,
    extract_text,
    lines,
    normalize_whitespace,
    parse_html,
    uncached_nodes,
    word_count,
)

PAGE = b"""<!doctype html><html><head><title> The  Title </title>
<base href="/docs/"><link rel="Canonical" href=" http://example.com/canon ">
<meta name="ROBOTS" content="noindex, nofollow">
<style>body { color: red }</style><script>var x = "script text";</script></head>
<body><header><a href="/">Site name</a> <nav><a href="/a">Menu A</a></nav></header>
<div role="navigation">Breadcrumbs</div>
<main><article><header><h1>Article heading</h1></header>
<p>First   paragraph with <b>bold</b> words.</p><p>Second<br>line</p>
<!-- a comment -->tail after comment
<noscript>enable js</noscript><template>tmpl</template>
<footer>Written by Ann</footer></article></main>
<aside>Related links</aside><div hidden>secret</div>
<map><area href="/area"></map><a name="no-href">anchor</a><a href="">empty</a>
<footer>Copyright footer</footer></body></html>"""


def test_text_keeps_content_and_drops_boilerplate():
    assert extract_text(parse_html(PAGE)).splitlines() == [
        "Article heading",
        "First paragraph with bold words.",
        "Second",
        "line",
        "tail after comment",
        "Written by Ann",  # an article's own footer is content
        "anchorempty",
    ]
    text = extract_text(parse_html(PAGE))
    for noise in ("script text", "color: red", "Menu A", "Site name", "Breadcrumbs", "enable js",
                  "tmpl", "Related links", "secret", "Copyright footer"):
        assert noise not in text


def test_links_come_in_document_order_as_written():
    assert extract_hrefs(parse_html(PAGE)) == ["/", "/a", "/area", ""]


class _CountingCache(weakref.WeakValueDictionary):
    """resiliparse's node cache, counting the nodes registered in it."""

    registered = 0

    def __setitem__(self, key, value):
        self.registered += 1
        super().__setitem__(key, value)


def test_links_and_head_read_without_resiliparse_node_cache(monkeypatch):
    from resiliparse.parse.html import node

    cache = _CountingCache()
    monkeypatch.setattr(node, "_node_cache", cache)
    tree = parse_html(PAGE)
    _ = tree.document, tree.head
    registered = cache.registered
    hrefs, head = extract_hrefs(tree), extract_head(tree)
    assert node._node_cache is cache  # restored
    assert cache.registered == registered  # no link or head element registered
    cached = [e.getattr("href") for e in tree.document.query_selector_all("a[href], area[href]").values()]
    assert cache.registered > registered  # the counting works: outside the window they are
    assert hrefs == cached == ["/", "/a", "/area", ""]
    assert head.canonical == "http://example.com/canon"
    with pytest.raises(RuntimeError), uncached_nodes():
        assert node._node_cache is not cache
        raise RuntimeError
    assert node._node_cache is cache  # restored after an error too
    assert tree.body is tree.body  # identity kept outside the window


def test_head_title_base_canonical_and_meta_robots():
    head = extract_head(parse_html(PAGE))
    assert head.title == "The Title"
    assert head.base == "/docs/"
    assert head.canonical == "http://example.com/canon"
    assert head.robots == "noindex, nofollow"
    assert extract_head(parse_html(b"<p>no title</p>")).title == ""
    assert extract_head(parse_html(b"<p>x</p>")).base is None


def test_base_after_the_first_4kb_counts():
    # HTML standard: the first <base href> of the document; Scrapy's get_base_url reads 4 KB.
    page = b"<html><head><title>t</title>" + b"<meta name=x content=y>" * 300 + b'<base href="/b/">'
    assert extract_head(parse_html(page)).base == "/b/"


def test_text_of_a_fragment_without_body():
    assert extract_text(parse_html(b"<div>just <i>this</i></div>")) == "just this"


def test_bytes_in_the_pages_encoding_and_bad_bytes():
    assert extract_text(parse_html("<p>caf\u00e9</p>".encode("cp1252"), "cp1252")) == "caf\u00e9"
    bad = extract_text(parse_html(b"<p>a\xffb</p>"))  # not UTF-8: read, not failed
    assert bad[0] == "a" and bad[-1] == "b" and len(bad) == 3
    assert extract_text(parse_html(b"<p>x</p>", "no-such-codec")) == "x"


@pytest.mark.parametrize("tag", ["div", "b", "a", "span", "p", "li", "table", "font", "section"])
def test_100000_nested_unclosed_tags_give_text_and_links(tag):
    page = (f"<{tag}>x " * 100_000 + '<a href="/deep.html">deep link</a> end').encode()
    tree = parse_html(page)
    assert extract_hrefs(tree)[-1] == "/deep.html"
    assert extract_text(tree).endswith("deep link end")


# The HTML standard's adoption agency algorithm (13.2.6.4.7), its pathological inputs:
# misnested formatting elements, more than the 8 outer-loop rounds, furthest blocks,
# and the Noah's Ark clause (no more than 3 equal formatting elements are reopened).
ADOPTION_CASES = [
    b"<a><p>X<a>Y</a>Z</p></a>",
    b"<b>1<p>2</b>3</p>",
    b"<b><p>X</b>Y",
    b"<a>1<div>2<div>3</a>4</div>5</div>",
    b"<b><b><a><p></a>",
    b"<p><b><b><b><b>X</p>Y",
    b"<p><b class=x><b class=x><b class=x><b class=x>X</p>Y",
    b"<table><a>1<p>2</a>3</p></table>",
    b"<div><a><b><i><u><s><em><strong><code>X</div>Y</a>",
    b"<a>" + b"<div>" * 10 + b"X</a>",
    b"<b>" * 1000 + b"<p>X</b>Y" * 1000,
    b"<a><p>" * 5000 + b"X</a>",
]


@pytest.mark.parametrize("case", ADOPTION_CASES, ids=range(len(ADOPTION_CASES)))
def test_adoption_agency_inputs_give_text_and_links(case):
    page = case + b'<a href="/after.html">after</a>'
    tree = parse_html(page)
    assert extract_hrefs(tree)[-1] == "/after.html"
    assert extract_text(tree).endswith("after")


def test_normalize_whitespace():
    assert normalize_whitespace(" a \n\t b  c ") == "a b c"


WHITESPACE_CASES = ["", " ", "\n", "a", " a", "a ", "a\nb", "a \nb", "a\n\nb", "a\n", "\na", "a  b",
                    "a\tb", "a\r\nb", "a\u2028b", "a\xa0b", "a\u3000b", "a\x1cb", "a\x85b", "a\u200bb",
                    "a\x00b", "one two\nthree four", "caf\xe9 \u201cquoted\u201d\nnext line"]


def test_whitespace_fast_paths_equal_the_split_forms():
    rng = random.Random(18)
    alphabet = ["a", "b", "\xe9", " ", "  ", "\n", "\t", "\r", "\xa0", "\u2028", "\u3000", "\x0b", "\u200b"]
    texts = WHITESPACE_CASES + ["".join(rng.choice(alphabet) for _ in range(rng.randrange(12)))
                                for _ in range(3000)]
    texts += [extract_text(parse_html(PAGE))]
    for text in texts:
        assert normalize_whitespace(text) == " ".join(text.split()), repr(text)
        assert word_count(text) == len(text.split()), repr(text)


def test_lines_texts_skip_the_whitespace_scans_with_a_plain_texts_answers():
    rng = random.Random(18)
    alphabet = ["word", "\xdf", "7", " ", "  ", "\n", "\n\n", "\t", "\xa0", "\u2028", "\u3000", "\x1c",
                "\u200b", "\x00", "\ud800"]
    texts = WHITESPACE_CASES + ["".join(rng.choice(alphabet) for _ in range(rng.randrange(400)))
                                for _ in range(500)]
    for text in texts:
        made = lines(text)
        plain = str(made)
        assert type(made) is Lines and type(plain) is str
        assert normalize_whitespace(made) == normalize_whitespace(plain), repr(text)
        assert word_count(made) == word_count(plain), repr(text)
        assert normalized_words(made) == normalized_words(plain), repr(text)
        assert content_fingerprint(made) == content_fingerprint(plain), repr(text)


def test_any_bytes_give_a_tree_text_and_links_without_raising():
    # No page fails the parse: there is no error path for a page to take.
    rng = random.Random(18)
    alphabet = b"<>/=\"' abcdiv&#;\x00\xff\xfe\n!-[]"
    for _ in range(300):
        body = bytes(rng.choice(alphabet) for _ in range(rng.randrange(0, 400)))
        tree = parse_html(body, rng.choice(["utf-8", "cp1252", "utf-16", "shift_jis"]))
        extract_text(tree)
        extract_hrefs(tree)
        extract_head(tree)
