import { Elysia, t } from "elysia";
import { BULK_PAGE_MAX } from "../../core/selection";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { operation } from "../../http/operations";
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

/** A bulk operation: queues a job over a selection and answers its token (in a batch: queued on commit). */
const bulk = <E extends Record<string, ReturnType<typeof t.Optional>>>(op: BulkOperation, summary: string, extra: E) =>
  operation(`assets/bulk/${op}`, t.Object({ selection: t.Unknown(), ...extra }), (ctx, actor, projectGid, input) => startBulkOperation(ctx, actor, projectGid, op, input), {
    summary: `${summary} Runs as a job (\`${BULK_KINDS[op]}\`): answers {"job.token"}; progress as jobs sync items.`,
    tags,
  });

/**
 * `/api/p/<project>/assets/*` without uploads: operations, each served as its endpoint and
 * runnable in a batch (src/http/operations.ts). Every call needs an active membership of the
 * project (API users included). See docs/assets.md.
 */
export const assetOperations = [
  operation("assets/get", t.Object(gidOrGids), getAssets, { summary: "Assets by gid (any status); unknown gids are listed in result.missing", tags }),
  operation("assets/create", t.Object({ name: t.String(), parent: t.Optional(t.Nullable(t.String())) }), createFolder, { summary: "Create a folder (at the root without parent)", tags }),
  operation("assets/update", t.Object({ asset: t.String(), name: t.Optional(t.String()) }), updateAsset, { summary: "Rename an asset", tags }),
  operation("assets/move", t.Object({ ...gidOrGids, parent: t.Optional(t.Nullable(t.String())) }), moveAssets, {
    summary: "Move assets into a folder (parent null: the root); a folder cannot go below itself",
    tags,
  }),
  operation("assets/delete", t.Object(gidOrGids), deleteAssets, { summary: "Soft-delete assets and everything below them (status deleted)", tags }),
  operation("assets/undelete", t.Object(gidOrGids), undeleteAssets, { summary: "Restore deleted assets with what was deleted with them; to the root when their folder is gone", tags }),
  operation("assets/permanent_delete", t.Object(gidOrGids), permanentlyDeleteAssets, { summary: "Remove assets, everything below them, all versions and files for good", tags }),
  operation("assets/root", anyValue, (ctx, actor, projectGid) => listRoot(ctx, actor, projectGid), { summary: "Active top-level items, folders first, then by name", tags }),
  operation("assets/children", t.Object({ parent: t.String() }), listFolder, { summary: "Active items directly in a folder, folders first, then by name", tags }),
  operation("assets/tree", t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), depth: t.Optional(t.Integer({ minimum: 1, maximum: 64 })) })), assetTree, {
    summary: "The folder hierarchy (below parent, depth levels): result.tree = [{gid, children}]",
    tags,
  }),
  operation("assets/worksheet", t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), recursive: t.Optional(t.Boolean()), columns: anyValue, ...paging })), assetWorksheet, {
    summary: "A folder's items as a paged table (columns + rows) for spreadsheet-like editing",
    tags,
  }),
  operation("assets/metadata/set", t.Object({ asset: t.String(), metadata: t.Unknown() }), setAssetMetadata, { summary: "Merge keys into an asset's user metadata (a null value removes the key)", tags }),
  operation("assets/metadata/clear", t.Object({ asset: t.String(), keys: anyValue }), clearAssetMetadata, { summary: "Remove some keys (keys: [...]) or all of an asset's user metadata", tags }),
  operation("assets/search", t.Optional(searchBody), findAssets, { summary: "Full-text search over names and metadata with filters [field, operator, value]; paged", tags }),
  operation("assets/search/folders", t.Optional(searchBody), findFolders, { summary: "Search folders only; result.paths gives each one's ancestor gids (root first)", tags }),
  operation(
    "assets/search/autocomplete",
    t.Object({
      q: t.String(),
      language: t.Optional(t.String()),
      limit: t.Optional(t.Integer({ minimum: 1, maximum: 20 })),
      type: t.Optional(t.Union([t.Literal("folder"), t.Literal("file"), t.Literal("image")])),
    }),
    autocompleteAssets,
    { summary: "Asset names starting with what was typed (every word a prefix), a few, fast", tags },
  ),
  operation("assets/bulk/get", t.Object({ selection: t.Unknown(), language: t.Optional(t.String()), ...paging }), bulkGetAssets, {
    summary: `A page of the selected assets; repeat with the returned page.cursor until it is null (page.size at most ${BULK_PAGE_MAX})`,
    tags,
  }),
  bulk("delete", "Soft-delete the selected assets.", {}),
  bulk("undelete", "Restore the selected deleted assets.", {}),
  bulk("permanent_delete", "Remove the selected assets, their versions and files for good.", {}),
  bulk("move", "Move the selected assets into parent (null: the root).", { parent: t.Optional(t.Nullable(t.String())) }),
  bulk("metadata", "Set (metadata: {...}, null removes a key) and/or clear (clear: true or [keys]) user metadata of the selected assets.", { metadata: anyValue, clear: anyValue }),
];

/**
 * The asset uploads (`/api/p/<project>/assets/upload`, `upload_update`): they stream their body
 * to disk before their unit of work, so they are endpoints only, never batch steps.
 */
export function assetRoutes(ctx: Ctx) {
  /** Streams a multipart upload to the temp folder (src/http/multipart.ts), 413 past --upload-max-bytes. */
  const receive = (request: Request) => receiveMultipart(request, { tmpDir: ctx.storage.tmp, maxFileBytes: ctx.config.uploadMaxBytes });
  return new Elysia({ prefix: "/api/p/:project/assets" })
    .use(authMacro(ctx))
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
    );
}
