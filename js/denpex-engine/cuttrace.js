// A traceback the paste cut before its exception line (Python: denpex_kb/engine/cuttrace.py):
// with no root cause, its innermost frames are named in the report (`cut_traceback`). Only the
// input's last TAIL_BYTES are examined.

import { decode } from "./read.js";
import { pyStrip } from "./normalise.js";

export const TAIL_BYTES = 8192;
const MAX_FRAMES = 3;
const MAX_BETWEEN = 4;
const FRAME_RX = /File "([^"\n]{1,1000})", line ([0-9]{1,9}), in ([^\t\n\f\r ]{1,300})[\t\n\f\r ]*$/u;
const HEADER_RX = /Traceback \(most recent call last\):[\t\n\f\r ]*$/u;
const MARKS = /^[\^~ ]+|[\^~ ]+$/g;
const ENCODER = new TextEncoder();

// The input's last TAIL_BYTES as bytes, and whether the input is longer.
export function tailOf(data) {
  let bytes;
  if (typeof data === "string") {
    bytes = ENCODER.encode(data.length > TAIL_BYTES ? data.slice(-TAIL_BYTES) : data);
    const longer = data.length > TAIL_BYTES || bytes.length > TAIL_BYTES;
    return [bytes.subarray(Math.max(0, bytes.length - TAIL_BYTES)), longer];
  }
  bytes = data;
  return [bytes.subarray(Math.max(0, bytes.length - TAIL_BYTES)), bytes.length > TAIL_BYTES];
}

function splitLines(tail) {
  const rows = [];
  let start = 0;
  for (let i = 0; i < tail.length; i++) {
    if (tail[i] === 10) {
      rows.push(tail.subarray(start, i));
      start = i + 1;
    }
  }
  rows.push(tail.subarray(start));
  return rows;
}

// content(rawText) -> the line's content; isError(content) -> bool.
export function cutTraceback(tail, lines, windowed, content, isError, name) {
  const rows = splitLines(tail);
  const last = rows[rows.length - 1].length !== 0 && tail.includes(10) ? lines + 1 : lines;
  if (rows[rows.length - 1].length === 0) rows.pop();
  if (windowed && rows.length) rows.shift();
  let n = last + 1;
  const frames = [];
  let between = [];
  let seenHeader = false;
  for (let i = rows.length - 1; i >= 0; i--) {
    n--;
    const text = pyStrip(content(decode(rows[i])));
    if (!text) {
      if (frames.length || between.length) break;
      continue;
    }
    const m = FRAME_RX.exec(text);
    if (m !== null) {
      if (frames.length < MAX_FRAMES) {
        const code = [...between].reverse().find((t) => t.replace(MARKS, "") !== "") ?? null;
        frames.push({ line: n, path: m[1], function: m[3], code });
      }
      between = [];
    } else if (HEADER_RX.test(text)) {
      seenHeader = true;
      break;
    } else if (isError(text) || between.length >= MAX_BETWEEN) break;
    else between.push(text);
  }
  if (!frames.length || !(seenHeader || frames.length >= 2)) return null;
  return { file: name, line: frames[0].line, frames };
}

export function firstCut(tails, content, isError, names) {
  for (const [si, tail, n, windowed] of tails) {
    const got = cutTraceback(tail, n, windowed, content, isError, names[si]);
    if (got !== null) return got;
  }
  return null;
}

export function cutNote(cut) {
  const f = cut.frames[0];
  return (
    `The traceback ending at ${cut.file}:${cut.line} is cut before its exception line ` +
    `(innermost frame: ${f.path}, in ${f.function}). The exception line names the ` +
    "failure: paste the traceback to its end."
  );
}
