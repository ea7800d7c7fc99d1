"""``scrapy page URL``: print what the store holds of a URL (its latest record, or its versions)."""

from __future__ import annotations

import json
import sys
from typing import TYPE_CHECKING

from scrapy.commands import ScrapyCommand
from scrapy.exceptions import UsageError

from crawler.commands import check_command_settings
from crawler.freshness.revisit import seconds
from crawler.paths import data_path
from crawler.store.files import TornRecord, open_store, torn_tails
from crawler.store.warc import find_record, find_versions, read_page
from crawler.urls.normalize import UrlNormalizer

if TYPE_CHECKING:
    import argparse


class Command(ScrapyCommand):
    """Looks a URL up in ``STORE_URI`` and prints its metadata record (default), its
    cleaned text (``--text``) or its HTML (``--html``), or one line per visit stored
    (``--versions``). A duplicate's text and HTML are those of the page it repeats, a
    revisit that found no change shows the last version that had text; both are said on
    stderr, with the URL's revisit interval and next visit."""

    requires_project = False
    default_settings = {"LOG_ENABLED": False}

    def syntax(self) -> str:
        return "[--text | --html | --versions] <url>"

    def short_desc(self) -> str:
        return "Print the stored record, text or HTML of a URL"

    def add_options(self, parser: argparse.ArgumentParser) -> None:
        super().add_options(parser)
        what = parser.add_mutually_exclusive_group()
        what.add_argument("--text", action="store_true", help="print the cleaned text")
        what.add_argument("--html", action="store_true", help="print the HTML as stored")
        what.add_argument("--versions", action="store_true",
                          help="one line per visit: when, status, change, text hash, next visit")

    def run(self, args: list[str], opts: argparse.Namespace) -> None:
        settings = self.settings
        assert settings is not None  # Scrapy's cmdline sets them before run()
        check_command_settings(settings)
        if len(args) != 1:
            raise UsageError("give one URL")
        url = UrlNormalizer.from_settings(settings)(args[0])
        if url is None:
            raise UsageError(f"not an http(s) URL: {args[0]!r}")
        store = open_store(data_path(settings, "STORE_URI"), settings)  # -s AWS_* too
        versions = find_versions(store, url)
        for name in sorted(torn_tails):
            print(f"{name} ends in an incomplete record (torn by a crash, or still being written): "
                  "skipped", file=sys.stderr)
        if not versions:
            print(f"{url} is not in {store.root}", file=sys.stderr)
            self.exitcode = 1
            return
        record = versions[-1]
        if record.get("revisit_interval"):
            print(f"{len(versions)} visit(s) stored; revisit interval {seconds(record['revisit_interval'])}, "
                  f"next visit {record['next_visit']}", file=sys.stderr)
        if opts.versions:
            for v in versions:
                sha = (v.get("content_sha256") or "-")[:16]
                print(f"{v['fetched_at']}  {v['status']}  {v.get('revisit') or '-':<12}  {sha}  "
                      f"next {v.get('next_visit') or '-'}")
            return
        if not (opts.text or opts.html):
            print(json.dumps(record, ensure_ascii=False, indent=2))
            return
        if record["text"] is None and not record["duplicate_of"]:
            with_text = [v for v in versions if v["text"] is not None]
            if with_text:
                print(f"{url} was unchanged at its last visit; showing the version of "
                      f"{with_text[-1]['fetched_at']}", file=sys.stderr)
                record = with_text[-1]
        if record["duplicate_of"]:
            print(f"{url} duplicates {record['duplicate_of']}; showing that page", file=sys.stderr)
            record = find_record(store, record["duplicate_of"]) or record
        try:
            html, text = read_page(store, record)
        except TornRecord as error:  # a crash cut it: the crawl fetches the page again
            print(f"{url}: its stored record is incomplete ({error})", file=sys.stderr)
            self.exitcode = 1
            return
        if opts.html:
            sys.stdout.buffer.write(html or b"")
        else:
            print(text or "")
