"""Settings are checked before a crawl starts: a bad value is named, never a traceback."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from scrapy.settings import Settings

from crawler.addon import PoliteCrawler
from crawler.config import SettingError, check_settings, setting_problems


def test_defaults_pass_the_check():
    settings = Settings()
    PoliteCrawler().update_settings(settings)
    assert setting_problems(settings) == []


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("POLITENESS_MIN_DELAY", "fast", "POLITENESS_MIN_DELAY = 'fast': must be a number >= 0"),
    ("POLITENESS_MIN_DELAY", "-1", "must be a number >= 0"),
    # float() reads both: NaN passed "< 0" and the frontier never fetched again, in silence;
    # infinity ended the crawl at start in an OverflowError traceback.
    ("POLITENESS_MIN_DELAY", "nan", "POLITENESS_MIN_DELAY = 'nan': must be a number >= 0"),
    ("REVISIT_INTERVAL", "inf", "REVISIT_INTERVAL = 'inf': must be a number >= 0"),
    ("DEPTH_LIMIT", "1.5", "DEPTH_LIMIT = '1.5': must be a whole number >= 0"),
    ("POLITENESS_PER_IP", "maybe", "POLITENESS_PER_IP = 'maybe': must be true or false"),
    ("SEEN_SET", "cuckoo", "SEEN_SET = 'cuckoo': must be one of exact, bloom"),
    ("CRAWL_SCOPE", "planet", "must be one of host, domain, all"),
    ("FRONTIER_RETRY_DELAYS", "1,soon", "must be a comma list of seconds"),
    ("FRONTIER_RETRY_DELAYS", "1,nan", "FRONTIER_RETRY_DELAYS must be numbers >= 0: '1,nan'"),
    # re.error is no ValueError: it came out of the crawl command as a traceback.
    ("URL_DROP_PARAMS", "(utm_", "URL_DROP_PARAMS = '(utm_': not a regular expression: missing )"),
    # A port that is no number stopped the process in a traceback as the resolver was built;
    # a name, not an address, was taken, and every lookup then failed as "dns".
    ("DNS_NAMESERVERS", "127.0.0.1:x", "DNS_NAMESERVERS = '127.0.0.1:x': '127.0.0.1:x' is not an IP"),
    ("DNS_NAMESERVERS", "127.0.0.1,ns.local", "'ns.local' is not an IP address"),
    # A network with a typo was taken as a host name that nothing is called: the guard went
    # on refusing the network, its log line saying "allow it with NETWORK_ALLOW".
    ("NETWORK_ALLOW", "wiki.corp,10.0.0.0/33",
     "NETWORK_ALLOW = 'wiki.corp,10.0.0.0/33': '10.0.0.0/33' is not a network"),
    # A scheme the store does not know failed in the pipeline's from_crawler, a traceback.
    ("STORE_URI", "gs://bucket/pages", "STORE_URI 'gs://bucket/pages': unsupported scheme 'gs'"),
    # Documented to stop the crawl at start, it did so in a traceback from the scheduler.
    ("DATA_DIR", "var/crawler", "  DATA_DIR 'var/crawler' is relative: set it to an absolute directory"),
    # Out of its documented range it passed the check and failed in the scheduler's
    # from_crawler: a traceback ending in "Engine slot not assigned".
    ("FRONTIER_PRIORITY_LEVELS", "0", "FRONTIER_PRIORITY_LEVELS = '0': must be a whole number from 1 to 8"),
    ("FRONTIER_PRIORITY_LEVELS", "9", "must be a whole number from 1 to 8"),
    # ISA-L takes levels 0 to 3: at 9 every page's write raised and nothing was stored.
    ("STORE_GZIP_LEVEL", "9", "STORE_GZIP_LEVEL = '9': must be a whole number from 0 to 3"),
    # Shares above 1 passed: a duplicate rate that never demotes, a Bloom filter of negative
    # size (a traceback from the frontier), a hot share the pipeline refused in a traceback.
    ("TRAP_DUPLICATE_RATE", "1.5", "TRAP_DUPLICATE_RATE = '1.5': must be a number from 0 to 1, 1 excluded"),
    ("TRAP_DUPLICATE_RATE", "1", "must be a number from 0 to 1, 1 excluded"),
    ("SEEN_SET_ERROR_RATE", "0", "SEEN_SET_ERROR_RATE = '0': must be a number from 0 to 1, 0 and 1 excluded"),
    ("SEEN_SET_ERROR_RATE", "1", "must be a number from 0 to 1, 0 and 1 excluded"),
    ("REVISIT_HOT_SHARE", "0", "REVISIT_HOT_SHARE = '0': must be a number from 0 to 1, 0 excluded"),
    ("REVISIT_HOT_SHARE", "2", "must be a number from 0 to 1, 0 excluded"),
    ("REVISIT_HOT_SHARE", "nan", "must be a number from 0 to 1, 0 excluded"),
    # Scrapy's own: scrapy serve refused them, scrapy crawl ended in a traceback.
    ("DOWNLOAD_TIMEOUT", "abc", "DOWNLOAD_TIMEOUT = 'abc': must be a number >= 0"),
    ("CLOSESPIDER_TIMEOUT", "-5", "CLOSESPIDER_TIMEOUT = '-5': must be a number >= 0"),
    ("CONCURRENT_REQUESTS", "many", "CONCURRENT_REQUESTS = 'many': must be a whole number >= 0"),
])
def test_a_bad_value_is_named_with_what_it_takes(name, value, expected):
    settings = Settings({name: value})
    with pytest.raises(SettingError) as error:
        check_settings(settings)
    assert expected in str(error.value)


def test_every_bad_setting_is_named_at_once():
    problems = setting_problems(Settings({"FRONTIER_LEASE_SECONDS": "x", "HOST_PAGE_BUDGET": "y"}))
    assert [p.split("=")[0].strip() for p in problems] == ["HOST_PAGE_BUDGET", "FRONTIER_LEASE_SECONDS"]


def test_the_add_on_refuses_a_bad_value():
    settings = Settings()
    settings.set("FRONTIER_COMMIT_INTERVAL", "soon", priority="cmdline")
    with pytest.raises(SettingError, match="FRONTIER_COMMIT_INTERVAL"):
        PoliteCrawler().update_settings(settings)


@pytest.mark.parametrize("command", [["page", "http://a.test/"], ["crawlstats", "c"], ["deadletters", "c"],
                                     ["forget", "c"]])
def test_the_reading_commands_refuse_a_bad_value_too(command, tmp_path):
    # They read DATA_DIR, STORE_URI and URL_DROP_PARAMS as the crawl does, unchecked: a traceback.
    done = subprocess.run([sys.executable, "-m", "scrapy", *command, "-s", "DATA_DIR=var/crawler",
                           "-s", "URL_DROP_PARAMS=(utm_"], capture_output=True, text=True, timeout=60,
                          check=False, cwd=Path(__file__).resolve().parent.parent)
    assert done.returncode == 2, done.stderr[-2000:]
    assert "DATA_DIR 'var/crawler' is relative" in done.stderr
    assert "URL_DROP_PARAMS = '(utm_': not a regular expression" in done.stderr
    assert "Traceback" not in done.stderr
