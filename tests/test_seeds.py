"""Spider arguments: seeds from a list or a file, and bad input named before any fetch."""

from __future__ import annotations

import pytest
from scrapy.settings import Settings

from crawler.spiders.web import ArgumentError, check_arguments, parse_seeds
from crawler.urls.normalize import normalize_url

SETTINGS = Settings({"CRAWL_SCOPE": "host", "CRAWL_MAX_PAGES": 0})


def test_comma_separated_seeds_are_normalised_and_deduplicated():
    seeds = parse_seeds("HTTP://Example.com:80/a#x, https://b.org , http://example.com/a", normalize_url)
    assert seeds == ["http://example.com/a", "https://b.org/"]


def test_seed_file_with_comments(tmp_path):
    path = tmp_path / "seeds.txt"
    path.write_text("# my seeds\nhttp://a.test/\n\n  https://b.test/x  # the docs\n")
    assert parse_seeds(str(path), normalize_url) == ["http://a.test/", "https://b.test/x"]


def test_every_bad_seed_is_named_with_its_reason():
    with pytest.raises(ArgumentError) as error:
        parse_seeds("ftp://x.org/,example.com,http://ok.test/,http://a:99999/,seeds.txt", normalize_url)
    message = str(error.value)
    assert "'ftp://x.org/': scheme 'ftp' is not http or https" in message
    assert "'example.com': no scheme: did you mean http://example.com ?" in message
    assert "'http://a:99999/': not a valid http(s) URL" in message
    assert "'seeds.txt'" in message
    assert "ok.test" not in message


def test_no_seeds_is_an_error(tmp_path):
    with pytest.raises(ArgumentError, match="no seeds given"):
        parse_seeds(None, normalize_url)
    empty = tmp_path / "empty.txt"
    empty.write_text("# nothing here\n")
    with pytest.raises(ArgumentError, match="no seeds in"):
        parse_seeds(str(empty), normalize_url)


def test_seeds_separated_by_white_space_are_named_not_run_together():
    # Unchecked, "A B" normalised to one URL, A's path with "%20B" (or, across a newline, B)
    # appended: a page nobody asked for, fetched in silence.
    for value in ("http://a.test/ http://b.test/", "http://a.test/\nhttp://b.test/", "http://a.test/a b"):
        with pytest.raises(ArgumentError) as error:
            parse_seeds(value, normalize_url)
        assert f"{value!r}: white space in a URL" in str(error.value)


def test_scope_and_max_pages_are_checked():
    assert check_arguments("http://a.test/", None, None, SETTINGS) == (["http://a.test/"], "host", 0)
    assert check_arguments("http://a.test/", "domain", "5", SETTINGS)[1:] == ("domain", 5)
    with pytest.raises(ArgumentError, match="scope must be one of"):
        check_arguments("http://a.test/", "planet", None, SETTINGS)
    with pytest.raises(ArgumentError, match="max_pages must be a whole number"):
        check_arguments("http://a.test/", None, "lots", SETTINGS)



def test_a_long_comma_list_is_not_mistaken_for_a_file_name():
    seeds = ",".join(f"http://w{i:03d}.test:1234/" for i in range(500))
    assert len(parse_seeds(seeds, normalize_url)) == 500


def test_a_missing_seed_file_is_named_as_a_missing_file(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    for value in ("seeds.txt", "./lists/urls", "/no/such/seeds.csv"):
        with pytest.raises(ArgumentError, match=r"seed file .* does not exist") as error:
            parse_seeds(value, normalize_url)
        assert "did you mean" not in str(error.value)
    with pytest.raises(ArgumentError, match=r"did you mean http://example\.com/a"):
        parse_seeds("example.com/a", normalize_url)


def test_crawl_help_lists_the_spider_arguments():
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "-h"], capture_output=True,
                          text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    for name in ("seeds", "scope", "max_pages"):
        assert f"-a {name}=..." in done.stdout


def test_a_misspelt_argument_is_named_not_ignored(tmp_path):
    # Scrapy sets any -a as an attribute: -a max_page=5 ran the crawl without a cap, in silence.
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "web", "-a", "seeds=http://127.0.0.1:9/",
                           "-a", "max_page=5", "-a", "_job=from-scrapyd", "-s", f"DATA_DIR={tmp_path}"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 2, done.stderr[-2000:]
    assert ("unknown argument(s) of the 'web' spider: 'max_page' (did you mean max_pages?); "
            "it takes seeds, scope, max_pages") in done.stderr
    assert "_job" not in done.stderr  # scrapyd's own argument


def test_an_unknown_spider_is_named_with_the_ones_there_are(tmp_path):
    """Scrapy's loader raised a KeyError, shown as a traceback; in a project with no spider
    none is known at all, and the message says where the web spider comes from."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "wbe", "-s", f"DATA_DIR={tmp_path}"],
                          capture_output=True, text=True, timeout=60, check=False, cwd=root)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "no spider called 'wbe': the spiders here are web" in done.stderr
    assert "Traceback" not in done.stderr
    # A project with the crawler's commands and no spider of its own.
    (tmp_path / "bare.py").write_text("COMMANDS_MODULE = 'crawler.commands'\n")
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "bare", "PYTHONPATH": str(tmp_path)}
    outside = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "web"], capture_output=True,
                             text=True, timeout=60, check=False, cwd=tmp_path, env=env)
    assert outside.returncode == 2, outside.stderr[-2000:]
    assert "no spider is known here" in outside.stderr and "SCRAPY_SETTINGS_MODULE" in outside.stderr
    assert "Traceback" not in outside.stderr


def test_a_bad_value_in_a_spiders_custom_settings_is_named_not_a_traceback(tmp_path):
    """The crawl command checks the settings the spider's crawl will see, its
    custom_settings included (they reached the add-on first, as a traceback)."""
    import os
    import subprocess
    import sys

    (tmp_path / "fussy.py").write_text(
        "import scrapy\n\n\nclass Fussy(scrapy.Spider):\n    name = 'fussy'\n"
        "    custom_settings = {'POLITENESS_MIN_DELAY': 'fast', 'DOWNLOAD_DELAY': 1}\n")
    (tmp_path / "settings.py").write_text(
        "SPIDER_MODULES = ['fussy']\nADDONS = {'crawler.addon.PoliteCrawler': 0}\n"
        "COMMANDS_MODULE = 'crawler.commands'\n")
    env = {**os.environ, "SCRAPY_SETTINGS_MODULE": "settings", "PYTHONPATH": str(tmp_path)}
    done = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "fussy", "-s", f"DATA_DIR={tmp_path}"],
                          capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path, env=env)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "bad setting(s), nothing was fetched" in done.stderr and "POLITENESS_MIN_DELAY" in done.stderr
    assert "Traceback" not in done.stderr
