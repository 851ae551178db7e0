"""The client: one method per operation of the OpenAPI document the service serves at
GET /v1/openapi.json (src/server/openapi.ts). Jobs are plain dicts, as the API sends them
(the JobRecord schema: id, spec, state, exitCode, reason, pending, ...)."""

from __future__ import annotations

import json
import os
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Dict, Iterator, List, Optional, Sequence

#: Each method's operation in the OpenAPI document: operationId -> (HTTP method, path).
#: The tests check these against the document a real service serves.
OPERATIONS: Dict[str, tuple] = {
    "submitJob": ("POST", "/v1/jobs"),
    "submitJobs": ("POST", "/v1/jobs/batch"),
    "listJobs": ("GET", "/v1/jobs"),
    "getJob": ("GET", "/v1/jobs/{id}"),
    "cancelJob": ("POST", "/v1/jobs/{id}/cancel"),
    "preemptJob": ("POST", "/v1/jobs/{id}/preempt"),
    "readJobLog": ("GET", "/v1/jobs/{id}/logs"),
    "listGpus": ("GET", "/v1/gpus"),
    "getStats": ("GET", "/v1/stats"),
    "getOpenApi": ("GET", "/v1/openapi.json"),
}

#: Jobs per page of GET /v1/jobs when none is asked for, and the most one may ask for
#: (src/server/job-page.ts DEFAULT_JOB_PAGE and MAX_JOB_PAGE; the OpenAPI document's `limit`).
DEFAULT_PAGE = 500
MAX_PAGE = 10000

#: States after which a job never changes (the JobRecord schema's state enum).
FINAL_STATES = ("succeeded", "failed", "cancelled")

#: Times a submission is sent when no answer comes; the Idempotency-Key makes resending safe.
SUBMIT_ATTEMPTS = 3


class MigpoolError(Exception):
    """Anything this client raises."""


class ApiError(MigpoolError):
    """The service answered with an error: `status` (HTTP), `code` (BAD_INPUT, UNAUTHORIZED,
    NOT_FOUND, CHECK_FAILED, ...), `message` (the service's one line: what, where, how to fix
    it) and `path` (the offending field, e.g. resources.profile, or None)."""

    def __init__(self, status: int, code: str, message: str, path: Optional[str] = None):
        super().__init__(f"{message} (HTTP {status} {code})")
        self.status = status
        self.code = code
        self.message = message
        self.path = path


class ServiceUnreachable(MigpoolError):
    """No answer: the service is not running at that URL, or did not answer in time."""


class Client:
    """A client of `migpool serve`.

    url: the service's base URL (default $MIGPOOL_URL), e.g. http://127.0.0.1:8470.
    token: a bearer token (default $MIGPOOL_TOKEN; the service keeps its own in <data dir>/token).
    timeout: seconds one request may take.
    """

    def __init__(self, url: Optional[str] = None, token: Optional[str] = None, timeout: float = 30.0):
        url = url if url is not None else os.environ.get("MIGPOOL_URL")
        token = token if token is not None else os.environ.get("MIGPOOL_TOKEN")
        if not url:
            raise MigpoolError("no service URL: pass Client(url, token) or set MIGPOOL_URL, e.g. http://127.0.0.1:8470")
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise MigpoolError(f"'{url}' is not an http(s) URL: give one such as http://127.0.0.1:8470")
        if not token:
            raise MigpoolError("no token: pass Client(url, token) or set MIGPOOL_TOKEN (the service's is in <data dir>/token)")
        self.url = url.rstrip("/")
        self.token = token.strip()
        self.timeout = timeout

    # ---- jobs

    def submit(self, spec: Dict[str, Any], idempotency_key: Optional[str] = None) -> Any:
        """Queues a job spec (the JobSpec schema: name, command, resources, ...) and returns the
        job. A spec with `array` (e.g. "0-99%8") is many jobs: returns the list. The submission
        carries an Idempotency-Key (a new one unless given) and is resent with it when no answer
        comes, so it is never queued twice."""
        if isinstance(spec.get("array"), str):
            return self.submit_many([spec], idempotency_key)
        return self._submit("submitJob", spec, idempotency_key)

    def submit_many(self, specs: Sequence[Dict[str, Any]], idempotency_key: Optional[str] = None) -> List[Dict[str, Any]]:
        """Queues several specs, all or none (a bad one is named `job spec N`); returns the jobs."""
        return self._submit("submitJobs", list(specs), idempotency_key)["jobs"]

    def jobs(self, state: Optional[Sequence[str]] = None, priority: Optional[str] = None, after: Optional[str] = None,
             limit: Optional[int] = None, order: str = "asc") -> List[Dict[str, Any]]:
        """Jobs by id (ascending, or descending with order="desc"), optionally only in `state`s
        (e.g. ["queued", "running"]) or of a `priority`: every one that matches, read a page at
        a time (see iter_jobs), or the first `limit` of them; `after` starts after that id."""
        found: List[Dict[str, Any]] = []
        for job in self.iter_jobs(state=state, priority=priority, after=after, order=order,
                                  page=MAX_PAGE if limit is None else min(MAX_PAGE, max(1, limit))):
            if limit is not None and len(found) >= limit:
                break
            found.append(job)
        return found

    def iter_jobs(self, state: Optional[Sequence[str]] = None, priority: Optional[str] = None, after: Optional[str] = None,
                  order: str = "asc", page: int = DEFAULT_PAGE) -> Iterator[Dict[str, Any]]:
        """Yields the jobs that match, asking the service for `page` of them at a time (1 to
        MAX_PAGE) and following each answer's `next` until it is null."""
        query: Dict[str, str] = {"order": order, "limit": str(page)}
        if state:
            query["state"] = ",".join([state] if isinstance(state, str) else state)
        if priority is not None:
            query["priority"] = priority
        while True:
            if after is not None:
                query["after"] = str(after)
            answer = self._call("listJobs", query=query)
            yield from answer["jobs"]
            after = answer.get("next")
            if after is None or not answer["jobs"]:
                return

    def job(self, job_id: str) -> Dict[str, Any]:
        """One job (ApiError with status 404 when there is none)."""
        return self._call("getJob", job_id=job_id)

    def cancel(self, job_id: str) -> Dict[str, Any]:
        """Cancels a queued job, or asks a running one to stop (SIGTERM, SIGKILL after its grace)."""
        return self._call("cancelJob", job_id=job_id)

    def preempt(self, job_id: str) -> Dict[str, Any]:
        """Stops a running job whose spec says preemptible: true; it is requeued and resumes."""
        return self._call("preemptJob", job_id=job_id)

    def logs(self, job_id: str, follow: bool = True, stream: str = "stdout", interval: float = 0.5) -> Iterator[str]:
        """Yields the job's log (stdout, or stream="stderr") as pieces of text, from the start.
        With follow=True, keeps polling until the job has ended and its log is read; otherwise
        stops at what is there now."""
        offset = 0
        while True:
            chunk = self._call("readJobLog", job_id=job_id, query={"stream": stream, "offset": str(offset)})
            offset = chunk["nextOffset"]
            if chunk["text"]:
                yield chunk["text"]
            if chunk["done"]:
                return
            if not chunk["text"]:
                if not follow:
                    return
                time.sleep(interval)

    def wait(self, job_id: str, timeout: Optional[float] = None, interval: float = 0.5) -> Dict[str, Any]:
        """Polls until the job is final (succeeded, failed or cancelled) and returns it; raises
        TimeoutError after `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            job = self.job(job_id)
            if job["state"] in FINAL_STATES:
                return job
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"job {job_id} is still {job['state']} after {timeout} s")
            time.sleep(interval if deadline is None else max(0.0, min(interval, deadline - time.monotonic())))

    # ---- the pool

    def gpus(self) -> List[Dict[str, Any]]:
        """Every GPU with its MIG instances and the job on each (another user's job: ``job`` None, ``busy`` True)."""
        return self._call("listGpus")["gpus"]

    def stats(self) -> Dict[str, Any]:
        """Counts, recent timings and the allocation timeline."""
        return self._call("getStats")

    def openapi(self) -> Dict[str, Any]:
        """The service's OpenAPI document."""
        return self._call("getOpenApi")

    # ---- plumbing

    def _submit(self, operation: str, body: Any, idempotency_key: Optional[str]) -> Any:
        key = idempotency_key or str(uuid.uuid4())
        for attempt in range(1, SUBMIT_ATTEMPTS + 1):
            try:
                return self._call(operation, body=body, headers={"Idempotency-Key": key})
            except ServiceUnreachable:
                if attempt == SUBMIT_ATTEMPTS:
                    raise
                time.sleep(attempt)
        raise AssertionError("unreachable")

    def _call(self, operation: str, job_id: Optional[str] = None, query: Optional[Dict[str, str]] = None,
              body: Any = None, headers: Optional[Dict[str, str]] = None) -> Any:
        method, path = OPERATIONS[operation]
        if job_id is not None:
            path = path.replace("{id}", urllib.parse.quote(str(job_id), safe=""))
        url = self.url + path + ("?" + urllib.parse.urlencode(query) if query else "")
        data = None if body is None else json.dumps(body).encode("utf-8")
        request = urllib.request.Request(url, data=data, method=method)
        request.add_header("Accept", "application/json")
        request.add_header("Authorization", f"Bearer {self.token}")
        if data is not None:
            request.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            request.add_header(name, value)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as e:
            raise _api_error(e) from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as e:
            reason = getattr(e, "reason", e)
            raise ServiceUnreachable(f"cannot reach the migpool service at {self.url}: is `migpool serve` running? ({reason})") from None


def _api_error(e: "urllib.error.HTTPError") -> ApiError:
    text = e.read().decode("utf-8", "replace")
    try:
        error = json.loads(text).get("error") or {}
    except ValueError:
        error = {}
    message = error.get("message") or f"HTTP {e.code}: {text.strip()[:200] or e.reason}"
    return ApiError(e.code, error.get("code") or "HTTP", message.split("\n")[0], error.get("path"))
