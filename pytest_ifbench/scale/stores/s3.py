"""``s3://bucket/prefix``: any S3-compatible store, through boto3 (installed with litellm).

Configured the standard way: ``AWS_ENDPOINT_URL`` (MinIO, moto, R2, ...), credentials and
region from the environment or the AWS config files, as every AWS tool reads them. Entries
are objects ``<prefix>/<key>.json``; a put is conditional (``If-None-Match: *``), so two
shards racing on one key leave the first entry and neither fails. A damaged entry is replaced
with ``If-Match`` on the ETag of the object read and found to be that damaged text, so a good
entry written meanwhile stays.

The lease on a key being asked of the model is the object ``<prefix>/leases/<key>``, holding
its owner and its length (metadata ``lease-seconds``), also written with ``If-None-Match: *``.
A lease runs out when the server's clock (its ``Date`` header against the object's
``Last-Modified``) says so; taking over a lease run out or a gone owner's, renewing and ending
one are conditional on the ETag this process last saw (``If-Match``), so of two processes only
one wins. S3 has no expiry of its own: the object of a lease whose owner was killed stays until
the next claim of its key takes it over (a lifecycle rule on ``<prefix>/leases/`` may remove them).

Refused for good (:meth:`S3Store.refused`): a 4xx answer (403 AccessDenied -- a read-only key, a bucket policy
--, a bucket gone, credentials rejected, a quota) but 408 and 429; missing credentials. A 5xx (503 SlowDown),
throttling, a timeout or a connection refused passes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from email.utils import parsedate_to_datetime
from typing import Any
from urllib.parse import urlsplit

from . import _never, display_url

_SUFFIX = ".json"
_LEASES = "leases"
#: A conditional write that lost: 412, or 409 while another conditional write of the object is under way.
_LOST = ("PreconditionFailed", "ConditionalRequestConflict")
_GONE = ("NoSuchKey", "404")
#: Errors that pass, whatever their status (some S3-compatible stores answer them with a 400 or 403).
_PASSING = ("SlowDown", "Throttling", "ThrottlingException", "RequestTimeout", "RequestLimitExceeded",
            "TooManyRequests", "InternalError", "ServiceUnavailable", "OperationAborted", "RequestTimeTooSkewed")
#: Refusals by their code alone (the status aside): the key or the policy, the account, the bucket, a quota.
_REFUSED = ("AccessDenied", "403", "Forbidden", "AllAccessDisabled", "AccountProblem", "InvalidAccessKeyId",
            "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "NoSuchBucket", "QuotaExceeded")


class S3Store:
    __slots__ = ("_client", "_etags", "bucket", "display", "prefix")

    def __init__(self, url: str) -> None:
        parts = urlsplit(url)
        if not parts.netloc:
            raise ValueError(f"--ifbench-shared-cache: {url!r}: expected s3://bucket/prefix")
        self.bucket = parts.netloc
        self.prefix = parts.path.strip("/")
        self.display = display_url(url)
        self._etags: dict[tuple[str, str], str] = {}  # (key, owner) -> the ETag of the owner's lease object
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

    def _lease(self, key: str) -> str:
        return f"{self.prefix}/{_LEASES}/{key}" if self.prefix else f"{_LEASES}/{key}"

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
            if _code(exc) not in _LOST:
                raise  # 412: another shard wrote it first; 409: it is writing it now

    def replace(self, key: str, data: bytes, damaged: bytes) -> bool:
        from botocore.exceptions import ClientError

        name = self._name(key)
        try:
            held = self._client.get_object(Bucket=self.bucket, Key=name)
            condition = {"IfMatch": held["ETag"]}
            if held["Body"].read() != damaged:
                return False  # written since by another process: a reply too
        except ClientError as exc:
            if _code(exc) not in _GONE:
                raise
            condition = {"IfNoneMatch": "*"}  # deleted since: written as a first entry
        try:
            self._client.put_object(Bucket=self.bucket, Key=name, Body=data, ContentType="application/json",
                                    **condition)
            return True
        except ClientError as exc:
            if _code(exc) in _LOST or _code(exc) in _GONE:
                return False
            raise

    def claim(self, key: str, owner: str, seconds: float, stale: Callable[[str], bool] = _never) -> bool:
        from botocore.exceptions import ClientError

        name = self._lease(key)
        try:
            self._etags[key, owner] = self._put_lease(name, owner, seconds, IfNoneMatch="*")
            return True
        except ClientError as exc:
            if _code(exc) not in _LOST:
                raise
        try:
            held = self._client.get_object(Bucket=self.bucket, Key=name)
            holder = held["Body"].read().decode("utf-8", "replace")
        except ClientError as exc:
            if _code(exc) in _GONE:
                return False  # ended a moment ago: the caller asks again at its next look
            raise
        now = parsedate_to_datetime(held["ResponseMetadata"]["HTTPHeaders"]["date"])
        try:
            length = float(held.get("Metadata", {}).get("lease-seconds", seconds))
        except ValueError:
            length = seconds
        mine = holder == owner  # an earlier claim whose reply was lost
        if (now - held["LastModified"]).total_seconds() <= length and not mine and not stale(holder):
            return False
        try:  # run out (its owner killed or stalled) or its owner gone: taken over by whoever rewrites the version seen
            self._etags[key, owner] = self._put_lease(name, owner, seconds, IfMatch=held["ETag"])
            return True
        except ClientError as exc:
            if _code(exc) in _LOST or _code(exc) in _GONE:
                return False
            raise

    def renew(self, key: str, owner: str, seconds: float) -> bool:
        from botocore.exceptions import ClientError

        etag = self._etags.get((key, owner))
        if etag is None:
            return False
        try:
            self._etags[key, owner] = self._put_lease(self._lease(key), owner, seconds, IfMatch=etag)
            return True
        except ClientError as exc:
            if _code(exc) in _LOST or _code(exc) in _GONE:
                self._etags.pop((key, owner), None)
                return False
            raise

    def unclaim(self, key: str, owner: str) -> None:
        from botocore.exceptions import ClientError

        etag = self._etags.pop((key, owner), None)
        if etag is None:
            return
        try:
            self._client.delete_object(Bucket=self.bucket, Key=self._lease(key), IfMatch=etag)
        except ClientError as exc:
            if _code(exc) not in _LOST and _code(exc) not in _GONE:
                raise  # otherwise: taken over since, and no longer this process's to end

    def _put_lease(self, name: str, owner: str, seconds: float, **condition: str) -> str:
        return self._client.put_object(Bucket=self.bucket, Key=name, Body=owner.encode("utf-8"),
                                       Metadata={"lease-seconds": f"{seconds:g}"}, **condition)["ETag"]

    def refused(self, exc: BaseException) -> bool:
        from botocore.exceptions import ClientError, NoCredentialsError, PartialCredentialsError

        if isinstance(exc, NoCredentialsError | PartialCredentialsError):
            return True
        if not isinstance(exc, ClientError):
            return False  # a timeout, a connection refused or reset
        status = int(exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0)
        code = _code(exc)
        return code in _REFUSED or (code not in _PASSING and 400 <= status < 500 and status not in (408, 429))

    def close(self) -> None:
        self._client.close()


def _code(exc: Any) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def open_store(url: str) -> S3Store:
    return S3Store(url)
