// Error lines that signals matched although none of their entries fired (Python:
// denpex_kb/engine/unfired.py): they join the unrecognised errors, with `declined_by`.

import { search } from "./rules.js";

// Of the hit lines, in input order, those none of whose signals' entries is a candidate and
// whose content is an exception or other error line: the first of each kind per input, rank
// and host, at most `room`.
export function unfiredErrors(hits, sigEntry, fired, room, content, exceptionRx, salientRx) {
  const out = [];
  const seen = new Set();
  for (const h of hits) {
    if (out.length >= room) break;
    if (h.signals.some((s) => [...(sigEntry.get(s) || [])].some((id) => fired.has(id)))) continue;
    const c = content(h.text);
    const exc = search(exceptionRx, c) !== null;
    if (!exc && search(salientRx, c) === null) continue;
    const key = `${h.source}\u0000${h.rank}\u0000${h.host}\u0000${exc}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push(h);
  }
  return out;
}

// declined_by on the unrecognised errors that signals matched: the entries whose rules saw the
// line and wanted more.
export function markDeclined(report, unfired, names, sigEntry) {
  if (!unfired.length) return;
  const byLine = new Map();
  for (const h of unfired) {
    const ids = new Set();
    for (const s of h.signals) for (const id of sigEntry.get(s) || []) ids.add(id);
    byLine.set(`${names[h.source]}\u0000${h.line}`, [...ids].sort());
  }
  for (const e of report.unrecognised_errors) {
    const ids = byLine.get(`${e.file}\u0000${e.line}`);
    if (ids && ids.length) e.declined_by = ids;
  }
}
