"""A feed's page items are the documented record (docs/page-item.schema.json): the stored
record's names and formats, no bookkeeping, the HTML only when FEED_PAGE_HTML asks."""

from __future__ import annotations

import base64
import json
import subprocess
from pathlib import Path

import jsonschema
import pytest
from crawling import REPO, crawl_command
from itemadapter import ItemAdapter
from testweb import Site, TestWeb

from crawler.items import Page
from crawler.store.files import LocalStore, iter_records

SCHEMA = json.loads((REPO / "docs" / "page-item.schema.json").read_text(encoding="utf-8"))


def _feed(tmp_path: Path, **settings: object) -> tuple[list[dict], list[dict]]:
    """(feed lines, stored records) of a crawl of one small site."""
    with TestWeb([Site("feed.test", pages=5)]) as web:
        command, env = crawl_command(web, tmp_path, "seeds=" + web.url("feed.test"), ROBOTSTXT_OBEY=False,
                                     **settings)
        feed = tmp_path / "items.jsonl"
        done = subprocess.run([*command, "-o", str(feed)], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = [json.loads(line) for line in feed.read_text(encoding="utf-8").splitlines()]
    return lines, list(iter_records(LocalStore(tmp_path / "store")))


def test_feed_lines_match_the_schema_and_the_stored_records(tmp_path):
    lines, records = _feed(tmp_path)
    assert len(lines) == 5
    validator = jsonschema.Draft202012Validator(SCHEMA, format_checker=jsonschema.FormatChecker())
    for line in lines:
        validator.validate(line)
        assert "html" not in line
    by_url = {record["url"]: record for record in records}
    for line in lines:
        record = by_url[line["url"]]
        for name in ("fetched_at", "simhash", "content_sha256", "status", "title", "next_visit",
                     "revisit", "revisit_interval"):
            assert line[name] == record[name], name


def test_feed_page_html_carries_the_html_in_base64(tmp_path):
    lines, _ = _feed(tmp_path, FEED_PAGE_HTML=True)
    jsonschema.validate(lines[0], SCHEMA)
    assert base64.b64decode(lines[0]["html"]).startswith(b"<!DOCTYPE html>")


def test_the_schema_refuses_bookkeeping_and_an_epoch_time():
    page = Page("https://example.org/", 200, 1_800_000_000.5, 0, b"<html></html>", "text", simhash=1)
    record = ItemAdapter(page).asdict()
    jsonschema.validate(record, SCHEMA)
    assert record["fetched_at"] == "2027-01-15T08:00:00.500Z" and record["simhash"] == "0000000000000001"
    for wrong in ({"revisit_state": {}}, {"fetched_at": 1_800_000_000.5}, {"simhash": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**record, **wrong}, SCHEMA)
    # The fields another part may add are allowed, as strings or null.
    jsonschema.validate({**record, "lang": "en", "published": None}, SCHEMA)


def test_a_field_set_through_the_adapter_is_set_on_the_page():
    page = Page("https://example.org/", 200, 0.0, 0, b"", "")
    adapter = ItemAdapter(page)
    adapter["title"] = "Set"
    assert page.title == "Set" and adapter["title"] == "Set"
    with pytest.raises(KeyError):
        adapter["stored"] = {}
