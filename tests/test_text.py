"""Cleaned text: visible content without scripts, styles and navigation boilerplate."""

from __future__ import annotations

import lxml.html

from crawler.extract.text import extract_text, extract_title, normalize_whitespace

PAGE = b"""<!doctype html><html><head><title> The  Title </title>
<style>body { color: red }</style><script>var x = "script text";</script></head>
<body><header><a href="/">Site name</a> <nav><a href="/a">Menu A</a></nav></header>
<div role="navigation">Breadcrumbs</div>
<main><article><header><h1>Article heading</h1></header>
<p>First   paragraph with <b>bold</b> words.</p><p>Second<br>line</p>
<!-- a comment -->tail after comment
<noscript>enable js</noscript><template>tmpl</template>
<footer>Written by Ann</footer></article></main>
<aside>Related links</aside><div hidden>secret</div>
<footer>Copyright footer</footer></body></html>"""


def test_text_keeps_content_and_drops_boilerplate():
    text = extract_text(lxml.html.document_fromstring(PAGE))
    assert text.splitlines() == [
        "Article heading",
        "First paragraph with bold words.",
        "Second",
        "line",
        "tail after comment",
        "Written by Ann",
    ]


def test_title_is_whitespace_collapsed():
    assert extract_title(lxml.html.document_fromstring(PAGE)) == "The Title"
    assert extract_title(lxml.html.document_fromstring(b"<p>no title</p>")) == ""


def test_text_of_a_fragment_without_body():
    assert extract_text(lxml.html.fragment_fromstring("<div>just <i>this</i></div>")) == "just this"


def test_normalize_whitespace():
    assert normalize_whitespace(" a \n\t b  c ") == "a b c"
