"""schemathesis against a real `scrapy serve`, from its own /openapi.json: every operation
fuzzed (coverage, fuzzing and stateful phases) with a bounded number of examples, and no
answer may be a server error or stray from the document."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from redis_server import free_port
from serve_service import Service

CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_schema_conformance,"
          "response_headers_conformance,negative_data_rejection,unsupported_method")
EXAMPLES = 20


def schemathesis_command() -> list[str]:
    found = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    if found is None:
        pytest.skip("schemathesis is not installed (pip install -e '.[test]')")
    return [found]


def test_schemathesis_finds_no_server_error_nor_a_departure_from_the_document(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SCRAPY_SETTINGS_MODULE"}
    # Nothing a generated request asks for may leave the machine: seeds' names are asked of a
    # loopback port where no DNS server listens (so they do not resolve), and crawls go to a
    # scrapyd that is not there (so an accepted one fails to start, and runs nowhere).
    service = Service(tmp_path / "serve", env, SERVE_SCRAPYD_URL=f"http://127.0.0.1:{free_port()}",
                      DNS_NAMESERVERS=f"127.0.0.1:{free_port()}", DNS_TIMEOUT=0.5).start()
    try:
        status, created = service.json("POST", "/crawls", {"seeds": ["http://9.9.9.9/"]})  # runs nowhere
        assert status == 201, created  # one crawl for the operations that take an id
        done = subprocess.run(
            [*schemathesis_command(), "run", f"{service.url}/openapi.json", "--header",
             f"Authorization: Bearer {service.token}", "--checks", CHECKS, "--max-examples", str(EXAMPLES),
             "--seed", "1", "--request-timeout", "20", "--no-color"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, check=False,
            env={**env, "NO_COLOR": "1"})
        summary = done.stdout[-3000:]
        print(summary)
        assert done.returncode == 0, summary + done.stderr[-2000:]
        assert " passed" in summary and "Tested: 9" in summary, summary
        assert "Traceback" not in service.log()
    finally:
        service.stop()
