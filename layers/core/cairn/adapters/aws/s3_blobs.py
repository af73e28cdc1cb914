"""BlobStore on an S3 bucket: key "a/b.md" is the object <prefix>a/b.md.

A PutObject replaces an object atomically (readers see the old or the new bytes), so no temp
objects are needed. Encryption is the bucket's default (the SAM template sets it); nothing is
set per call. Keys follow the file adapter's rules so every backend accepts the same keys.
The store is also the UploadSigner (ports/uploads.py): presigned POSTs into those same keys; and
the DownloadSigner (ports/downloads.py): presigned GETs of them, for reads past Lambda's response limit.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from botocore.exceptions import ClientError

from cairn.adapters.local.file_blobs import MAX_KEY_BYTES, validate_key, validate_prefix
from cairn.domain.errors import CairnError, InvalidInput, NotFound
from cairn.ports.downloads import PresignedDownload
from cairn.ports.uploads import PresignedUpload

_MISSING = {"NoSuchKey", "404", "NotFound"}
DELETE_BATCH = 1000  # DeleteObjects' limit per request (ListObjectsV2 pages are no larger)


class S3BlobStore:
    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        if prefix and not prefix.endswith("/"):
            prefix += "/"
        if prefix:
            validate_key(prefix.rstrip("/"))
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    def put(self, key: str, data: bytes) -> None:
        object_key = self._key(key)
        try:
            self.client.put_object(Bucket=self.bucket, Key=object_key, Body=bytes(data))
        except ClientError as exc:
            raise _error("PutObject", exc) from exc

    def get(self, key: str) -> bytes:
        object_key = self._key(key)
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=object_key)
            body: bytes = response["Body"].read()
        except ClientError as exc:
            if _code(exc) in _MISSING:
                raise NotFound(f"no blob {key!r}") from None
            raise _error("GetObject", exc) from exc
        return body

    def delete(self, key: str) -> None:
        """For good: every version the bucket keeps of the key goes too (the template's bucket is
        versioned, and a bare DeleteObject would only add a delete marker: a hard delete is an
        erasure's or a forget's, never a document's soft delete). A missing key is fine."""
        object_key = self._key(key)
        versions = [v for v in self._versions(object_key) if v["Key"] == object_key]
        self._delete_batch(versions)

    def _versions(self, prefix: str, live: set[str] | None = None) -> list[dict[str, str]]:
        """Every version and delete marker under `prefix` as {Key, VersionId} (an unversioned
        bucket's objects have the version "null"); `live` gets the keys whose latest version is an
        object, not a delete marker (what ListObjectsV2 lists)."""
        request: dict[str, Any] = {"Bucket": self.bucket, "Prefix": prefix, "MaxKeys": DELETE_BATCH}
        found: list[dict[str, str]] = []
        while True:
            try:
                page = self.client.list_object_versions(**request)
            except ClientError as exc:
                raise _error("ListObjectVersions", exc) from exc
            for entry in [*page.get("Versions", []), *page.get("DeleteMarkers", [])]:
                found.append({"Key": entry["Key"], "VersionId": entry["VersionId"]})
            if live is not None:
                live.update(v["Key"] for v in page.get("Versions", []) if v.get("IsLatest"))
            if not page.get("IsTruncated"):
                return found
            request["KeyMarker"] = page["NextKeyMarker"]
            request["VersionIdMarker"] = page["NextVersionIdMarker"]

    def exists(self, key: str) -> bool:
        object_key = self._key(key)
        try:
            self.client.head_object(Bucket=self.bucket, Key=object_key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return False
            raise _error("HeadObject", exc) from exc
        return True

    def delete_prefix(self, prefix: str) -> int:
        """Every object of the folder, for good as `delete`: each version and delete marker, a
        DeleteObjects per thousand. Returns how many objects there were (not versions)."""
        folder = self._key(validate_prefix(prefix)[:-1]) + "/"
        live: set[str] = set()  # from the same listing: a ListObjectsV2 besides cost a request
        versions = self._versions(folder, live)
        for start in range(0, len(versions), DELETE_BATCH):
            self._delete_batch(versions[start : start + DELETE_BATCH])
        return len(live)

    def presign_upload(
        self, key: str, *, max_bytes: int, content_type: str | None, expires_in: int
    ) -> PresignedUpload:
        """A presigned POST whose policy pins the key, the size range (S3 answers EntityTooLarge
        above it) and, when given, the Content-Type."""
        object_key = self._key(key)
        fields: dict[str, str] = {}
        conditions: list[Any] = [["content-length-range", 1, max_bytes]]
        if content_type:
            fields["Content-Type"] = content_type
            conditions.append({"Content-Type": content_type})
        try:
            post = self.client.generate_presigned_post(
                Bucket=self.bucket,
                Key=object_key,
                Fields=fields,
                Conditions=conditions,
                ExpiresIn=expires_in,
            )
        except ClientError as exc:  # pragma: no cover - signing is local; only a bad config fails
            raise _error("presign", exc) from exc
        expires_at = datetime.now(UTC) + timedelta(seconds=expires_in)
        return PresignedUpload(url=post["url"], fields=dict(post["fields"]), expires_at=expires_at)

    def presign_download(self, key: str, *, expires_in: int, content_type: str) -> PresignedDownload:
        """A presigned GetObject of the key: S3 answers it with `content_type` and `no-store`, as
        the API's own read would. Signed locally, without a request (and without checking the key
        exists: a document's blob does)."""
        params = {
            "Bucket": self.bucket,
            "Key": self._key(key),
            "ResponseContentType": content_type,
            "ResponseCacheControl": "no-store",
        }
        try:
            url = self.client.generate_presigned_url("get_object", Params=params, ExpiresIn=expires_in)
        except ClientError as exc:  # pragma: no cover - signing is local; only a bad config fails
            raise _error("presign", exc) from exc
        return PresignedDownload(url=str(url), expires_at=datetime.now(UTC) + timedelta(seconds=expires_in))

    def size(self, key: str) -> int | None:
        object_key = self._key(key)
        try:
            head = self.client.head_object(Bucket=self.bucket, Key=object_key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return None
            raise _error("HeadObject", exc) from exc
        return int(head["ContentLength"])

    def key_of(self, url: str) -> str | None:
        if not url.startswith("s3://"):
            return None
        bucket, _, object_key = url.removeprefix("s3://").partition("/")
        if bucket != self.bucket or not object_key.startswith(self.prefix):
            return None
        return object_key.removeprefix(self.prefix) or None

    def _delete_batch(self, objects: list[dict[str, str]]) -> int:
        """Delete up to DELETE_BATCH object versions; a per-key failure fails the whole call."""
        if not objects:
            return 0
        try:
            response = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True}
            )
        except ClientError as exc:
            raise _error("DeleteObjects", exc) from exc
        errors = response.get("Errors", [])
        if errors:
            code = str(errors[0].get("Code", "Unknown"))
            raise CairnError(f"S3 DeleteObjects failed for {len(errors)} objects ({code})")
        return len(objects)

    def _key(self, key: str) -> str:
        validate_key(key)
        full = self.prefix + key
        if len(full.encode("utf-8")) > MAX_KEY_BYTES:
            raise InvalidInput(f"blob key exceeds {MAX_KEY_BYTES} bytes with the store's prefix")
        return full


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", "Unknown"))


def _error(action: str, exc: ClientError) -> CairnError:
    """The S3 error code only: messages can name the account, role or request ids."""
    return CairnError(f"S3 {action} failed ({_code(exc)})")
