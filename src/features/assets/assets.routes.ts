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
  getRoot,
  listFolder,
  moveAssets,
  permanentlyDeleteAssets,
  setAssetMetadata,
  undeleteAssets,
  updateAsset,
  uploadAsset,
} from "./assets.service";
import { assetSheet, assetWorksheet } from "./assets.worksheet";

const tags = ["assets"];
const params = t.Object({ project: t.String() });
const anyValue = t.Optional(t.Unknown());
const gidOrGids = { asset: t.Optional(t.String()), assets: t.Optional(t.Array(t.String())) };
const top = { "page.top": t.Optional(t.Integer({ minimum: 0 })), "page.size": t.Optional(t.Integer({ minimum: 0 })) };
const searchBody = t.Object({
  q: t.Optional(t.String()),
  language: t.Optional(t.String()),
  filter: anyValue,
  sort: t.Optional(t.String()),
  ...top,
});

/** A body parser that reads nothing, so the handler can stream `request.body` itself. */
const leaveBodyUnread = () => ({});

/**
 * `/api/p/<project>/assets/*`: the asset tree, uploads, search and bulk operations
 * (docs/assets.md). Every call needs an active membership of the project (API users included).
 */
export function assetRoutes(ctx: Ctx) {
  /** Streams a multipart upload to the temp folder (src/http/multipart.ts), 413 past --upload-max-bytes. */
  const receive = (request: Request) => receiveMultipart(request, { tmpDir: ctx.storage.tmp, maxFileBytes: ctx.config.uploadMaxBytes, fileField: ["upload_file", "file"] });
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
    .post("/root", ({ params, actor }) => answer(getRoot(ctx, actor, params.project)), {
      auth: true,
      params,
      body: anyValue,
      detail: { summary: "The root folder `/` of the project: result.root", tags },
    })
    .post("/get", ({ params, body, actor }) => answer(getAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...gidOrGids, pathname: t.Optional(t.String()), pathnames: t.Optional(t.Array(t.String())) }),
      detail: { summary: "Assets by asset, assets, pathname or pathnames (the first given wins; any status); unknown items of a list are left out", tags },
    })
    .post("/children", ({ params, body, actor }) => answer(listFolder(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.Optional(t.String()), pathname: t.Optional(t.String()), ...top }),
      detail: { summary: "A page (page.top, page.size 100) of the active items of a folder, folders first, then by name: children, children.size", tags },
    })
    .post("/tree", ({ params, body, actor }) => answer(assetTree(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ expanded_assets: t.Optional(t.Array(t.String())), expanded_paths: t.Optional(t.Array(t.String())), ...top })),
      detail: { summary: "The visible tree (root first; expanded folders show their items), flat and paged: tree, tree.size", tags },
    })
    .post("/create", ({ params, body, actor }) => answer(createFolder(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ parent: t.Optional(t.Nullable(t.String())), name: t.Optional(t.String()) }),
      detail: { summary: "Create a folder in parent (absent: the root); a name in use gets a serial: result parent, asset", tags },
    })
    .post("/update", ({ params, body, actor }) => answer(updateAsset(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), name: t.Optional(t.String()), title: anyValue, description: anyValue, transforms: anyValue }),
      detail: { summary: "Rename an asset, set localized title / description (given languages), transforms", tags },
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
        detail: {
          summary: "Upload a file (multipart: parent or pathname, upload_file, name?); streamed to disk, type sniffed from the content, 413 past --upload-max-bytes: result parent, asset",
          tags,
        },
      },
    )
    .post(
      "/upload_update",
      async ({ params, request, actor }) => answer(await uploadAsset(ctx, actor, params.project, "version", () => receive(request))),
      {
        auth: true,
        params,
        parse: leaveBodyUnread,
        detail: { summary: "Upload a new version of a file (multipart: asset, upload_file, name?); storage name <gid>~<version>.<ext>", tags },
      },
    )
    .post("/move", ({ params, body, actor }) => answer(moveAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ ...gidOrGids, parent: t.Optional(t.Nullable(t.String())) }),
      detail: { summary: "Move an asset into folder parent; a folder cannot go below itself: result parent, asset", tags },
    })
    .post("/delete", ({ params, body, actor }) => answer(deleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Soft-delete an asset and everything below it (status deleted)", tags },
    })
    .post("/undelete", ({ params, body, actor }) => answer(undeleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Restore a deleted asset with what was deleted with it (its folder must be active)", tags },
    })
    .post("/permanent_delete", ({ params, body, actor }) => answer(permanentlyDeleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object(gidOrGids),
      detail: { summary: "Remove a deleted asset, everything below it, all versions and files for good: result parent", tags },
    })
    .post("/worksheet", ({ params, body, actor }) => answer(assetWorksheet(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), ...top }),
      detail: { summary: "A folder for a worksheet: its path (gids from the root) and a page (page.size 20) of its children", tags },
    })
    .post("/sheet", ({ params, body, actor }) => answer(assetSheet(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), recursive: t.Optional(t.Boolean()), columns: anyValue, "page.size": t.Optional(t.Integer({ minimum: 1 })), "page.cursor": t.Optional(t.Nullable(t.String())) })),
      detail: { summary: "A folder's items as a paged table (columns + rows) for spreadsheet-like editing (an Apis extension)", tags },
    })
    .post("/metadata/set", ({ params, body, actor }) => answer(setAssetMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), name: t.String(), type: t.Optional(t.String()), is_localized: t.Optional(t.Boolean()), value: anyValue }),
      detail: { summary: "Set or replace one metadata field: name (group.field), type, is_localized, value", tags },
    })
    .post("/metadata/clear", ({ params, body, actor }) => answer(clearAssetMetadata(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), name: t.Optional(t.String()), keys: anyValue }),
      detail: { summary: "Remove one metadata field (name; or several: keys)", tags },
    })
    .post("/search", ({ params, body, actor }) => answer(findAssets(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(searchBody),
      detail: { summary: "Search: q (+must -mustnot terms) and/or filter (docs/filter.md), page.top / page.size (10): assets, assets.size", tags },
    })
    .post("/search/folders", ({ params, body, actor }) => answer(findFolders(ctx, actor, params.project, body ?? {})), {
      auth: true,
      params,
      body: t.Optional(searchBody),
      detail: { summary: "Search folders only: assets, assets.size", tags },
    })
    .post("/search/autocomplete", ({ params, body, actor }) => answer(autocompleteAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({
        field: t.String(),
        fieldq: t.Optional(t.String()),
        language: t.Optional(t.String()),
        "completions.size": t.Optional(t.Integer({ minimum: 1, maximum: 50 })),
      }),
      detail: { summary: "Values for a filter starting with fieldq: field name, ext, path or metadata: completions", tags },
    })
    .post("/bulk/get", ({ params, body, actor }) => answer(bulkGetAssets(ctx, actor, params.project, body)), {
      auth: true,
      params,
      body: t.Object({ selection: t.Unknown(), language: t.Optional(t.String()), "page.size": t.Optional(t.Integer({ minimum: 1 })), "page.cursor": t.Optional(t.Nullable(t.String())) }),
      detail: { summary: `A page of the selected assets; repeat with the returned page.cursor until it is null (page.size at most ${BULK_PAGE_MAX})`, tags },
    })
    .use(bulk("delete", "Soft-delete the selected assets.", {}))
    .use(bulk("undelete", "Restore the selected deleted assets.", {}))
    .use(bulk("permanent_delete", "Remove the selected deleted assets, their versions and files for good.", {}))
    .use(bulk("move", "Move the selected assets into parent (absent: the root).", { parent: t.Optional(t.Nullable(t.String())) }))
    .use(bulk("metadata", "Set (metadata: {name: value}, null removes a field) and/or clear (clear: true or [names]) metadata fields of the selected assets.", { metadata: anyValue, clear: anyValue }));
}
