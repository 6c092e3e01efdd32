"""Schemathesis hooks for `cargo xtask fuzz-api`: written next to the run by edge-bench, which sets the
EDGE_FUZZ_* variables to the server it started."""

# First, before anything parses source: see serialize_ast.py.
import serialize_ast  # noqa: F401, I001

import base64
import json
import os
import time

import requests
import schemathesis

import rules

BASE = os.environ["EDGE_FUZZ_BASE"]
CUSTOMER = os.environ["EDGE_FUZZ_CUSTOMER"]
USER = os.environ["EDGE_FUZZ_USER"]
PASSWORD = os.environ["EDGE_FUZZ_PASSWORD"]
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()
API = rules.Api(BASE, CUSTOMER, BASIC)
PURGES = rules.Pace(0.6)


@schemathesis.hook
def before_load_schema(context, raw_schema):
    """Every path starts with /{customer}: fuzz the customer that exists rather than random names that all
    answer 404 before any handler runs (unknown customers are covered by the server's own tests)."""
    paths = {}
    for path, item in raw_schema["paths"].items():
        for operation in item.values():
            if isinstance(operation, dict) and "parameters" in operation:
                operation["parameters"] = [
                    p for p in operation["parameters"] if not (p.get("in") == "path" and p.get("name") == "customer")
                ]
        paths[path.replace("{customer}", CUSTOMER)] = item
    raw_schema["paths"] = paths


@schemathesis.serializer("application/x-ndjson")
def ndjson(ctx, value):
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    if isinstance(value, list):
        return "\n".join(json.dumps(v) for v in value).encode()
    return json.dumps(value).encode()


def basic_only(case):
    """Operations whose only security is Basic (log-in, two-factor set-up, password change)."""
    security = case.operation.definition.raw.get("security")
    return bool(security) and all(list(requirement) == ["basic"] for requirement in security)


@schemathesis.auth(refresh_interval=5)
class Session:
    """A session of the fuzzing administrator, renewed every few seconds (fuzzed calls may end it)."""

    def get(self, case, context):
        for _ in range(60):
            reply = requests.post(f"{BASE}/{CUSTOMER}/v1/sessions", headers={"Authorization": BASIC}, timeout=30)
            if reply.status_code == 201:
                return reply.json()["id"]
            if reply.status_code != 429:
                return None
            time.sleep(int(reply.headers.get("Retry-After", "1")))
        return None

    def set(self, case, data, context):
        if basic_only(case):
            case.headers = case.headers or {}
            case.headers["Authorization"] = BASIC
        elif data:
            case.cookies = case.cookies or {}
            case.cookies["authtoken"] = data


@schemathesis.hook
def map_case(context, case):
    """Positive cases within the rules the document states in words (see rules.py)."""
    if not rules.is_positive(case):
        return case
    method, path = case.operation.method.upper(), case.operation.path
    base = rules.stats_base(path)
    if base is not None and method in ("GET", "HEAD"):
        rules.fix_statistics(API, case, base)
    elif (method, path.endswith("/cache/purge")) == ("POST", True):
        rules.fix_purge(API, case)
    elif (method, path.endswith("/config/networklists")) == ("POST", True):
        rules.fix_network_list(case)
    elif (method, path.endswith("/users")) == ("POST", True):
        rules.fix_new_user(case)
    elif method == "PUT" and path.endswith("/users/{user_id}"):
        rules.fix_user_update(case)
    elif method == "POST" and path.endswith("/password/resets"):
        rules.fix_password_reset(API, case)
    elif method == "POST" and "/ingest/" in path:
        rules.fix_idempotency_key(case)
    elif method == "POST" and path.endswith("/tokens"):
        rules.fix_token(case)
        basic = rules.token_maker(API)
        if basic is not None:
            case.headers = dict(case.headers or {}, **{"X-Fuzz-Basic": basic})
    elif "{token_id}" in path:
        rules.fix_token(case)
        rules.own_token(API, case)
    elif method in ("POST", "PUT") and (path.endswith("/alerts/rules") or "/alerts/rules/" in path):
        rules.fix_alert_rule(case)
    elif method in ("POST", "PUT") and (path.endswith("/alerts/channels") or path.endswith("/channels/{channel_id}")):
        rules.fix_alert_channel(API, case)
    elif method == "POST" and path.endswith("/alerts/silences"):
        rules.fix_silence(case)
    elif method == "GET" and (path.endswith("/alerts/events") or path.endswith("/alerts/timeline")):
        rules.fix_alert_times(case)
    elif basic_only(case) and "{user_id}" in path:
        user_id, basic = rules.own_user(API, case)
        if user_id is not None:
            if method == "PUT" and path.endswith("/otp/pairing"):
                rules.prepare_pairing(API, case, user_id, basic)
            case.headers = dict(case.headers or {}, **{"X-Fuzz-Basic": basic})
    return case


@schemathesis.hook
def before_call(context, case, **kwargs):
    """Purges paced under the customer's limit of 2 a second, over every worker; a prepared pairing sent with
    its own user's credentials (after the session hook set the administrator's)."""
    if case.operation.method.upper() == "POST" and case.operation.path.endswith("/cache/purge"):
        PURGES.wait()
    basic = (case.headers or {}).pop("X-Fuzz-Basic", None)
    if basic:
        case.headers["Authorization"] = basic
