"""Visible text of an HTML page, without scripts, styles and navigation.

Written on lxml, which Scrapy already parses every page with: one parse serves
both links and text, where trafilatura or readability would parse again and cost
10-50 ms a page.
"""

from __future__ import annotations

from lxml import etree

# Subtrees whose text is never page content.
_NEVER_TEXT = frozenset(
    {"script", "style", "noscript", "template", "svg", "math", "iframe", "object",
     "canvas", "select", "button", "head"}
)
# Page-level boilerplate: navigation, site header and footer, sidebars.
_BOILERPLATE = frozenset({"nav", "aside", "header", "footer", "menu"})
# Inside these, <header> and <footer> belong to the content (an article's byline).
_CONTENT_CONTAINERS = frozenset({"article", "main"})
_BOILERPLATE_ROLES = frozenset({"navigation", "banner", "contentinfo", "complementary", "menu"})
# Elements that end a line of text.
_BLOCKS = frozenset(
    {"address", "blockquote", "br", "dd", "div", "dl", "dt", "fieldset", "figcaption",
     "figure", "form", "h1", "h2", "h3", "h4", "h5", "h6", "hr", "li", "ol", "p",
     "pre", "section", "table", "tr", "td", "th", "ul", "article", "main", "body",
     "caption", "details", "summary", "title", "option", "textarea", "label"}
)


def _is_boilerplate(element: etree._Element, tag: str, in_content: bool) -> bool:
    if tag in _NEVER_TEXT:
        return True
    if tag in _BOILERPLATE and not (in_content and tag in ("header", "footer")):
        return True
    if element.get("hidden") is not None or element.get("aria-hidden") == "true":
        return True
    role = element.get("role")
    return role is not None and role in _BOILERPLATE_ROLES


def _collect(parent: etree._Element, out: list[str], in_content: bool) -> None:
    for child in parent:
        tag = child.tag
        if isinstance(tag, str) and not _is_boilerplate(child, tag, in_content):
            block = tag in _BLOCKS
            if block:
                out.append("\n")
            if child.text:
                out.append(child.text)
            _collect(child, out, in_content or tag in _CONTENT_CONTAINERS)
            if block:
                out.append("\n")
        if child.tail:  # a comment's or a skipped element's tail is still text
            out.append(child.tail)


def extract_text(root: etree._Element) -> str:
    """The page's visible text: one line per block, spaces collapsed, blank lines dropped."""
    out: list[str] = []
    body = root.find("body")
    if body is None:
        body = root
    if body.text:
        out.append(body.text)
    _collect(body, out, False)
    lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
    return "\n".join(line for line in lines if line)


def extract_title(root: etree._Element) -> str:
    """The page's <title>, whitespace collapsed ('' when there is none)."""
    title = root.findtext("head/title") or root.findtext(".//title") or ""
    return " ".join(title.split())


def normalize_whitespace(text: str) -> str:
    """Text with every run of whitespace made one space: the form content hashes see."""
    return " ".join(text.split())
