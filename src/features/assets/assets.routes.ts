import { Elysia, t } from "elysia";
import { BULK_PAGE_MAX } from "../../core/selection";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { receiveMultipart } from "../../http/multipart";
import type { Ctx } from "../../platform/context";
import { BULK_KINDS, bulkGetAssets, startBulkOperation, type BulkOperation } from "./assets.bulk";
import { autocompleteAssets, findAssets, findFolders } from "./assets.search";
import {
  assetTree,
  clearAssetMetadata,
  createFolder,
  deleteAssets,
  getAssets,
  listFolder,
  listRoot,
  moveAssets,
  permanentlyDeleteAssets,
  setAssetMetadata,
  undeleteAssets,
  updateAsset,
  uploadAsset,
} from "./assets.service";
import { assetWorksheet } from "./assets.worksheet";

const tags = ["assets"];
const params = t.Object({ project: t.String() });
const anyValue = t.Optional(t.Unknown());
const gidOrGids = { asset: t.Optional(t.String()), assets: t.Optional(t.Array(t.String())) };
const paging = { "page.size": t.Optional(t.Integer({ minimum: 1 })), "page.cursor": t.Optional(t.Nullable(t.String())) };
const searchBody = t.Object({
  q: t.Optional(t.String()),
  language: t.Optional(t.String()),
  filter: anyValue,
  sort: t.Optional(t.String()),
  ...paging,
});

/** A body parser that reads nothing, so the handler can stream `request.body` itself. */
const leaveBodyUnread = () => ({});

/**
 * `/api/p/<project>/assets/*`: the asset tree, uploads, search and bulk operations
 * (docs/assets.md). Every call needs an active membership of the project (API users included).
 */
export function assetRoutes(ctx: Ctx) {
  /** Streams a multipart upload to the temp folder (src/http/multipart.ts), 413 past --upload-max-bytes. */
  const receive = (request: Request) => receiveMultipart(request, { tmpDir: ctx.storage.tmp, maxFileBytes: ctx.config.uploadMaxBytes });
  /** The bulk operation endpoints: each queues a job over a selection and answers its token. */
  const bulk = <E extends Record<string, ReturnType<typeof t.Optional>>>(op: BulkOperation, summary: string, extra: E) =>
    new Elysia().use(authMacro(ctx)).post(`/bulk/${op}`, ({ params, body, actor }) => answer(startBulkOperation(ctx, actor, params.project, op, body)), {
      auth: true,
      params,
      body: t.Object({ selection: t.Unknown(), ...extra }),
      detail: { summary: `${summary} Runs as a job (\`${BULK_KINDS[op]}\`): answers {"job.token"}; progress as jobs sync items.`, tags },
    });

  return new Elysia({ prefix: "/api/p/:project/assets" })
    .use(authMacro(ctx))
    .post("/get", ({ params, body, actor }) => answer(getAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Assets by gid (any status); unknown gids are listed in result.missing", tags },
    })
    .post("/create", ({ params, body, actor }) => answer(createFolder(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ name: t.String(), parent: t.Optional(t.Nullable(t.String())) }),
      detail: { summary: "Create a folder (at the root without parent)", tags },
    })
    .post("/update", ({ params, body, actor }) => answer(updateAsset(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), name: t.Optional(t.String()) }),
      detail: { summary: "Rename an asset", tags },
    })
    .post(
      "/upload",
      async ({ params, request, actor }) => answer(await uploadAsset(ctx, actor, params.project, "new", () => receive(request))),
      {
        auth: true,
        params,
        // Streamed by receiveMultipart: Elysia's parser would buffer the whole file. This parser
        // leaves the body unread (`parse: "none"` is ignored once a global onParse hook exists, as
        // jsonBodies is).
        parse: leaveBodyUnread,
        detail: { summary: "Upload a file (multipart: file, parent?, name?); streamed to disk, type sniffed from the content, 413 past --upload-max-bytes", tags },
      },
    )
    .post(
      "/upload_update",
      async ({ params, request, actor }) => answer(await uploadAsset(ctx, actor, params.project, "version", () => receive(request))),
      {
        auth: true,
        params,
        parse: leaveBodyUnread,
        detail: { summary: "Upload a new version of a file (multipart: asset, file, name?); storage name <gid>~<version>.<ext>", tags },
      },
    )
    .post("/move", ({ params, body, actor }) => answer(moveAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...gidOrGids, parent: t.Optional(t.Nullable(t.String())) }),
      detail: { summary: "Move assets into a folder (parent null: the root); a folder cannot go below itself", tags },
    })
    .post("/delete", ({ params, body, actor }) => answer(deleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Soft-delete assets and everything below them (status deleted)", tags },
    })
    .post("/undelete", ({ params, body, actor }) => answer(undeleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Restore deleted assets with what was deleted with them; to the root when their folder is gone", tags },
    })
    .post("/permanent_delete", ({ params, body, actor }) => answer(permanentlyDeleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Remove assets, everything below them, all versions and files for good", tags },
    })
    .post("/root", ({ params, actor }) => answer(listRoot(ctx, actor, params.project)), {
      auth: true,
      params,
      body: anyValue,
      detail: { summary: "Active top-level items, folders first, then by name", tags },
    })
    .post("/children", ({ params, body, actor }) => answer(listFolder(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ parent: t.String() }),
      detail: { summary: "Active items directly in a folder, folders first, then by name", tags },
    })
    .post("/tree", ({ params, body, actor }) => answer(assetTree(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), depth: t.Optional(t.Integer({ minimum: 1, maximum: 64 })) })),
      detail: { summary: "The folder hierarchy (below parent, depth levels): result.tree = [{gid, children}]", tags },
    })
    .post("/worksheet", ({ params, body, actor }) => answer(assetWorksheet(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), recursive: t.Optional(t.Boolean()), columns: anyValue, ...paging })),
      detail: { summary: "A folder's items as a paged table (columns + rows) for spreadsheet-like editing", tags },
    })
    .post("/metadata/set", ({ params, body, actor }) => answer(setAssetMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), metadata: t.Unknown() }),
      detail: { summary: "Merge keys into an asset's user metadata (a null value removes the key)", tags },
    })
    .post("/metadata/clear", ({ params, body, actor }) => answer(clearAssetMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), keys: anyValue }),
      detail: { summary: "Remove some keys (keys: [...]) or all of an asset's user metadata", tags },
    })
    .post("/search", ({ params, body, actor }) => answer(findAssets(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(searchBody),
      detail: { summary: "Full-text search over names and metadata with filters [field, operator, value]; paged", tags },
    })
    .post("/search/folders", ({ params, body, actor }) => answer(findFolders(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(searchBody),
      detail: { summary: "Search folders only; result.paths gives each one's ancestor gids (root first)", tags },
    })
    .post("/search/autocomplete", ({ params, body, actor }) => answer(autocompleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({
        q: t.String(),
        language: t.Optional(t.String()),
        limit: t.Optional(t.Integer({ minimum: 1, maximum: 20 })),
        type: t.Optional(t.Union([t.Literal("folder"), t.Literal("file"), t.Literal("image")])),
      }),
      detail: { summary: "Asset names starting with what was typed (every word a prefix), a few, fast", tags },
    })
    .post("/bulk/get", ({ params, body, actor }) => answer(bulkGetAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ selection: t.Unknown(), language: t.Optional(t.String()), ...paging }),
      detail: { summary: `A page of the selected assets; repeat with the returned page.cursor until it is null (page.size at most ${BULK_PAGE_MAX})`, tags },
    })
    .use(bulk("delete", "Soft-delete the selected assets.", {}))
    .use(bulk("undelete", "Restore the selected deleted assets.", {}))
    .use(bulk("permanent_delete", "Remove the selected assets, their versions and files for good.", {}))
    .use(bulk("move", "Move the selected assets into parent (null: the root).", { parent: t.Optional(t.Nullable(t.String())) }))
    .use(bulk("metadata", "Set (metadata: {...}, null removes a key) and/or clear (clear: true or [keys]) user metadata of the selected assets.", { metadata: anyValue, clear: anyValue }));
}
