"""``s3://bucket/prefix``: any S3-compatible store, through boto3 (installed with litellm).

Configured the standard way: ``AWS_ENDPOINT_URL`` (MinIO, moto, R2, ...), credentials and
region from the environment or the AWS config files, as every AWS tool reads them. Entries
are objects ``<prefix>/<key>.json``; a put is conditional (``If-None-Match: *``), so two
shards racing on one key leave the first entry and neither fails.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

from . import display_url

_SUFFIX = ".json"


class S3Store:
    __slots__ = ("_client", "bucket", "display", "prefix")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if not parts.netloc:
            raise ValueError(f"--ifbench-shared-cache: {url!r}: expected s3://bucket/prefix")
        self.bucket = parts.netloc
        self.prefix = parts.path.strip("/")
        self.display = display_url(url)
        try:
            import boto3
            from botocore.config import Config
        except ImportError:  # pragma: no cover - litellm brings boto3
            raise ValueError("--ifbench-shared-cache s3://: boto3 is not installed (pip install boto3)") from None
        self._client: Any = boto3.session.Session().client(
            "s3", config=Config(connect_timeout=3, read_timeout=10, retries={"max_attempts": 2},
                                max_pool_connections=32))

    def _name(self, key: str) -> str:
        return f"{self.prefix}/{key}{_SUFFIX}" if self.prefix else f"{key}{_SUFFIX}"

    def ping(self) -> None:
        self._client.head_bucket(Bucket=self.bucket)

    def keys(self) -> Iterator[str]:
        start = f"{self.prefix}/" if self.prefix else ""
        for page in self._client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=start):
            for item in page.get("Contents", ()):
                name = item["Key"][len(start):]
                if "/" not in name and name.endswith(_SUFFIX):
                    yield name[:-len(_SUFFIX)]

    def get(self, key: str) -> bytes | None:
        try:
            return self._client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"].read()
        except self._client.exceptions.NoSuchKey:
            return None

    def put_once(self, key: str, data: bytes) -> None:
        from botocore.exceptions import ClientError

        try:
            self._client.put_object(Bucket=self.bucket, Key=self._name(key), Body=data,
                                    ContentType="application/json", IfNoneMatch="*")
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in ("PreconditionFailed", "ConditionalRequestConflict"):
                raise  # 412: another shard wrote it first; 409: it is writing it now

    def close(self) -> None:
        self._client.close()


def open_store(url: str) -> S3Store:
    return S3Store(url)
