import { Elysia, t } from "elysia";
import { BULK_PAGE_MAX } from "../../core/selection";
import { authMacro } from "../../http/auth";
import { answer } from "../../http/envelope";
import { operation } from "../../http/operations";
import { describe, type ErrorStatus, type Upload } from "../../http/openapi";
import { receiveMultipart } from "../../http/multipart";
import { HEAD_BYTES, START_BYTES } from "../../platform/images/file-info";
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
  type UploadHooks,
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

// Example answers for the OpenAPI document (docs/assets.md has the same shapes).
const ROOT = "r00tr00tr00tr00tr00t";
const FOLDER = "f1f1f1f1f1f1f1f1f1f1";
const FILE = "a1b2c3d4e5f6g7h8i9j0";
const times = { created_on: 1795292464.484, updated_on: 1795292507.726 };
const empty = { title: { en: "" }, description: { en: "" }, metadata: {} };
const forms: Record<string, Record<string, unknown>> = {
  [ROOT]: {
    gid: ROOT,
    pathname: "/",
    path: "",
    name: "",
    is_file: false,
    type: null,
    childcount: 1,
    status: "published",
    version: 0,
    info: { filecount: 0, foldercount: 1 },
    transforms: null,
    ...empty,
    ...times,
  },
  [FOLDER]: {
    gid: FOLDER,
    pathname: "/products",
    path: "/",
    name: "products",
    is_file: false,
    type: null,
    childcount: 1,
    status: "published",
    version: 0,
    info: { filecount: 1, foldercount: 0 },
    transforms: null,
    ...empty,
    ...times,
  },
  [FILE]: {
    gid: FILE,
    pathname: "/products/shoe.jpg",
    path: "/products",
    name: "shoe.jpg",
    is_file: true,
    type: "jpg",
    childcount: 0,
    status: "published",
    version: 1,
    info: {
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
    transforms: { _main_: { crop: null, hotspot: [0.5, 0.4] } },
    title: { en: "Red running shoe" },
    description: { en: "" },
    metadata: { "shop.sku": { type: "textline", is_localized: false, value: "RS-42" } },
    ...times,
  },
};
const pick = (...gids: string[]) => ({ assets: Object.fromEntries(gids.map((g) => [g, forms[g]])) });
/** The OpenAPI detail of an asset route: summary, example answer (result, assets in data), errors. */
const doc = (
  summary: string,
  result: Record<string, unknown>,
  gids: string[],
  errors: ErrorStatus[] = [400, 403, 422],
  upload?: Upload,
) =>
  describe({
    summary,
    tags,
    example: { success: true, result, data: gids.length ? pick(...gids) : {} },
    errors,
    upload,
  });
/** The multipart parts of the two uploads (streamed by the route, so documented here). */
const uploadFile = {
  name: "upload_file",
  description: "the file (`file` is accepted too); its type is sniffed from the content",
};
const NAME_PART = "the asset's name (default: the part's file name without any path)";

/** A body parser that reads nothing, so the handler can stream `request.body` itself. */
const leaveBodyUnread = () => ({});

/** A bulk operation: queues a job over a selection and answers its token (in a batch: queued on commit). */
const bulk = <E extends Record<string, ReturnType<typeof t.Optional>>>(op: BulkOperation, summary: string, extra: E) =>
  operation(
    `assets/bulk/${op}`,
    t.Object({ selection: t.Unknown(), ...extra }),
    async (ctx, actor, projectGid, input) => await startBulkOperation(ctx, actor, projectGid, op, input),
    {
      summary: `${summary} Runs as a job (\`${BULK_KINDS[op]}\`): answers {"job.token"}; progress as jobs sync items.`,
      tags,
    },
  );

/**
 * `/api/p/<project>/assets/*` without uploads (docs/assets.md): operations, each served as its
 * endpoint and runnable in a batch (src/http/operations.ts). Every call needs an active
 * membership of the project (API users included).
 */
export const assetOperations = [
  operation(
    "assets/root",
    anyValue,
    async (ctx, actor, projectGid) => await getRoot(ctx, actor, projectGid),
    doc("The root folder `/` of the project: result.root", { root: ROOT }, [ROOT], [403]),
  ),
  operation(
    "assets/get",
    t.Object({ ...gidOrGids, pathname: t.Optional(t.String()), pathnames: t.Optional(t.Array(t.String())) }),
    getAssets,
    doc(
      "Assets by asset, assets, pathname or pathnames (the first given wins; any status); unknown items of a list are left out",
      { assets: [FOLDER, FILE] },
      [FOLDER, FILE],
    ),
  ),
  operation(
    "assets/children",
    t.Object({ asset: t.Optional(t.String()), pathname: t.Optional(t.String()), ...top }),
    listFolder,
    doc(
      "A page (page.top, page.size 100) of the active items of a folder, folders first, then by name: children, children.size",
      { children: [FILE], "children.size": 1 },
      [FILE],
    ),
  ),
  operation(
    "assets/tree",
    t.Optional(
      t.Object({
        expanded_assets: t.Optional(t.Array(t.String())),
        expanded_paths: t.Optional(t.Array(t.String())),
        ...top,
      }),
    ),
    assetTree,
    doc(
      "The visible tree (root first; expanded folders show their items), flat and paged: tree, tree.size",
      { tree: [ROOT, FOLDER, FILE], "tree.size": 3 },
      [ROOT, FOLDER, FILE],
      [400, 403],
    ),
  ),
  operation(
    "assets/create",
    t.Object({ parent: t.Optional(t.Nullable(t.String())), name: t.Optional(t.String()) }),
    createFolder,
    doc(
      "Create a folder in parent (absent: the root); a name in use gets a serial: result parent, asset",
      { parent: ROOT, asset: FOLDER },
      [FOLDER, ROOT],
    ),
  ),
  operation(
    "assets/update",
    t.Object({
      asset: t.String(),
      name: t.Optional(t.String()),
      title: anyValue,
      description: anyValue,
      transforms: anyValue,
    }),
    updateAsset,
    doc("Rename an asset, set localized title / description (given languages), transforms", { asset: FILE }, [FILE]),
  ),
  operation(
    "assets/move",
    t.Object({ ...gidOrGids, parent: t.Optional(t.Nullable(t.String())) }),
    moveAssets,
    doc(
      "Move an asset into folder parent; a folder cannot go below itself: result parent, asset",
      { parent: FOLDER, asset: FILE },
      [FILE, FOLDER, ROOT],
    ),
  ),
  operation(
    "assets/delete",
    t.Object(gidOrGids),
    deleteAssets,
    doc("Soft-delete an asset and everything below it (status deleted)", { asset: FILE }, [FILE, FOLDER]),
  ),
  operation(
    "assets/undelete",
    t.Object(gidOrGids),
    undeleteAssets,
    doc("Restore a deleted asset with what was deleted with it (its folder must be active)", { asset: FILE }, [
      FILE,
      FOLDER,
    ]),
  ),
  operation(
    "assets/permanent_delete",
    t.Object(gidOrGids),
    permanentlyDeleteAssets,
    doc(
      "Remove a deleted asset, everything below it, all versions and files for good: result parent",
      { parent: FOLDER },
      [FOLDER],
    ),
  ),
  operation(
    "assets/worksheet",
    t.Object({ asset: t.String(), ...top }),
    assetWorksheet,
    doc(
      "A folder for a worksheet: its path (gids from the root) and a page (page.size 20) of its children",
      { asset: FOLDER, path: [ROOT, FOLDER], children: [FILE], "children.size": 1 },
      [ROOT, FOLDER, FILE],
    ),
  ),
  operation(
    "assets/sheet",
    t.Optional(
      t.Object({
        parent: t.Optional(t.Nullable(t.String())),
        recursive: t.Optional(t.Boolean()),
        columns: anyValue,
        "page.size": t.Optional(t.Integer({ minimum: 1 })),
        "page.cursor": t.Optional(t.Nullable(t.String())),
      }),
    ),
    assetSheet,
    {
      summary: "A folder's items as a paged table (columns + rows) for spreadsheet-like editing (an Apis extension)",
      tags,
    },
  ),
  operation(
    "assets/metadata/set",
    t.Object({
      asset: t.String(),
      name: t.String(),
      type: t.Optional(t.String()),
      is_localized: t.Optional(t.Boolean()),
      value: anyValue,
    }),
    setAssetMetadata,
    doc("Set or replace one metadata field: name (group.field), type, is_localized, value", { asset: FILE }, [FILE]),
  ),
  operation(
    "assets/metadata/clear",
    t.Object({ asset: t.String(), name: t.Optional(t.String()), keys: anyValue }),
    clearAssetMetadata,
    doc("Remove one metadata field (name; or several: keys)", { asset: FILE }, [FILE]),
  ),
  operation(
    "assets/search",
    t.Optional(searchBody),
    findAssets,
    doc(
      "Search: q (+must -mustnot terms) and/or filter (docs/filter.md), page.top / page.size (10): assets, assets.size",
      { assets: [FILE], "assets.size": 1 },
      [FILE],
      [400, 403, 422],
    ),
  ),
  operation(
    "assets/search/folders",
    t.Optional(searchBody),
    findFolders,
    doc("Search folders only: assets, assets.size", { assets: [FOLDER], "assets.size": 1 }, [FOLDER], [400, 403, 422]),
  ),
  operation(
    "assets/search/autocomplete",
    t.Object({
      field: t.String(),
      fieldq: t.Optional(t.String()),
      language: t.Optional(t.String()),
      "completions.size": t.Optional(t.Integer({ minimum: 1, maximum: 50 })),
    }),
    autocompleteAssets,
    doc(
      "Values for a filter starting with fieldq: field name, ext, path or metadata: completions",
      { completions: ["/products", "/promo"] },
      [],
      [400, 403, 422],
    ),
  ),
  operation(
    "assets/bulk/get",
    t.Object({
      selection: t.Unknown(),
      language: t.Optional(t.String()),
      "page.size": t.Optional(t.Integer({ minimum: 1 })),
      "page.cursor": t.Optional(t.Nullable(t.String())),
    }),
    bulkGetAssets,
    {
      summary: `A page of the selected assets; repeat with the returned page.cursor until it is null (page.size at most ${BULK_PAGE_MAX})`,
      tags,
    },
  ),
  bulk("delete", "Soft-delete the selected assets.", {}),
  bulk("undelete", "Restore the selected deleted assets.", {}),
  bulk("permanent_delete", "Remove the selected deleted assets, their versions and files for good.", {}),
  bulk("move", "Move the selected assets into parent (absent: the root).", {
    parent: t.Optional(t.Nullable(t.String())),
  }),
  bulk(
    "metadata",
    "Set (metadata: {name: value}, null removes a field) and/or clear (clear: true or [names]) metadata fields of the selected assets.",
    { metadata: anyValue, clear: anyValue },
  ),
];

/**
 * The asset uploads (`/api/p/<project>/assets/upload`, `upload_update`): they stream their body
 * to disk before their unit of work, so they are endpoints only, never batch steps.
 */
export function assetRoutes(ctx: Ctx) {
  /** Streams a multipart upload to the temp folder (src/http/multipart.ts), 413 past --upload-max-bytes. */
  const receive = (request: Request) => (hooks: UploadHooks) =>
    receiveMultipart(request, {
      tmpDir: ctx.storage.tmp,
      maxFileBytes: ctx.config.uploadMaxBytes,
      // The temp file is synced only when it becomes the stored file itself (the data folder); on
      // another store it is uploaded from and removed, and the store's acknowledgement counts.
      durable: ctx.config.sqliteSynchronous === "full" && ctx.storage.blobs.kind === "file",
      // On another store the original goes up while it arrives: that comes first.
      background: ctx.storage.blobs.kind !== "file",
      fileField: ["upload_file", "file"],
      headBytes: HEAD_BYTES,
      startBytes: START_BYTES,
      ...hooks,
    });
  return new Elysia({ prefix: "/api/p/:project/assets" })
    .use(authMacro(ctx))
    .post(
      "/upload",
      async ({ params, request, actor }) =>
        answer(await uploadAsset(ctx, actor, params.project, "new", receive(request))),
      {
        auth: true,
        params,
        // Streamed by receiveMultipart: Elysia's parser would buffer the whole file. This parser
        // leaves the body unread (`parse: "none"` is ignored once a global onParse hook exists, as
        // jsonBodies is).
        parse: leaveBodyUnread,
        detail: doc(
          "Upload a file (multipart: parent or pathname, upload_file, name?); streamed to disk, type sniffed from the content, 413 past --upload-max-bytes: result parent, asset",
          { parent: FOLDER, asset: FILE },
          [FILE, FOLDER],
          [400, 403, 413, 422],
          {
            file: uploadFile,
            fields: {
              parent: "the folder's gid (neither parent nor pathname: the root)",
              pathname: "the folder's pathname, instead of parent",
              name: NAME_PART,
            },
            required: ["upload_file"],
          },
        ),
      },
    )
    .post(
      "/upload_update",
      async ({ params, request, actor }) =>
        answer(await uploadAsset(ctx, actor, params.project, "version", receive(request))),
      {
        auth: true,
        params,
        parse: leaveBodyUnread,
        detail: doc(
          "Upload a new version of a file (multipart: asset, upload_file, name?); storage name <gid>~<version>.<type>",
          { asset: FILE },
          [FILE, FOLDER],
          [400, 403, 413, 422],
          {
            file: uploadFile,
            fields: { asset: "the file asset's gid", name: "a new name for the asset (optional)" },
            required: ["asset", "upload_file"],
          },
        ),
      },
    );
}
