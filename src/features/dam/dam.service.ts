/*
 * Longer than ~600 lines: the transform path (the source fetched from the blob store once per copy,
 * rendered once per name, written back) and publication share this file's prepared statements and
 * in-flight maps; splitting it follows once the asynchronous data layer (issue 38) has settled the
 * shape of those statements.
 */
import { and, desc, eq, inArray, sql } from "drizzle-orm";
import { existsSync, mkdirSync, rmSync, statSync } from "node:fs";
import { join } from "node:path";
import type { Metadata } from "sharp";
import { readImageHeader } from "../../platform/images/images";
import type { AssetsRemovedHook, Ctx } from "../../platform/context";
import type { Actor } from "../../core/actor";
import { inProject, projectAccess } from "../projects/projects.api";
import {
  defaultKey,
  effectiveBackground,
  invalidOption,
  isMediaFileName,
  MAX_MEDIA_FILE_BYTES,
  mediaFileName,
  optionStrings,
  outputType,
  type OutputType,
  type TransformOptions,
} from "./dam.options";
import {
  INPUT_FORMATS,
  planGeometry,
  QUANTISE_PIXEL_LIMIT,
  render,
  type Rendered,
  type Transformer,
} from "./dam.transform";
import { mutate } from "../../db/mutate";
import type { DB } from "../../db/connection";
import { param, sessionOf, textOf } from "../../db/query";
import { assetLookups, assetVersionsOf, setPublication, type Asset, imageFacts } from "../assets/assets.api";
import { damTransforms } from "./dam.table";
import { MissingOriginal, sourceCache, type SourceCopy } from "./dam.sources";
import { badRequest, unprocessable } from "../../core/errors";
import { now } from "../../core/ids";
import { originalKey, originalPath, parseStorageName, STORAGE_NAME } from "../../platform/storage/originals";
import { fileChanged } from "../../platform/storage/file-facts";

/** One stored original named by a storage pathname: the asset and the version it belongs to. */
export type Source = {
  asset: Asset;
  storageName: string;
  version: number;
  current: boolean;
  extension: string;
  mime: string;
  size: number;
  /** EXIF/IPTC/XMP of this version as the upload extracted it. */
  extracted: Record<string, unknown>;
};

/** Media folders made by this process (a removed project takes its folder: checked again then). */
const madeDirs = new Set<string>();

/** The project's folder of transformed files (`<project dir>/media`); `create` makes it when missing. */
function mediaDir(ctx: Pick<Ctx, "storage">, projectGid: string, create = true): string {
  const dir = join(ctx.storage.projectDir(projectGid), "media");
  if (create && !(madeDirs.has(dir) && existsSync(dir))) {
    mkdirSync(dir, { recursive: true });
    if (madeDirs.size > 10_000) madeDirs.clear();
    madeDirs.add(dir);
  }
  return dir;
}

/** Public URLs of the media endpoint. */
export const mediaUrl = {
  // The file name's own percent signs are encoded once more for the URL (the route decodes once).
  variant: (ctx: Pick<Ctx, "baseUrl">, projectGid: string, file: string) =>
    `${ctx.baseUrl}/media/p/${projectGid}/var/${file.replace(/%/g, "%25")}`,
  original: (ctx: Pick<Ctx, "baseUrl">, projectGid: string, storageName: string) =>
    `${ctx.baseUrl}/media/p/${projectGid}/orig/${storageName}`,
};

/**
 * The query of the hot path of transforms, prepared once per database (see `assetLookups` of the
 * assets service for the asset and version lookups and why they are prepared).
 */
const prepared = new WeakMap<DB, ReturnType<typeof prepareQueries>>();
function prepareQueries(db: DB) {
  const p = (name: string) => sql.placeholder(name);
  return {
    ...assetLookups(db),
    transform: db
      .select({
        width: damTransforms.width,
        height: damTransforms.height,
        size: damTransforms.size,
        source: damTransforms.source,
      })
      .from(damTransforms)
      .where(and(eq(damTransforms.projectGid, p("project")), eq(damTransforms.file, p("file"))))
      .prepare(),
  };
}

/** The row of a made media file, inserted or taken over (one statement, its text made once per database). */
const RECORD_TRANSFORM = textOf(
  (d) =>
    sql`INSERT INTO dam_transforms (project_gid, file, asset_gid, source, width, height, size, options, updated_on) VALUES (${sql.join(
      [...Array.from({ length: 7 }, () => param), d.jsonFromText(param), param],
      sql`, `,
    )})${d.onConflict(["project_gid", "file"], ["asset_gid", "source", "width", "height", "size", "options", "updated_on"])}`,
);
function queries(db: DB) {
  let q = prepared.get(db);
  if (!q) prepared.set(db, (q = prepareQueries(db)));
  return q;
}

/**
 * The original named by `pathname` in the project: the current version of an active asset, or one
 * of its kept earlier versions. A path trick is a 400; anything else that names no original is a 422.
 */
async function findSource(db: DB, projectGid: string, pathname: string): Promise<Source> {
  if (!pathname || /[/\\\0]/.test(pathname) || pathname === "." || pathname === "..") {
    throw badRequest("Invalid storage pathname", { "Invalid parameter": "storage pathname", value: pathname });
  }
  const parts = parseStorageName(pathname);
  const unknown = () => unprocessable("Asset does not exist", { storage_pathname: pathname });
  if (!parts) throw unknown();
  const q = queries(db);
  const asset = await q.asset.get({ gid: parts.gid });
  if (!asset || asset.projectGid !== projectGid || asset.status !== "active" || asset.type === "folder")
    throw unknown();
  if (asset.storageName === pathname) {
    return {
      asset,
      storageName: pathname,
      version: asset.version,
      current: true,
      extension: asset.extension,
      mime: asset.mime,
      size: asset.size,
      extracted: asset.extracted,
    };
  }
  const v = await q.version.get({ name: pathname });
  if (!v || v.assetGid !== asset.gid || v.projectGid !== projectGid) throw unknown();
  return {
    asset,
    storageName: pathname,
    version: v.version,
    current: false,
    extension: v.extension,
    mime: v.mime,
    size: v.size,
    extracted: v.extracted,
  };
}

/**
 * The path of an original, like `originalPath` of src/platform/storage/originals.ts (the same strict name
 * check) without creating the folder on every call: reading needs no folder.
 */
function originalFile(ctx: Ctx, projectGid: string, name: string): string {
  if (!STORAGE_NAME.test(name)) return originalPath(ctx, projectGid, name);
  return join(ctx.storage.projectDir(projectGid), "originals", name);
}

/**
 * A source's facts, and its file to read (`path()`) until `release` is called. On S3 the file is a
 * local copy fetched at the first `path()` (a transform found up to date never fetches it) and
 * pinned till then.
 */
type SourceFile = { mtimeMs: number; size: number; path: () => Promise<string>; release: () => void };

/** The file of a source; a 422 when it is gone from disk. */
async function sourceFile(ctx: Ctx, projectGid: string, src: Source): Promise<SourceFile> {
  if (ctx.storage.blobs.kind !== "file") return sourceFromStore(ctx, projectGid, src);
  return localSource(ctx, projectGid, src);
}

/** The file of a source in the data folder; a 422 when it is gone from disk. */
function localSource(ctx: Ctx, projectGid: string, src: Source): SourceFile {
  const path = originalFile(ctx, projectGid, src.storageName);
  try {
    const st = statSync(path);
    return { mtimeMs: st.mtimeMs, size: st.size, path: async () => path, release: () => {} };
  } catch {
    throw missingOriginal(src);
  }
}

const missingOriginal = (src: Source) =>
  unprocessable("Asset does not exist", {
    storage_pathname: src.storageName,
    reason: "the original file is missing",
  });

/**
 * On a store that is not the local disk (S3), sharp reads a local copy of the original, kept in
 * the cache of copies (dam.sources.ts) and pinned until the caller releases it.
 */
async function sourceFromStore(ctx: Ctx, projectGid: string, src: Source): Promise<SourceFile> {
  const key = originalKey(projectGid, src.storageName);
  const cache = sourceCache(ctx);
  // With a copy kept, what the store said when it was fetched (the name's content never changes).
  const st = cache.known(projectGid, src.storageName) ?? (await ctx.storage.blobs.stat(key));
  if (!st) throw missingOriginal(src);
  let copy: Promise<SourceCopy> | undefined;
  const fetchCopy = async () => {
    try {
      return await cache.copy(projectGid, src.storageName, st, () => ctx.storage.blobs.get(key));
    } catch (err) {
      if (err instanceof MissingOriginal) throw missingOriginal(src);
      throw err;
    }
  };
  return {
    mtimeMs: st.mtimeMs,
    size: st.size,
    path: async () => (await (copy ??= fetchCopy())).path,
    release: () => {
      copy?.then(
        (c) => c.release(),
        () => {},
      );
    },
  };
}

/**
 * Header-only read of an image (no pixels decoded, any size: the pixel limit is judged after it);
 * a 422 when it is not an image sharp reads.
 */
async function readHeader(path: string, storageName: string, extension: string): Promise<Metadata> {
  try {
    return await readImageHeader(path);
  } catch {
    // A source of a type that is no raster image (an SVG libvips could not parse, a PDF, ...) gets
    // the same answer as one it could parse: its type is not supported. A damaged raster file is unreadable.
    if (!RASTER_EXTENSIONS.has(extension.toLowerCase())) throw unsupportedSource(storageName, extension || "unknown");
    throw unprocessable("Source is not a readable image", { storage_pathname: storageName });
  }
}

/** File extensions of the raster types a transform reads (INPUT_FORMATS). */
const RASTER_EXTENSIONS = new Set(["jpg", "jpeg", "jpe", "png", "gif", "webp", "tif", "tiff", "avif", "heif", "heic"]);

/** The 422 of a source whose type no transform reads (SVG, PDF, ...). */
const unsupportedSource = (storageName: string, format: string) =>
  unprocessable("Unsupported source type", {
    storage_pathname: storageName,
    format,
    supported: [...INPUT_FORMATS],
  });

/** Width and height as displayed (EXIF orientation applied), per frame. */
function orientedSize(m: Metadata): { width: number; height: number } {
  const width = m.autoOrient?.width ?? m.width;
  const height = m.autoOrient?.height ?? m.height;
  return { width, height };
}

export type TransformResult = {
  public_url: string;
  dimensions: [number, number];
  timing_ms: { transform: number; optimize: number };
  request: string;
  source: string;
  target: string;
  options: Record<string, string>;
};

/**
 * `/dam/p/<project>/transform/<storage pathname>/<options>`: makes (or finds up to date) the file
 * `<name>@<key>.<ext>` in the project's media folder. The caller's membership is checked by the
 * route. Guards: pixel limit on the header before decoding, sources restricted to raster formats
 * (no SVG), output pixel limit, timeout, concurrency cap and single flight (the Transformer).
 */
export async function transformAsset(
  ctx: Ctx,
  actor: Actor,
  transformer: Transformer,
  args: { projectGid: string; pathname: string; options: TransformOptions; request: string },
): Promise<TransformResult> {
  await projectAccess(ctx.db, actor, args.projectGid, "member");
  const src = await findSource(ctx.db, args.projectGid, args.pathname);
  const file = await sourceFile(ctx, args.projectGid, src);
  try {
    return await transformSource(ctx, transformer, args, src, file);
  } finally {
    file.release();
  }
}

/** `transformAsset` once access is checked and the source's file is there to read. */
async function transformSource(
  ctx: Ctx,
  transformer: Transformer,
  args: { projectGid: string; options: TransformOptions; request: string },
  src: Source,
  file: SourceFile,
): Promise<TransformResult> {
  const { projectGid, options: o } = args;
  let header: Metadata | undefined;
  const needsAlpha = !o.type && !["jpg", "jpeg", "png", "gif"].includes(src.extension);
  if (needsAlpha) header = await readHeader(await file.path(), src.storageName, src.extension);
  const type: OutputType = outputType(o, src.extension, header?.hasAlpha ?? false);
  const bg = effectiveBackground(o, type);
  const name = o.name ?? src.storageName.replace(/\.[^.]+$/, "");
  const key = o.key ?? defaultKey(o);
  const mediaFile = mediaFileName(name, key, type);
  if (!isMediaFileName(mediaFile)) {
    const reason =
      mediaFile.length > MAX_MEDIA_FILE_BYTES
        ? `with the key, makes a media file name of ${mediaFile.length} bytes (at most ${MAX_MEDIA_FILE_BYTES}; a character other than A-Z a-z 0-9 _ - ~ . takes 3 bytes for each of its UTF-8 bytes)`
        : "does not make a valid media file name";
    throw badRequest("Invalid option name", { option: "name", value: name, reason });
  }
  // On a store that is not the local disk, the output is rendered into the temp folder and then
  // written to the store, inside the single flight of its name.
  const blobs = ctx.storage.blobs;
  const local = blobs.kind === "file";
  const mediaKey = `files/projects/${projectGid}/media/${mediaFile}`;
  const target = local
    ? ctx.storage.inside(mediaDir(ctx, projectGid, false), mediaFile)
    : ctx.storage.inside(ctx.storage.ensure(join(ctx.storage.tmp, "dam-out", projectGid)), mediaFile);
  const options = optionStrings(o, { name, key, type, bg });
  const result = (dimensions: [number, number], timing: { transform: number; optimize: number }): TransformResult => ({
    public_url: mediaUrl.variant(ctx, projectGid, mediaFile),
    dimensions,
    timing_ms: timing,
    request: args.request,
    source: `${projectGid}/originals/${src.storageName}`,
    target: `${projectGid}/media/${mediaFile}`,
    options,
  });

  if (!o.force) {
    const existing = local
      ? await upToDate(ctx, projectGid, mediaFile, target, src.storageName, file.mtimeMs)
      : await upToDateInStore(ctx, projectGid, mediaFile, mediaKey, src.storageName, file.mtimeMs);
    if (existing) return result(existing, { transform: 0, optimize: 0 });
  }

  const rendered: Rendered = await transformer.run(target, async () => {
    if (local) mediaDir(ctx, projectGid);
    const source = await file.path();
    const meta = header ?? (await readHeader(source, src.storageName, src.extension));
    if (!meta.format || !INPUT_FORMATS.has(meta.format))
      throw unsupportedSource(src.storageName, meta.format ?? "unknown");
    const frames = Math.max(1, meta.pages ?? 1);
    const size = orientedSize(meta);
    const pixels = size.width * size.height * frames;
    if (!(pixels > 0) || pixels > ctx.config.pixelLimit) {
      throw unprocessable("Source image too large", {
        storage_pathname: src.storageName,
        width: size.width,
        height: size.height,
        frames,
        pixels,
        limit_pixels: ctx.config.pixelLimit,
      });
    }
    const animated = type === "gif" && frames > 1;
    const geometry = planGeometry(size, o, ctx.config.pixelLimit);
    const outputPixels = geometry.canvas.width * geometry.canvas.height * (animated ? frames : 1);
    if (animated && outputPixels > ctx.config.pixelLimit) {
      // An output over the pixel limit is a 400 naming the option, as planGeometry does for one frame.
      const option = o.dpr > 1 ? "dpr" : o.mode;
      throw invalidOption(
        option,
        option === "dpr" ? String(o.dpr) : undefined,
        `the animated output would be ${geometry.canvas.width}x${geometry.canvas.height} pixels x ${frames} frames, more than the limit of ${ctx.config.pixelLimit} pixels: ask for a smaller size or type=png/jpg`,
      );
    }
    if (type === "gif" && outputPixels > QUANTISE_PIXEL_LIMIT) {
      throw invalidOption(
        "type",
        "gif",
        `gif output is limited to ${QUANTISE_PIXEL_LIMIT} pixels (all frames); this one would have ${outputPixels}: ask for a smaller size or png/jpg`,
      );
    }
    const out = await render({
      source,
      target,
      geometry,
      type,
      bg,
      q: o.q,
      optimize: o.optimize,
      palette: outputPixels <= QUANTISE_PIXEL_LIMIT,
      animated,
      delay: animated ? meta.delay : undefined,
      loop: animated ? meta.loop : undefined,
      pixelLimit: ctx.config.pixelLimit,
      timeoutSeconds: ctx.config.transformTimeout,
    });
    if (!local) await blobs.putFile(mediaKey, target, { type: `image/${type === "jpg" ? "jpeg" : type}` });
    await recordTransform(ctx, local ? target : mediaKey, {
      projectGid,
      file: mediaFile,
      assetGid: src.asset.gid,
      source: src.storageName,
      width: out.width,
      height: out.height,
      size: out.size,
      options,
    });
    return out;
  });
  return result([rendered.width, rendered.height], { transform: rendered.transformMs, optimize: rendered.optimizeMs });
}

/**
 * The output size of an existing target not older than the source, or undefined when it must be
 * made. The size recorded at its render is used (a row is written after every render); only a
 * file without a row has its header read. A target last made from another source (a custom
 * name/key reused for another asset or version) is made again: it is not this source's output.
 */
async function upToDate(
  ctx: Ctx,
  projectGid: string,
  file: string,
  target: string,
  source: string,
  sourceMtimeMs: number,
): Promise<[number, number] | undefined> {
  const st = statSync(target, { throwIfNoEntry: false });
  if (!st || st.mtimeMs < sourceMtimeMs) return undefined;
  const row = await queries(ctx.db).transform.get({ project: projectGid, file });
  if (row && row.source !== source) return undefined;
  if (row && row.size === st.size) return [row.width, row.height];
  try {
    const m = await readImageHeader(target);
    return [m.width, m.pageHeight ?? m.height];
  } catch {
    return undefined;
  }
}

/** `upToDate` on a store that is not the local disk: the object's stat and the row of its last render. */
async function upToDateInStore(
  ctx: Ctx,
  projectGid: string,
  file: string,
  key: string,
  source: string,
  sourceMtimeMs: number,
): Promise<[number, number] | undefined> {
  const row = await queries(ctx.db).transform.get({ project: projectGid, file });
  if (!row || row.source !== source) return undefined;
  const st = await ctx.storage.blobs.stat(key);
  if (!st || st.mtimeMs < Math.floor(sourceMtimeMs / 1000) * 1000 || st.size !== row.size) return undefined;
  return [row.width, row.height];
}

/**
 * Notes a made media file for `info` and for permanent deletion (no sync item: transforms do not
 * change the asset). When the asset was permanently deleted while it rendered, the file is removed
 * instead (the removal hook below ran before there was a row to find).
 */
async function recordTransform(
  ctx: Ctx,
  target: string,
  row: Omit<typeof damTransforms.$inferInsert, "updatedOn" | "id">,
): Promise<void> {
  const q = queries(ctx.db);
  // The row notes a derived file that is not synced to disk either and is made again when missing:
  // its commit does not wait for a sync of its own (4-6 ms on a busy disk, ~10 % of a transform);
  // the next synced commit covers it.
  const kept = await mutate(
    ctx.db,
    undefined,
    async (tx) => {
      if (!(await q.asset.get({ gid: row.assetGid }))) return false;
      await sessionOf(tx)
        .query(RECORD_TRANSFORM(tx))
        .run(
          row.projectGid,
          row.file,
          row.assetGid,
          row.source,
          row.width,
          row.height,
          row.size,
          JSON.stringify(row.options),
          now(),
        );
      return true;
    },
    { durable: false },
  );
  if (!kept) {
    if (ctx.storage.blobs.kind !== "file") void ctx.storage.blobs.delete(target).catch(() => {});
    else {
      rmSync(target, { force: true });
      fileChanged(target);
    }
  }
}

/**
 * The `assetsRemoved` hook: permanently deleted assets take their transformed files with them.
 * Their `dam_transforms` rows go in the deleting transaction and the files after commit (a file
 * last made for another asset, through a reused custom name/key, belongs to that asset and stays).
 */
export const dropTransforms: AssetsRemovedHook = async (ctx, tx, projectGid, gids) => {
  if (gids.length === 0) return [];
  const rows = await tx
    .delete(damTransforms)
    .where(and(eq(damTransforms.projectGid, projectGid), inArray(damTransforms.assetGid, gids)))
    .returning({ file: damTransforms.file })
    .all();
  if (rows.length === 0) return [];
  const dir = join(ctx.storage.projectDir(projectGid), "media");
  return rows.filter((r) => isMediaFileName(r.file)).map((r) => join(dir, r.file));
};

/**
 * `publish`: the asset's original named by `pathname` becomes downloadable at
 * `/media/p/<project>/orig/<storage pathname>`. Writes an `assets` UPDATE sync item when it changes.
 */
export async function publishOriginal(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  pathname: string,
): Promise<{ public_url: string }> {
  const userGid = actor.userGid;
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const src = await findSource(ctx.db, projectGid, pathname);
    // The data folder's original is checked here (a store's object was acknowledged before its row).
    if (ctx.storage.blobs.kind === "file") localSource(ctx, projectGid, src);
    await setPublication(tx, log, src.asset, src.storageName, userGid);
    return { public_url: mediaUrl.original(ctx, projectGid, src.storageName) };
  });
}

/** `unpublish`: the asset's original is private again (whichever of its versions was published). */
export async function unpublishOriginal(
  ctx: Ctx,
  actor: Actor,
  projectGid: string,
  pathname: string,
): Promise<{ public_url: null }> {
  const userGid = actor.userGid;
  return await inProject(ctx, actor, projectGid, "member", async ({ tx, log }) => {
    const src = await findSource(ctx.db, projectGid, pathname);
    await setPublication(tx, log, src.asset, null, userGid);
    return { public_url: null };
  });
}

type Published = { path: string; mime: string } | undefined;

/**
 * Answers of `publishedOriginal` per project, so a busy public original costs no query. Every
 * change of an asset (publish, unpublish, delete, new version, permanent deletion) commits an
 * `assets` sync item, and a project deleted or restored from a backup a `cc.projects` item: the
 * hub publishes them right after the commit, before any other request runs, and the project's
 * answers are dropped then. At most PUBLISHED_KEPT answers are kept per project, for at most
 * PUBLISHED_PROJECTS_KEPT projects.
 */
const publishedAnswers = new WeakMap<Ctx["hub"], PublishedCache>();
const PUBLISHED_KEPT = 10_000;
const PUBLISHED_PROJECTS_KEPT = 1_000;

/**
 * The kept answers, and how many times answers were dropped: a look-up that began before a drop
 * may have read the rows from before the change (on PostgreSQL it runs beside the writer's unit
 * and can end after its commit was published), so its answer is kept only if no drop came between.
 */
type PublishedCache = { byProject: Map<string, Map<string, Published>>; drops: number };

function publishedCache(ctx: Ctx): PublishedCache {
  let kept = publishedAnswers.get(ctx.hub);
  if (!kept) {
    const cache: PublishedCache = (kept = { byProject: new Map(), drops: 0 });
    publishedAnswers.set(ctx.hub, cache);
    ctx.hub.subscribe((items) => {
      for (const it of items) {
        if (it.type === "cc") {
          if (it.data_type !== "cc.projects") continue;
          cache.byProject.delete(it.data_key);
        } else if (it.data_type === "assets") cache.byProject.delete(it.type);
        else continue;
        cache.drops++;
      }
    });
  }
  return kept;
}

/**
 * Whether a transformed file is noted by its row (media on a store that is not the local disk asks
 * first: a permanently deleted asset's files are gone for clients at once, while the store's delete
 * runs after commit).
 */
export async function transformNoted(ctx: Ctx, projectGid: string, file: string): Promise<boolean> {
  return (await queries(ctx.db).transform.get({ project: projectGid, file })) !== undefined;
}

/** The file and type of a published original, or undefined (unknown, unpublished, deleted asset, missing file). */
export async function publishedOriginal(ctx: Ctx, projectGid: string, name: string): Promise<Published> {
  const kept = publishedCache(ctx);
  const cache = kept.byProject;
  let answers = cache.get(projectGid);
  if (answers?.has(name)) return answers.get(name);
  const drops = kept.drops;
  const found = await lookUpPublished(ctx, projectGid, name);
  // An asset or project changed while this was read: answer it, keep nothing.
  if (kept.drops !== drops) return found;
  answers = cache.get(projectGid);
  if (!answers) {
    // Any project gid can be asked for: the map of projects is bounded as well.
    if (cache.size >= PUBLISHED_PROJECTS_KEPT) cache.clear();
    cache.set(projectGid, (answers = new Map()));
  } else if (answers.size >= PUBLISHED_KEPT) answers.clear();
  answers.set(name, found);
  return found;
}

async function lookUpPublished(ctx: Ctx, projectGid: string, name: string): Promise<Published> {
  const parts = parseStorageName(name);
  if (!parts) return undefined;
  const q = queries(ctx.db);
  const asset = await q.asset.get({ gid: parts.gid });
  if (
    !asset ||
    asset.projectGid !== projectGid ||
    asset.status !== "active" ||
    !asset.published ||
    asset.publicName !== name
  )
    return undefined;
  let mime = asset.mime;
  if (asset.storageName !== name) {
    const v = await q.version.get({ name });
    if (!v || v.assetGid !== asset.gid) return undefined;
    mime = v.mime;
  }
  return { path: originalFile(ctx, projectGid, name), mime };
}

/**
 * `info`: the facts of an original with the reference's members (format, filesize, pages, width,
 * height, resolution, transparent, animated, colors, colorspace, metadata), read from the file.
 */
export async function assetInfo(ctx: Ctx, actor: Actor, projectGid: string, pathname: string) {
  await projectAccess(ctx.db, actor, projectGid, "member");
  const src = await findSource(ctx.db, projectGid, pathname);
  const file = await sourceFile(ctx, projectGid, src);
  try {
    const info = {
      format: src.extension || null,
      filesize: file.size,
      pages: 1,
      width: null as number | null,
      height: null as number | null,
      resolution: null as [number, number] | null,
      transparent: false,
      animated: false,
      colors: null as string | null,
      colorspace: null as string | null,
      metadata: src.extracted ?? {},
    };
    if (src.asset.type === "image" || IMAGE_EXTENSIONS.has(src.extension)) {
      const path = await file.path();
      try {
        const m = await readImageHeader(path, { animated: true });
        const s = orientedSize(m);
        const facts = await imageFacts(path);
        Object.assign(info, { pages: m.pages ?? 1, width: s.width, height: s.height });
        if (facts) Object.assign(info, facts);
      } catch {
        // Not an image sharp reads: the image members keep their defaults.
      }
    }
    return info;
  } finally {
    file.release();
  }
}

const IMAGE_EXTENSIONS = new Set(["jpg", "jpeg", "png", "gif", "webp", "tiff", "avif", "heic", "heif", "svg"]);

/** `details` (an Apis extension): everything about an original, its versions, publication and transforms (docs/dam.md). */
export async function assetDetails(ctx: Ctx, actor: Actor, projectGid: string, pathname: string) {
  await projectAccess(ctx.db, actor, projectGid, "member");
  const src = await findSource(ctx.db, projectGid, pathname);
  // Read for its header only (released below; a copy whose fetch failed pins nothing).
  const file = await sourceFile(ctx, projectGid, src);
  const a = src.asset;
  let image: Record<string, unknown> = {
    dimensions: null,
    format: null,
    pages: null,
    has_alpha: null,
    orientation: null,
    space: null,
    density: null,
  };
  if (
    a.type === "image" ||
    ["jpg", "jpeg", "png", "gif", "webp", "tiff", "avif", "heic", "heif", "svg"].includes(src.extension)
  ) {
    const path = await file.path();
    try {
      const m = await readImageHeader(path);
      const s = orientedSize(m);
      image = {
        dimensions: [s.width, s.height],
        format: m.format,
        pages: m.pages ?? 1,
        has_alpha: m.hasAlpha,
        orientation: m.orientation ?? 1,
        space: m.space,
        density: m.density ?? null,
      };
    } catch {
      // Not an image sharp reads: the image members stay null.
    }
  }
  file.release();
  const versions = [
    {
      version: a.version,
      storage_pathname: a.storageName,
      size: a.size,
      mime: a.mime,
      dimensions: a.width && a.height ? [a.width, a.height] : null,
      created_on: a.updatedOn,
      current: true,
    },
    ...(await assetVersionsOf(ctx.db, projectGid, a.gid)).map((v) => ({
      version: v.version,
      storage_pathname: v.storageName,
      size: v.size,
      mime: v.mime,
      dimensions: v.width && v.height ? [v.width, v.height] : null,
      created_on: v.createdOn,
      current: false,
    })),
  ];
  const rows = await ctx.db
    .select()
    .from(damTransforms)
    .where(and(eq(damTransforms.projectGid, projectGid), eq(damTransforms.assetGid, a.gid)))
    .orderBy(desc(damTransforms.updatedOn))
    .all();
  // Only the transforms whose files are still there (the data folder, or the store's objects).
  const there = await Promise.all(
    rows.map((t) =>
      isMediaFileName(t.file)
        ? ctx.storage.blobs.stat(`files/projects/${projectGid}/media/${t.file}`).then((s) => s !== undefined)
        : false,
    ),
  );
  const transforms = rows
    .filter((_, i) => there[i])
    .map((t) => ({
      file: t.file,
      public_url: mediaUrl.variant(ctx, projectGid, t.file),
      source: t.source,
      dimensions: [t.width, t.height],
      size: t.size,
      options: t.options,
      updated_on: t.updatedOn,
    }));
  return {
    asset: a.gid,
    storage_pathname: src.storageName,
    name: a.name,
    type: a.type,
    extension: src.extension,
    mime: src.mime,
    size: file.size,
    ...image,
    version: src.version,
    current: src.current,
    current_version: a.version,
    versions,
    metadata: a.metadata,
    extracted: src.extracted,
    published: a.published,
    public_url: a.published && a.publicName ? mediaUrl.original(ctx, projectGid, a.publicName) : null,
    transforms,
  };
}
