// Step 1, read: bytes in (a pasted text, a dropped file), text out. Mirrors
// denpex_kb/engine/read.py for what a browser can do: UTF-8 with U+FFFD for undecodable bytes
// (a BOM is kept, as Python's "utf-8" codec keeps it), gzip recognised by its magic bytes
// (whatever the file is called) and inflated with the platform's DecompressionStream. bzip2, xz
// and zstd are recognised and refused with a message (decompress them first).

export class InputError extends Error {}

const MAGIC = [
  ["gzip", [0x1f, 0x8b]],
  ["bzip2", [0x42, 0x5a, 0x68]],
  ["xz", [0xfd, 0x37, 0x7a, 0x58, 0x5a, 0x00]],
  ["zstd", [0x28, 0xb5, 0x2f, 0xfd]],
];

export function compression(bytes) {
  for (const [kind, magic] of MAGIC) {
    if (bytes.length >= magic.length && magic.every((b, i) => bytes[i] === b)) {
      if (kind === "bzip2" && !(bytes.length >= 4 && bytes[3] >= 0x30 && bytes[3] <= 0x39)) continue;
      return kind;
    }
  }
  return null;
}

// The decompressed bytes of a source (async: gzip needs a stream). Returns {bytes, warnings}.
export async function openSource(name, bytes) {
  const kind = compression(bytes);
  if (kind === null) return { bytes, warnings: [] };
  if (kind !== "gzip" || typeof DecompressionStream === "undefined") {
    throw new InputError(`${name}: ${kind}-compressed; decompress it first`);
  }
  const ds = new DecompressionStream("gzip");
  const writer = ds.writable.getWriter();
  writer.write(bytes).catch(() => {});
  writer.close().catch(() => {});
  const reader = ds.readable.getReader();
  const parts = [];
  let total = 0;
  const warnings = [];
  for (;;) {
    let r;
    try {
      r = await reader.read();
    } catch (exc) {
      warnings.push(
        `${name}: gzip data is truncated or corrupt after ${total.toLocaleString("en-US")} ` +
          `decompressed bytes (${exc && exc.message ? exc.message : exc}); diagnosed what was readable`,
      );
      break;
    }
    if (r.done) break;
    parts.push(r.value);
    total += r.value.length;
  }
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return { bytes: out, warnings };
}

const DECODER = typeof TextDecoder !== "undefined" ? new TextDecoder("utf-8", { fatal: false, ignoreBOM: true }) : null;

export function decode(data) {
  if (typeof data === "string") return data;
  return DECODER.decode(data);
}

// UTF-8 length of a decoded line (the Python engine counts byte offsets).
const NON_ASCII = /[^\x00-\x7f]/;
export function utf8Length(s) {
  if (!NON_ASCII.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x80) n += 1;
    else if (c < 0x800) n += 2;
    else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      n += 4;
      i++;
    } else n += 3;
  }
  return n;
}
