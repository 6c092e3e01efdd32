"""The rules across fields that the OpenAPI document states only in words (JSON Schema cannot say them), given
to the fuzzer: a *positive* case (one schemathesis means to be valid) is brought within them, so that it reaches
the handler's logic instead of its validator. Negative cases are left as generated. Each rule names the
validator it mirrors; the server's own tests and property tests cover the refusals.

What the rules need of the server they read from the API itself once (groupings, dimensions, metrics of each
statistics family; the customer's host patterns), as a client would."""

import datetime
import functools
import re
import threading
import uuid
import time

import requests

GRANULARITIES = ("5minute", "hour", "day")
# edge_api::stats::INTEGER_DIMENSIONS
INTEGER_DIMENSIONS = {"cache_status", "gna_cache_status", "scheme", "http_status_code", "client_asn"}


class Api:
    """Reads of the server under test, as the fuzzing administrator (HTTP Basic), each made once."""

    def __init__(self, base, customer, basic):
        self.base = f"{base}/{customer}/v1"
        self.headers = {"Authorization": basic}
        self._lock = threading.Lock()
        self._cache = {}

    def get(self, path):
        with self._lock:
            if path not in self._cache:
                reply = requests.get(self.base + path, headers=self.headers, timeout=30)
                self._cache[path] = reply.json() if reply.status_code == 200 else None
            return self._cache[path]


def is_positive(case):
    meta = case.meta
    return meta is not None and getattr(meta.generation.mode, "name", "") == "POSITIVE"


# ---- statistics (edge_api::stats::validate) ----------------------------------------------------------------


def stats_base(path):
    """The family's base path (the HEAD operation's) of a statistics data or head path, or None."""
    if "/stats" not in path:
        return None
    tail = path.split("/stats", 1)[1]
    if tail.endswith(("/dimensions", "/groupings", "/metrics")):
        return None
    return "/stats" + (tail[: -len("/data")] if tail.endswith("/data") else tail)


def split_list(text):
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def filter_conditions(text, dimensions):
    """The conditions of a filter expression as parse_filters reads them, or None when it refuses it."""
    if not text or not text.strip():
        return []
    parts, separator, i = [""], None, 0
    while i < len(text):
        c = text[i]
        if c == "\\":
            if i + 1 == len(text):
                return None
            parts[-1] += text[i + 1]
            i += 2
            continue
        if c in ",;":
            if separator is not None and separator != c:
                return None
            separator = c
            parts.append("")
        else:
            parts[-1] += c
        i += 1
    conditions = []
    for part in parts:
        at = [p for p in (part.find("=="), part.find("!=")) if p >= 0]
        if not at:
            return None
        dimension, value = part[: min(at)].strip(), part[min(at) + 2 :]
        if dimension not in dimensions:
            return None
        if dimension in INTEGER_DIMENSIONS and not re.fullmatch(r"[+-]?[0-9]{1,18}", value.strip()):
            return None
        conditions.append((dimension, value))
    return conditions


def fix_statistics(api, case, base):
    """A positive statistics query within validate()'s rules across parameters: one start parameter, a span
    inside every retention, dimensions that form a listed grouping set (events: known fields, each once),
    metrics of the family, sort keys among the query's fields, and a filter the parser takes."""
    query = dict(case.query or {})
    path = base.replace("{category}", str((case.path_parameters or {}).get("category", "")))
    dimensions = (api.get(path + "/dimensions") or {}).get("dimensions") or []
    groupings = (api.get(path + "/groupings") or {}).get("groupings") if "/events" not in path else None
    metrics_known = (api.get(path + "/metrics") or {}).get("metrics") if "/events" not in path else []

    # The last two hours: inside the retention of every granularity, start before end.
    now = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None, microsecond=0)
    query.pop("startime", None)
    query["starttime"] = (now - datetime.timedelta(hours=2)).isoformat()
    query["endtime"] = now.isoformat()

    wanted = list(dict.fromkeys(split_list(query.get("dimensions"))))
    granular = bool(groupings) and any(g.split("/")[0] in GRANULARITIES for g in groupings)
    if groupings:
        if granular:
            if query.get("granularity") not in {g.split("/")[0] for g in groupings}:
                query["granularity"] = groupings[0].split("/")[0]
            sets = [g.split("/")[1:] for g in groupings if g.split("/")[0] == query["granularity"]]
        else:
            sets = [g.split("/") for g in groupings]
        if sorted(wanted) not in [sorted(s) for s in sets]:
            wanted = max(sets, key=lambda s: (len(set(s) & set(wanted)), -len(s)))
    else:
        wanted = [d for d in wanted if d in dimensions] or dimensions[:1]
    if wanted:
        query["dimensions"] = ",".join(wanted)
    else:
        query.pop("dimensions", None)

    if metrics_known:
        metrics = [m for m in split_list(query.get("metrics")) if m in metrics_known] or metrics_known[:1]
        query["metrics"] = ",".join(metrics)
    else:
        query.pop("metrics", None)
        metrics = []

    fields = set(wanted) | set(metrics) | ({"starttime", "endtime"} if granular else set())
    if "/events" in path:
        fields.add("event_timestamp_ms")
    if "sortby" in query:
        keys = [k for k in split_list(query["sortby"]) if k.lstrip("-+") in fields]
        if keys:
            query["sortby"] = ",".join(keys)
        else:
            del query["sortby"]
    if filter_conditions(query.get("filters"), dimensions) is None:
        del query["filters"]
    case.query = query


# ---- cache purge (edge_api::purge::uri_problems) ----------------------------------------------------------


class Pace:
    """At most one call a `interval` seconds, over every worker thread: the purge limit is 2 a second per
    customer, and a positive case refused for the rate says nothing about its data."""

    def __init__(self, interval):
        self.interval = interval
        self._lock = threading.Lock()
        self._next = 0.0

    def wait(self):
        with self._lock:
            now = time.monotonic()
            if self._next > now:
                time.sleep(self._next - now)
            self._next = max(now, self._next) + self.interval


def customer_hosts(api):
    """Host names the customer's properties serve (for a wildcard, its base with a label in front)."""
    hosts = []
    for prop in api.get("/properties") or []:
        for pattern in prop.get("host_patterns", []):
            hosts.append("www." + pattern[2:] if pattern.startswith("*.") else pattern)
    return hosts


def fix_purge(api, case):
    """A positive purge of the customer's own hosts: each URI on a host a property serves, with a path when it
    is EXACT_LITERAL, and a cache-key modifier only with PREFIX_LITERAL."""
    body = case.body
    if not isinstance(body, dict) or not isinstance(body.get("purge_request"), dict):
        return
    hosts = customer_hosts(api)
    if not hosts:
        return
    for i, uri in enumerate(body["purge_request"].get("uris") or []):
        if not isinstance(uri, dict):
            continue
        pattern = str(uri.get("uri_pattern", "")).strip()
        rest = re.sub(r"^https?://", "", pattern)
        path = rest[rest.find("/") :] if "/" in rest else ""
        if re.search(r"\s|[\x00-\x1f\x7f]", path):
            path = ""
        if uri.get("match_mode") == "EXACT_LITERAL":
            uri.pop("cache_key_modifier_regex", None)
            if path in ("", "/"):
                path = "/index.html"
        uri["uri_pattern"] = f"https://{hosts[i % len(hosts)]}{path}"


# ---- network lists (edge_api::networklists::normalize_entry) ----------------------------------------------


def network_of(entry):
    """An IP entry with the bits past its prefix cleared (the range it means), or the entry as it was."""
    import ipaddress

    try:
        return str(ipaddress.ip_network(entry.strip(), strict=False)) if "/" in entry else entry
    except ValueError:
        return entry


def fix_network_list(case):
    """A positive new IP list names ranges by their network address (10.0.0.0/8, not 10.1.2.3/8)."""
    body = case.body
    if isinstance(body, dict) and body.get("type") == "IP" and isinstance(body.get("list"), list):
        body["list"] = [network_of(e) if isinstance(e, str) else e for e in body["list"]]


# ---- users and passwords (check_password_policy, the identity sources) -------------------------------------


class Usernames:
    """Usernames are unique per customer: a positive case reusing one that an earlier case created gets a
    suffix (Hypothesis generates the same minimal names again and again)."""

    def __init__(self):
        self._lock = threading.Lock()
        self._taken = set()

    def fresh(self, username):
        with self._lock:
            name, n = username, 0
            while name.lower() in self._taken:
                n += 1
                name = f"{username[:120]}-{n}"
            self._taken.add(name.lower())
            return name


USERNAMES = Usernames()


def fix_new_user(case):
    """A positive new user is a local one (remote sources exist only where an operator added them) with a
    username no other user has and a password that is not the username."""
    body = case.body
    if not isinstance(body, dict):
        return
    body.pop("source", None)
    if isinstance(body.get("username"), str):
        body["username"] = USERNAMES.fresh(body["username"])
    username, password = str(body.get("username", "")), body.get("password")
    if not isinstance(password, str) or password.lower() == username.lower():
        body["password"] = "fuzz-" + "x" * 12 + username[:8]


def fix_user_update(case):
    """A positive change of a user: a username no other user has."""
    if isinstance(case.body, dict) and isinstance(case.body.get("username"), str):
        case.body["username"] = USERNAMES.fresh(case.body["username"])


def fix_password_reset(api, case):
    """A positive password reset is of a user with an e-mail address to send the link to (a fresh one)."""
    username = USERNAMES.fresh("fuzz-reset")
    created = requests.post(
        api.base + "/users",
        headers=api.headers,
        json={
            "username": username,
            "password": "fuzz-reset-password-" + username,
            "email": f"{username}@example.com",
            "role": {"id": "viewer"},
        },
        timeout=30,
    )
    if created.status_code == 201:
        case.path_parameters = dict(case.path_parameters or {}, user_id=created.json()["id"])


# ---- two-factor pairing (otp::verify_pair) ------------------------------------------------------------------


def totp(seed, step):
    """RFC 6238 with SHA-1, 6 digits, 30-second steps, as the server's otp module."""
    import base64
    import hashlib
    import hmac
    import struct

    key = base64.b32decode(seed + "=" * (-len(seed) % 8))
    digest = hmac.new(key, struct.pack(">Q", step), hashlib.sha1).digest()
    offset = digest[-1] & 0x0F
    return "%06d" % ((struct.unpack(">I", digest[offset : offset + 4])[0] & 0x7FFFFFFF) % 1_000_000)


def own_user(api, case):
    """A fresh local user for a positive case of an operation on one's own user (password, two-factor): the
    case is made by that user, on that user, so that the fuzzing administrator's password, sessions and
    two-factor stay as they are. Returns the user's id and its Authorization header."""
    import base64

    username = USERNAMES.fresh("fuzz-own")
    password = "fuzz-own-password-" + username
    created = requests.post(
        api.base + "/users",
        headers=api.headers,
        json={"username": username, "password": password, "role": {"id": "viewer"}},
        timeout=30,
    )
    if created.status_code != 201:
        return None, None
    user_id = created.json()["id"]
    case.path_parameters = dict(case.path_parameters or {}, user_id=user_id)
    return user_id, "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def prepare_pairing(api, case, user_id, basic):
    """A positive pairing with a seed the server issued to the user and the codes of the last two steps."""
    seed = requests.post(f"{api.base}/users/{user_id}/otp/seeds", headers={"Authorization": basic}, timeout=30)
    if seed.status_code != 200:
        return
    step = int(time.time()) // 30
    body = case.body if isinstance(case.body, dict) else {}
    body.update(seed_id=seed.json()["id"], first_token=totp(seed.json()["seed"], step - 1))
    body["second_token"] = totp(seed.json()["seed"], step)
    case.body = body


def fix_idempotency_key(case):
    """A positive ingestion call with an Idempotency-Key has a key of its own: Hypothesis sends the same
    minimal keys again and again, with other bodies (answered 422 idempotency_key_reused, as documented, but
    then nothing of the generated data would be stored)."""
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key" and isinstance(headers[name], str):
            headers[name] = f"{headers[name][:160]}-{uuid.uuid4().hex}"


# ---- API tokens (domain::tokens: check_expiry, check_cidrs; the store's 100 tokens a user) --------------------


def fix_token(case):
    """A positive token's expiry lies ahead (a month: at most 3,650 days, and never past), and its ranges name
    networks by their network address, as network lists do."""
    body = case.body
    if not isinstance(body, dict):
        return
    if isinstance(body.get("expires"), str):
        ahead = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(days=30)
        body["expires"] = ahead.strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(body.get("allowed_cidrs"), list):
        body["allowed_cidrs"] = [network_of(c) if isinstance(c, str) else c for c in body["allowed_cidrs"]]


def token_maker(api):
    """A fresh administrator to make a positive token (a user holds at most 100: the fuzzing administrator would
    reach that, and every later creation would be refused for it, not for its data). Its Authorization header."""
    import base64

    username = USERNAMES.fresh("fuzz-tokens")
    password = "fuzz-tokens-password-" + username
    created = requests.post(
        api.base + "/users",
        headers=api.headers,
        json={"username": username, "password": password, "role": {"id": "admin"}},
        timeout=30,
    )
    if created.status_code != 201:
        return None
    return "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()


def own_token(api, case):
    """A positive case on one token (read, change, roll, revoke) is on a token of the fuzzing administrator, who
    may change and roll only its own; made now, after revoking the older ones once it holds many."""
    body = {"name": "fuzz", "scopes": ["stats:read"]}
    made = requests.post(api.base + "/tokens", headers=api.headers, json=body, timeout=30)
    if made.status_code == 400:
        listed = requests.get(api.base + "/tokens?count=1000", headers=api.headers, timeout=30)
        for token in (listed.json().get("items") or []) if listed.status_code == 200 else []:
            requests.delete(api.base + f"/tokens/{token['id']}", headers=api.headers, timeout=30)
        made = requests.post(api.base + "/tokens", headers=api.headers, json=body, timeout=30)
    if made.status_code == 201:
        case.path_parameters = dict(case.path_parameters or {}, token_id=made.json()["id"])
# ---- alerting (domain::alerts::check_rule, routes/alerts) ---------------------------------------------------

LABEL_NAME = re.compile(r"^[a-z][a-z0-9_.-]{0,63}$")


def fix_labels(labels):
    """Label names as check_labels takes them (LABEL_NAME_PATTERN), values without control characters."""
    if not isinstance(labels, dict):
        return {}
    fixed = {}
    for i, (name, value) in enumerate(list(labels.items())[:20]):
        name = name if isinstance(name, str) and LABEL_NAME.match(name) else f"l{i}"
        value = value if isinstance(value, str) else ""
        fixed[name] = "".join(c for c in value if c.isprintable())[:200]
    return fixed


def fix_alert_rule(case):
    """A positive rule watches a path with its own metric and a grouping set (the totals of /stats), over a
    window its family allows (whole hours for an anomaly), notifies no channel (ids are the customer's), and an
    audit rule fires at once (for_minutes 0)."""
    body = case.body
    if not isinstance(body, dict):
        return
    body["channels"] = []
    body["labels"] = fix_labels(body.get("labels"))
    condition = body.get("condition")
    if not isinstance(condition, dict):
        return
    if condition.get("type") == "audit":
        # Operations the audit log records (exact, a prefix ending in .*, or *): generated text names none.
        known = ("property.config.*", "cache.purge", "login.lockout", "*", "networklist.*")
        count = len(condition["operations"]) if isinstance(condition.get("operations"), list) else 1
        condition["operations"] = [known[i % len(known)] for i in range(max(1, min(20, count)))]
        body["for_minutes"] = 0
        return
    watch = condition.get("watch") if isinstance(condition.get("watch"), dict) else {}
    window = watch.get("window_minutes") if isinstance(watch.get("window_minutes"), int) else 60
    window = max(5, min(1440, window - window % 5))
    if condition.get("type") == "anomaly":
        window = max(60, window - window % 60)
    condition["watch"] = {"path": "/stats", "metric": "hits", "window_minutes": window}
    if isinstance(watch.get("denominator"), dict):
        condition["watch"]["denominator"] = {"metric": "hits"}


def fix_alert_channel(api, case):
    """A positive channel has the fields of its type (an e-mail channel addresses, a webhook a URL; a changed
    one keeps its type). Webhooks point at a closed loopback port, which the server refuses to reach."""
    body = case.body
    if not isinstance(body, dict):
        return
    channel_id = (case.path_parameters or {}).get("channel_id")
    if channel_id is not None:
        existing = api.get(f"/alerts/channels/{channel_id}")
        if existing:
            body["type"] = existing["type"]
    if body.get("type") == "webhook":
        body["url"] = "http://127.0.0.1:9/fuzz"
        body["addresses"] = []
    else:
        body["type"] = "email"
        body.pop("url", None)
        count = len(body["addresses"]) if isinstance(body.get("addresses"), list) else 1
        body["addresses"] = [f"fuzz{i}@example.com" for i in range(max(1, min(20, count)))]


def iso(at):
    return datetime.datetime.fromtimestamp(at, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def fix_silence(case):
    """A positive silence names labels (rule ids are the customer's), ends after it starts and in the future, a
    repeating one within its period, repeat_until only with repeat."""
    body = case.body
    if not isinstance(body, dict):
        return
    body.pop("rule_id", None)
    body["labels"] = fix_labels(body.get("labels")) or {"team": "fuzz"}
    now = int(time.time())
    body["starts"], body["ends"] = iso(now), iso(now + 3600)
    if body.get("repeat_until") is not None:
        body["repeat"] = body.get("repeat") if body.get("repeat") in ("daily", "weekly") else "daily"
        body["repeat_until"] = iso(now + 3 * 86400)


def fix_alert_times(case):
    """Positive times of the event and timeline queries are ISO 8601 with Z, `to` after `from`."""
    query = case.query if isinstance(case.query, dict) else {}
    now = int(time.time())
    if case.operation.path.endswith("/timeline"):
        query["from"], query["to"] = iso(now - 3600), iso(now)
    else:
        for name, at in (("from", now - 3600), ("to", now)):
            if name in query:
                query[name] = iso(at)
        if "state" in query:
            query["state"] = "firing"
    case.query = query
