import { Elysia } from "elysia";
import { join } from "node:path";
import type { Ctx } from "../context";
import { MEDIA_NAME_RE } from "../dam/options";
import { contentTypeOf, mediaNotFound, serveFile } from "../dam/media";
import { describe } from "../http/openapi";
import { publishedOriginal } from "../services/dam.service";

const tags = ["media"];

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
export const CACHE = {
  variant: "public, max-age=86400",
  original: "public, no-cache",
  image: "public, max-age=31536000, immutable",
};

/**
 * Public files, no JWT (spec 4.5): transforms, published originals, avatars and project icons.
 * Every name is checked against a strict pattern before a path is built from it, and the path is
 * built under the one folder of its kind, so nothing else is reachable.
 */
export function mediaRoutes(ctx: Ctx) {
  const variant = ({ params, request }: { params: { project: string; file: string }; request: Request }) => {
    if (!PROJECT_RE.test(params.project) || !MEDIA_NAME_RE.test(params.file)) return mediaNotFound(request);
    const path = join(ctx.storage.projectDir(params.project), "media", params.file);
    return serveFile(request, path, { contentType: contentTypeOf(params.file), cacheControl: CACHE.variant });
  };
  const original = ({ params, request }: { params: { project: string; file: string }; request: Request }) => {
    if (!PROJECT_RE.test(params.project)) return mediaNotFound(request);
    const found = publishedOriginal(ctx, params.project, params.file);
    if (!found) return mediaNotFound(request);
    return serveFile(request, found.path, { contentType: found.mime || contentTypeOf(params.file), cacheControl: CACHE.original });
  };
  const image = (dir: () => string) => ({ params, request }: { params: { file: string }; request: Request }) => {
    if (!IMAGE_FILE_RE.test(params.file)) return mediaNotFound(request);
    return serveFile(request, join(dir(), params.file), { contentType: contentTypeOf(params.file), cacheControl: CACHE.image });
  };
  const avatars = image(() => ctx.storage.avatars);
  const icons = image(() => ctx.storage.icons);

  const d = (summary: string) => ({ detail: describe({ summary, tags, errors: [404] }) });
  return new Elysia({ prefix: "/media" })
    .get("/p/:project/var/:file", variant, d("A transformed image `<name>@<key>.<ext>` (public; ETag, Last-Modified, 304, Range)"))
    .head("/p/:project/var/:file", variant, d("Headers of a transformed image"))
    .get("/p/:project/orig/:file", original, d("A published original `<storage pathname>` (public while published)"))
    .head("/p/:project/orig/:file", original, d("Headers of a published original"))
    .get("/avatars/:file", avatars, d("A user's avatar (the `avatar` file name of cc.users)"))
    .head("/avatars/:file", avatars, d("Headers of an avatar"))
    .get("/icons/:file", icons, d("A project's icon (the `icon` file name of cc.projects)"))
    .head("/icons/:file", icons, d("Headers of a project icon"));
}
