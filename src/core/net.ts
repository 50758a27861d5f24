/** One part of a dotted IPv4 address: 0 to 255, written without leading zeros. */
const V4_PART = /^(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]\d|\d)$/;
const HEX_GROUP = /^[\da-f]{1,4}$/i;
const ZONE = /^[\da-z.:-]+$/i;

/**
 * Whether `s` is a dotted IPv4 address (`10.0.0.1`), as node:net's isIPv4 decides. Written here
 * so that start-up does not load node:net (and the streams it brings) for the proxy settings.
 */
export function isIPv4(s: string): boolean {
  const parts = s.split(".");
  return parts.length === 4 && parts.every((p) => V4_PART.test(p));
}

/**
 * Whether `s` is an IPv6 address, as node:net's isIPv6 decides: eight hex groups of one to four
 * digits, or fewer with one `::` standing for at least one group of zeros; the last two groups
 * may be written as a dotted IPv4 address; a zone (`%eth0`) may follow.
 */
export function isIPv6(s: string): boolean {
  const percent = s.indexOf("%");
  if (percent >= 0 && !ZONE.test(s.slice(percent + 1))) return false;
  const addr = percent >= 0 ? s.slice(0, percent) : s;
  const halves = addr.split("::");
  if (halves.length > 2) return false;
  const groups = halves.map((h) => (h === "" ? [] : h.split(":")));
  const all = groups.flat();
  let count = all.length;
  // Only the very end may be dotted ("1.2.3.4::" is not an address).
  const last = groups.at(-1)!.at(-1);
  if (last !== undefined && last.includes(".")) {
    if (!isIPv4(last)) return false;
    all.pop();
    count += 1; // the dotted part stands for two groups
  }
  if (!all.every((g) => HEX_GROUP.test(g))) return false;
  return halves.length === 2 ? count <= 7 : count === 8;
}

/** Whether `s` is an IPv4 or IPv6 address. */
export function isIP(s: string): boolean {
  return isIPv4(s) || isIPv6(s);
}

/** One address block: the family, the first address as a number, and the prefix length. */
export type Cidr = { v6: boolean; base: bigint; bits: number };

/** An IPv4-mapped IPv6 address (`::ffff:10.0.0.1`) as the IPv4 address it stands for. */
function normalizeAddress(addr: string): string {
  const a = addr.trim().replace(/^\[|\]$/g, "");
  const m = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(a);
  return m ? m[1]! : a;
}

function v4ToBig(a: string): bigint {
  return a.split(".").reduce((n, part) => (n << 8n) | BigInt(Number(part)), 0n);
}

function v6ToBig(a: string): bigint {
  let s = a.split("%")[0]!;
  // A trailing dotted IPv4 part (::ffff:1.2.3.4) becomes two hex groups.
  const dotted = /(\d+\.\d+\.\d+\.\d+)$/.exec(s);
  if (dotted) {
    const n = v4ToBig(dotted[1]!);
    s = s.slice(0, -dotted[1]!.length) + `${(n >> 16n).toString(16)}:${(n & 0xffffn).toString(16)}`;
  }
  const [head, tail] = s.includes("::") ? s.split("::") : [s, undefined];
  const h = head ? head.split(":") : [];
  const t = tail ? tail.split(":") : [];
  const groups = tail === undefined ? h : [...h, ...Array(8 - h.length - t.length).fill("0"), ...t];
  return groups.reduce((n, g) => (n << 16n) | BigInt(parseInt(g || "0", 16)), 0n);
}

/** Parses `10.0.0.0/8`, `::1`, `192.168.1.5`; throws on anything else. */
function parseCidr(text: string): Cidr {
  const [rawAddr, rawBits, ...rest] = text.trim().split("/");
  const addr = normalizeAddress(rawAddr ?? "");
  const v6 = isIPv6(addr);
  if (rest.length || !(v6 || isIPv4(addr))) throw new Error(`not an address or CIDR: ${text}`);
  const max = v6 ? 128 : 32;
  const bits = rawBits === undefined ? max : Number(rawBits);
  if (!/^\d+$/.test(rawBits ?? String(max)) || bits > max) throw new Error(`bad prefix length in ${text}`);
  const n = v6 ? v6ToBig(addr) : v4ToBig(addr);
  const shift = BigInt(max - bits);
  return { v6, base: (n >> shift) << shift, bits };
}

/** Parses a comma list of addresses and CIDRs (empty entries are skipped). */
export function parseAddressList(list: string): Cidr[] {
  return list
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)
    .map(parseCidr);
}

/** Whether `addr` lies in one of the blocks. Anything that is not an address is in none. */
export function inAddressList(addr: string, blocks: readonly Cidr[]): boolean {
  const a = normalizeAddress(addr);
  const v6 = isIPv6(a);
  if (!v6 && !isIPv4(a)) return false;
  const n = v6 ? v6ToBig(a) : v4ToBig(a);
  for (const b of blocks) {
    if (b.v6 !== v6) continue;
    const shift = BigInt((v6 ? 128 : 32) - b.bits);
    if ((n >> shift) << shift === b.base) return true;
  }
  return false;
}

/**
 * The client address of a request that came through proxies. `peer` is the address that opened
 * the connection; X-Forwarded-For lists the addresses each proxy saw, the nearest last. Walking
 * from the right, every address of a trusted proxy is skipped; the first other one is the client
 * as far as a trusted party can tell (the entries left of it can be written by the client and are
 * never used). A connection from an untrusted peer is that peer, whatever its headers say.
 */
export function forwardedClient(
  peer: string,
  forwardedFor: string | null | undefined,
  trusted: readonly Cidr[],
): string {
  if (!inAddressList(peer, trusted)) return normalizeAddress(peer);
  const hops = (forwardedFor ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean);
  let client = normalizeAddress(peer);
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i]!);
    if (!isIPv4(hop) && !isIPv6(hop)) return client; // garbage: stop at the last address we could trust
    client = hop;
    if (!inAddressList(hop, trusted)) return hop;
  }
  return client;
}
