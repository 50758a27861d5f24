import { Elysia, t } from "elysia";
import { resolve } from "node:path";
import type { Ctx } from "../../platform/context";
import { isMediaFileName, publishedOriginal, transformNoted } from "../dam/dam.api";
import { contentTypeOf, mediaNotFound, serveBlob, serveFile, type ServeOptions } from "./media.files";
import { describe } from "../../http/openapi";
import { MEDIA_PATHS } from "./media.paths";

const tags = ["media"];
const params = t.Object({ project: t.String(), file: t.String() });
const fileParams = t.Object({ file: t.String() });

/** Project gids as newGid makes them. */
const PROJECT_RE = /^[0-9a-z]{8,40}$/;
/** Avatar and icon files as the upload routes name them (`<gid>-<random>.png`). */
const IMAGE_FILE_RE = /^[A-Za-z0-9_-]{1,100}\.(png|jpg|jpeg|gif|webp)$/;

/**
 * Cache-Control per kind of file (docs/dam.md, "Caching"): transforms a day (a forced re-render or
 * a reused custom name/key can change the bytes behind a URL; the ETag makes revalidation a 304),
 * published originals revalidated on every use (so unpublish takes effect at once), avatars and
 * icons a year (a new upload always gets a new file name).
 */
const CACHE = {
  variant: "public, max-age=86400",
  original: "public, no-cache",
  image: "public, max-age=31536000, immutable",
};

type Params = Record<string, string | undefined>;
/** `requestId`: sent as the answer's X-Request-Id when given (Bun's router); the app's hooks add it otherwise. */
type Handler = (request: Request, params: Params, requestId?: string) => Response | Promise<Response>;

/** Where a valid public name is served from, worked out once per name (see `Targets`). */
type Target = { path: string; opts: ServeOptions };

/** Names remembered per kind of file at most (all are forgotten when full; they are cheap to work out again). */
const TARGETS_KEPT = 20_000;

/**
 * Valid names mapped to their file and answer options, by folder (project gid) and name, so a
 * busy file costs no pattern checks, no name decoding and no path joining per request (the same
 * path string each time is also a cheap key for `fileFacts`). Only names that passed their checks
 * are kept.
 */
class Targets {
  private readonly byFolder = new Map<string, Map<string, Target>>();
  private size = 0;
  get(folder: string, name: string): Target | undefined {
    return this.byFolder.get(folder)?.get(name);
  }
  add(folder: string, name: string, target: Target): Target {
    if (this.size >= TARGETS_KEPT) {
      this.byFolder.clear();
      this.size = 0;
    }
    let names = this.byFolder.get(folder);
    if (!names) this.byFolder.set(folder, (names = new Map()));
    names.set(name, target);
    this.size++;
    return target;
  }
}

/** One options object per content type and kind, so `serveFile` keeps one set of prepared headers per file. */
function optionsOf(cacheControl: string, untrusted = false): (contentType: string) => ServeOptions {
  const byType = new Map<string, ServeOptions>();
  return (contentType) => {
    let o = byType.get(contentType);
    if (!o) {
      if (byType.size >= 1000) byType.clear(); // published originals may carry any media type
      byType.set(
        contentType,
        (o = untrusted ? { contentType, cacheControl, untrusted } : { contentType, cacheControl }),
      );
    }
    return o;
  };
}

/**
 * The four public file handlers. Every name is checked against a strict pattern before a path is
 * built from it, and the path is built under the one folder of its kind, so nothing else is
 * reachable (a plain join is safe: the names have no separators and no leading dot).
 */
function mediaHandlers(ctx: Ctx): { variant: Handler; original: Handler; avatar: Handler; icon: Handler } {
  const blobs = ctx.storage.blobs;
  const filesDir = blobs.localPath("files");
  if (filesDir === undefined) return blobHandlers(ctx);
  // Absolute, as the writers name the files they forget in fileFacts (src/platform/storage/file-facts.ts).
  const projectsRoot = resolve(filesDir, "projects");
  const avatarsDir = resolve(filesDir, "avatars");
  const iconsDir = resolve(filesDir, "icons");
  const variantOptions = optionsOf(CACHE.variant);
  const imageOptions = optionsOf(CACHE.image);
  const originalOptions = optionsOf(CACHE.original, true);
  const image = (dir: string): Handler => {
    const targets = new Targets();
    return (request, { file = "" }, requestId) => {
      let target = targets.get("", file);
      if (!target) {
        if (!IMAGE_FILE_RE.test(file)) return mediaNotFound(request);
        target = targets.add("", file, { path: `${dir}/${file}`, opts: imageOptions(contentTypeOf(file)) });
      }
      return serveFile(request, target.path, target.opts, requestId);
    };
  };
  const variants = new Targets();
  return {
    variant(request, { project = "", file = "" }, requestId) {
      let target = variants.get(project, file);
      if (!target) {
        if (!PROJECT_RE.test(project) || !isMediaFileName(file)) return mediaNotFound(request);
        target = variants.add(project, file, {
          path: `${projectsRoot}/${project}/media/${file}`,
          opts: variantOptions(contentTypeOf(file)),
        });
      }
      return serveFile(request, target.path, target.opts, requestId);
    },
    async original(request, { project = "", file = "" }, requestId) {
      if (!PROJECT_RE.test(project)) return mediaNotFound(request);
      const found = await publishedOriginal(ctx, project, file);
      if (!found) return mediaNotFound(request);
      return serveFile(request, found.path, originalOptions(found.mime || contentTypeOf(file)), requestId);
    },
    avatar: image(avatarsDir),
    icon: image(iconsDir),
  };
}

/**
 * The same handlers on a store that is not the local disk (S3): the same checks of the names, then
 * the object proxied from the store (`serveBlob`), or a redirect to a presigned URL with
 * `--media-redirect`.
 */
function blobHandlers(ctx: Ctx): { variant: Handler; original: Handler; avatar: Handler; icon: Handler } {
  const blobs = ctx.storage.blobs;
  const redirect = ctx.config.mediaRedirect;
  const variantOptions = optionsOf(CACHE.variant);
  const imageOptions = optionsOf(CACHE.image);
  const originalOptions = optionsOf(CACHE.original, true);
  // Avatars (`files/avatars/`) and project icons (`files/icons/`).
  const image =
    (folder: string): Handler =>
    (request, { file = "" }, requestId) => {
      if (!IMAGE_FILE_RE.test(file)) return mediaNotFound(request);
      const key = `files/${folder}/${file}`;
      return serveBlob(request, blobs, key, imageOptions(contentTypeOf(file)), requestId, redirect);
    };
  return {
    async variant(request, { project = "", file = "" }, requestId) {
      if (!PROJECT_RE.test(project) || !isMediaFileName(file)) return mediaNotFound(request);
      if (!(await transformNoted(ctx, project, file))) return mediaNotFound(request);
      const key = `files/projects/${project}/media/${file}`;
      return serveBlob(request, blobs, key, variantOptions(contentTypeOf(file)), requestId, redirect);
    },
    async original(request, { project = "", file = "" }, requestId) {
      if (!PROJECT_RE.test(project)) return mediaNotFound(request);
      const found = await publishedOriginal(ctx, project, file);
      if (!found) return mediaNotFound(request);
      const key = `files/projects/${project}/originals/${file}`;
      return serveBlob(request, blobs, key, originalOptions(found.mime || contentTypeOf(file)), requestId, redirect);
    },
    avatar: image("avatars"),
    icon: image("icons"),
  };
}

const PATHS = MEDIA_PATHS;

/**
 * Public files, no JWT (spec 4.5): transforms, published originals, avatars and project icons,
 * as Elysia routes (the OpenAPI document, `app.handle`). The running server answers the same
 * paths with `mediaServeRoutes` first (see there).
 */
export function mediaRoutes(ctx: Ctx) {
  const h = mediaHandlers(ctx);
  // The file's media type; the OpenAPI document gives a HEAD answer no body.
  const d = (summary: string, file = "image/*") => ({
    params,
    detail: describe({ summary, tags, file, errors: [404] }),
  });
  const f = (summary: string) => ({
    params: fileParams,
    detail: describe({ summary, tags, file: "image/*", errors: [404] }),
  });
  const via =
    (fn: Handler) =>
    ({ request, params }: { request: Request; params: Params }) =>
      fn(request, params);
  return new Elysia()
    .get(
      PATHS.variant,
      via(h.variant),
      d("A transformed image `<name>@<key>.<ext>` (public; ETag, Last-Modified, 304, Range)"),
    )
    .head(PATHS.variant, via(h.variant), d("Headers of a transformed image"))
    .get(
      PATHS.original,
      via(h.original),
      d("A published original `<storage pathname>` (public while published)", "*/*"),
    )
    .head(PATHS.original, via(h.original), d("Headers of a published original"))
    .get(PATHS.avatar, via(h.avatar), f("A user's avatar (the `avatar` file name of cc.users)"))
    .head(PATHS.avatar, via(h.avatar), f("Headers of an avatar"))
    .get(PATHS.icon, via(h.icon), f("A project's icon (the `icon` file name of cc.projects)"))
    .head(PATHS.icon, via(h.icon), f("Headers of a project icon"));
}

/**
 * The same handlers as routes of Bun.serve itself, matched natively before the Elysia app: a
 * media file is the hottest and simplest answer of the server (no JWT, no body, no hooks), and
 * skipping the framework's routing and hook chain is what keeps it near a bare `Bun.file`
 * answer (bench/dam.bench.ts). Other methods on these paths fall through to the app (405).
 */
export function mediaServeRoutes(ctx: Ctx) {
  const h = mediaHandlers(ctx);
  const both = (fn: Handler) => {
    const handler = (req: Request & { params: Params }, requestId: string) => fn(req, req.params, requestId);
    return { GET: handler, HEAD: handler };
  };
  return {
    [PATHS.variant]: both(h.variant),
    [PATHS.original]: both(h.original),
    [PATHS.avatar]: both(h.avatar),
    [PATHS.icon]: both(h.icon),
  };
}
