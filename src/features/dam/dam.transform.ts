import { availableParallelism } from "node:os";
import { renameSync, rmSync } from "node:fs";
import type { OutputInfo, Sharp } from "sharp";
import { sharp, whenSharpLoads } from "../../platform/images/sharp";
import { ApiError } from "../../core/errors";
import { newGid } from "../../core/ids";
import { fileChanged } from "../../platform/storage/file-facts";
import { invalidOption, type OutputType, type Pad, type TransformOptions } from "./dam.options";

/**
 * The image side of `/dam/.../transform`: geometry planned from the options (pure, in output
 * pixels), one sharp pipeline per transform, and the guards around it (pixel limit before
 * decoding, timeout, concurrency cap, single flight). docs/dam.md describes the geometry.
 */

/** Source formats a transform reads. SVG (and PDF, and anything else) is refused: see docs/dam.md. */
export const INPUT_FORMATS = new Set(["jpeg", "png", "gif", "webp", "tiff", "avif", "heif"]);

/** The largest side of the intermediate resized image (libvips' own limit is 10,000,000). */
const MAX_INTERMEDIATE_SIDE = 100_000;

/**
 * Colour quantisation (every GIF, the palette PNG of `optimize`) runs in libimagequant in one
 * call that sharp's timeout cannot interrupt, and costs seconds per megapixel at high effort. So
 * it is bounded by size instead: GIF outputs above this many pixels (all frames) are refused, and
 * an optimized PNG above it is compressed losslessly (level 9) instead of quantised.
 */
export const QUANTISE_PIXEL_LIMIT = 4_000_000;

/**
 * sharp's process-wide settings, set once at start-up: no operation cache (every transform reads a
 * different file once; the cache would only hold memory and open files), and libvips threads per
 * image limited to the cores so concurrent transforms share them instead of oversubscribing.
 */
let sharpConfigured = false;
export function configureSharp(threads = Math.max(1, Math.min(4, availableParallelism()))): void {
  if (sharpConfigured) return;
  sharpConfigured = true;
  // Applied when sharp is first loaded (on the first image), not at start-up (src/platform/images/sharp.ts).
  whenSharpLoads((s) => {
    s.cache(false);
    s.concurrency(threads);
  });
}

export type Region = { left: number; top: number; width: number; height: number };
export type Padding = { top: number; right: number; bottom: number; left: number };

/** Where every pixel of the output comes from, in output pixels (dpr applied). */
export type Geometry = {
  /** Area of the (EXIF-oriented) source to use (`crop`); undefined = all of it. */
  pre?: Region;
  /** Size the used area is resized to (aspect ratio kept). */
  resize: { width: number; height: number };
  /** Window of the resized image that stays visible (the hotspot kept nearest the canvas centre). */
  post?: Region;
  /** Space around the visible image, filled with the background. */
  pad: Padding;
  canvas: { width: number; height: number };
};

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));

/** Splits one axis: the visible window of an image of size `size` on an area, and the two paddings. */
function axis(
  size: number,
  area: number,
  canvas: number,
  lead: Pad,
  trail: Pad,
  leadPx: number,
  trailPx: number,
  hotspot: number,
) {
  if (size > area) {
    // Cover: keep a window of the area's size, the hotspot as near the canvas centre as the image allows.
    const offset = Math.round(clamp(hotspot * size - (canvas / 2 - leadPx), 0, size - area));
    return { offset, visible: area, lead: leadPx, trail: trailPx };
  }
  const free = area - size;
  if (lead === "auto" && trail !== "auto") return { offset: 0, visible: size, lead: leadPx + free, trail: trailPx };
  if (trail === "auto" && lead !== "auto") return { offset: 0, visible: size, lead: leadPx, trail: trailPx + free };
  // Both auto, or both numbers: each side gets its value plus half of the free space.
  const half = Math.floor(free / 2);
  return { offset: 0, visible: size, lead: leadPx + half, trail: trailPx + free - half };
}

/**
 * Plans the output of `opts` for a source of `src` pixels (already EXIF-oriented). Sizes and
 * padding are logical pixels times dpr. Throws a 400 naming the option when the numbers leave no
 * room for the image or the output would pass `pixelLimit`.
 */
export function planGeometry(
  src: { width: number; height: number },
  o: TransformOptions,
  pixelLimit: number,
): Geometry {
  const sw = src.width;
  const sh = src.height;
  const d = o.dpr;

  // crop: an area of the source centred on the hotspot, moved inside the source where needed.
  let region: Region = { left: 0, top: 0, width: sw, height: sh };
  if (o.crop) {
    const cw = clamp(Math.round(sw * o.crop[0]), 1, sw);
    const ch = clamp(Math.round(sh * o.crop[1]), 1, sh);
    region = {
      left: Math.round(clamp(o.hs[0] * sw - cw / 2, 0, sw - cw)),
      top: Math.round(clamp(o.hs[1] * sh - ch / 2, 0, sh - ch)),
      width: cw,
      height: ch,
    };
  }
  const hx = (o.hs[0] * sw - region.left) / region.width;
  const hy = (o.hs[1] * sh - region.top) / region.height;

  const [pt, pr, pb, pl] = o.padding.map((p) => (p === "auto" ? 0 : Math.round(p * d))) as [
    number,
    number,
    number,
    number,
  ];
  const noRoom = () => invalidOption("padding", o.padding.join(","), "leaves no room for the image on the canvas");

  let canvasW: number;
  let canvasH: number;
  let iw: number;
  let ih: number;
  const ratio = region.width / region.height;
  if (o.width !== undefined && o.height !== undefined) {
    canvasW = Math.max(1, Math.round(o.width * d));
    canvasH = Math.max(1, Math.round(o.height * d));
    const areaW = canvasW - pl - pr;
    const areaH = canvasH - pt - pb;
    if (areaW < 1 || areaH < 1) throw noRoom();
    if (o.mode === "width") {
      iw = areaW;
      ih = Math.max(1, Math.round(areaW / ratio));
    } else if (o.mode === "height") {
      ih = areaH;
      iw = Math.max(1, Math.round(areaH * ratio));
    } else if (o.mode === "fit") {
      if (areaW / areaH > ratio) {
        ih = areaH;
        iw = clamp(Math.round(areaH * ratio), 1, areaW);
      } else {
        iw = areaW;
        ih = clamp(Math.round(areaW / ratio), 1, areaH);
      }
    } else {
      if (areaW / areaH > ratio) {
        iw = areaW;
        ih = Math.max(areaH, Math.round(areaW / ratio));
      } else {
        ih = areaH;
        iw = Math.max(areaW, Math.round(areaH * ratio));
      }
    }
  } else if (o.width !== undefined) {
    canvasW = Math.max(1, Math.round(o.width * d));
    iw = canvasW - pl - pr;
    if (iw < 1) throw noRoom();
    ih = Math.max(1, Math.round(iw / ratio));
    canvasH = ih + pt + pb;
  } else {
    canvasH = Math.max(1, Math.round(o.height! * d));
    ih = canvasH - pt - pb;
    if (ih < 1) throw noRoom();
    iw = Math.max(1, Math.round(ih * ratio));
    canvasW = iw + pl + pr;
  }

  if (canvasW * canvasH > pixelLimit || canvasW > MAX_INTERMEDIATE_SIDE || canvasH > MAX_INTERMEDIATE_SIDE) {
    const option = d > 1 ? "dpr" : o.mode;
    throw invalidOption(
      option,
      option === "dpr" ? String(d) : undefined,
      `the output would be ${canvasW}x${canvasH} pixels, more than the limit of ${pixelLimit} pixels`,
    );
  }
  if (iw > MAX_INTERMEDIATE_SIDE || ih > MAX_INTERMEDIATE_SIDE) {
    throw new ApiError(422, "Source aspect ratio too extreme for this canvas", {
      resized: [iw, ih],
      limit: MAX_INTERMEDIATE_SIDE,
    });
  }

  const x = axis(iw, canvasW - pl - pr, canvasW, o.padding[3], o.padding[1], pl, pr, hx);
  const y = axis(ih, canvasH - pt - pb, canvasH, o.padding[0], o.padding[2], pt, pb, hy);
  const cropped = x.visible < iw || y.visible < ih;
  const whole = region.width === sw && region.height === sh;
  return {
    pre: whole ? undefined : region,
    resize: { width: iw, height: ih },
    post: cropped ? { left: x.offset, top: y.offset, width: x.visible, height: y.visible } : undefined,
    pad: { top: y.lead, right: x.trail, bottom: y.trail, left: x.lead },
    canvas: { width: x.lead + x.visible + x.trail, height: y.lead + y.visible + y.trail },
  };
}

/** sharp's colour of a background value. */
function colourOf(bg: string): { r: number; g: number; b: number; alpha: number } {
  if (bg === "transparent") return { r: 0, g: 0, b: 0, alpha: 0 };
  if (bg === "white") return { r: 255, g: 255, b: 255, alpha: 1 };
  return {
    r: parseInt(bg.slice(0, 2), 16),
    g: parseInt(bg.slice(2, 4), 16),
    b: parseInt(bg.slice(4, 6), 16),
    alpha: 1,
  };
}

/** Everything one render needs, decided before any pixel is decoded. */
export type RenderJob = {
  source: string;
  target: string;
  geometry: Geometry;
  type: OutputType;
  /** The effective background (transparent, white or hex). */
  bg: string;
  q: number;
  optimize: boolean;
  /** Quantise an optimized PNG to a palette (false past QUANTISE_PIXEL_LIMIT). */
  palette: boolean;
  /** Keep every frame (animated source, gif output). */
  animated: boolean;
  /** Frame delays (ms) and loop count of an animated source. */
  delay?: number[];
  loop?: number;
  pixelLimit: number;
  timeoutSeconds: number;
};

export type Rendered = { width: number; height: number; size: number; transformMs: number; optimizeMs: number };

/** The encoder settings of an output type; `optimize` trades time for size (mozjpeg, palette PNG, gif effort). */
function encode(
  img: Sharp,
  job: Pick<RenderJob, "type" | "q" | "optimize" | "palette" | "delay" | "loop">,
  animated: boolean,
): Sharp {
  const anim = animated ? { delay: job.delay, loop: job.loop ?? 0 } : {};
  switch (job.type) {
    case "jpg":
      return img.jpeg(
        job.optimize
          ? { quality: Math.max(1, job.q), mozjpeg: true }
          : { quality: Math.max(1, job.q), optimizeCoding: false },
      );
    case "png":
      return img.png(
        !job.optimize
          ? { compressionLevel: 4, adaptiveFiltering: false }
          : job.palette
            ? { palette: true, quality: job.q, effort: 7, compressionLevel: 9 }
            : { compressionLevel: 9, adaptiveFiltering: true },
      );
    case "gif":
      return img.gif({ effort: job.optimize ? 8 : 4, ...anim });
  }
}

/** The transform pipeline on sharp, without the encoder: orientation, crop, flatten, resize, window, padding. */
export function pipeline(job: RenderJob): Sharp {
  const g = job.geometry;
  let img = sharp(job.source, {
    autoOrient: true,
    animated: job.animated,
    limitInputPixels: job.pixelLimit,
    failOn: "error",
  }).timeout({ seconds: job.timeoutSeconds });
  if (g.pre) img = img.extract(g.pre);
  const bg = colourOf(job.bg);
  if (job.bg !== "transparent") img = img.flatten({ background: bg });
  img = img.resize(g.resize.width, g.resize.height, { fit: "fill" });
  if (g.post) img = img.extract(g.post);
  const { top, right, bottom, left } = g.pad;
  if (top || right || bottom || left) img = img.extend({ top, right, bottom, left, background: bg });
  return img;
}

/**
 * Renders a job to its target: into a temp file beside it, then renamed, so a reader never sees
 * half a file. With `optimize` the pixels are made first (timed as transform) and then encoded
 * with the slow settings (timed as optimize).
 */
export async function render(job: RenderJob): Promise<Rendered> {
  const tmp = `${job.target}.${newGid(8)}.tmp`;
  try {
    const t0 = performance.now();
    let transformMs: number;
    let optimizeMs = 0;
    let info: OutputInfo;
    if (!job.optimize) {
      info = await encode(pipeline(job), job, job.animated).toFile(tmp);
      transformMs = performance.now() - t0;
    } else {
      const raw = await pipeline(job).raw().toBuffer({ resolveWithObject: true });
      transformMs = performance.now() - t0;
      const t1 = performance.now();
      const pageHeight = job.animated ? raw.info.pageHeight : undefined;
      const input = sharp(raw.data, {
        raw: {
          width: raw.info.width,
          height: raw.info.height,
          channels: raw.info.channels,
          premultiplied: raw.info.premultiplied,
          pageHeight,
        },
      }).timeout({ seconds: job.timeoutSeconds });
      info = await encode(input, job, job.animated).toFile(tmp);
      optimizeMs = performance.now() - t1;
    }
    // sharp's OutputInfo misreports the size after extract + extend, so the header of the file says it.
    const written = await sharp(tmp).metadata();
    renameSync(tmp, job.target);
    fileChanged(job.target);
    return {
      width: written.width,
      height: written.pageHeight ?? written.height,
      size: info.size,
      transformMs: Math.max(1, Math.round(transformMs)),
      optimizeMs: job.optimize ? Math.max(1, Math.round(optimizeMs)) : 0,
    };
  } catch (err) {
    rmSync(tmp, { force: true });
    throw renderError(err, job);
  }
}

/** sharp's failures as client-facing errors: a timeout or unreadable source is the asset's problem (422). */
function renderError(err: unknown, job: RenderJob): unknown {
  if (err instanceof ApiError) return err;
  const msg = String((err as Error)?.message ?? err);
  if (/timeout/i.test(msg)) return new ApiError(422, "Transform timed out", { timeout_seconds: job.timeoutSeconds });
  if (/pixel limit/i.test(msg)) return new ApiError(422, "Source image too large", { limit_pixels: job.pixelLimit });
  if (/unsupported image format|corrupt|premature|invalid|bad|truncated|read error|not a known/i.test(msg))
    return new ApiError(422, "Source image could not be read", { reason: msg.split("\n")[0] });
  return err;
}

/**
 * Guards the renders of one instance: at most `limit` at once (more get a 503 with Retry-After),
 * and one render per target, which concurrent identical requests share (single flight).
 */
export class Transformer {
  private running = 0;
  private readonly inflight = new Map<string, Promise<Rendered>>();
  constructor(readonly limit: number) {}

  get active(): number {
    return this.running;
  }

  run(target: string, work: () => Promise<Rendered>): Promise<Rendered> {
    const same = this.inflight.get(target);
    if (same) return same;
    if (this.running >= this.limit) {
      throw new ApiError(
        503,
        "Too many transforms at once; retry shortly",
        { limit: this.limit, retry_after_seconds: 1 },
        { "retry-after": "1" },
      );
    }
    this.running++;
    const p = (async () => {
      try {
        return await work();
      } finally {
        this.running--;
        this.inflight.delete(target);
      }
    })();
    this.inflight.set(target, p);
    return p;
  }
}
