import { createHash } from "../../core/crypto";
import { ApiError } from "../../core/errors";

/**
 * The transform options of `GET /dam/p/<project>/transform/<storage pathname>/<options>` (spec
 * 4.5): a pure parser from the slash-separated `name=value` items to typed values, with every
 * default and limit of the spec. Each refusal is a 400 naming the option and the reason
 * (docs/dam.md lists them).
 */

const MAX_SIZE = 5000;
const MAX_PADDING = 1000;
const MAX_DPR = 4;

export type OutputType = "jpg" | "png" | "gif";
export type SizeMode = "width" | "height" | "fit" | "fill";
export type Pad = number | "auto";
/** `transparent`, `white`, or six lowercase hex digits. */
export type Background = string;

export type TransformOptions = {
  name?: string;
  key?: string;
  type?: OutputType;
  force: boolean;
  optimize: boolean;
  /** Which of width/height/fit/fill was given. */
  mode: SizeMode;
  /** Canvas width in logical pixels; undefined when derived from the aspect ratio (`height=h`). */
  width?: number;
  /** Canvas height in logical pixels; undefined when derived (`width=w`). */
  height?: number;
  /** Hotspot as fractions of the source. */
  hs: [number, number];
  /** Fractions of the source to use; undefined = the whole source. */
  crop?: [number, number];
  /** top, right, bottom, left. */
  padding: [Pad, Pad, Pad, Pad];
  /** Undefined = the default for the output type (transparent, or white for jpg). */
  bg?: Background;
  q: number;
  dpr: number;
};

const OPTION_NAMES = [
  "name",
  "key",
  "type",
  "force",
  "optimize",
  "width",
  "height",
  "fit",
  "fill",
  "hs",
  "crop",
  "padding",
  "bg",
  "q",
  "dpr",
] as const;
export type OptionName = (typeof OPTION_NAMES)[number];
const SIZE_MODES: SizeMode[] = ["width", "height", "fit", "fill"];

/**
 * Output names and keys are free text as the reference allows (`@` too), except control
 * characters, `/` and `\\`, and `.` / `..`; a name holds at most 200 UTF-8 bytes, a key 64.
 */
// eslint-disable-next-line no-control-regex
const FORBIDDEN = /[\u0000-\u001f\u007f/\\]/;
export const MAX_NAME_BYTES = 200;
export const MAX_KEY_BYTES = 64;
export function validMediaPart(value: string, maxBytes: number): boolean {
  return (
    value.length > 0 &&
    Buffer.byteLength(value) <= maxBytes &&
    !FORBIDDEN.test(value) &&
    value !== "." &&
    value !== ".."
  );
}

/**
 * One part of a media file name on disk and in URLs: every byte outside `A-Z a-z 0-9 _ - ~` and
 * inner dots percent-encoded (upper-case hex), so `@` only ever separates name and key, no `/`
 * can appear, nothing starts with a dot, and different names stay different files.
 */
export function encodeMediaPart(value: string): string {
  let out = "";
  for (const byte of Buffer.from(value.normalize("NFC"), "utf8")) {
    const c = String.fromCharCode(byte);
    out +=
      /[A-Za-z0-9_~-]/.test(c) || (c === "." && out !== "")
        ? c
        : `%${byte.toString(16).toUpperCase().padStart(2, "0")}`;
  }
  return out;
}

/** The media file `<name>@<key>.<ext>` of a transform, its parts encoded (`encodeMediaPart`). */
export const mediaFileName = (name: string, key: string, type: string) =>
  `${encodeMediaPart(name)}@${encodeMediaPart(key)}.${type}`;

/** The shape of a media file name on disk. */
export const MEDIA_NAME_RE = /^([A-Za-z0-9_~%-][A-Za-z0-9_.~%-]{0,599})@([A-Za-z0-9_.~%-]{1,200})\.(jpg|png|gif)$/;

/**
 * Names already found valid: every public media request checks its file name, and re-encoding a
 * name costs more than answering the file. Only valid names are kept (at most MEDIA_NAMES_KEPT).
 */
const validNames = new Set<string>();
const MEDIA_NAMES_KEPT = 10_000;

/** Whether `file` is a media file name exactly as `mediaFileName` writes it (no other spelling of the same name). */
export function isMediaFileName(file: string): boolean {
  if (validNames.has(file)) return true;
  if (!checkMediaFileName(file)) return false;
  if (validNames.size >= MEDIA_NAMES_KEPT) validNames.clear();
  validNames.add(file);
  return true;
}

/**
 * The longest media file name: what file systems hold in one name (ext4, XFS, btrfs: 255 bytes).
 * Encoded names are ASCII, and a byte outside `A-Z a-z 0-9 _ - ~ .` takes 3, so a name and key
 * within their byte limits can still make a longer one: such a transform is a 400, not a file.
 */
export const MAX_MEDIA_FILE_BYTES = 255;

function checkMediaFileName(file: string): boolean {
  if (file.length > MAX_MEDIA_FILE_BYTES) return false;
  const m = MEDIA_NAME_RE.exec(file);
  if (!m) return false;
  try {
    const name = decodeURIComponent(m[1]!);
    const key = decodeURIComponent(m[2]!);
    return (
      validMediaPart(name, MAX_NAME_BYTES) &&
      validMediaPart(key, MAX_KEY_BYTES) &&
      mediaFileName(name, key, m[3]!) === file
    );
  } catch {
    return false;
  }
}

/** The 400 of one bad option: `info` says which option, its value and why. */
export function invalidOption(option: string, value: string | undefined, reason: string): ApiError {
  const info: Record<string, unknown> = { option, reason };
  if (value !== undefined) info.value = value;
  return new ApiError(400, `Invalid option ${option}: ${reason}`, info);
}

const NUM = /^(?:\d+(?:\.\d*)?|\.\d+)$/;
const INT = /^\d+$/;

function parseBool(name: string, raw: string): boolean {
  const v = raw.toLowerCase();
  if (["true", "1", "yes", "on"].includes(v)) return true;
  if (["false", "0", "no", "off"].includes(v)) return false;
  throw invalidOption(name, raw, "must be true or false");
}

function parsePixels(name: string, raw: string, what: string): number {
  if (!INT.test(raw)) throw invalidOption(name, raw, `${what} must be a whole number of pixels from 1 to ${MAX_SIZE}`);
  const n = Number(raw);
  if (n < 1 || n > MAX_SIZE) throw invalidOption(name, raw, `${what} must be from 1 to ${MAX_SIZE} pixels`);
  return n;
}

function parsePair(name: string, raw: string, shape: string): [string, string] {
  const parts = raw.split(",");
  if (parts.length !== 2 || !parts[0] || !parts[1]) throw invalidOption(name, raw, `must be ${shape}`);
  return [parts[0], parts[1]];
}

function parseFraction(name: string, raw: string, allowZero: boolean, shape: string): number {
  if (!NUM.test(raw)) throw invalidOption(name, raw, `must be ${shape}`);
  const n = Number(raw);
  if (n > 1 || n < 0 || (!allowZero && n === 0)) throw invalidOption(name, raw, `must be ${shape}`);
  return n;
}

/**
 * Parses the options path (`fit=400,300/bg=ffffff/...`, items already percent-decoded). Empty items
 * (a trailing or doubled slash) are ignored; a bare `force` or `optimize` means true.
 */
export function parseOptions(items: string[]): TransformOptions {
  const raw = new Map<OptionName, string>();
  for (const item of items) {
    if (item === "") continue;
    const eq = item.indexOf("=");
    const name = (eq < 0 ? item : item.slice(0, eq)).trim();
    const value = eq < 0 ? undefined : item.slice(eq + 1);
    if (!(OPTION_NAMES as readonly string[]).includes(name)) {
      throw new ApiError(400, `Unknown option ${name}`, {
        option: name,
        reason: `unknown option; known options are ${OPTION_NAMES.join(", ")}`,
      });
    }
    const opt = name as OptionName;
    if (raw.has(opt)) throw invalidOption(opt, value, "given more than once");
    if (value === undefined) {
      if (opt === "force" || opt === "optimize") {
        raw.set(opt, "true");
        continue;
      }
      throw invalidOption(opt, undefined, "needs a value (name=value)");
    }
    if (value === "") throw invalidOption(opt, value, "needs a value (name=value)");
    raw.set(opt, value);
  }

  const modes = [...raw.keys()].filter((k): k is SizeMode => (SIZE_MODES as string[]).includes(k));
  if (modes.length === 0) {
    throw new ApiError(400, "Missing parameter", {
      "Missing parameter": "width, height, fit or fill",
      option: "width",
      reason: "exactly one of width, height, fit or fill is required",
    });
  }
  if (modes.length > 1) {
    throw invalidOption(
      modes[1]!,
      raw.get(modes[1]!),
      `only one of width, height, fit or fill may be given (${modes.join(" and ")} were)`,
    );
  }
  const mode = modes[0]!;
  const sizeRaw = raw.get(mode)!;
  let width: number | undefined;
  let height: number | undefined;
  if (sizeRaw.includes(",") || mode === "fit" || mode === "fill") {
    const [w, h] = parsePair(
      mode,
      sizeRaw,
      mode === "fit" || mode === "fill"
        ? "w,h (two whole numbers of pixels)"
        : `${mode === "width" ? "w" : "h"} or w,h (whole numbers of pixels)`,
    );
    width = parsePixels(mode, w, "the width");
    height = parsePixels(mode, h, "the height");
  } else if (mode === "width") {
    width = parsePixels(mode, sizeRaw, "the width");
  } else {
    height = parsePixels(mode, sizeRaw, "the height");
  }

  const opts: TransformOptions = {
    force: false,
    optimize: false,
    mode,
    width,
    height,
    hs: [0.5, 0.5],
    padding: ["auto", "auto", "auto", "auto"],
    q: 100,
    dpr: 1,
  };

  for (const [opt, value] of raw) {
    switch (opt) {
      case "name":
        if (!validMediaPart(value, MAX_NAME_BYTES))
          throw invalidOption(
            opt,
            value,
            `must be 1 to ${MAX_NAME_BYTES} bytes without control characters, / or \\, not . or .., without an extension`,
          );
        if (/\.(jpe?g|png|gif)$/i.test(value))
          throw invalidOption(opt, value, "must be given without an extension (use type= for the output type)");
        opts.name = value;
        break;
      case "key":
        if (!validMediaPart(value, MAX_KEY_BYTES))
          throw invalidOption(
            opt,
            value,
            `must be 1 to ${MAX_KEY_BYTES} bytes without control characters, / or \\, not . or ..`,
          );
        opts.key = value;
        break;
      case "type": {
        const v = value.toLowerCase();
        if (v === "jpg" || v === "jpeg") opts.type = "jpg";
        else if (v === "png" || v === "gif") opts.type = v;
        else throw invalidOption(opt, value, "must be jpg, png or gif");
        break;
      }
      case "force":
      case "optimize":
        opts[opt] = parseBool(opt, value);
        break;
      case "hs": {
        const shape = "x,y with fractions from 0.0 to 1.0";
        const [x, y] = parsePair(opt, value, shape);
        opts.hs = [parseFraction(opt, x, true, shape), parseFraction(opt, y, true, shape)];
        break;
      }
      case "crop": {
        const shape = "w,h with fractions above 0.0 up to 1.0";
        const [w, h] = parsePair(opt, value, shape);
        opts.crop = [parseFraction(opt, w, false, shape), parseFraction(opt, h, false, shape)];
        break;
      }
      case "padding": {
        const parts = value.split(",");
        const shape = "four values top,right,bottom,left, each a number of pixels (0 to 1000) or auto";
        if (parts.length !== 4) throw invalidOption(opt, value, `must be ${shape}`);
        opts.padding = parts.map((p) => {
          if (p.toLowerCase() === "auto") return "auto";
          if (!NUM.test(p)) throw invalidOption(opt, value, `must be ${shape}`);
          const n = Number(p);
          if (n > MAX_PADDING) throw invalidOption(opt, value, `each value must be at most ${MAX_PADDING} pixels`);
          return n;
        }) as [Pad, Pad, Pad, Pad];
        break;
      }
      case "bg": {
        const v = value.toLowerCase();
        if (v === "transparent" || v === "white") opts.bg = v;
        else if (/^[0-9a-f]{6}$/.test(v)) opts.bg = v;
        else throw invalidOption(opt, value, "must be transparent, white or a 6-digit rgb hex without # (like ff8800)");
        break;
      }
      case "q":
        if (!INT.test(value) || Number(value) > 100)
          throw invalidOption(opt, value, "must be a whole number from 0 to 100");
        opts.q = Number(value);
        break;
      case "dpr":
        if (!NUM.test(value) || Number(value) <= 0 || Number(value) > MAX_DPR)
          throw invalidOption(opt, value, `must be a number above 0 up to ${MAX_DPR}`);
        opts.dpr = Number(value);
        break;
    }
  }
  return opts;
}

/** The output type: the option, else the source's own type when it is one of ours, else png (alpha) or jpg. */
export function outputType(opts: TransformOptions, sourceExtension: string, sourceHasAlpha: boolean): OutputType {
  if (opts.type) return opts.type;
  const ext = sourceExtension.toLowerCase();
  if (ext === "jpg" || ext === "jpeg") return "jpg";
  if (ext === "png" || ext === "gif") return ext;
  return sourceHasAlpha ? "png" : "jpg";
}

/** The background actually used: the option, or transparent (white for jpg, which has no alpha). */
export function effectiveBackground(opts: TransformOptions, type: OutputType): Background {
  const bg = opts.bg ?? "transparent";
  return bg === "transparent" && type === "jpg" ? "white" : bg;
}

const fmt = (n: number) => String(n);
const fmtPad = (p: Pad) => (p === "auto" ? "auto" : fmt(p));

/** The size option's value as a string (`400`, `400,300`). */
function sizeString(o: TransformOptions): string {
  if (o.width !== undefined && o.height !== undefined) return `${o.width},${o.height}`;
  return fmt((o.width ?? o.height)!);
}

/**
 * The options that shape the output, in one canonical string (fixed order, normalised numbers), so
 * equivalent requests (`q=080` and `q=80`, `bg=FFFFFF` and `bg=ffffff`, any order) share a key.
 */
export function canonical(o: TransformOptions): string {
  return [
    `${o.mode}=${sizeString(o)}`,
    `type=${o.type ?? "source"}`,
    `optimize=${o.optimize}`,
    `hs=${o.hs.map(fmt).join(",")}`,
    `crop=${o.crop ? o.crop.map(fmt).join(",") : "none"}`,
    `padding=${o.padding.map(fmtPad).join(",")}`,
    `bg=${o.bg ?? "default"}`,
    `q=${o.q}`,
    `dpr=${fmt(o.dpr)}`,
  ].join("/");
}

/** The default key: a short hash (10 hex digits) of the canonical options. */
export function defaultKey(o: TransformOptions): string {
  return createHash("sha256").update(canonical(o)).digest("hex").slice(0, 10);
}

/** The parsed options as strings, for the `options` member of the transform result. */
export function optionStrings(
  o: TransformOptions,
  resolved: { name: string; key: string; type: OutputType; bg: Background },
): Record<string, string> {
  const out: Record<string, string> = {
    name: resolved.name,
    key: resolved.key,
    type: resolved.type,
    force: String(o.force),
    optimize: String(o.optimize),
    [o.mode]: sizeString(o),
    hs: o.hs.map(fmt).join(","),
  };
  if (o.crop) out.crop = o.crop.map(fmt).join(",");
  out.padding = o.padding.map(fmtPad).join(",");
  out.bg = resolved.bg;
  out.q = String(o.q);
  out.dpr = fmt(o.dpr);
  return out;
}
