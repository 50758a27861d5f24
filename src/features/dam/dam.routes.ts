import { metricsOf } from "../../platform/metrics";
import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { parseOptions } from "./dam.options";
import { configureSharp, Transformer } from "./dam.transform";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { badRequest, missing } from "../../core/errors";
import { describe } from "../../http/openapi";
import { assetDetails, assetInfo, publishOriginal, transformAsset, unpublishOriginal } from "./dam.service";
import { sourceCache, sourceCopiesBytes } from "./dam.sources";
import { VERSION } from "../../version";

const tags = ["dam"];
/**
 * The project; the rest of the path (storage pathname and options) is read segment by segment
 * from the URL below. The wildcard is not declared: Elysia's normalizer cannot build its code for
 * a member named `*` and printed a warning on each route's first request.
 */
const params = t.Object({ project: t.String() }, { additionalProperties: true });
const PING = JSON.stringify({ success: true, result: { pong: true, "cc.version": VERSION }, data: {} });

/**
 * The path segments after `/dam/p/<project>/<operation>/`, percent-decoded one by one, taken from
 * the raw URL so an encoded `/` stays inside its segment (and is then refused by the name checks).
 */
function segmentsAfter(request: Request, operation: string): string[] {
  const parts = new URL(request.url).pathname.split("/");
  // ["", "dam", "p", <project>, <operation>, ...]
  if (parts[4] !== operation) throw badRequest("Unexpected path", { path: parts.join("/") });
  return parts.slice(5).map((s) => {
    try {
      return decodeURIComponent(s);
    } catch {
      throw badRequest("Malformed percent-encoding in the path", { segment: s });
    }
  });
}

/** The storage pathname segment of a publish/unpublish/info/transform path (a 400 when absent). */
function pathnameOf(segments: string[], only = false): string {
  const p = segments[0];
  if (!p) throw missing("storage pathname");
  if (only && segments.slice(1).some((s) => s !== ""))
    throw badRequest("Unexpected path segment after the storage pathname", { segment: segments[1] });
  return p;
}

/**
 * `/dam` (spec 4.5): image transforms, publish/unpublish of originals, asset info. Every call but
 * ping needs a JWT of an active member of the project and never renews it.
 */
export function damRoutes(ctx: Ctx) {
  configureSharp();
  const transformer = new Transformer(ctx.config.transformConcurrency);
  metricsOf(ctx).sources.transforms = () => transformer.active;
  metricsOf(ctx).sources.sourceCopies = () => sourceCopiesBytes(ctx);
  // On S3 the cache of source copies is made with the routes (built by the first request that
  // needs them), not at the first transform: it empties what an earlier run left.
  if (ctx.storage.blobs.kind !== "file") sourceCache(ctx);

  return new Elysia({ prefix: "/dam" })
    .use(authMacro(ctx))
    .get("/ping", () => new Response(PING, { headers: { "content-type": "application/json; charset=utf-8" } }), {
      detail: describe({ summary: "Liveness check of the DAM endpoint (no JWT)", tags, example: JSON.parse(PING) }),
    })
    .get(
      "/p/:project/transform/*",
      async ({ params, request, actor }) => {
        const segments = segmentsAfter(request, "transform");
        const pathname = pathnameOf(segments);
        const options = parseOptions(segments.slice(1));
        const url = new URL(request.url);
        return ok(
          await transformAsset(ctx, actor, transformer, {
            projectGid: params.project,
            pathname,
            options,
            request: url.pathname,
          }),
        );
      },
      {
        authNoRenew: true,
        params,
        detail: describe({
          summary:
            "Transform an image: /dam/p/<project>/transform/<storage pathname>/<name=value>/... (docs/dam.md lists every option)",
          description:
            "Makes `<name>@<key>.<ext>` in the project's media folder (or finds it up to date) and answers its public URL, its real size and the timings. 503 with Retry-After when too many transforms run at once.",
          tags,
          example: {
            success: true,
            result: {
              public_url:
                "http://localhost:8080/media/p/k2j4h5g6f7d8s9a0q1w2/var/a1b2c3d4e5f6g7h8i9j0~1@5f0c2a9b1e.jpg",
              dimensions: [400, 300],
              timing_ms: { transform: 38, optimize: 0 },
              request: "/dam/p/k2j4h5g6f7d8s9a0q1w2/transform/a1b2c3d4e5f6g7h8i9j0~1.jpg/fit=400,300",
              source: "k2j4h5g6f7d8s9a0q1w2/originals/a1b2c3d4e5f6g7h8i9j0~1.jpg",
              target: "k2j4h5g6f7d8s9a0q1w2/media/a1b2c3d4e5f6g7h8i9j0~1@5f0c2a9b1e.jpg",
              options: {
                name: "a1b2c3d4e5f6g7h8i9j0~1",
                key: "5f0c2a9b1e",
                type: "jpg",
                force: "false",
                optimize: "false",
                fit: "400,300",
                hs: "0.5,0.5",
                padding: "auto,auto,auto,auto",
                bg: "white",
                q: "100",
                dpr: "1",
              },
            },
            data: {},
          },
          errors: [400, 403, 422],
        }),
      },
    )
    .get(
      "/p/:project/publish/*",
      async ({ params, request, actor }) => {
        const pathname = pathnameOf(segmentsAfter(request, "publish"), true);
        return ok(await publishOriginal(ctx, actor, params.project, pathname));
      },
      {
        authNoRenew: true,
        params,
        detail: describe({
          summary: "Make an original downloadable at /media/p/<project>/orig/<storage pathname>",
          tags,
          example: {
            success: true,
            result: {
              public_url: "http://localhost:8080/media/p/k2j4h5g6f7d8s9a0q1w2/orig/a1b2c3d4e5f6g7h8i9j0~1.jpg",
            },
            data: {},
          },
          errors: [400, 403, 422],
        }),
      },
    )
    .get(
      "/p/:project/unpublish/*",
      async ({ params, request, actor }) => {
        const pathname = pathnameOf(segmentsAfter(request, "unpublish"), true);
        return ok(await unpublishOriginal(ctx, actor, params.project, pathname));
      },
      {
        authNoRenew: true,
        params,
        detail: describe({
          summary: "Make an original private again",
          tags,
          example: { success: true, result: { public_url: null }, data: {} },
          errors: [400, 403, 422],
        }),
      },
    )
    .get(
      "/p/:project/info/*",
      async ({ params, request, actor }) => {
        const pathname = pathnameOf(segmentsAfter(request, "info"), true);
        return ok(await assetInfo(ctx, actor, params.project, pathname));
      },
      {
        authNoRenew: true,
        params,
        detail: describe({
          summary:
            "Facts of an original: format, filesize, pages, width, height, resolution, transparent, animated, colors, colorspace, metadata",
          tags,
          example: {
            success: true,
            result: {
              format: "jpg",
              filesize: 2488312,
              pages: 1,
              width: 3000,
              height: 2000,
              resolution: [72, 72],
              transparent: false,
              animated: false,
              colors: "truecolor",
              colorspace: "srgb",
              metadata: { Make: "Canon" },
            },
            data: {},
          },
          errors: [400, 403, 422],
        }),
      },
    )
    .get(
      "/p/:project/details/*",
      async ({ params, request, actor }) => {
        const pathname = pathnameOf(segmentsAfter(request, "details"), true);
        return ok(await assetDetails(ctx, actor, params.project, pathname));
      },
      {
        authNoRenew: true,
        params,
        detail: describe({
          summary: "Everything about an original (an Apis extension): versions, metadata, publication and transforms",
          tags,
          errors: [400, 403, 422],
        }),
      },
    );
}
