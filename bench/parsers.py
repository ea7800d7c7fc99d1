"""HTML parsers for the page path: resiliparse against selectolax (both on Lexbor), on real pages.

Run from the repo root: ``python bench/parsers.py`` (``--help`` for options). Needs the
bench extra (``pip install -e ".[bench]"``) and Debian's doc packages
(``apt-get install python3-doc postgresql-doc``).

Each candidate does, from the page's bytes, what the crawler needs of a page: one parse,
then the visible text (blocks on their own lines, script/style/navigation out, by the
same skip rules), the link hrefs (``<a href>``, ``<area href>``), the title, ``<base
href>``, ``rel=canonical`` and meta robots. Reported per site: CPU ms per page (median
and mean over all pages, best of ``--repeat``) for parse, text and links; and the text's
quality against the site's own main-content element (Sphinx's ``div[role=main]``, the
PostgreSQL docs' body less their navigation header and footer, read by lxml): *kept* is
the share of the main content's words found in the text (multiset), *noise* the share of
the text's words that are not in it (navigation, sidebars, scripts). A deep-nesting case
(``--nested`` unclosed ``<div>``s, then a link) checks that text and links come out and
how long the parse takes.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import lxml.html
from common import fmt_table, machine
from resiliparse.extract.html2text import extract_plain_text
from resiliparse.parse.html import HTMLTree
from selectolax.lexbor import LexborHTMLParser

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from nginx_site import site_root  # noqa: E402

from crawler.extract.html import SKIP_SELECTORS  # noqa: E402

#: Elements that end a line of text (what resiliparse's extractor knows by itself).
BLOCKS = ("address", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset", "figcaption", "figure",
          "form", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p", "pre", "section", "table",
          "tr", "td", "th", "ul", "article", "main", "body", "caption", "details", "summary", "option",
          "textarea", "label")

#: Per site: the XPath of its main content and what in it is not content.
MAIN_CONTENT = {
    "python3-doc": ("//div[@role='main']", ".//a[@class='headerlink']"),
    "postgresql-doc": ("//body", ".//div[@class='navheader'] | .//div[@class='navfooter']"),
}
LINKS = "a[href], area[href]"
SKIP = ", ".join(SKIP_SELECTORS)


def lines(text: str) -> str:
    return "\n".join(line for line in (" ".join(raw.split()) for raw in text.split("\n")) if line)


class Resiliparse:
    name = "resiliparse"

    @staticmethod
    def parse(body: bytes) -> HTMLTree:
        return HTMLTree.parse_from_bytes(body, "utf-8")

    @staticmethod
    def text(tree: HTMLTree) -> str:
        return lines(extract_plain_text(tree, preserve_formatting=True, list_bullets=False,
                                        alt_texts=False, skip_elements=list(SKIP_SELECTORS)))

    @staticmethod
    def links(tree: HTMLTree) -> list[str]:
        return [e.getattr("href") for e in tree.document.query_selector_all(LINKS).values()]


class Selectolax:
    name = "selectolax"

    @staticmethod
    def parse(body: bytes) -> LexborHTMLParser:
        return LexborHTMLParser(body)

    @staticmethod
    def text(tree: LexborHTMLParser) -> str:
        # Lexbor's text() knows no blocks: a newline text node goes around each block.
        for node in tree.css(SKIP + ", script, style, head"):
            node.decompose()
        for node in tree.css(", ".join(BLOCKS)):
            node.insert_before("\n")
            node.insert_after("\n")
        return lines((tree.body or tree.root).text(deep=True, separator=""))

    @staticmethod
    def links(tree: LexborHTMLParser) -> list[str]:
        return [n.attributes.get("href") or "" for n in tree.css(LINKS)]


CANDIDATES = (Resiliparse, Selectolax)


def reference_words(body: bytes, site: str) -> Counter:
    main, noise = MAIN_CONTENT[site]
    root = lxml.html.document_fromstring(body)
    words: Counter = Counter()
    for element in root.xpath(main):
        for cut in element.xpath(noise + " | .//script | .//style"):
            cut.drop_tree()
        words.update(element.text_content().split())
    return words


def cpu(fn: Callable, *args: object) -> tuple[float, object]:
    start = time.process_time()
    result = fn(*args)
    return time.process_time() - start, result


def measure(candidate: type, pages: list[bytes], refs: list[Counter], repeat: int) -> dict[str, object]:
    best: dict[str, list[float]] = {}
    kept = noise = ref_total = text_total = 0
    for round_ in range(repeat):
        times: dict[str, list[float]] = {"parse": [], "text": [], "links": []}
        for body, ref in zip(pages, refs, strict=True):
            t_parse, tree = cpu(candidate.parse, body)
            t_links, _ = cpu(candidate.links, tree)  # before text: selectolax's text edits the tree
            t_text, text = cpu(candidate.text, tree)
            for key, value in (("parse", t_parse), ("text", t_text), ("links", t_links)):
                times[key].append(value * 1000)
            if round_ == 0:
                words = Counter(text.split())
                kept += sum((words & ref).values())
                noise += sum((words - ref).values())
                ref_total += sum(ref.values())
                text_total += sum(words.values())
        if not best or sum(map(sum, times.values())) < sum(map(sum, best.values())):
            best = times
    total = [sum(parts) for parts in zip(*best.values(), strict=True)]
    return {
        **{f"{k} median": statistics.median(v) for k, v in best.items()},
        "all median": statistics.median(total), "all mean": statistics.mean(total),
        "kept": kept / ref_total if ref_total else 0.0, "noise": noise / text_total if text_total else 0.0,
    }


def nested_case(candidate: type, depth: int) -> list[str]:
    body = ("<div>x " * depth + '<a href="/deep.html">deep link</a> end').encode()
    seconds, tree = cpu(candidate.parse, body)
    links = candidate.links(tree)
    text = candidate.text(tree)
    ok = links == ["/deep.html"] and text.endswith("deep link end")
    return [candidate.name, str(depth), f"{seconds * 1000:.1f}", "yes" if ok else "NO"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sites", nargs="+", default=list(MAIN_CONTENT), choices=list(MAIN_CONTENT))
    parser.add_argument("--repeat", type=int, default=3, help="rounds over the pages, best kept")
    parser.add_argument("--nested", type=int, nargs="+", default=[10_000, 30_000])
    args = parser.parse_args(argv)

    print("## HTML parsers: resiliparse vs selectolax\n")
    print(f"- {machine()}")
    header = ["site", "parser", "parse ms", "text ms", "links ms", "all ms (median)", "all ms (mean)",
              "main text kept", "noise"]
    rows = []
    for site in args.sites:
        root = site_root(site)
        paths = sorted(root.rglob("*.html"))
        pages = [p.read_bytes() for p in paths]
        refs = [reference_words(body, site) for body in pages]
        print(f"- {site}: {len(pages)} pages, median {sorted(map(len, pages))[len(pages) // 2]:,} bytes")
        for candidate in CANDIDATES:
            m = measure(candidate, pages, refs, args.repeat)
            rows.append([site, candidate.name, f"{m['parse median']:.2f}", f"{m['text median']:.2f}",
                         f"{m['links median']:.2f}", f"{m['all median']:.2f}", f"{m['all mean']:.2f}",
                         f"{m['kept']:.1%}", f"{m['noise']:.1%}"])
    print("\nCPU ms per page (median over pages; parse, then links, then text):\n")
    print(fmt_table(header, rows))
    print("\nUnclosed nested `<div>`s, then a link: parse ms, and whether link and text came out:\n")
    print(fmt_table(["parser", "depth", "parse ms", "link and text out"],
                    [nested_case(c, d) for d in args.nested for c in CANDIDATES]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
