"""The Python client against a real `migpool serve` on simulated GPUs.

The service is the one named by MIGPOOL_TEST_URL and MIGPOOL_TEST_TOKEN (test/python-client.test.ts
starts it and runs these tests under `npm test`), or else one these tests start themselves from
the built CLI (bin/migpool.js; run `npm run build` first):

    cd clients/python && python3 -m unittest -v
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest
import uuid

sys.path.insert(0, os.path.join(os.path.dirname(__file__), ".."))

from migpool import OPERATIONS, ApiError, Client, ServiceUnreachable  # noqa: E402
from migpool.client import DEFAULT_PAGE, MAX_PAGE  # noqa: E402

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SERVICE = {"url": None, "token": None, "proc": None, "dir": None}


def setUpModule() -> None:
    url, token = os.environ.get("MIGPOOL_TEST_URL"), os.environ.get("MIGPOOL_TEST_TOKEN")
    if url and token:
        SERVICE.update(url=url, token=token)
        return
    data = tempfile.mkdtemp(prefix="migpool-py-")
    proc = subprocess.Popen(
        ["node", os.path.join(REPO, "bin", "migpool.js"), "serve", "--data-dir", data, "--listen", "127.0.0.1:0", "--simulate", "1xA100-SXM4-40GB"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )
    SERVICE.update(proc=proc, dir=data)
    started = time.monotonic()
    while not os.path.exists(os.path.join(data, "server.json")):
        if proc.poll() is not None or time.monotonic() - started > 30:
            raise RuntimeError(f"migpool serve did not start: {proc.stderr.read().decode() if proc.stderr else ''}")
        time.sleep(0.05)
    with open(os.path.join(data, "server.json")) as f:
        SERVICE["url"] = json.load(f)["url"]
    with open(os.path.join(data, "token")) as f:
        SERVICE["token"] = f.read().strip()


def tearDownModule() -> None:
    proc = SERVICE["proc"]
    if proc is not None:
        proc.terminate()
        proc.wait(timeout=30)
        if proc.stderr:
            proc.stderr.close()
        shutil.rmtree(SERVICE["dir"], ignore_errors=True)


def spec(name: str, *command: str, **more) -> dict:
    return {"name": name, "command": list(command), "resources": {"profile": "1g.5gb"}, **more}


class ClientTest(unittest.TestCase):
    def setUp(self) -> None:
        self.client = Client(SERVICE["url"], SERVICE["token"])

    def test_submit_wait_logs_and_job(self) -> None:
        job = self.client.submit(spec("hello", "sh", "-c", "echo hello; echo line two; echo oops >&2"))
        self.assertEqual(job["state"], "queued")
        self.assertEqual(job["spec"]["name"], "hello")
        text = "".join(self.client.logs(job["id"], follow=True))
        self.assertEqual(text, "hello\nline two\n")
        self.assertEqual("".join(self.client.logs(job["id"], stream="stderr")), "oops\n")
        done = self.client.wait(job["id"], timeout=30)
        self.assertEqual(done["state"], "succeeded")
        self.assertEqual(done["exitCode"], 0)
        self.assertEqual(self.client.job(job["id"])["state"], "succeeded")

    def test_a_failing_job_ends_failed_with_its_exit_code(self) -> None:
        job = self.client.submit(spec("fails", "sh", "-c", "exit 3"))
        done = self.client.wait(job["id"], timeout=30)
        self.assertEqual(done["state"], "failed")
        self.assertEqual(done["exitCode"], 3)
        self.assertIn("exit status 3", done["reason"])

    def test_jobs_lists_by_state_and_order(self) -> None:
        a = self.client.submit(spec("list-a", "true"))
        b = self.client.submit(spec("list-b", "true"))
        self.client.wait(a["id"], timeout=30)
        self.client.wait(b["id"], timeout=30)
        ids = [j["id"] for j in self.client.jobs(state=["succeeded"])]
        self.assertIn(a["id"], ids)
        self.assertIn(b["id"], ids)
        self.assertLess(ids.index(a["id"]), ids.index(b["id"]))
        newest = self.client.jobs(order="desc", limit=1)
        self.assertEqual(len(newest), 1)
        self.assertGreaterEqual(int(newest[0]["id"]), int(b["id"]))
        self.assertNotIn(a["id"], [j["id"] for j in self.client.jobs(state="queued")])

    def test_jobs_follows_the_pages_of_the_service(self) -> None:
        batch = self.client.submit_many([spec(f"page-{i}", "true") for i in range(3)])
        ids = [j["id"] for j in batch]
        # One job a page: each answer's `next` leads to the following page, and the last says none.
        paged = [j["id"] for j in self.client.iter_jobs(after=str(int(ids[0]) - 1), page=1)]
        self.assertEqual(paged[:3], ids)
        self.assertEqual(paged, [j["id"] for j in self.client.jobs(after=str(int(ids[0]) - 1))])
        self.assertEqual([j["id"] for j in self.client.jobs(after=str(int(ids[0]) - 1), limit=2)], ids[:2])
        document = self.client.openapi()
        limit = next(p for p in document["paths"]["/v1/jobs"]["get"]["parameters"] if p["name"] == "limit")
        self.assertEqual((limit["schema"]["default"], limit["schema"]["maximum"]), (DEFAULT_PAGE, MAX_PAGE))

    def test_cancel_stops_a_running_job(self) -> None:
        job = self.client.submit(spec("sleeper", "sleep", "60", killGracePeriod=0))
        started = time.monotonic()
        while self.client.job(job["id"])["state"] != "running":
            self.assertLess(time.monotonic() - started, 30, "the job never started")
            time.sleep(0.1)
        self.client.cancel(job["id"])
        done = self.client.wait(job["id"], timeout=30)
        self.assertEqual(done["state"], "cancelled")

    def test_wait_gives_up_after_its_timeout(self) -> None:
        job = self.client.submit(spec("slow", "sleep", "60", killGracePeriod=0))
        t0 = time.monotonic()
        with self.assertRaises(TimeoutError):
            self.client.wait(job["id"], timeout=0.5, interval=0.1)
        self.assertLess(time.monotonic() - t0, 5)
        self.client.cancel(job["id"])

    def test_the_same_idempotency_key_queues_once(self) -> None:
        key = str(uuid.uuid4())
        first = self.client.submit(spec("once", "true"), idempotency_key=key)
        again = self.client.submit(spec("once", "true"), idempotency_key=key)
        self.assertEqual(first["id"], again["id"])
        self.assertEqual(len([j for j in self.client.jobs() if j["spec"]["name"] == "once"]), 1)
        with self.assertRaises(ApiError) as caught:
            self.client.submit(spec("other", "true"), idempotency_key=key)
        self.assertEqual(caught.exception.status, 422)
        self.assertIn(first["id"], caught.exception.message)

    def test_an_array_is_many_jobs_each_with_its_index(self) -> None:
        jobs = self.client.submit(spec("arr", "sh", "-c", "echo $MIGPOOL_ARRAY_INDEX", array="3-5%2"))
        self.assertEqual([j["spec"]["array"]["index"] for j in jobs], [3, 4, 5])
        out = sorted("".join(self.client.logs(j["id"])).strip() for j in jobs)
        self.assertEqual(out, ["3", "4", "5"])
        self.assertEqual({self.client.wait(j["id"], timeout=30)["state"] for j in jobs}, {"succeeded"})

    def test_labels_and_dependencies_travel_with_the_spec(self) -> None:
        first = self.client.submit(spec("dep-first", "sh", "-c", "exit 1"))
        second = self.client.submit(spec("dep-second", "true", after=[first["id"]], labels={"team": "vision"}))
        self.assertEqual(second["spec"]["labels"], {"team": "vision"})
        done = self.client.wait(second["id"], timeout=30)
        self.assertEqual(done["state"], "failed")
        self.assertIn(f"dependency job {first['id']} did not succeed", done["reason"])

    def test_errors_carry_the_services_message_status_and_field(self) -> None:
        with self.assertRaises(ApiError) as bad:
            self.client.submit({"name": "bad", "command": ["true"], "resources": {"profile": "9g.99gb"}})
        self.assertEqual(bad.exception.status, 400)
        self.assertEqual(bad.exception.code, "BAD_INPUT")
        self.assertEqual(bad.exception.path, "resources.profile")
        self.assertNotIn("\n", bad.exception.message)
        with self.assertRaises(ApiError) as missing:
            self.client.job("999999")
        self.assertEqual(missing.exception.status, 404)
        with self.assertRaises(ApiError) as refused:
            Client(SERVICE["url"], "not-the-token").jobs()
        self.assertEqual(refused.exception.status, 401)
        with self.assertRaises(ServiceUnreachable):
            Client("http://127.0.0.1:9", "t", timeout=2).job("1")

    def test_gpus_stats_and_every_operation_in_the_openapi_document(self) -> None:
        self.assertEqual(len(self.client.gpus()), 1)
        self.assertIn("jobsByState", self.client.stats())
        document = self.client.openapi()
        served = {op["operationId"]: (method.upper(), path) for path, item in document["paths"].items() for method, op in item.items()}
        for operation, route in OPERATIONS.items():
            self.assertEqual(served.get(operation), route, f"{operation} is not {route} in the OpenAPI document")
        names = [p["name"] for p in document["paths"]["/v1/jobs"]["post"].get("parameters", [])]
        self.assertIn("Idempotency-Key", names)


if __name__ == "__main__":
    unittest.main()
