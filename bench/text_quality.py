"""Main-content text on real pages: ours (both modes) against trafilatura, readability-lxml
and resiliparse's own main-content mode, in the same run.

Run from the repo root: ``python bench/text_quality.py`` (peers from ``pip install -e
".[bench]"``). Two page sets:

* the public article extraction benchmark (``../shared/datasets/article-extraction-benchmark``,
  181 news and blog pages with their human-annotated article text, ``--benchmark DIR``);
* the Python documentation (Debian's ``python3-doc``, ``--docs DIR``), whose true main
  text is each page's Sphinx body (``div[role=main]``, footnotes and in-page contents
  included): a set of pages that are not articles, where the main body must be kept whole.

Per extractor: word precision, recall and F1 (lowercase ``\\w+`` tokens as multisets,
summed over pages: micro; and the mean per page), the share of pages whose simhash
(``content_fingerprint``, as content seen computes it) is within 3 bits of the true
text's, empty texts, and CPU
per page (``time.process_time``, the page's parse included, each extractor timed over
the same pages in turn), with its ratio to ours. Then the syndication test
(``tests/syndication.py``): the same article in two sites' templates must be a
near-duplicate, two articles in one template must not. Every loop is bounded by the
page sets.
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))
sys.path.insert(0, str(REPO / "tests"))

from common import fmt_table, machine  # noqa: E402
from syndication import article, pairs  # noqa: E402
from w3lib.encoding import html_to_unicode  # noqa: E402

from crawler.dedup.near import hamming  # noqa: E402
from crawler.dedup.simhash import content_fingerprint, text_fingerprint  # noqa: E402
from crawler.extract.html import extract_text, parse_html  # noqa: E402
from crawler.extract.main import extract_main  # noqa: E402

BENCHMARK = REPO.parent / "shared" / "datasets" / "article-extraction-benchmark"
DOCS = Path("/usr/share/doc/python3-doc/html")
_WORD = re.compile(r"\w+")


@dataclass
class Sample:
    """One page: its bytes, their encoding, the same as text, and its true main text."""

    name: str
    body: bytes
    encoding: str
    html: str
    truth: str


def _decoded(body: bytes) -> tuple[str, str]:
    encoding, text = html_to_unicode(None, body)
    return encoding, text


def benchmark_pages(root: Path) -> list[Sample]:
    truth = json.loads((root / "ground-truth.json").read_text())
    samples = []
    for path in sorted((root / "html").glob("*.html.gz")):
        name = path.name.removesuffix(".html.gz")
        body = gzip.decompress(path.read_bytes())
        encoding, html = _decoded(body)
        samples.append(Sample(name, body, encoding, html, truth[name]["articleBody"]))
    return samples


def sphinx_body(body: bytes) -> str | None:
    """The visible text of a Sphinx page's ``div[role=main]`` (scripts, styles and the
    headings' pilcrow links have no words), or None when the page has none."""
    import lxml.html

    document = lxml.html.fromstring(body)
    mains = document.xpath("//div[@role='main']")
    if not mains:
        return None
    for junk in mains[0].xpath(".//script | .//style"):
        junk.drop_tree()
    return mains[0].text_content()


def docs_pages(root: Path, limit: int) -> list[Sample]:
    samples = []
    for path in sorted(root.rglob("*.html"))[:limit]:
        body = path.read_bytes()
        truth = sphinx_body(body)
        if truth is None:
            continue
        encoding, html = _decoded(body)
        samples.append(Sample(str(path.relative_to(root)), body, encoding, html, truth))
    return samples


def ours_main(sample: Sample) -> str:
    return extract_main(parse_html(sample.body, sample.encoding)).text


def ours_visible(sample: Sample) -> str:
    return extract_text(parse_html(sample.body, sample.encoding))


def peers() -> dict[str, Callable[[Sample], str]]:
    """The peers that are installed (``pip install -e ".[bench]"``)."""
    found: dict[str, Callable[[Sample], str]] = {}
    try:
        import trafilatura

        found["trafilatura"] = lambda s: trafilatura.extract(s.html) or ""
    except ImportError:
        pass
    try:
        import lxml.html
        from readability import Document

        found["readability-lxml"] = lambda s: lxml.html.fromstring(
            Document(s.html).summary(html_partial=True)).text_content()
    except ImportError:
        pass
    from resiliparse.extract.html2text import extract_plain_text

    found["resiliparse main"] = lambda s: extract_plain_text(
        parse_html(s.body, s.encoding), preserve_formatting=True, main_content=True,
        list_bullets=False, alt_texts=False)
    return found


@dataclass
class Score:
    """One extractor's figures over a page set."""

    shared: int = 0
    extracted: int = 0
    true: int = 0
    precisions: list[float] = field(default_factory=list)
    recalls: list[float] = field(default_factory=list)
    near: int = 0
    empty: int = 0
    cpu: float = 0.0
    pages: int = 0
    worst: list[tuple[float, str]] = field(default_factory=list)

    def add(self, name: str, text: str, truth: str) -> None:
        got, want = Counter(_WORD.findall(text.lower())), Counter(_WORD.findall(truth.lower()))
        shared = sum((got & want).values())
        n_got, n_want = sum(got.values()), sum(want.values())
        self.shared += shared
        self.extracted += n_got
        self.true += n_want
        self.precisions.append(shared / n_got if n_got else 0.0)
        self.recalls.append(shared / n_want if n_want else 1.0)
        self.near += hamming(content_fingerprint(text), content_fingerprint(truth)) <= 3
        self.empty += not text.strip()
        self.pages += 1
        self.worst.append((_f1(self.precisions[-1], self.recalls[-1]), name))

    def row(self, label: str, ours_cpu: float) -> list[str]:
        precision = self.shared / self.extracted if self.extracted else 0.0
        recall = self.shared / self.true if self.true else 0.0
        mean_p = sum(self.precisions) / len(self.precisions)
        mean_r = sum(self.recalls) / len(self.recalls)
        mean_f = sum(_f1(p, r) for p, r in zip(self.precisions, self.recalls, strict=True)) / self.pages
        per_page = self.cpu / self.pages * 1000
        return [label, f"{precision:.3f}", f"{recall:.3f}", f"{_f1(precision, recall):.3f}",
                f"{mean_p:.3f}", f"{mean_r:.3f}", f"{mean_f:.3f}", f"{self.near / self.pages:.0%}",
                str(self.empty), f"{per_page:.2f}", f"{self.cpu / ours_cpu:.1f}x"]


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


def measure(samples: Sequence[Sample], extract: Callable[[Sample], str]) -> Score:
    """An extractor's score over ``samples``: all pages timed first, then compared."""
    score = Score()
    start = time.process_time()
    texts = [extract(sample) for sample in samples]
    score.cpu = time.process_time() - start
    for sample, text in zip(samples, texts, strict=True):
        score.add(sample.name, text, sample.truth)
    return score


HEADER = ["extractor", "P micro", "R micro", "F1 micro", "P mean", "R mean", "F1 mean",
          "simhash <= 3 bits", "empty", "CPU ms/page", "CPU vs ours"]


def report(title: str, samples: Sequence[Sample], with_peers: bool, show_worst: int) -> None:
    extractors = {"ours (main, default)": ours_main, "ours (visible)": ours_visible}
    if with_peers:
        extractors.update(peers())
    scores = {label: measure(samples, extract) for label, extract in extractors.items()}
    ours = scores["ours (main, default)"].cpu
    print(f"\n{title}: {len(samples)} pages\n")
    print(fmt_table(HEADER, [score.row(label, ours) for label, score in scores.items()]))
    for label, score in scores.items():
        if show_worst and label.startswith("ours (main"):
            print(f"\nworst pages of {label}:")
            for f1, name in sorted(score.worst)[:show_worst]:
                print(f"  {f1:.3f} {name}")


#: Each rule of crawler/extract/main.py switched off in turn (a module attribute replaced
#: for the run): what it buys is the difference to the default row.
ABLATIONS: dict[str, dict[str, object]] = {
    "all rules (default)": {},
    "no boilerplate names": {"Boilerplate.mark": lambda self, root, core, chars: [],
                             "Boilerplate.holds": lambda self, node: False},
    "no layout words spared in the core": {"_spare_layout": lambda core, layout: None},
    "no <br> votes": {"_vote_breaks": lambda body, votes: None},
    "no landmarks (root = core)": {"_root": lambda core: core, "_sole_main": lambda body: None},
    "no sole-main shortcut": {"_sole_main": lambda body: None},
    "no periphery rule": {"_mark_periphery": lambda root, core: None},
    "no link-block rule": {"_mark_link_blocks": lambda root, core, total: None},
}


def ablations(articles: Sequence[Sample], docs: Sequence[Sample]) -> None:
    """Ours with each rule switched off: word P/R/F1 (micro) on both page sets."""
    import crawler.extract.main as rules

    rows = []
    for label, patches in ABLATIONS.items():
        saved = {}
        for name, value in patches.items():
            owner, _, attribute = name.rpartition(".")
            target = getattr(rules, owner) if owner else rules
            saved[name] = (target, attribute, getattr(target, attribute))
            setattr(target, attribute, value)
        try:
            row = [label]
            for samples in (articles, docs):
                if samples:
                    cells = measure(samples, ours_main).row("", 1.0)
                    row += cells[1:4]
                else:
                    row += ["-"] * 3
            rows.append(row)
        finally:
            for target, attribute, value in saved.values():
                setattr(target, attribute, value)
    print("\nWhat each rule buys: ours (main) with one rule off\n")
    header = ["rules", "articles P", "articles R", "articles F1", "docs P", "docs R", "docs F1"]
    print(fmt_table(header, rows))


SYNDICATED = 40
FINGERPRINTS = (("content_fingerprint", content_fingerprint), ("text_fingerprint", text_fingerprint))


def syndication(samples: Sequence[Sample], with_peers: bool) -> None:
    """Each of the first 40 articles in two other pages' templates (a syndicated pair,
    tests/syndication.py) and two different articles in one template (a control pair):
    how many pairs each text puts within ``SIMHASH_MAX_DISTANCE`` (3) bits, by the
    crawler's fingerprint (``content_fingerprint``) and by the plain one."""
    from crawler import defaults

    articles = [found for s in samples if (found := article(s.name, s.html, s.truth)) is not None]
    syndicated, control = pairs(articles, SYNDICATED)
    extractors = {"ours (main, default)": lambda b: extract_main(parse_html(b)).text,
                  "ours (visible)": lambda b: extract_text(parse_html(b))}
    if with_peers:
        extractors.update({label: (lambda b, f=f: f(Sample("", b, "utf-8", b.decode(), "")))
                           for label, f in peers().items()})
    limit = defaults.SIMHASH_MAX_DISTANCE
    rows = []
    for label, extract in extractors.items():
        texts = ([(extract(a), extract(b)) for a, b in syndicated],
                 [(extract(a), extract(b)) for a, b in control])
        for rule, fingerprint in FINGERPRINTS:
            same, other = ([hamming(fingerprint(a), fingerprint(b)) for a, b in group] for group in texts)
            rows.append([label, rule, f"{sum(d <= limit for d in same)}/{len(same)}",
                         f"{sum(d <= limit for d in other)}/{len(other)}",
                         f"{sorted(same)[len(same) // 2]}", f"{min(other)}"])
    print(f"\nSyndication: {len(syndicated)} pairs of one article in two templates, {len(control)} pairs "
          f"of two articles in one template; near = within {limit} bits\n")
    print(fmt_table(["text", "fingerprint", "syndicated caught", "false near-duplicates",
                     "median bits (syndicated)", "fewest bits (different)"], rows))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--benchmark", type=Path, default=BENCHMARK, help="article benchmark directory")
    parser.add_argument("--docs", type=Path, default=DOCS, help="Sphinx HTML directory (python3-doc)")
    parser.add_argument("--docs-pages", type=int, default=1000, help="at most this many doc pages")
    parser.add_argument("--no-peers", action="store_true", help="ours only")
    parser.add_argument("--worst", type=int, default=0, help="list this many worst pages of ours")
    parser.add_argument("--rules", action="store_true", help="also switch each rule off in turn")
    args = parser.parse_args(argv)
    print(machine())
    samples: list[Sample] = []
    docs: list[Sample] = []
    if (args.benchmark / "ground-truth.json").is_file():
        samples = benchmark_pages(args.benchmark)
        report("Article extraction benchmark", samples, not args.no_peers, args.worst)
        syndication(samples, not args.no_peers)
    else:
        print(f"{args.benchmark}: no ground-truth.json, article benchmark skipped")
    if (args.docs / "index.html").is_file():
        docs = docs_pages(args.docs, args.docs_pages)
        report(f"Python documentation ({args.docs}), true text div[role=main]", docs, not args.no_peers,
               args.worst)
    else:
        print(f"{args.docs}: not found (apt-get install python3-doc), documentation skipped")
    if args.rules:
        ablations(samples, docs)
    return 0


if __name__ == "__main__":
    sys.exit(main())
