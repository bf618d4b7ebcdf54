"""Fleet aggregates from the records: failure mix over time and by phase, suspect nodes,
unknown-error clusters and version-specific failures. Pure functions of the records (the
latest record per job), so they can be recomputed from the records file at any time.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from datetime import datetime
from typing import Any

from ..engine.attribute import compile_rx, short_host

VERDICTS = ("confident", "differential", "probable", "none")
# Initiating-host failures that point at the machine or its links: every entry of the
# knowledge base's `hardware` phase, and NCCL's remote/system errors (a peer or link failed).
HARDWARE_PHASES = frozenset({"hardware"})
INTERCONNECT_ENTRIES = frozenset({"nccl-remote-error", "nccl-system-error"})
VERSION_PACKAGES = ("deepspeed", "torch")


def _hexid(m) -> str:  # noqa: ANN001 - re2 match
    """Hashes and ids (8+ hex digits with a letter among them); a long plain number stays one."""
    s = m.group(0)
    return "<HEX>" if any(c.isalpha() for c in s) else s


# Volatile parts of an unrecognised error line, masked before grouping (RE2, linear).
_MASKS = [
    (
        compile_rx(r"[0-9]{4}-[0-9]{2}-[0-9]{2}[ T][0-9]{2}:[0-9]{2}:[0-9]{2}([.,][0-9]+)?"),
        "<TIME>",
    ),
    (compile_rx(r"\b[0-9]{1,2}:[0-9]{2}:[0-9]{2}([.,][0-9]+)?\b"), "<TIME>"),
    (
        compile_rx(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}"),
        "<ID>",
    ),
    (compile_rx(r"\b[0-9]{1,3}(\.[0-9]{1,3}){3}(:[0-9]+)?\b"), "<ADDR>"),
    (compile_rx(r"(~|\.{1,2})?(/[^\s/:'\"(),\[\]<>]+)+/?"), "<PATH>"),
    (compile_rx(r"\b0[xX][0-9A-Fa-f]+\b"), "<HEX>"),
    (compile_rx(r"\b[0-9a-fA-F]{8,}\b"), _hexid),
    (compile_rx(r"[0-9]+(\.[0-9]+)?"), "<N>"),
    (compile_rx(r"\s+"), " "),
]
_PREFIX_FALLBACK = compile_rx(
    r"^\s*([a-z0-9][a-z0-9._-]*[0-9][a-z0-9._-]*: )?(\[(default|rank)?[0-9]+\]:\s*)*"
)


def mask_error(text: str, strip=None) -> str:  # noqa: ANN001 - Attributor.strip or None
    """The error line without launcher prefixes, with times, ids, addresses, paths, hex and
    numbers masked: two instances of one error in two jobs give the same string."""
    content = strip(text).content if strip is not None else _PREFIX_FALLBACK.sub("", text, count=1)
    for rx, repl in _MASKS:
        content = rx.sub(repl, content)
    return content.strip()


def lead(report: dict[str, Any]) -> dict[str, Any] | None:
    """The job's answer: the root cause, else the probable cause, else the leading hypothesis."""
    if report.get("root_cause"):
        return report["root_cause"]
    for k in ("probable", "differential"):
        if report.get(k):
            return report[k][0]
    return None


def _period(ts: str | None) -> tuple[str, str]:
    if not ts:
        return "unknown", "unknown"
    d = datetime.fromisoformat(ts.replace("Z", "+00:00"))
    y, w, _ = d.isocalendar()
    return d.strftime("%Y-%m-%d"), f"{y}-W{w:02d}"


def _is_hw(cand: dict[str, Any]) -> bool:
    return cand.get("phase") in HARDWARE_PHASES or cand.get("id") in INTERCONNECT_ENTRIES


def _ev(job: str, ev: dict[str, Any]) -> dict[str, Any]:
    return {"job": job, "file": ev.get("file"), "line": ev.get("line"), "text": ev.get("text")}


def _host_events(job: str, report: dict[str, Any]) -> list[tuple[str, str, list[dict]]]:
    """(host, entry id, evidence) for each hardware or interconnect failure this job
    attributes to a host: the initiating host when such an entry is the job's answer (or, with
    no answer, the collateral entry that leads), and the host that logged any other
    hardware-phase entry that fired (an Xid is logged on the machine it happened on)."""
    out: list[tuple[str, str, list[dict]]] = []
    top = lead(report)
    if top is None and report.get("candidates"):
        first = report["candidates"][0]
        top = first if first.get("id") in INTERCONNECT_ENTRIES else None
    if top is not None and _is_hw(top):
        host = short_host(report.get("initiating_host"))
        evs = top.get("evidence") or []
        if host is None:
            host = next((short_host(e["host"]) for e in evs if e.get("host")), None)
        if host:
            mine = [e for e in evs if short_host(e.get("host")) == host] or evs
            out.append((host, top["id"], [_ev(job, e) for e in mine[:3]]))
    for c in report.get("candidates") or []:
        if c.get("hypothesis") or c.get("phase") not in HARDWARE_PHASES:
            continue
        if top is not None and c["id"] == top["id"]:
            continue
        by_host: dict[str, list[dict]] = defaultdict(list)
        for e in c.get("evidence") or []:
            if e.get("host"):
                by_host[short_host(e["host"])].append(e)
        for host, evs in by_host.items():
            out.append((host, c["id"], [_ev(job, e) for e in evs[:3]]))
    return out


def aggregate(
    records: list[dict[str, Any]],
    pack: dict[str, Any] | None = None,
    min_suspect_jobs: int = 2,
    min_version_jobs: int = 2,
) -> dict[str, Any]:
    """The aggregates of the latest record per job (records in file order)."""
    strip = None
    if pack is not None:
        from ..engine.attribute import Attributor

        strip = Attributor(pack["globals"]).strip
    latest: dict[str, dict] = {}
    for r in records:
        latest[r["job"]] = r
    recs = list(latest.values())
    verdicts: Counter = Counter()
    errors = []
    by_day: dict[str, Counter] = defaultdict(Counter)
    by_week: dict[str, Counter] = defaultdict(Counter)
    causes_by_day: dict[str, Counter] = defaultdict(Counter)
    causes_by_week: dict[str, Counter] = defaultdict(Counter)
    by_phase: dict[str, Counter] = defaultdict(Counter)
    causes: dict[str, dict[str, Any]] = {}
    hosts: dict[str, dict[str, Any]] = {}
    clusters: dict[str, dict[str, Any]] = {}
    ver_jobs: dict[str, Counter] = defaultdict(Counter)
    ver_fail: dict[str, dict[str, Counter]] = defaultdict(lambda: defaultdict(Counter))
    catch_all = 0
    for r in recs:
        day, week = _period(r.get("job_time"))
        if r.get("status") != "ok" or not r.get("report"):
            errors.append({"job": r["job"], "error": r.get("error")})
            by_day[day]["error"] += 1
            by_week[week]["error"] += 1
            continue
        rep = r["report"]
        v = rep.get("verdict", "none")
        verdicts[v] += 1
        by_day[day][v] += 1
        by_week[week][v] += 1
        top = lead(rep)
        unknown = rep.get("unrecognised_errors") or []
        if v == "none" and unknown:
            catch_all += 1
            by_day[day]["catch_all"] += 1
            by_week[week]["catch_all"] += 1
        if top is not None:
            c = causes.setdefault(
                top["id"],
                {
                    "id": top["id"],
                    "title": top.get("title"),
                    "url": top.get("url"),
                    "phase": top.get("phase"),
                    "jobs": 0,
                    **{k: 0 for k in VERDICTS[:3]},
                    "examples": [],
                },
            )
            c["jobs"] += 1
            c[v] += 1
            if len(c["examples"]) < 5:
                c["examples"].append(r["job"])
            by_phase[top.get("phase") or "unknown"][v] += 1
            causes_by_day[day][top["id"]] += 1
            causes_by_week[week][top["id"]] += 1
        else:
            by_phase["(no diagnosis)"][v] += 1
        for host, eid, evs in _host_events(r["job"], rep):
            h = hosts.setdefault(
                host, {"host": host, "jobs": [], "entries": Counter(), "evidence": []}
            )
            if r["job"] not in h["jobs"]:
                h["jobs"].append(r["job"])
            h["entries"][eid] += 1
            h["evidence"].extend(evs[: max(0, 12 - len(h["evidence"]))])
        seen_keys: set[str] = set()
        for e in unknown:
            key = mask_error(e.get("text") or "", strip)
            if not key:
                continue
            cl = clusters.setdefault(key, {"pattern": key, "jobs": [], "lines": 0, "examples": []})
            cl["lines"] += 1
            if key not in seen_keys:
                seen_keys.add(key)
                cl["jobs"].append(r["job"])
                if len(cl["examples"]) < 3:
                    cl["examples"].append(_ev(r["job"], e))
        versions = rep.get("versions") or {}
        for pkg in VERSION_PACKAGES:
            for ver in versions.get(pkg) or []:
                ver_jobs[pkg][ver] += 1
                if top is not None:
                    ver_fail[pkg][top["id"]][ver] += 1
    ok = sum(verdicts.values())

    def share(n: int) -> float:
        return round(n / ok, 4) if ok else 0.0

    def rows(table: dict[str, Counter], top_causes: dict[str, Counter]) -> list[dict]:
        out = []
        for k in sorted(table):
            c = table[k]
            n = sum(c[x] for x in VERDICTS)
            out.append(
                {
                    "period": k,
                    "jobs": n + c["error"],
                    "errors": c["error"],
                    **{x: c[x] for x in VERDICTS},
                    "catch_all": c["catch_all"],
                    "shares": {
                        x: round(c[x] / n, 4) if n else 0.0 for x in (*VERDICTS, "catch_all")
                    },
                    "top": top_causes[k].most_common(5),
                }
            )
        return out

    suspects = [
        {**h, "entries": dict(h["entries"]), "job_count": len(h["jobs"])}
        for h in hosts.values()
        if len(h["jobs"]) >= min_suspect_jobs
    ]
    suspects.sort(key=lambda h: (-h["job_count"], h["host"]))
    cl_list = sorted(clusters.values(), key=lambda c: (-len(c["jobs"]), -c["lines"], c["pattern"]))
    for c in cl_list:
        c["job_count"] = len(c["jobs"])
    version_only: dict[str, list[dict]] = {}
    for pkg, per_cause in ver_fail.items():
        out = []
        for cid, seen in per_cause.items():
            absent = {
                ver: n
                for ver, n in ver_jobs[pkg].items()
                if ver not in seen and n >= min_version_jobs
            }
            if absent and sum(seen.values()) >= min_version_jobs:
                out.append(
                    {
                        "id": cid,
                        "title": causes[cid]["title"],
                        "seen_on": dict(seen),
                        "never_on": absent,
                    }
                )
        out.sort(key=lambda d: (-sum(d["seen_on"].values()), d["id"]))
        version_only[pkg] = out
    return {
        "format": "denpex-fleet-aggregate",
        "format_version": "1.0",
        "jobs": len(recs),
        "analysed_ok": ok,
        "errors": errors,
        "verdicts": {v: verdicts[v] for v in VERDICTS},
        "shares": {v: share(verdicts[v]) for v in VERDICTS},
        "catch_all": catch_all,
        "catch_all_share": share(catch_all),
        "packs": sorted({r.get("pack_hash") for r in recs if r.get("pack_hash")}),
        "by_day": rows(by_day, causes_by_day),
        "by_week": rows(by_week, causes_by_week),
        "by_phase": [
            {"phase": p, "jobs": sum(c.values()), **{x: c[x] for x in VERDICTS}}
            for p, c in sorted(by_phase.items(), key=lambda kv: (-sum(kv[1].values()), kv[0]))
        ],
        "root_causes": sorted(causes.values(), key=lambda c: (-c["jobs"], c["id"])),
        "suspect_nodes": suspects,
        "suspect_min_jobs": min_suspect_jobs,
        "unknown_clusters": cl_list,
        "version_versions": {pkg: dict(c) for pkg, c in ver_jobs.items()},
        "version_only_failures": version_only,
    }
