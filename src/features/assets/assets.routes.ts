import { Elysia, t } from "elysia";
import type { Ctx } from "../../platform/context";
import { mutate, type ChangeLog } from "../../db/mutate";
import type { Tx } from "../../db/connection";
import { authMacro } from "../../http/auth";
import { ok } from "../../http/envelope";
import { badRequest, unprocessable } from "../../core/errors";
import { receiveMultipart } from "../../http/multipart";
import { decodeCursor, encodeCursor, pageSize } from "../../core/paging";
import { projectAccess } from "../members/access.service";
import { BULK_KINDS, startBulk, type BulkOperation } from "./assets.bulk";
import { ancestorGids, assetDictionary, assetsByGids, clearMetadata, createFolder, deleteAssets, folderTree, gidList, listChildren, moveAssets, permanentlyDeleteAssets, removeOriginals, requireAsset, setMetadata, storeUpload, undeleteAssets, updateAsset, type Asset } from "./assets.service";
import { assetSelection, autocomplete, searchAssets, type AssetSearch } from "./assets.search";
import { worksheet } from "./assets.worksheet";
import { BULK_PAGE_MAX, pageSelection, resolveSelection } from "../../core/selection";

const tags = ["assets"];
const params = t.Object({ project: t.String() });
const any = t.Optional(t.Any());
const gidOrGids = { asset: t.Optional(t.String()), assets: t.Optional(t.Array(t.String())) };
const paging = { "page.size": t.Optional(t.Integer({ minimum: 1 })), "page.cursor": t.Optional(t.Nullable(t.String())) };
const searchBody = t.Object({
  q: t.Optional(t.String()),
  language: t.Optional(t.String()),
  filter: any,
  sort: t.Optional(t.String()),
  ...paging,
});

/** A body parser that reads nothing, so the handler can stream `request.body` itself. */
const leaveBodyUnread = () => ({});

export const SEARCH_PAGE_DEFAULT = 50;
export const SEARCH_PAGE_MAX = 1000;

/**
 * `/api/p/<project>/assets/*`: the asset tree, uploads, search and bulk operations
 * (docs/assets.md). Every call needs an active membership of the project (API users included).
 */
export function assetRoutes(ctx: Ctx) {
  const member = (projectGid: string, userGid: string, tx: Tx = ctx.db) => projectAccess(tx, projectGid, userGid, "member");
  /** Runs a change as a member, in one transaction with its sync items. */
  const change = <T>(projectGid: string, userGid: string, fn: (tx: Tx, log: ChangeLog) => T): T =>
    mutate(ctx.db, ctx.hub, (tx, log) => {
      member(projectGid, userGid, tx);
      return fn(tx, log);
    });
  const one = (a: Asset) => ok({ asset: a.gid }, { assets: assetDictionary([a]) });
  const many = (gids: string[], rows: Asset[]) => ok({ assets: gids }, { assets: assetDictionary(rows) });

  /** A search answer page: offset paging behind an opaque cursor. */
  const searchPage = (projectGid: string, body: AssetSearch & { "page.size"?: unknown; "page.cursor"?: unknown }, types?: string[]) => {
    const size = pageSize(body["page.size"], SEARCH_PAGE_DEFAULT, SEARCH_PAGE_MAX);
    const state = decodeCursor<{ o: number }>(body["page.cursor"], "search");
    // A tampered offset (a fraction, 1e308, a string) is refused like any other bad cursor.
    if (state && !(Number.isSafeInteger(state.o) && state.o >= 0))
      throw badRequest("Invalid parameter", { "Invalid parameter": "page.cursor", expected: "a page.cursor returned by the previous call" });
    const offset = state?.o ?? 0;
    const { rows, total } = searchAssets(ctx.db, projectGid, body, { offset, size }, { types });
    const next = offset + rows.length < total && rows.length ? encodeCursor({ k: "search", o: offset + size }) : null;
    return { rows, total, next };
  };

  const bulk = (op: BulkOperation, summary: string, extra: Record<string, any> = {}) =>
    [
      `/bulk/${op}`,
      ({ params, body, caller }: any) => {
        const token = change(params.project, caller.user.gid, (tx, log) => startBulk(ctx, tx, params.project, caller.user.gid, op, body));
        return ok({ "job.token": token });
      },
      {
        auth: true as const,
        params,
        body: t.Object({ selection: t.Any(), ...extra }),
        detail: { summary: `${summary} Runs as a job (\`${BULK_KINDS[op]}\`): answers {"job.token"}; progress as jobs sync items.`, tags },
      },
    ] as const;

  const app = new Elysia({ prefix: "/api/p/:project/assets" })
    .use(authMacro(ctx))
    .post(
      "/get",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const rows = assetsByGids(ctx.db, params.project, gidList(body));
        const found = new Set(rows.map((r) => r.gid));
        return ok({ assets: rows.map((r) => r.gid), missing: gidList(body).filter((g) => !found.has(g)) }, { assets: assetDictionary(rows) });
      },
      { auth: true, params, body: t.Object(gidOrGids), detail: { summary: "Assets by gid (any status); unknown gids are listed in result.missing", tags } },
    )
    .post("/create", ({ params, body, caller }) => one(change(params.project, caller.user.gid, (tx, log) => createFolder(tx, log, params.project, caller.user.gid, body))), {
      auth: true,
      params,
      body: t.Object({ name: t.String(), parent: t.Optional(t.Nullable(t.String())) }),
      detail: { summary: "Create a folder (at the root without parent)", tags },
    })
    .post("/update", ({ params, body, caller }) => one(change(params.project, caller.user.gid, (tx, log) => updateAsset(tx, log, params.project, caller.user.gid, body.asset, body))), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), name: t.Optional(t.String()) }),
      detail: { summary: "Rename an asset", tags },
    })
    .post(
      "/upload",
      async ({ params, request, caller }) => {
        member(params.project, caller.user.gid);
        const { fields, file } = await receiveMultipart(request, { tmpDir: ctx.storage.tmp, maxFileBytes: ctx.config.uploadMaxBytes });
        if (!file) throw badRequest("Missing parameter", { "Missing parameter": "file" });
        return one(await storeUpload(ctx, params.project, caller.user.gid, file, { parent: fields.parent, name: fields.name }));
      },
      {
        auth: true,
        params,
        // Streamed by receiveMultipart (src/http/multipart.ts): Elysia's parser would buffer the
        // whole file. This parser leaves the body unread (`parse: "none"` is ignored once a global
        // onParse hook exists, as jsonBodies is).
        parse: leaveBodyUnread,
        detail: { summary: "Upload a file (multipart: file, parent?, name?); streamed to disk, type sniffed from the content, 413 past --upload-max-bytes", tags },
      },
    )
    .post(
      "/upload_update",
      async ({ params, request, caller }) => {
        member(params.project, caller.user.gid);
        const { fields, file } = await receiveMultipart(request, { tmpDir: ctx.storage.tmp, maxFileBytes: ctx.config.uploadMaxBytes });
        try {
          if (!fields.asset) throw badRequest("Missing parameter", { "Missing parameter": "asset" });
          if (!file) throw badRequest("Missing parameter", { "Missing parameter": "file" });
        } catch (err) {
          if (file) await Bun.file(file.path).delete().catch(() => {});
          throw err;
        }
        return one(await storeUpload(ctx, params.project, caller.user.gid, file, { name: fields.name, target: fields.asset }));
      },
      {
        auth: true,
        params,
        parse: leaveBodyUnread,
        detail: { summary: "Upload a new version of a file (multipart: asset, file, name?); storage name <gid>~<version>.<ext>", tags },
      },
    )
    .post(
      "/move",
      ({ params, body, caller }) => {
        if (!("parent" in (body as object))) throw badRequest("Missing parameter", { "Missing parameter": "parent" });
        const gids = gidList(body);
        change(params.project, caller.user.gid, (tx, log) => moveAssets(tx, log, params.project, caller.user.gid, gids, body.parent));
        return many(gids, assetsByGids(ctx.db, params.project, gids));
      },
      {
        auth: true,
        params,
        body: t.Object({ ...gidOrGids, parent: t.Optional(t.Nullable(t.String())) }),
        detail: { summary: "Move assets into a folder (parent null: the root); a folder cannot go below itself", tags },
      },
    )
    .post(
      "/delete",
      ({ params, body, caller }) => {
        const gids = gidList(body);
        const o = change(params.project, caller.user.gid, (tx, log) => deleteAssets(tx, log, params.project, caller.user.gid, gids));
        return many(gids, o.changed);
      },
      { auth: true, params, body: t.Object(gidOrGids), detail: { summary: "Soft-delete assets and everything below them (status deleted)", tags } },
    )
    .post(
      "/undelete",
      ({ params, body, caller }) => {
        const gids = gidList(body);
        const o = change(params.project, caller.user.gid, (tx, log) => undeleteAssets(tx, log, params.project, caller.user.gid, gids));
        return many(gids, o.changed);
      },
      { auth: true, params, body: t.Object(gidOrGids), detail: { summary: "Restore deleted assets with what was deleted with them; to the root when their folder is gone", tags } },
    )
    .post(
      "/permanent_delete",
      ({ params, body, caller }) => {
        const gids = gidList(body);
        const o = change(params.project, caller.user.gid, (tx, log) => permanentlyDeleteAssets(ctx, tx, log, params.project, gids));
        removeOriginals(ctx, params.project, o.files, o.paths);
        return ok({ assets: o.removed }, { assets: {} });
      },
      { auth: true, params, body: t.Object(gidOrGids), detail: { summary: "Remove assets, everything below them, all versions and files for good", tags } },
    )
    .post(
      "/root",
      ({ params, caller }) => {
        member(params.project, caller.user.gid);
        const rows = listChildren(ctx.db, params.project, null);
        return many(rows.map((r) => r.gid), rows);
      },
      { auth: true, params, body: any, detail: { summary: "Active top-level items, folders first, then by name", tags } },
    )
    .post(
      "/children",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const parent = requireAsset(ctx.db, params.project, body.parent);
        if (parent.type !== "folder") throw unprocessable("Parent asset is not a folder", { parent: parent.gid });
        const rows = listChildren(ctx.db, params.project, parent.gid);
        return ok({ parent: parent.gid, assets: rows.map((r) => r.gid) }, { assets: assetDictionary(rows) });
      },
      { auth: true, params, body: t.Object({ parent: t.String() }), detail: { summary: "Active items directly in a folder, folders first, then by name", tags } },
    )
    .post(
      "/tree",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const parent = body?.parent ? requireAsset(ctx.db, params.project, body.parent).gid : null;
        const depth = body?.depth ?? 64;
        const { tree, folders } = folderTree(ctx.db, params.project, parent, depth);
        return ok({ parent, tree }, { assets: assetDictionary(folders) });
      },
      {
        auth: true,
        params,
        body: t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), depth: t.Optional(t.Integer({ minimum: 1, maximum: 64 })) })),
        detail: { summary: "The folder hierarchy (below parent, depth levels): result.tree = [{gid, children}]", tags },
      },
    )
    .post(
      "/worksheet",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const w = worksheet(ctx.db, params.project, body ?? {});
        return ok({ columns: w.columns, rows: w.rows, assets: w.assets, "assets.size": w.total, "page.cursor": w.cursor });
      },
      {
        auth: true,
        params,
        body: t.Optional(t.Object({ parent: t.Optional(t.Nullable(t.String())), recursive: t.Optional(t.Boolean()), columns: any, ...paging })),
        detail: { summary: "A folder's items as a paged table (columns + rows) for spreadsheet-like editing", tags },
      },
    )
    .post("/metadata/set", ({ params, body, caller }) => one(change(params.project, caller.user.gid, (tx, log) => setMetadata(tx, log, params.project, caller.user.gid, body.asset, body.metadata))), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), metadata: t.Any() }),
      detail: { summary: "Merge keys into an asset's user metadata (a null value removes the key)", tags },
    })
    .post("/metadata/clear", ({ params, body, caller }) => one(change(params.project, caller.user.gid, (tx, log) => clearMetadata(tx, log, params.project, caller.user.gid, body.asset, body.keys))), {
      auth: true,
      params,
      body: t.Object({ asset: t.String(), keys: any }),
      detail: { summary: "Remove some keys (keys: [...]) or all of an asset's user metadata", tags },
    })
    .post(
      "/search",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const r = searchPage(params.project, body ?? {});
        return ok({ assets: r.rows.map((a) => a.gid), "assets.size": r.total, "page.cursor": r.next }, { assets: assetDictionary(r.rows) });
      },
      { auth: true, params, body: t.Optional(searchBody), detail: { summary: "Full-text search over names and metadata with filters [field, operator, value]; paged", tags } },
    )
    .post(
      "/search/folders",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const r = searchPage(params.project, body ?? {}, ["folder"]);
        const paths: Record<string, string[]> = {};
        const above = new Set<string>();
        for (const f of r.rows) {
          paths[f.gid] = ancestorGids(ctx.db, params.project, f.gid).reverse();
          for (const g of paths[f.gid]!) above.add(g);
        }
        const ancestors = assetsByGids(ctx.db, params.project, [...above]);
        return ok({ assets: r.rows.map((a) => a.gid), "assets.size": r.total, "page.cursor": r.next, paths }, { assets: assetDictionary([...r.rows, ...ancestors]) });
      },
      { auth: true, params, body: t.Optional(searchBody), detail: { summary: "Search folders only; result.paths gives each one's ancestor gids (root first)", tags } },
    )
    .post(
      "/search/autocomplete",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const limit = body.limit ?? 8;
        const types = body.type ? [body.type] : undefined;
        const r = autocomplete(ctx.db, params.project, body.q, limit, types);
        return ok({ suggestions: r.suggestions, assets: r.rows.map((a) => a.gid) }, { assets: assetDictionary(r.rows) });
      },
      {
        auth: true,
        params,
        body: t.Object({
          q: t.String(),
          language: t.Optional(t.String()),
          limit: t.Optional(t.Integer({ minimum: 1, maximum: 20 })),
          type: t.Optional(t.Union([t.Literal("folder"), t.Literal("file"), t.Literal("image")])),
        }),
        detail: { summary: "Asset names starting with what was typed (every word a prefix), a few, fast", tags },
      },
    )
    .post(
      "/bulk/get",
      ({ params, body, caller }) => {
        member(params.project, caller.user.gid);
        const items = resolveSelection(ctx.db, assetSelection, params.project, body.selection);
        const p = pageSelection(items, body["page.size"], body["page.cursor"]);
        const rows = assetsByGids(ctx.db, params.project, p.page.map((i) => i.gid));
        return ok({ assets: p.page.map((i) => i.gid), "assets.size": p.size, "page.cursor": p.cursor }, { assets: assetDictionary(rows) });
      },
      {
        auth: true,
        params,
        body: t.Object({ selection: t.Any(), language: t.Optional(t.String()), ...paging }),
        detail: { summary: `A page of the selected assets; repeat with the returned page.cursor until it is null (page.size at most ${BULK_PAGE_MAX})`, tags },
      },
    );

  return app
    .post(...bulk("delete", "Soft-delete the selected assets."))
    .post(...bulk("undelete", "Restore the selected deleted assets."))
    .post(...bulk("permanent_delete", "Remove the selected assets, their versions and files for good."))
    .post(...bulk("move", "Move the selected assets into parent (null: the root).", { parent: t.Optional(t.Nullable(t.String())) }))
    .post(...bulk("metadata", "Set (metadata: {...}, null removes a key) and/or clear (clear: true or [keys]) user metadata of the selected assets.", { metadata: any, clear: any }));
}
