"""Sends the egress tests' sequence of requests with one Python HTTP client, through the
proxy the environment names, and prints each answer's method and status.

    client.py urllib|requests|httpx|aiohttp|absolute SECRET [METHOD URL]

With METHOD and URL, only that request is sent.

`absolute` speaks to the proxy as older axios does: every request, HTTPS too, sent in plain
text in absolute form (`GET https://host/path HTTP/1.1`) to the proxy of `HTTPS_PROXY`.
The secret goes everywhere a secret goes: a bearer token, a cookie, a query value, a
webhook path, a JSON body, GraphQL variables.
"""

import asyncio
import json
import os
import sys
import urllib.error
import urllib.parse

LIB, SECRET = sys.argv[1], sys.argv[2]
API = "https://api.fake.test"
HOOKS = "http://hooks.fake.test"
HEADERS = {
    "Authorization": f"Bearer {SECRET}",
    "Cookie": f"session={SECRET}",
    "Content-Type": "application/json",
}
MUTATION = json.dumps(
    {
        "query": "mutation AddComment($b: String!) { addComment(body: $b) { id } }",
        "variables": {"b": SECRET},
    }
)
STEPS = [
    ("GET", f"{API}/v1/items/42?api_key={SECRET}", None),
    ("POST", f"{API}/graphql", MUTATION),
    ("DELETE", f"{API}/v1/items/42", None),
    ("POST", f"{HOOKS}/services/T0123ABCD/B0123ABCD/{SECRET}", json.dumps({"text": SECRET})),
]


def send_urllib(method, url, body):
    import urllib.request

    data = body.encode() if body else None
    req = urllib.request.Request(url, data=data, method=method, headers=HEADERS)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code


def send_requests(method, url, body):
    import requests

    return requests.request(method, url, data=body, headers=HEADERS, timeout=60).status_code


def send_httpx(method, url, body):
    import httpx

    return httpx.request(method, url, content=body, headers=HEADERS, timeout=60).status_code


def send_aiohttp(method, url, body):
    import aiohttp

    async def go():
        # aiohttp reads the proxy variables only with trust_env.
        async with aiohttp.ClientSession(trust_env=True) as s:
            async with s.request(method, url, data=body, headers=HEADERS) as r:
                await r.read()
                return r.status

    return asyncio.run(go())


def send_absolute(method, url, body):
    import http.client

    proxy = urllib.parse.urlsplit(os.environ["HTTPS_PROXY"])
    conn = http.client.HTTPConnection(proxy.hostname, proxy.port, timeout=60)
    host = urllib.parse.urlsplit(url).netloc
    conn.request(method, url, body=body, headers={**HEADERS, "Host": host})
    r = conn.getresponse()
    r.read()
    conn.close()
    return r.status


if len(sys.argv) == 5:
    STEPS = [(sys.argv[3], sys.argv[4], None)]
send = globals()[f"send_{LIB}"]
for method, url, body in STEPS:
    print(method, send(method, url, body), flush=True)
