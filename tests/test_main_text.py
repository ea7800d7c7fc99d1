"""The main-content text: the article or documentation body in, the chrome out, never empty."""

from __future__ import annotations

import pytest
from scrapy.http import HtmlResponse, Request

from crawler.extract.html import extract_text, parse_html
from crawler.extract.main import LAYOUT, WIDGET, extract_main, names_boilerplate
from crawler.extract.page import extract_page
from crawler.stages import StageClock

PROSE = ("The council met on Tuesday evening to discuss the budget, the new library and the "
         "state of the roads, which residents have complained about for years. ")

ARTICLE = f"""<!doctype html><html><head><title>Budget</title></head><body>
<header class="site-header"><a href="/">Town News</a>
<nav><a href="/a">Politics</a> <a href="/b">Sport</a> <a href="/c">Weather</a></nav></header>
<div class="breadcrumbs"><a href="/">Home</a> &gt; <a href="/politics">Politics</a></div>
<main><article>
<h1>Council argues over the budget</h1>
<div class="byline">By Ann Writer, 3 March 2024</div>
<div class="share-bar"><a href="https://x.example/share">Share on X</a> <a href="/mail">Email</a></div>
<div class="article-body">
<p>{PROSE * 2}</p>
<p>{PROSE}Opening paragraph two is about the library.</p>
<aside class="pullquote">
<p>We cannot keep patching the same potholes every spring, said the mayor.</p></aside>
<h2>The roads</h2>
<ul><li>Main Street resurfacing, planned for May</li><li>Bridge repairs, delayed again</li></ul>
<p>{PROSE}Closing paragraph about the vote next week.</p>
</div>
<footer><section class="comments"><h3>3 comments</h3>
<p>Reader one: this council never listens to anybody, as usual, and nothing changes.</p>
<p>Reader two: I agree with the first comment, the roads are a disgrace, truly.</p>
</section></footer>
</article>
<div class="related-stories"><h3>Related</h3><ul>
<li><a href="/r1">Library opening hours to change</a></li><li><a href="/r2">Mayor seeks second term</a></li>
<li><a href="/r3">Potholes: a history</a></li></ul></div>
</main>
<aside class="sidebar"><h3>Most read</h3>
<ol><li><a href="/m1">Cat rescued</a></li><li><a href="/m2">Fair</a></li></ol></aside>
<footer class="site-footer"><p>Copyright Town News 2024. All rights reserved.</p>
<a href="/privacy">Privacy</a> <a href="/terms">Terms</a></footer>
</body></html>"""


def main(html: str | bytes) -> str:
    return extract_main(parse_html(html.encode() if isinstance(html, str) else html)).text


def test_article_keeps_its_body_and_drops_the_chrome():
    text = main(ARTICLE)
    for kept in ("Opening paragraph two is about the library.", "The roads", "Main Street resurfacing",
                 "Bridge repairs", "Closing paragraph about the vote next week.",
                 "We cannot keep patching the same potholes"):  # a pull quote in an <aside>
        assert kept in text
    for dropped in ("Town News", "Politics", "Share on X", "Reader one", "3 comments",
                    "Library opening hours", "Most read", "Cat rescued", "Copyright", "Privacy"):
        assert dropped not in text, dropped


def test_one_line_per_block():
    lines = main(ARTICLE).splitlines()
    assert "The roads" in lines
    assert "Main Street resurfacing, planned for May" in lines


def test_comments_in_an_articles_footer_are_not_content():
    # The article's own footer is kept by the visible text (a byline), so the comment
    # section in it was stored as content; the main text names it for what it is.
    assert "Reader one" in extract_text(parse_html(ARTICLE.encode()))
    assert "Reader one" not in main(ARTICLE)


UNCLOSED_HEADER = f"""<html><body><header id="branding"><div class="logo"><a href="/">My blog</a></div>
<nav><a href="/about">About</a> <a href="/archive">Archive</a></nav>
<div id="content"><h2>A walk in the hills</h2><p>{PROSE * 2}</p><p>{PROSE}</p></div>
<div id="colophon">Powered by a blog engine</div></body></html>"""


@pytest.mark.parametrize("mode", ["main", "visible"])
def test_a_header_left_open_around_the_body_keeps_the_text(mode):
    response = HtmlResponse("http://blog.example/walk", body=UNCLOSED_HEADER.encode(),
                            request=Request("http://blog.example/walk"), encoding="utf-8")
    page = extract_page(response, response.url, StageClock(_Stats()), mode)[0]
    assert "A walk in the hills" in page.text
    assert PROSE.strip() in page.text
    assert "About" not in page.text.split()  # its navigation is still navigation


SPHINX = f"""<html><body>
<div class="related" role="navigation"><ul><li><a href="/index.html">index</a></li>
<li><a href="/modules.html">modules</a></li><li><a href="/next.html">next</a></li></ul></div>
<div class="document"><div class="documentwrapper"><div class="bodywrapper"><div class="body" role="main">
<section id="json"><h1>json — JSON encoder and decoder</h1>
<nav class="contents" id="contents"><p class="topic-title">Contents</p><ul>
<li><a class="reference internal" href="#basic-usage">Basic usage</a></li>
<li><a class="reference internal" href="#encoders">Encoders and decoders</a></li></ul></nav>
<p>{PROSE}See <a href="/library/pickle.html">pickle</a>.</p>
<aside class="sidebar"><p class="sidebar-title">Warning</p>
<p>Be cautious when parsing JSON data from untrusted sources.</p></aside>
<section id="basic-usage"><h2>Basic usage</h2><dl class="py function"><dt>json.dump(obj, fp)</dt>
<dd><p>Serialize obj as a JSON formatted stream to fp, a file-like object.
<a class="footnote-reference" href="#f1">1</a></p></dd></dl>
<aside class="footnote brackets" id="f1"><span class="label">1</span>
<p>As noted in the errata for RFC 7159.</p></aside>
</section></section></div></div></div>
<div class="sphinxsidebar" role="navigation"><h3>Table of Contents</h3><ul><li><a href="#">json</a></li></ul>
<h3>Previous topic</h3><p><a href="/marshal.html">marshal</a></p></div></div>
<div class="footer">© Copyright 2001-2024, Python Software Foundation.</div></body></html>"""


def test_documentation_keeps_footnotes_sidebars_and_in_page_contents():
    text = main(SPHINX)
    for kept in ("json — JSON encoder and decoder", "Contents", "Basic usage", "Encoders and decoders",
                 "Be cautious when parsing JSON", "json.dump(obj, fp)", "As noted in the errata"):
        assert kept in text, kept
    for dropped in ("modules", "Previous topic", "marshal", "Copyright"):
        assert dropped not in text, dropped


def test_a_listing_keeps_its_links():
    items = "".join(f'<li><a href="/item/{i}">Item number {i} of the catalogue</a></li>' for i in range(30))
    page = (f"<html><body><nav><a href='/'>Home</a></nav><main><h1>Catalogue</h1>"
            f"<p>Everything we sell, in one list, sorted by name.</p><ul>{items}</ul></main></body></html>")
    text = main(page)
    assert "Item number 0 of the catalogue" in text and "Item number 29 of the catalogue" in text


class _Stats:
    def __init__(self) -> None:
        self.values: dict[str, float] = {}

    def inc_value(self, key: str, count: float = 1, start: float = 0) -> None:
        self.values[key] = self.values.get(key, start) + count


def test_nothing_plausible_falls_back_to_the_visible_text_and_counts():
    # No prose block anywhere: a grid of short link-less cells of 60 words.
    cells = "".join(f"<div><span>cell {i} word</span></div>" for i in range(20))
    body = f"<html><body><div class='grid'>{cells}</div></body></html>".encode()
    response = HtmlResponse("http://x.example/", body=body, request=Request("http://x.example/"),
                            encoding="utf-8")
    stats = _Stats()
    page = extract_page(response, response.url, StageClock(stats))[0]
    assert page.text == extract_text(parse_html(body)) and len(page.text.split()) == 60
    assert stats.values["text/fallback"] == 1


def test_visible_mode_is_the_whole_visible_text():
    response = HtmlResponse("http://x.example/", body=ARTICLE.encode(), request=Request("http://x.example/"),
                            encoding="utf-8")
    page = extract_page(response, response.url, StageClock(_Stats()), "visible")[0]
    assert page.text == extract_text(parse_html(ARTICLE.encode()))
    assert "Library opening hours" in page.text


def test_an_unknown_mode_is_an_error():
    response = HtmlResponse("http://x.example/", body=b"<p>x</p>", request=Request("http://x.example/"))
    with pytest.raises(ValueError, match="TEXT_EXTRACTION"):
        extract_page(response, response.url, StageClock(_Stats()), "everything")


@pytest.mark.parametrize("token,kind", [
    ("comments", WIDGET), ("comments-area", WIDGET), ("c-social-buttons", WIDGET), ("related_posts", WIDGET),
    ("read-more", WIDGET), ("ad", WIDGET), ("sidebar", LAYOUT), ("nav-sidebar", LAYOUT),
    ("sidebar-share", WIDGET), ("commentary", None), ("shareholders", None), ("article-body", None),
    ("header", None), ("load", None), ("readme", None),
])
def test_class_tokens_that_name_boilerplate(token, kind):
    assert names_boilerplate(token) == kind


@pytest.mark.parametrize("tag", ["div", "p", "section", "article", "aside", "header"])
def test_100000_nested_unclosed_tags_give_a_main_text(tag):
    page = (f"<{tag}>x " * 100_000 + f"<p>{PROSE}</p>").encode()
    assert PROSE.strip() in main(page)


def test_a_page_without_body_text():
    assert main(b"") == ""
    assert main(b"<html><body><nav><a href='/'>Home</a></nav></body></html>") == "Home"
