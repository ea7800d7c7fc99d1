"""A page store in S3 or any S3-compatible server (MinIO, Ceph, moto), through boto3."""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO, ClassVar, Literal
from urllib.parse import urlsplit

import boto3
from boto3.exceptions import S3UploadFailedError
from boto3.s3.transfer import TransferConfig
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError
from twisted.internet.defer import Deferred, DeferredList
from twisted.internet.threads import deferToThread

from crawler import defaults
from crawler.paths import data_path
from crawler.store.repair import repair_spool

if TYPE_CHECKING:
    from botocore.awsrequest import AWSRequest
    from botocore.client import BaseClient
    from scrapy.settings import BaseSettings

logger = logging.getLogger(__name__)

_MULTIPART = TransferConfig(multipart_threshold=16 * 1024 * 1024, multipart_chunksize=16 * 1024 * 1024)


class S3Store:
    """Files under ``s3://bucket/prefix``, written through a local spool directory.

    A file is appended to locally (``STORE_SPOOL_DIR``) and uploaded when complete
    (``finish``: at each roll and at close; multipart above 16 MiB) in a thread, so the
    crawl does not wait. A failed request is retried by botocore (``STORE_UPLOAD_RETRIES``
    times, its standard mode: transient and throttling errors, jittered exponential
    delays up to 20 s); a file that still fails, or that a killed run left behind, stays
    in the spool and is uploaded when a crawl next opens the store. A file leaves the
    spool only once S3 has it: no page is lost. Reads (``read_range`` with an HTTP
    Range, ``list``, ``read``) see both S3 and the spool.
    """

    def __init__(self, uri: str, client: BaseClient, spool_dir: str | Path) -> None:
        parts = urlsplit(uri)
        if not parts.netloc:
            raise ValueError(f"STORE_URI {uri!r}: no bucket; use s3://bucket/prefix")
        self.root = uri
        self.bucket = parts.netloc
        self.prefix = parts.path.strip("/")
        self.client = client
        # One spool directory per process, locked while it lives: a crawl opening the store
        # recovers only directories whose owner is gone, never a running worker's files.
        self.spool_root = Path(spool_dir) / self.bucket / self.prefix
        self.spool = self.spool_root / f"{socket.gethostname()}-{os.getpid()}-{time.time_ns()}"
        self.spool.mkdir(parents=True)
        self._lock = (self.spool / ".lock").open("ab")
        fcntl.flock(self._lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        client.meta.events.register("request-created.s3", self._count_retry)
        self._uploads: list[Deferred] = []
        self.on_uploaded: Callable[[str], object] = lambda name: None
        self.uploaded = 0
        self.failed = 0
        self.retried = 0

    @classmethod
    def from_settings(cls, uri: str, settings: BaseSettings) -> S3Store:
        """With Scrapy's ``AWS_*`` settings (``AWS_ENDPOINT_URL`` for MinIO and the like)."""
        client = boto3.session.Session().client(
            "s3",
            aws_access_key_id=settings.get("AWS_ACCESS_KEY_ID"),
            aws_secret_access_key=settings.get("AWS_SECRET_ACCESS_KEY"),
            aws_session_token=settings.get("AWS_SESSION_TOKEN"),
            endpoint_url=settings.get("AWS_ENDPOINT_URL") or None,
            region_name=settings.get("AWS_REGION_NAME") or None,
            use_ssl=settings.getbool("AWS_USE_SSL", True),
            verify=settings.get("AWS_VERIFY"),
            config=Config(retries={"mode": "standard", "total_max_attempts": 1 + settings.getint(
                "STORE_UPLOAD_RETRIES", defaults.STORE_UPLOAD_RETRIES)}),
        )
        return cls(uri, client, data_path(settings, "STORE_SPOOL_DIR"))

    def _count_retry(self, request: AWSRequest, **kwargs: object) -> None:
        """botocore's own retries, counted (``store/s3_retries``) and logged."""
        retries = request.context.get("retries", {})
        if retries.get("attempt", 1) > 1:
            self.retried += 1
            logger.warning("S3 request %s %s retried (attempt %d of %s)", request.method,
                           urlsplit(request.url).path, retries["attempt"], retries.get("max", "?"))

    def key(self, name: str) -> str:
        return f"{self.prefix}/{name}" if self.prefix else name

    # ---------------------------------------------------------------- writing

    def open_append(self, name: str) -> BinaryIO:
        path = self.spool / name
        path.parent.mkdir(parents=True, exist_ok=True)
        return path.open("ab")

    #: Pages written here are safe only once their file is uploaded.
    remote: ClassVar[Literal[True]] = True  # a literal: tells the two stores apart for mypy

    @property
    def writes_to(self) -> Path:
        """The local directory files are written in (where room may run out)."""
        return self.spool

    def cut(self, name: str, size: int) -> None:
        """Cut the spooled ``name`` back to its first ``size`` bytes (a write that failed)."""
        os.truncate(self.spool / name, size)

    def discard(self, name: str) -> None:
        """Remove the spooled ``name``, a file that could not be written whole (never uploaded)."""
        (self.spool / name).unlink(missing_ok=True)

    def finish(self, name: str, spool: Path | None = None) -> None:
        """Upload the complete file ``name`` in a thread (``wait`` waits for it); then
        ``on_uploaded(name)`` runs, in the reactor thread, if the upload succeeded."""
        upload = deferToThread(self.upload, name, spool)
        upload.addCallback(lambda ok: ok and self.on_uploaded(name))
        upload.addErrback(lambda failure: logger.error("Upload of %s: %s", name, failure.getTraceback()))
        self._uploads.append(upload)

    def recover(self) -> None:
        """Upload what the spool directories of runs that are gone still hold: files of a
        run that was killed (their torn tails cut first), or whose uploads kept failing.
        A directory is gone when no process holds its lock."""
        for directory in sorted(p for p in self.spool_root.iterdir() if p.is_dir() and p != self.spool):
            with (directory / ".lock").open("ab") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # a running worker's
                files = [p for p in directory.rglob("*") if p.is_file() and p.name != ".lock"]
                names = [path.relative_to(directory).as_posix() for path in sorted(files)]
                repair_spool(directory, names)  # a killed run's last member may be torn
                for name in names:
                    logger.info("Uploading %s, left in the spool by an earlier run", name)
                    if not self.upload(name, directory):
                        break
                else:
                    shutil.rmtree(directory)

    def upload(self, name: str, spool: Path | None = None) -> bool:
        """Upload one spooled file (botocore retries each request); on success it leaves
        the spool. Blocking: runs in a thread."""
        path = (spool or self.spool) / name
        try:
            self.client.upload_file(str(path), self.bucket, self.key(name), Config=_MULTIPART)
        except (BotoCoreError, ClientError, S3UploadFailedError, OSError) as error:
            self.failed += 1
            logger.error("Upload of %s failed (%s); it stays in %s for the next run",
                         name, error, path.parent)
            return False
        path.unlink()
        self.uploaded += 1
        return True

    def counts(self) -> dict[str, int]:
        """Files uploaded, files whose upload gave up (left in the spool), S3 requests retried."""
        return {"uploaded_files": self.uploaded, "upload_failures": self.failed, "s3_retries": self.retried}

    async def wait(self) -> None:
        """Until every finished file is uploaded, or has given up and stays spooled;
        then this process's spool directory goes, unless it still holds files."""
        from scrapy.utils.defer import maybe_deferred_to_future

        uploads, self._uploads = self._uploads, []
        if uploads:
            await maybe_deferred_to_future(DeferredList(uploads, consumeErrors=True))
        if not any(p.is_file() and p.name != ".lock" for p in self.spool.rglob("*")):
            shutil.rmtree(self.spool, ignore_errors=True)
        self._lock.close()

    # ---------------------------------------------------------------- reading

    def read_range(self, name: str, offset: int, length: int) -> bytes:
        path = self.spool / name
        if path.is_file():
            with path.open("rb") as f:
                f.seek(offset)
                return f.read(length)
        answer = self.client.get_object(Bucket=self.bucket, Key=self.key(name),
                                        Range=f"bytes={offset}-{offset + length - 1}")
        return answer["Body"].read()

    def read(self, name: str) -> bytes:
        path = self.spool / name
        if path.is_file():
            return path.read_bytes()
        return self.client.get_object(Bucket=self.bucket, Key=self.key(name))["Body"].read()

    def list(self, prefix: str) -> list[str]:
        """Names of the files under ``prefix``, in S3 or still spooled, sorted."""
        names = set()
        start = self.key(prefix) + "/"
        for page in self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            for item in page.get("Contents", []):
                names.add(item["Key"][len(self.key("")):] if self.prefix else item["Key"])
        spooled = self.spool / prefix
        if spooled.is_dir():
            names.update(f"{prefix}/{p.name}" for p in spooled.iterdir() if p.is_file())
        return sorted(names)
