from pathlib import Path

from setuptools import find_packages, setup

setup(
    name="scrapy-polite-crawler",
    version="0.1.0",
    description="A polite, deduplicating, distributed web crawler as a Scrapy extension",
    long_description=Path(__file__).with_name("README.md").read_text(encoding="utf-8"),
    long_description_content_type="text/markdown",
    packages=find_packages(include=["crawler", "crawler.*"]),
    # The Lua scripts of the Redis frontier, the trap store and the content index, and the
    # service's dashboard.
    package_data={"crawler.frontier.backends.redis": ["lua/*.lua"], "crawler.traps": ["lua/*.lua"],
                  "crawler.dedup": ["lua/*.lua"], "crawler.service": ["dashboard/*"]},
    python_requires=">=3.11",
    install_requires=[
        "scrapy>=2.19,<2.20",
        "twisted>=23.10",
        "scrapy-redis>=0.9.1,<0.10",
        "protego>=0.7,<0.8",
        "w3lib>=2.5,<3",
        "lxml>=5",
        "tldextract>=5.1,<6",
        "idna>=3.7",
        "numpy>=1.26",
        "boto3>=1.34,<2",
        "botocore>=1.34,<2",
        "redis>=5,<9",
        # redis-py parses replies with it when installed: ~2x the pipelined rate here.
        "hiredis>=2",
        "warcio>=1.7,<2",
        # The resolver behind the address guard: asynchronous, with the records' TTLs.
        "dnspython>=2.6,<3",
        # One HTML5 parse (Lexbor) for text, links and head, without recursion over depth.
        "resiliparse>=2.0.1,<3",
        # gzip of the stored records at ~10x zlib's speed, same format.
        "isal>=1.7,<2",
        # scrapy serve's /metrics, in Prometheus's text format.
        "prometheus-client>=0.20,<1",
        # The SURT keys of the CDXJ index written with each WARC file (pywb's and cdxj-indexer's).
        "surt>=0.3.1,<0.4",
        # scrapy serve's HTTP layer: routing, validation and /openapi.json, on uvicorn.
        "fastapi>=0.115,<1",
        "uvicorn>=0.30,<1",
        # A page's language when it declares none: langid.py's model ships in the wheel.
        "py3langid>=0.3,<0.5",
    ],
    extras_require={
        "test": ["pytest>=8", "pytest-timeout>=2.3", "pytest-xdist>=3.5", "ruff>=0.6",
                 # .ci/run checks the types (pyproject.toml); redis-py ships its own, and
                 # mypy-zope reads Twisted's zope interfaces as Twisted's own checks do.
                 "mypy>=1.11", "mypy-zope>=1.0.17", "moto[server]>=5,<6",
                 "scrapyd>=1.6,<1.7", "scrapyd-client>=2.0.3,<2.1",
                 # test_simhash checks our fingerprints against the simhash package's.
                 "simhash>=2.1.2,<3",
                 # tests/test_urls_from_network.py fuzzes the link and redirect paths.
                 "hypothesis>=6.100",
                 # tests/test_archive.py checks our CDXJ lines against cdxj-indexer's. pywb pins
                 # redis<3, so .ci/run installs it and wacz in a venv of their own (.venv-archive).
                 "cdxj-indexer>=1.4,<2",
                 # tests/test_items.py checks feed lines against docs/page-item.schema.json.
                 "jsonschema>=4.18,<5",
                 # scrapy serve's API fuzzed from its /openapi.json; its console driven in chromium.
                 "schemathesis>=4,<5", "playwright>=1.45,<2"],
        # bench/ compares with these in the same run (bench/parsers.py: selectolax).
        "bench": ["simhash>=2.1.2,<3", "selectolax>=1.0,<2",
                  # bench/text_quality.py: the main-content extractors we are compared with.
                  "trafilatura>=2.0,<3", "readability-lxml>=0.8,<1",
                  # bench/soak.py draws docs/reliability.md's plots.
                  "matplotlib>=3.8"],
    },
    entry_points={
        # scrapyd and scrapyd-deploy find the project settings here.
        "scrapy": ["settings = crawler.settings"],
    },
)
